"""The stack listing without the CLI: parsing `pulumi stack ls --json`, tags files, locks."""

from __future__ import annotations

import json
import os
import socket
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reconciler.engine.plan import (
    EXTERNAL_IP_TAG,
    HASH_TAG,
    LB_ID_TAG,
    OWNS_TAG,
    SHARED_TAG,
    StackInfo,
    StackListing,
    listing_of,
    parse_stack_ls,
    stack_info,
    stack_tags,
)
from reconciler.engine.state.locks import LeaderRule, locked
from reconciler.engine.state.store import StateStore, open_state_store, parse_tags_file

UID = "0b7a3c2e-8a43-4f4e-9d53-0c3d7d1f0b9e"

# What pulumi v3.259 prints for a file:// backend (`--all`: fully qualified names).
FILE_BACKEND_LS = """[
  {
    "name": "organization/lb-reconciler/prod.default.web",
    "current": false,
    "lastUpdate": "2026-11-22T10:52:38.757Z",
    "resourceCount": 12
  },
  {
    "name": "organization/lb-reconciler/prod.default.new",
    "current": false
  }
]"""

# Pulumi Cloud reports progress; the last update time is left out while one runs.
CLOUD_LS = """[
  {"name": "acme/lb-reconciler/prod.default.web", "current": true, "updateInProgress": true,
   "resourceCount": 9, "url": "https://app.pulumi.com/acme/lb-reconciler/prod.default.web"},
  {"name": "prod.default.db", "current": false, "lastUpdate": "2026-01-02T03:04:05.000+01:00",
   "updateInProgress": false}
]"""


def test_parse_stack_ls_of_a_file_backend() -> None:
    web, new = parse_stack_ls(FILE_BACKEND_LS)
    assert web == StackListing(
        name="prod.default.web",
        qualified="organization/lb-reconciler/prod.default.web",
        last_update=datetime(2026, 11, 22, 10, 52, 38, 757000, tzinfo=UTC),
        update_in_progress=False,
        resource_count=12,
    )
    assert (new.name, new.last_update, new.resource_count) == ("prod.default.new", None, None)


def test_parse_stack_ls_with_progress() -> None:
    web, db = parse_stack_ls(CLOUD_LS)
    assert (web.name, web.update_in_progress, web.last_update) == ("prod.default.web", True, None)
    assert web.resource_count == 9
    assert db.name == db.qualified == "prod.default.db"
    assert not db.update_in_progress
    assert db.last_update is not None
    assert db.last_update.astimezone(UTC) == datetime(2026, 1, 2, 2, 4, 5, tzinfo=UTC)


@pytest.mark.parametrize("text", ["", "  \n", "[]"])
def test_parse_stack_ls_empty(text: str) -> None:
    assert parse_stack_ls(text) == []


@pytest.mark.parametrize("text", ["{}", "[1]", '[{"current": true}]', "not json", '"x"'])
def test_parse_stack_ls_rejects_what_it_does_not_know(text: str) -> None:
    with pytest.raises(ValueError, match="pulumi stack ls --json"):
        parse_stack_ls(text)


def test_parse_stack_ls_tolerates_odd_fields() -> None:
    (only,) = parse_stack_ls(
        '[{"name": "a.b.c", "lastUpdate": "yesterday", "resourceCount": "3",'
        ' "updateInProgress": "yes"}]'
    )
    assert (only.last_update, only.resource_count, only.update_in_progress) == (None, None, False)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            '{"version":1,"tags":{"lbr:cluster":"c1","lbr:uid":"u1"}}',
            {"lbr:cluster": "c1", "lbr:uid": "u1"},
        ),
        ('{"version":1,"tags":null}', {}),
        ('{"version":1}', {}),
        ('{"version":2,"tags":{"a":"b"}}', None),
        ('{"tags":{"a":"b"}}', None),
        ('{"version":1,"tags":[1]}', None),
        ("", None),
        ("[]", None),
    ],
)
def test_parse_tags_file(text: str, expected: dict[str, str] | None) -> None:
    assert parse_tags_file(text) == expected


LISTING = StackListing(
    "prod.default.web", "organization/lb-reconciler/prod.default.web", None, False, 7
)
TAGS = stack_tags(cluster_name="prod", namespace="default", name="web", uid=UID)


def test_stack_info_after_a_successful_up() -> None:
    tags = {
        **TAGS,
        LB_ID_TAG: "lb-1",
        SHARED_TAG: "false",
        OWNS_TAG: "lb-1",
        HASH_TAG: "abc",
        EXTERNAL_IP_TAG: "203.0.113.7",
    }
    info = stack_info(LISTING, tags, cluster_name="prod", locked=False)
    assert info == StackInfo(
        stack="prod.default.web",
        namespace="default",
        name="web",
        uid=UID,
        lb_id="lb-1",
        shared=False,
        owns_lb="lb-1",
        spec_hash="abc",
        last_update=None,
        update_in_progress=False,
        resource_count=7,
        locked=False,
        external_ip="203.0.113.7",
        qualified=LISTING.qualified,
    )
    assert info.key == "default/web"
    assert not info.busy


def test_stack_info_before_the_first_up_finished() -> None:
    info = stack_info(LISTING, TAGS, cluster_name="prod", locked=None)
    assert info is not None
    assert (info.lb_id, info.shared, info.owns_lb, info.spec_hash) == (None, False, None, None)


def test_stack_info_of_a_sharer() -> None:
    tags = {**TAGS, LB_ID_TAG: "lb-1", SHARED_TAG: "true", HASH_TAG: "abc"}
    info = stack_info(LISTING, tags, cluster_name="prod", locked=None)
    assert info is not None
    assert (info.lb_id, info.shared, info.owns_lb) == ("lb-1", True, None)


@pytest.mark.parametrize(
    ("locked", "in_progress", "busy"),
    [(None, False, False), (False, False, False), (True, False, True), (None, True, True)],
)
def test_busy(locked: bool | None, in_progress: bool, busy: bool) -> None:
    listing = StackListing("a.b.c", "a.b.c", None, in_progress, None)
    tags = stack_tags(cluster_name="a", namespace="b", name="c", uid="")
    info = stack_info(listing, tags, cluster_name="a", locked=locked)
    assert info is not None
    assert info.busy is busy


def test_stack_info_leaves_out_other_clusters_and_half_tagged_stacks() -> None:
    assert stack_info(LISTING, TAGS, cluster_name="staging", locked=None) is None
    half = {k: v for k, v in TAGS.items() if k != "lbr:name"}
    assert stack_info(LISTING, half, cluster_name="prod", locked=None) is None
    no_uid = {k: v for k, v in TAGS.items() if k != "lbr:uid"}
    info = stack_info(LISTING, no_uid, cluster_name="prod", locked=None)
    assert info is not None
    assert info.uid == ""


@given(
    st.lists(
        st.fixed_dictionaries(
            {
                "name": st.from_regex(
                    r"([a-z]+/[a-z-]+/)?[a-z0-9]+\.[a-z0-9-]+\.[a-z0-9-]+", fullmatch=True
                )
            },
            optional={
                "lastUpdate": st.datetimes(timezones=st.just(UTC)).map(
                    lambda d: d.isoformat(timespec="milliseconds").replace("+00:00", "Z")
                ),
                "resourceCount": st.integers(0, 10_000),
                "updateInProgress": st.booleans(),
                "current": st.booleans(),
            },
        ),
        max_size=20,
    )
)
def test_parse_stack_ls_round_trips(entries: list[dict[str, object]]) -> None:
    parsed = parse_stack_ls(json.dumps(entries))
    assert [p.qualified for p in parsed] == [e["name"] for e in entries]
    for p, e in zip(parsed, entries, strict=True):
        assert "/" not in p.name
        assert p.qualified.endswith(p.name)
        assert p.resource_count == e.get("resourceCount")
        assert p.update_in_progress is (e.get("updateInProgress") is True)
        assert (p.last_update is None) == ("lastUpdate" not in e)


# --- reading a file:// backend ------------------------------------------------------------------


def _backend(tmp_path: Path) -> tuple[StateStore, Path]:
    root = tmp_path / "backend"
    (root / ".pulumi" / "stacks" / "lb-reconciler").mkdir(parents=True)
    store = open_state_store(root.as_uri())
    assert store is not None
    return store, root


def test_tags_from_the_store(tmp_path: Path) -> None:
    store, root = _backend(tmp_path)
    folder = root / ".pulumi" / "stacks" / "lb-reconciler"
    (folder / "prod.default.web.pulumi-tags").write_text(json.dumps({"version": 1, "tags": TAGS}))
    (folder / "prod.default.odd.pulumi-tags").write_text('{"version": 9}')
    assert store.tags("prod.default.web") == TAGS
    assert store.tags("prod.default.odd") is None  # unknown format: ask the CLI
    assert store.tags("prod.default.gone") == {}  # none: as the CLI lists it
    assert store.all_tags() == {"prod.default.web": TAGS, "prod.default.odd": None}


def _lock(root: Path, stack: str, name: str, content: str) -> None:
    folder = root / ".pulumi" / "locks" / "organization" / "lb-reconciler" / stack
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(content)


def _dead_pid() -> int:
    pid = 2**22 - 7
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return pid
        except PermissionError:
            pass
        pid -= 1


def test_locked(tmp_path: Path) -> None:
    """As anyone but the leader sees it: only a dead process's lock of this host is stale."""
    store, root = _backend(tmp_path)
    host = socket.gethostname()

    def is_locked(stack: str, *, leader: bool = False) -> bool | None:
        assert store.all_locks().get(stack, []) == store.list_locks(stack)
        return locked(store.list_locks(stack), rule=LeaderRule() if leader else None)

    assert is_locked("prod.default.free") is False
    assert locked(None, rule=None) is None  # a backend whose locks cannot be listed

    live = json.dumps({"pid": os.getpid(), "hostname": host})
    _lock(root, "prod.default.live", "a.json", live)
    assert is_locked("prod.default.live") is True

    stale = json.dumps({"pid": _dead_pid(), "hostname": host})
    _lock(root, "prod.default.stale", "a.json", stale)
    assert is_locked("prod.default.stale") is False  # the next operation removes it

    _lock(root, "prod.default.remote", "a.json", json.dumps({"pid": 1, "hostname": "elsewhere"}))
    assert is_locked("prod.default.remote") is True

    _lock(root, "prod.default.torn", "a.json", '{"pid": ')
    assert is_locked("prod.default.torn") is True

    # the leader: this process's own lock that it does not hold (a failed removal left it) and
    # a dead process's of this host are stale; another host's that is no replica's, and a torn
    # record, are never its own
    assert is_locked("prod.default.live", leader=True) is False
    assert is_locked("prod.default.stale", leader=True) is False
    assert is_locked("prod.default.remote", leader=True) is True
    assert is_locked("prod.default.torn", leader=True) is True


def test_a_checkpoint_listed_as_the_cli_lists_it() -> None:
    """``listing_of`` of a stack's latest deployment: what ``pulumi stack ls --json --all``
    prints of it (the manifest time to the millisecond, the resources counted)."""
    deployment = {
        "manifest": {"time": "2026-11-22T10:52:38.757641201Z", "version": "v3.259.0"},
        "resources": [{"urn": "a"}, {"urn": "b"}],
    }
    web = listing_of("prod.default.web", deployment)
    (cli,) = parse_stack_ls(FILE_BACKEND_LS)[:1]
    assert web == replace(cli, resource_count=2)


@pytest.mark.parametrize(
    ("deployment", "when", "count"),
    [
        (None, None, None),  # `stack init` only: no deployment
        ({"manifest": {"time": "0001-01-01T00:00:00Z"}}, None, 0),  # Go's zero time
        ({"manifest": {}, "resources": None}, None, 0),
        ({"manifest": {"time": "2026-01-02T03:04:05+01:00"}, "resources": []}, 1, 0),
    ],
)
def test_a_checkpoint_without_time_or_resources(
    deployment: dict[str, object] | None, when: int | None, count: int | None
) -> None:
    got = listing_of("s", deployment)
    assert got.qualified == "organization/lb-reconciler/s"
    assert got.resource_count == count
    assert got.update_in_progress is False
    if when is None:
        assert got.last_update is None
    else:
        assert got.last_update == datetime(2026, 1, 2, 2, 4, 5, tzinfo=UTC)

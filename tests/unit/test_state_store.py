"""The state store's pure parts: backend URLs to buckets and key prefixes, lock records, keys.

(Each kind of backend against the real CLI and servers: tests/integration/backends/.)
"""

from __future__ import annotations

import gzip
import json
import os
import re
import socket
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from reconciler.engine.state.bucket import (
    StoredObject,
    found_by_listing,
    key_prefix,
    redacted_url,
)
from reconciler.engine.state.folder import STAGING, FileBucket
from reconciler.engine.state.lock_plan import parse_lock
from reconciler.engine.state.postgres import PostgresBucket, _pg_connect_args
from reconciler.engine.state.s3 import S3Bucket
from reconciler.engine.state.stacks import (
    history_time,
    locked,
    record_update,
    remove_stack,
    write_stack,
)
from reconciler.engine.state.store import (
    BucketError,
    StateStore,
    WriteConflictError,
    open_state_store,
)
from stacks.vocabulary import PROJECT


@pytest.mark.parametrize(
    ("url", "prefix"),
    [
        ("s3://bucket", ""),
        ("s3://bucket/", ""),
        ("s3://bucket/state", "state/"),
        ("s3://bucket/a/b/?region=x", "a/b/"),
        ("s3://bucket/a?prefix=p-", "p-a/"),  # gocloud's prefix first, then the CLI's folder
        ("postgres://u:p@h:5432/lbr?sslmode=disable", "lbr/"),  # the database name
        ("postgres://u:p@h:5432", ""),
    ],
)
def test_the_key_prefix_is_the_clis(url: str, prefix: str) -> None:
    assert key_prefix(url) == prefix


def test_each_scheme_gets_its_bucket(tmp_path: Path) -> None:
    kinds = {
        tmp_path.as_uri(): FileBucket,
        "s3://bucket/state?endpoint=127.0.0.1:9&disableSSL=true": S3Bucket,
        "postgres://u:p@127.0.0.1:9/db": PostgresBucket,
    }
    for url, kind in kinds.items():
        store = open_state_store(url, env={})  # connects to nothing
        assert store is not None
        assert isinstance(store.bucket, kind)
    for url in ("https://api.pulumi.com", "gs://bucket", "azblob://container"):
        assert open_state_store(url) is None  # the CLI alone reads these


def test_file_urls_as_the_cli_reads_them(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    assert FileBucket.from_url("file://~/state").root == tmp_path / "state"
    assert FileBucket.from_url("file:///srv/a%20b?no_tmp_dir=false").root == Path("/srv/a b")


def test_passwords_stay_out_of_messages() -> None:
    url = "postgres://lbr:s3cr%2Ft@db.example:5432/lbr?sslmode=require"
    assert redacted_url(url) == "postgres://lbr:****@db.example:5432/lbr?sslmode=require"
    assert PostgresBucket(url, env={}).url == redacted_url(url)
    assert redacted_url("s3://bucket/x?region=y") == "s3://bucket/x?region=y"


def test_postgres_urls_as_the_clis_driver_reads_them() -> None:
    args = _pg_connect_args(
        "postgres://lbr:p%40ss@db:6432/state?sslmode=verify-full&table=T&search_path=pulumi"
        "&application_name=lbr",
        {"PGPASSWORD": "ignored", "PGCONNECT_TIMEOUT": "3", "PGSSLROOTCERT": "/ca.pem"},
    )
    assert args == {
        "host": "db",
        "port": "6432",
        "user": "lbr",
        "password": "p@ss",  # the URL's, not the environment's
        "dbname": "state",
        "sslmode": "verify-full",
        "application_name": "lbr",
        "options": "-c search_path=pulumi",  # lib/pq sends unknown parameters as settings
        "sslrootcert": "/ca.pem",
        "connect_timeout": "3",
    }
    bare = _pg_connect_args("postgres://", {"PGHOST": "h", "PGUSER": "u", "PGPASSWORD": "p"})
    assert bare == {"host": "h", "user": "u", "password": "p"}


def test_every_postgres_request_is_bounded_by_the_store_s_timeout() -> None:
    """No statement, connect or silent peer may outlast the timeout the engine sizes from the
    Lease (libpq's defaults wait for ever); the URL's own settings are kept beside them."""
    bucket = PostgresBucket("postgres://u@h/db?search_path=pulumi", env={}, timeout=3.0)
    args = bucket._connect_args
    assert args["connect_timeout"] == "3"
    assert args["tcp_user_timeout"] == "3000"
    assert (args["keepalives"], args["keepalives_idle"], args["keepalives_count"]) == (
        "1",
        "3",
        "2",
    )
    assert args["options"] == "-c search_path=pulumi -c statement_timeout=3000"
    assert bucket.write_bound == 3.0
    # libpq's shortest connect timeout is 2 s; the user's own choice wins
    fast = PostgresBucket("postgres://u@h/db?connect_timeout=7", env={}, timeout=0.5)
    assert fast._connect_args["connect_timeout"] == "7"
    assert fast._connect_args["options"] == "-c statement_timeout=500"
    assert (
        PostgresBucket("postgres://u@h/db", env={}, timeout=0.5)._connect_args["connect_timeout"]
        == "2"
    )


def test_every_s3_request_is_bounded_by_the_store_s_timeout() -> None:
    """Two attempts of a connect and a read each within a quarter of the timeout (botocore's
    defaults are 60 s each and more attempts)."""
    bucket = S3Bucket("s3://b?endpoint=127.0.0.1:9&disableSSL=true", env={}, timeout=4.0)
    config = bucket._s3().meta.config
    assert (config.connect_timeout, config.read_timeout) == (1.0, 1.0)
    assert config.retries["total_max_attempts"] == 2
    assert bucket.write_bound == 4.0


@pytest.mark.parametrize(
    ("table", "parts"),
    [("", ("pulumi_state",)), ("Team_State", ("team_state",)), ("ops.state", ("ops", "state"))],
)
def test_the_table_is_the_one_the_cli_makes(table: str, parts: tuple[str, ...]) -> None:
    url = "postgres://u@h/db" + (f"?table={table}" if table else "")
    assert PostgresBucket(url, env={}).table == parts


def test_a_table_name_that_is_not_plain_sql_is_refused() -> None:
    with pytest.raises(BucketError, match=r"table 'x; drop' is not a plain SQL name"):
        PostgresBucket("postgres://u@h/db?table=x;%20drop", env={})


def test_an_s3_url_needs_a_bucket() -> None:
    with pytest.raises(BucketError, match="no bucket name"):
        S3Bucket("s3:///state", env={})


def test_a_folder_lists_the_keys_that_start_with_the_prefix(tmp_path: Path) -> None:
    """As a bucket lists: by key, across folders, the prefix ending mid-name or mid-folder;
    the blob library's sidecars left out."""
    for key in [
        "s/p/a.json",
        "s/p/a.json.gz",
        "s/p/a.json.attrs",
        "s/p/ab.json",
        "s/p/b.json",
        "s/p/a/x.json",
        "s/p/ab/y.json",
        "s/pq/a.json",
        "h/p/a/1.json",
    ]:
        (tmp_path / key).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / key).write_text("{}")
    bucket = FileBucket(tmp_path, url=f"file://{tmp_path}")

    def keys(prefix: str) -> list[str]:
        return [o.key for o in bucket.list(prefix)]

    assert keys("s/p/a.json") == ["s/p/a.json", "s/p/a.json.gz"]
    assert keys("s/p/a") == [
        "s/p/a.json",
        "s/p/a.json.gz",
        "s/p/a/x.json",
        "s/p/ab.json",
        "s/p/ab/y.json",
    ]
    assert keys("s/p/") == [
        "s/p/a.json",
        "s/p/a.json.gz",
        "s/p/a/x.json",
        "s/p/ab.json",
        "s/p/ab/y.json",
        "s/p/b.json",
    ]
    assert keys("s/p") == [*keys("s/p/"), "s/pq/a.json"]
    assert keys("") == ["h/p/a/1.json", *keys("s/")]
    assert keys("s/none") == []
    assert keys("x/y/") == []


def test_lock_records() -> None:
    data = json.dumps(
        {
            "pid": 42,
            "username": "root",
            "hostname": "node-a",
            "timestamp": "2026-11-24T17:03:24.788123456+01:00",
        }
    ).encode()
    lock = parse_lock(data.decode(), stack="c.ns.web", key="k")
    assert (lock.pid, lock.hostname, lock.username, lock.readable) == (42, "node-a", "root", True)
    assert lock.timestamp == datetime(2026, 11, 24, 16, 3, 24, 788123, tzinfo=UTC)
    for unreadable in ("", '{"pid": ', "[]", '{"pid": "x", "hostname": "h"}'):
        torn = parse_lock(unreadable, stack="c.ns.web", key="k")
        assert not torn.readable  # being written, a temporary file, or gone


def test_only_lock_objects_can_be_deleted_as_locks(tmp_path: Path) -> None:
    store = StateStore(FileBucket(tmp_path, url=tmp_path.as_uri()))
    lock = tmp_path / ".pulumi/locks/organization/lb-reconciler/c.ns.web/u.json"
    lock.parent.mkdir(parents=True)
    lock.write_text("{}")
    for key in (
        ".pulumi/stacks/lb-reconciler/c.ns.web.json",
        ".pulumi/locks/organization/lb-reconciler/c.ns.web",
        ".pulumi/locks/organization/lb-reconciler/../x/u.json",
        ".pulumi/locks/organization/other-project/c.ns.web/u.json",
    ):
        with pytest.raises(ValueError, match="not a lock"):
            store.delete_lock(key)
    store.delete_lock(".pulumi/locks/organization/lb-reconciler/c.ns.web/u.json")
    assert not lock.exists()
    store.delete_lock(".pulumi/locks/organization/lb-reconciler/c.ns.web/u.json")  # gone: fine


def test_file_keys_stay_inside_the_backend(tmp_path: Path) -> None:
    bucket = FileBucket(tmp_path / "b", url="file://b")
    with pytest.raises(BucketError, match="outside the backend"):
        bucket.read("../secret")


def test_an_old_layout_is_refused_with_the_fix(tmp_path: Path) -> None:
    store = StateStore(FileBucket(tmp_path, url=tmp_path.as_uri()))
    store.check_layout()  # new: fine
    (tmp_path / ".pulumi").mkdir()
    (tmp_path / ".pulumi/meta.yaml").write_text("version: 1\n")
    store.check_layout()
    (tmp_path / ".pulumi/meta.yaml").write_text("version: 0\n")
    with pytest.raises(BucketError, match="pulumi state upgrade"):
        store.check_layout()


STORE_MODULES = {"store.py", "layout.py", "bucket.py", "folder.py", "s3.py", "postgres.py"}


def test_only_the_store_knows_the_layout() -> None:
    """No module outside reconciler/engine/state/ names a key of Pulumi's DIY layout, and only
    its store uses the buckets (docs/operations.md, "Choosing a backend")."""
    root = Path(__file__).resolve().parents[2]
    layout = re.compile(r"""["'/]\.pulumi["'/]|\.pulumi-tags|locks/organization|\.attrs["']""")
    wrong = []
    for top in ("reconciler", "stacks", "bench", "emulator"):
        for path in sorted((root / top).rglob("*.py")):
            text = path.read_text()
            if path.name in STORE_MODULES and path.parent.name == "state":
                continue
            code = "\n".join(  # PULUMI_HOME's ~/.pulumi is the CLI's home, not the backend's
                line
                for line in text.splitlines()
                if not line.lstrip().startswith(("#", "*")) and "PULUMI_HOME" not in line
            )
            if layout.search(code):
                wrong.append(f"{path.relative_to(root)} names the layout")
            if (
                re.search(r"engine\.state\.(bucket|folder|s3|postgres)\b", code)
                and path.parent.name != "state"
            ):
                wrong.append(f"{path.relative_to(root)} uses a bucket")
    assert wrong == []


def test_the_lock_the_store_takes_names_this_process(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """What ``remove_stack`` writes reads back as this process's lock, also for a container's
    UID with no user name (getpass fails there)."""
    store = StateStore(FileBucket(tmp_path, url=f"file://{tmp_path}"))
    seen = []
    real = store.bucket.delete

    def delete(key: str) -> None:
        seen.extend(store.list_locks("c.ns.web"))
        real(key)

    monkeypatch.setattr(store.bucket, "delete", delete)

    def nameless() -> str:
        raise KeyError("getpwuid(): uid not found: 1000650000")

    monkeypatch.setattr("getpass.getuser", nameless)
    assert remove_stack(store, "c.ns.web") == []  # nothing there: only its own lock went
    (lock,) = seen
    assert (lock.pid, lock.username) == (os.getpid(), str(os.getuid()))
    assert lock.hostname == socket.gethostname()
    assert lock.timestamp is not None
    assert store.list_locks("c.ns.web") == []


def test_a_folder_syncs_the_record_and_not_its_copies(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """What a members change writes (:mod:`reconciler.engine.members_direct`): the checkpoint and
    the tags are on disk before they replace the old ones; their sidecars, the lock, the
    checkpoint's ``.bak``, the history entry and the backups are not synced (the CLI syncs no
    object of a ``file://`` backend), nor a state written ``durable=False``. Each ``fsync`` was
    a large part of the change's time on a busy disk."""
    store = StateStore(FileBucket(tmp_path, url=tmp_path.as_uri()))
    stack = "c.ns.web"
    write_stack(store, stack, {"version": 3, "checkpoint": {"stack": stack}}, {"a": "1"})
    synced: list[str] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        name = Path(os.readlink(f"/proc/self/fd/{fd}")).name  # <final name>.<random>.tmp
        synced.append(name.rsplit(".", 2)[0])
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    read = store.read_checkpoint(stack)
    assert read is not None
    with locked(store, stack) as held:
        assert held == []
        _, tags_version = store.tags_versioned(stack)
        assert tags_version is not None
        store.write_tags(stack, {"a": "2"}, if_version=tags_version)
        marked = store.write_deployment(stack, {"resources": [], "pending_operations": []},
                                        expect=read, durable=False)  # fmt: skip
        assert synced == [Path(store.tags_key(stack)).name]
        written = store.write_deployment(stack, {"resources": []}, expect=marked)
        record_update(store, stack, written, {"kind": "update", "result": "succeeded"})
    assert synced == [Path(store.tags_key(stack)).name, f"{stack}.json"]
    kinds = {key.rsplit("/", 1)[-1] for key in (o.key for o in store.objects())}
    assert any(".history.json" in k for k in kinds), kinds  # written all the same
    assert any(k.endswith(".json.bak") for k in kinds), kinds


KILLED_MID_WRITE = """
import os, sys
from pathlib import Path
from reconciler.engine.state.folder import FileBucket
root = Path(sys.argv[1])
os.replace = lambda *a: os._exit(9)  # SIGKILLed between writing the data and the rename
FileBucket(root, url=root.as_uri()).write(sys.argv[2], b'{"pid": 1, "hostname": "h"}')
"""


def test_a_write_killed_midway_leaves_nothing_where_the_cli_lists(tmp_path: Path) -> None:
    """A lock the leader was writing when it was SIGKILLed: its temporary file was left in the
    stack's lock folder, where the CLI (and the leader's successor) counts every file as a lock
    and cannot read this one. Now writes are staged outside ``.pulumi/``."""
    key = f".pulumi/locks/organization/{PROJECT}/c.ns.web/1234.json"
    killed = subprocess.run(
        [sys.executable, "-c", KILLED_MID_WRITE, str(tmp_path), key], check=False
    )
    assert killed.returncode == 9
    store = StateStore(FileBucket(tmp_path, url=tmp_path.as_uri()))
    assert store.list_locks("c.ns.web") == []
    assert [p for p in (tmp_path / ".pulumi").rglob("*") if p.is_file()] == []
    leftovers = list((tmp_path / STAGING).iterdir())
    assert len(leftovers) == 1  # staged, never renamed
    os.utime(leftovers[0], (0, 0))  # long ago
    store.check_layout()  # opening the store sweeps it
    assert list((tmp_path / STAGING).iterdir()) == []


def _checkpoint_file(
    store: StateStore, stack: str, suffix: str, document: dict[str, object]
) -> Path:
    bucket = store.bucket
    assert isinstance(bucket, FileBucket)
    path = bucket.root / f"{store.stacks_prefix()}{stack}{suffix}"
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(document).encode()
    path.write_bytes(gzip.compress(text) if suffix.endswith(".gz") else text)
    return path


def test_the_checkpoint_is_read_where_the_cli_reads_it(tmp_path: Path) -> None:
    """pulumi's stackPath: the newest of .json, .json.gz and .json.zst (was: .json first, so a
    stack the CLI had moved to .json.gz was read from its stale .json)."""
    store = StateStore(FileBucket(tmp_path, url=tmp_path.as_uri()))
    plain = _checkpoint_file(store, "c.ns.web", ".json", {"version": 3, "checkpoint": {"n": 1}})
    packed = _checkpoint_file(store, "c.ns.web", ".json.gz", {"version": 3, "checkpoint": {"n": 2}})
    os.utime(plain, (1000, 1000))
    os.utime(packed, (2000, 2000))
    assert store.checkpoint_key("c.ns.web") == f"{store.stacks_prefix()}c.ns.web.json.gz"
    assert store.checkpoint("c.ns.web") == {"version": 3, "checkpoint": {"n": 2}}
    os.utime(plain, (3000, 3000))
    assert store.checkpoint("c.ns.web") == {"version": 3, "checkpoint": {"n": 1}}
    os.utime(plain, (2000, 2000))  # a tie: the last listed, as the CLI's listing
    assert store.checkpoint("c.ns.web") == {"version": 3, "checkpoint": {"n": 2}}
    (tmp_path / f"{store.stacks_prefix()}c.ns.web.json.zst").write_bytes(b"\x28\xb5\x2f\xfd")
    assert store.read_checkpoint("c.ns.web") is None  # newest is zstd: this code does not read it


def test_the_checkpoint_version_is_the_one_a_read_gives(tmp_path: Path) -> None:
    """A writer's check that no one wrote since it read, without parsing the state again."""
    store = StateStore(FileBucket(tmp_path, url=tmp_path.as_uri()))
    assert store.checkpoint_version("c.ns.web") is None
    path = _checkpoint_file(store, "c.ns.web", ".json", {"version": 3, "checkpoint": {"n": 1}})
    read = store.read_checkpoint("c.ns.web")
    assert read is not None
    assert store.checkpoint_version("c.ns.web") == (read.key, read.version)
    path.write_text('{"version": 3, "checkpoint": {"n": 2}}')
    assert store.checkpoint_version("c.ns.web") not in (None, (read.key, read.version))


def test_one_stack_s_checkpoint_is_found_without_listing_every_stack(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A restart reads each stack's checkpoint once: a listing of the stacks' folder per stack
    cost 6 ms each at 2,000 stacks (most of the restart's CPU). On a folder, the three keys a
    checkpoint can be under are looked at, as the CLI picks among them."""
    store = StateStore(FileBucket(tmp_path, url=tmp_path.as_uri()))
    doc = {"version": 3, "checkpoint": {}}
    os.utime(_checkpoint_file(store, "c.ns.web", ".json", doc), (2000, 2000))
    os.utime(_checkpoint_file(store, "c.ns.web", ".json.gz", doc), (2000, 2000))
    _checkpoint_file(store, "c.ns.other", ".json", doc)
    base = f"{store.stacks_prefix()}c.ns.web"
    keys = [base + ".json.zst", base + ".json", base + ".json.gz", base + ".json.bak"]
    # S3 and PostgreSQL find by one listing: the same objects
    assert found_by_listing(store.bucket, keys) == store.bucket.find(keys)
    assert [o.key for o in store.bucket.find(keys)] == [base + ".json", base + ".json.gz"]
    assert found_by_listing(store.bucket, []) == []

    def listed(self: FileBucket, prefix: str) -> list[StoredObject]:
        raise AssertionError(f"listed {prefix}")

    monkeypatch.setattr(FileBucket, "list", listed)
    prefix = store.stacks_prefix()
    assert store.checkpoint_key("c.ns.web") == f"{prefix}c.ns.web.json.gz"  # a tie: the last
    assert store.read_checkpoint("c.ns.web") is not None
    assert store.checkpoint_key("c.ns.gone") is None
    assert [o.key for o in store.bucket.find([f"{prefix}c.ns.other.json", "nothing"])] == [
        f"{prefix}c.ns.other.json"
    ]


def test_every_checkpoint_key_from_one_listing_is_the_one_read_stack_by_stack(
    tmp_path: Path,
) -> None:
    """checkpoint_keys (the fleet comparison's one listing) picks as checkpoint_key does: the
    newest suffix, the last listed on a tie; names with dots; backups and history ignored."""
    store = StateStore(FileBucket(tmp_path, url=tmp_path.as_uri()))
    doc = {"version": 3, "checkpoint": {}}
    times = {"c.ns.a": (1000, 2000), "c.ns.b": (3000, 3000), "c.ns.web.v2": (2000, 1000)}
    for stack, (plain_at, packed_at) in times.items():
        os.utime(_checkpoint_file(store, stack, ".json", doc), (plain_at, plain_at))
        os.utime(_checkpoint_file(store, stack, ".json.gz", doc), (packed_at, packed_at))
    _checkpoint_file(store, "c.ns.only", ".json", doc)
    _checkpoint_file(store, "c.ns.a", ".json.bak", doc)
    _checkpoint_file(store, "c.ns.a/history", ".json", doc)  # not a stack of the folder
    keys = store.checkpoint_keys()
    assert keys == {name: store.checkpoint_key(name) for name in store.stack_names()}
    assert sorted(keys) == ["c.ns.a", "c.ns.b", "c.ns.only", "c.ns.web.v2"]
    prefix = store.stacks_prefix()
    assert keys["c.ns.a"] == f"{prefix}c.ns.a.json.gz"
    assert keys["c.ns.b"] == f"{prefix}c.ns.b.json.gz"  # a tie: the last listed
    assert keys["c.ns.web.v2"] == f"{prefix}c.ns.web.v2.json"


def test_a_deployment_is_written_over_the_checkpoint_it_was_read_from_only(tmp_path: Path) -> None:
    store = StateStore(FileBucket(tmp_path, url=tmp_path.as_uri()))
    _checkpoint_file(store, "c.ns.web", ".json", {"version": 3, "checkpoint": {"latest": {"n": 1}}})
    read = store.read_checkpoint("c.ns.web")
    assert read is not None
    written = store.write_deployment("c.ns.web", {"n": 2}, expect=read)
    assert store.deployment("c.ns.web") == {"n": 2}
    bak = tmp_path / f"{store.stacks_prefix()}c.ns.web.json.bak"
    assert bak.read_bytes() == read.raw  # the CLI's saveCheckpoint: the one replaced, kept
    # a writer that read before the other wrote: refused, nothing replaced
    with pytest.raises(WriteConflictError):
        store.write_deployment("c.ns.web", {"n": 3}, expect=read)
    assert store.deployment("c.ns.web") == {"n": 2}
    assert store.write_deployment("c.ns.web", {"n": 4}, expect=written).deployment == {"n": 4}


def test_tags_are_written_over_the_version_read_only(tmp_path: Path) -> None:
    store = StateStore(FileBucket(tmp_path, url=tmp_path.as_uri()))
    version = store.write_tags("c.ns.web", {"a": "1"})
    assert store.tags_versioned("c.ns.web") == ({"a": "1"}, version)
    store.write_tags("c.ns.web", {"a": "2"})  # another writer
    with pytest.raises(WriteConflictError):
        store.write_tags("c.ns.web", {"a": "3"}, if_version=version)
    assert store.tags("c.ns.web") == {"a": "2"}


def test_stack_names_are_the_checkpoints_the_cli_lists(tmp_path: Path) -> None:
    """One per checkpoint (.json, .json.gz, .json.zst); backups, tags, sidecars, other
    projects' stacks and deeper folders are no stack."""
    store = open_state_store(f"file://{tmp_path}")
    base = tmp_path / ".pulumi" / "stacks" / PROJECT
    (base / "deeper").mkdir(parents=True)
    for name in (
        "web.json",
        "web.json.bak",
        "web.pulumi-tags",
        "db.json.gz",
        "cache.json.zst",
        "cache.json",  # both: one stack
        "deeper/x.json",
        ".json",
    ):
        (base / name).write_text("{}")
    (tmp_path / ".pulumi" / "stacks" / "other-project").mkdir()
    (tmp_path / ".pulumi" / "stacks" / "other-project" / "theirs.json").write_text("{}")
    assert store.stack_names() == ["cache", "db", "web"]


@pytest.mark.parametrize(
    ("key", "stamp"),
    [
        (
            ".pulumi/history/p/prod.default.web/prod.default.web-1795774673672377027.history.json",
            1795774673672377027,
        ),
        ("h/prod.default.web/prod.default.web-17.checkpoint.json", 17),
        ("h/s/s-42.history.json.gz", 42),
        ("h/s-a/s-a-43.history.json.zst", 43),
        ("h/s/s.history.json", 0),  # no time: oldest
    ],
)
def test_the_time_in_a_history_object_s_name(key: str, stamp: int) -> None:
    """Stack names have dots (``<cluster>.<namespace>.<name>``) and dashes: the time is the
    digits before ``.history.json`` or ``.checkpoint.json``."""
    assert history_time(key) == stamp

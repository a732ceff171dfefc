"""`lb-reconciler stacks` rows: history parsing, flags, text and JSON rendering."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from reconciler.cli.stacks_report import LastOperation, parse_history, render_json, render_text, row
from reconciler.cli.terminal import Style
from reconciler.engine.plan import StackInfo

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)

# What pulumi v3.259 prints for `stack history --json --page-size 1` (abridged: config, env)
HISTORY = """[
    {
        "version": 3,
        "kind": "refresh",
        "startTime": "2026-11-22T11:58:00Z",
        "message": "",
        "environment": {"exec.kind": "auto.inline"},
        "config": {"openstack:password": "[secret]"},
        "result": "succeeded",
        "endTime": "2026-11-22T11:59:00Z",
        "resourceChanges": {"same": 7, "update": 1}
    }
]"""


def info(**kw: object) -> StackInfo:
    base: dict[str, object] = {
        "stack": "prod.default.web",
        "namespace": "default",
        "name": "web",
        "uid": "u",
        "lb_id": "lb-1",
        "shared": False,
        "owns_lb": "lb-1",
        "spec_hash": "abc",
        "last_update": NOW - timedelta(hours=2),
        "update_in_progress": False,
        "resource_count": 8,
        "locked": False,
        "external_ip": "203.0.113.7",
    }
    base.update(kw)
    return StackInfo(**base)  # type: ignore[arg-type]


def test_history_gives_the_newest_entry() -> None:
    last = parse_history(HISTORY)
    assert last == LastOperation(
        "refresh", "succeeded", datetime(2026, 11, 22, 11, 59, tzinfo=UTC), {"same": 7, "update": 1}
    )
    assert last.changed


def test_history_that_is_not_json_or_empty_gives_none() -> None:
    assert parse_history("") is None
    assert parse_history("[]") is None
    assert parse_history("error: no stack") is None
    assert parse_history('{"kind": "update"}') is None


def test_flags_each_mean_one_thing() -> None:
    drift = parse_history(HISTORY)
    clean = LastOperation("update", "succeeded", NOW, {"same": 8})
    failed = LastOperation("update", "failed", NOW, {})
    assert row(info(), clean).flags == ()
    # a refresh that changed the state: drift, and the skip marker is gone (not also "pending")
    assert row(info(spec_hash=None), drift).flags == ("drift",)
    assert row(info(spec_hash=None), clean).flags == ("pending",)
    assert row(info(update_in_progress=True, locked=True), clean).flags == ("locked", "pending")
    assert row(info(spec_hash=None), failed).flags == ("pending", "failed")
    # a refresh that found nothing is not drift
    same = LastOperation("refresh", "succeeded", NOW, {"same": 8})
    assert row(info(), same).flags == ()


def test_last_update_prefers_the_history_end_time() -> None:
    assert row(info(), parse_history(HISTORY)).last_update == datetime(
        2026, 11, 22, 11, 59, tzinfo=UTC
    )
    assert row(info(), None).last_update == NOW - timedelta(hours=2)


def test_text_is_a_table_with_colour_only_when_enabled() -> None:
    rows = [row(info(), None), row(info(stack="s2", name="api", spec_hash=None, lb_id=None,
                                         external_ip=None), None)]  # fmt: skip
    plain = render_text(rows, now=NOW)
    lines = plain.splitlines()
    assert lines[0].startswith("SERVICE")
    assert lines[1].split() == [
        "default/web", "lb-1", "203.0.113.7", "2h", "ago", "-", "-", "prod.default.web"
    ]  # fmt: skip
    assert lines[2].split() == ["default/api", "-", "<none>", "2h", "ago", "-", "pending", "s2"]
    coloured = render_text(rows, now=NOW, style=Style(enabled=True))
    assert "\033[33mpending" in coloured
    assert "\033[" not in plain


def test_json_has_every_column() -> None:
    (item,) = json.loads(render_json([row(info(), parse_history(HISTORY))]))
    assert item == {
        "service": "default/web",
        "stack": "prod.default.web",
        "lbId": "lb-1",
        "externalIP": "203.0.113.7",
        "lastUpdate": "2026-11-22T11:59:00+00:00",
        "lastOperation": "refresh",
        "lastResult": "succeeded",
        "flags": ["drift"],
        "resources": 8,
    }


def test_the_service_s_condition_as_a_column_and_in_json() -> None:
    from dataclasses import replace

    from reconciler.cli.stacks_report import ready_of

    kind = "lb-reconciler.io/LoadBalancerReady"
    service = {
        "status": {
            "conditions": [
                {"type": "example.com/Other", "status": "True", "reason": "Fine"},
                {"type": kind, "status": "False", "reason": "CloudError", "message": "quota"},
            ]
        }
    }
    ready = ready_of(service, kind)
    assert ready == ("False", "CloudError", "quota")
    assert ready_of({"status": {}}, kind) is None
    assert ready_of(None, kind) is None
    rows = [replace(row(info(), None), ready=ready), row(info(stack="s2", name="api"), None)]
    lines = render_text(rows, now=NOW, conditions=True).splitlines()
    assert lines[0].split()[-2:] == ["READY", "STACK"]
    assert lines[1].split()[-3:] == ["False", "CloudError", "prod.default.web"]
    assert lines[2].split()[-2:] == ["-", "s2"]
    first, second = json.loads(render_json(rows))
    assert first["ready"] == {"status": "False", "reason": "CloudError", "message": "quota"}
    assert "ready" not in second

"""``lb-reconciler stacks --history``: the entries as a person reads them."""

from __future__ import annotations

import json

from reconciler.cli.stacks_history import (
    parse_entries,
    render_history_json,
    render_history_text,
)

RECORDS = [
    {
        "kind": "refresh",
        "result": "failed",
        "startTime": 1796000000,
        "endTime": 1796000095,
        "resourceChanges": {"update": 1, "same": 6},
        "environment": {"exec.kind": "cli"},
        "version": 4,
    },
    {
        "kind": "update",
        "result": "succeeded",
        "startTime": 1795990000,
        "endTime": 1795990012,
        "resourceChanges": {"create": 7},
        "environment": {"exec.kind": "auto.inline"},
        "version": 3,
    },
]


def test_entries_newest_first_with_duration_changes_and_who() -> None:
    entries = parse_entries(json.dumps(RECORDS))
    assert entries is not None
    text = render_history_text("shop/web", "prod.shop.web", entries).splitlines()
    assert text[0] == "shop/web (stack prod.shop.web), newest first:"
    assert text[2].split() == [
        "4", "refresh", "failed", "2026-11-30", "00:53:20", "1m35s", "1", "update,", "6", "same",
        "cli",
    ]  # fmt: skip
    assert text[3].split()[1:3] == ["update", "succeeded"]
    assert "12s" in text[3]
    assert "7 create" in text[3]
    doc = json.loads(render_history_json("shop/web", "prod.shop.web", entries))
    assert doc["operations"][0]["seconds"] == 95
    assert doc["operations"][1]["by"] == "auto.inline"


def test_no_entries_and_not_history_output() -> None:
    assert render_history_text("a/b", "s", []) == "a/b (stack s): no operations recorded\n"
    assert parse_entries("not json") is None
    assert parse_entries('{"a": 1}') is None
    assert parse_entries("") == []

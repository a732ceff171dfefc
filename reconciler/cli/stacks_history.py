"""``lb-reconciler stacks --history NAMESPACE/NAME``: a Service's stack operations, newest first,
as a person reads them. Pure.

Each entry is one record of the stack's history on the backend (what ``pulumi stack history``
shows): the update's number, its kind (``update``, ``refresh``, ``destroy`` ...), result, when
it started and ended, and the resource changes it made. The controller's own operations and a
person's or CI's ``pulumi`` runs are all there; the ``exec.kind`` of an entry tells the
Automation API (``auto.inline``: the controller, ``lb-reconciler adopt``) from the CLI.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from reconciler.engine.plan import parse_time

__all__ = ["HistoryEntry", "parse_entries", "render_history_json", "render_history_text"]

_OPS = ("create", "update", "replace", "delete", "same")


@dataclass(frozen=True)
class HistoryEntry:
    version: int | None
    kind: str
    result: str
    start: datetime | None
    end: datetime | None
    changes: Mapping[str, int]
    by: str  # who ran it: the environment's exec.kind ("auto.inline", "cli"), else "-"

    @property
    def seconds(self) -> float | None:
        if self.start is None or self.end is None:
            return None
        return max(0.0, (self.end - self.start).total_seconds())


def _entry(raw: Mapping[str, Any]) -> HistoryEntry:
    changes = raw.get("resourceChanges") or {}
    environment = raw.get("environment") or {}
    version = raw.get("version")
    return HistoryEntry(
        version=int(version) if isinstance(version, int) else None,
        kind=str(raw.get("kind") or "?"),
        result=str(raw.get("result") or "?"),
        start=parse_time(raw.get("startTime")),
        end=parse_time(raw.get("endTime")),
        changes=(
            {str(k): int(v) for k, v in changes.items() if isinstance(v, int)}
            if isinstance(changes, Mapping)
            else {}
        ),
        by=str(environment.get("exec.kind") or "-") if isinstance(environment, Mapping) else "-",
    )


def parse_entries(text: str) -> list[HistoryEntry] | None:
    """The entries of ``pulumi stack history --json`` output; None when it is not that."""
    try:
        raw = json.loads(text) if text.strip() else []
    except ValueError:
        return None
    if not isinstance(raw, list):
        return None
    return [_entry(item) for item in raw if isinstance(item, Mapping)]


def _changes(entry: HistoryEntry) -> str:
    parts = [f"{entry.changes[op]} {op}" for op in _OPS if entry.changes.get(op)]
    parts += [f"{n} {op}" for op, n in sorted(entry.changes.items()) if op not in _OPS and n]
    return ", ".join(parts) or "-"


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 60:
        return f"{seconds:.0f}s"
    return f"{int(seconds // 60)}m{int(seconds % 60):02d}s"


def render_history_text(service: str, stack: str, entries: Sequence[HistoryEntry]) -> str:
    if not entries:
        return f"{service} (stack {stack}): no operations recorded\n"
    header = ("#", "OPERATION", "RESULT", "STARTED (UTC)", "TOOK", "CHANGES", "BY")
    table = [
        (
            str(e.version) if e.version is not None else "-",
            e.kind,
            e.result,
            e.start.strftime("%Y-%m-%d %H:%M:%S") if e.start else "-",
            _duration(e.seconds),
            _changes(e),
            e.by,
        )
        for e in entries
    ]
    widths = [max(len(line[i]) for line in [header, *table]) for i in range(len(header))]
    out = [f"{service} (stack {stack}), newest first:"]
    for line in [header, *table]:
        out.append("   ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip())
    return "\n".join(out) + "\n"


def render_history_json(service: str, stack: str, entries: Sequence[HistoryEntry]) -> str:
    items = [
        {
            "version": e.version,
            "operation": e.kind,
            "result": e.result,
            "started": e.start.isoformat() if e.start else None,
            "ended": e.end.isoformat() if e.end else None,
            "seconds": e.seconds,
            "changes": dict(e.changes),
            "by": e.by,
        }
        for e in entries
    ]
    return json.dumps({"service": service, "stack": stack, "operations": items}, indent=2) + "\n"

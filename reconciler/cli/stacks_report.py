"""``lb-reconciler stacks``: one row per Service stack, as data, text or JSON. Pure.

A row joins the listing (:class:`~reconciler.engine.plan.StackInfo`: tags, lock, last update)
with the stack's last operation from ``pulumi stack history --json --page-size 1``
(:func:`parse_history`). Flags, each meaning one thing the operator may act on:

``locked``
    a live lock on the stack: an operation runs now (or a process on another host holds it).
``pending``
    the controller owes this stack an ``up``: an update is in progress, or the skip marker
    ``lbr:spec-hash`` is absent (removed before each ``up`` and after a refresh that found drift,
    so it is absent exactly while the last applied spec is not known to be in the cloud).
``drift``
    the last operation was a refresh that changed the state (the cloud was changed behind the
    stack's back); the controller's next ``up`` repairs it.
``failed``
    the last operation failed (its error is in the controller's Events and logs).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from reconciler.cli.terminal import Style
from reconciler.engine.plan import StackInfo, parse_time

__all__ = [
    "LastOperation",
    "StackRow",
    "parse_history",
    "ready_of",
    "render_json",
    "render_text",
    "row",
]


@dataclass(frozen=True)
class LastOperation:
    kind: str  # update, refresh, destroy, import ...
    result: str  # succeeded, failed, in-progress
    end_time: datetime | None
    changes: Mapping[str, int]

    @property
    def changed(self) -> bool:
        return any(op != "same" and n for op, n in self.changes.items())


@dataclass(frozen=True)
class StackRow:
    service: str  # namespace/name
    stack: str
    lb_id: str | None
    external_ip: str | None
    last_update: datetime | None
    last_kind: str | None
    last_result: str | None
    flags: tuple[str, ...]
    resources: int | None
    # the Service's condition lb-reconciler.io/LoadBalancerReady (--conditions): status,
    # reason, message; None when not asked, or the Service has none (or is gone)
    ready: tuple[str, str, str] | None = None


def parse_history(text: str) -> LastOperation | None:
    """The newest entry of ``pulumi stack history --json``; None when there is none or the
    text is not that output."""
    try:
        raw = json.loads(text) if text.strip() else []
    except ValueError:
        return None
    if not isinstance(raw, list) or not raw or not isinstance(raw[0], Mapping):
        return None
    entry = raw[0]
    changes = entry.get("resourceChanges") or {}
    return LastOperation(
        kind=str(entry.get("kind") or "?"),
        result=str(entry.get("result") or "?"),
        end_time=parse_time(entry.get("endTime")) or parse_time(entry.get("startTime")),
        changes={str(k): int(v) for k, v in changes.items()} if isinstance(changes, dict) else {},
    )


def ready_of(
    service: Mapping[str, object] | None, condition_type: str
) -> tuple[str, str, str] | None:
    """The condition ``condition_type`` of a Service object: (status, reason, message)."""
    status = (service or {}).get("status")
    conditions = status.get("conditions") if isinstance(status, Mapping) else None
    for item in conditions if isinstance(conditions, list) else []:
        if isinstance(item, Mapping) and item.get("type") == condition_type:
            return (
                str(item.get("status") or "Unknown"),
                str(item.get("reason") or ""),
                str(item.get("message") or ""),
            )
    return None


def row(info: StackInfo, last: LastOperation | None) -> StackRow:
    flags = []
    if info.locked:
        flags.append("locked")
    drift = last is not None and last.kind == "refresh" and last.changed
    if info.update_in_progress or (info.spec_hash is None and not drift):
        flags.append("pending")
    if drift:
        flags.append("drift")
    if last is not None and last.result == "failed":
        flags.append("failed")
    return StackRow(
        service=info.key,
        stack=info.stack,
        lb_id=info.lb_id,
        external_ip=info.external_ip,
        last_update=(last.end_time if last is not None and last.end_time else info.last_update),
        last_kind=last.kind if last is not None else None,
        last_result=last.result if last is not None else None,
        flags=tuple(flags),
        resources=info.resource_count,
    )


def _ago(when: datetime | None, now: datetime) -> str:
    if when is None:
        return "-"
    seconds = max(0, int((now - when).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit} ago"
    return f"{seconds}s ago"


def render_text(
    rows: Sequence[StackRow],
    *,
    now: datetime,
    style: Style | None = None,
    conditions: bool = False,
) -> str:
    """A kubectl-style table; flag words coloured when ``style`` is enabled; ``conditions``: a
    READY column (the Service's condition: status and reason) before the stack's name."""
    style = style or Style(enabled=False)
    header: tuple[str, ...] = ("SERVICE", "LB ID", "EXTERNAL-IP", "LAST UPDATE", "RESULT", "FLAGS")
    header += ("READY", "STACK") if conditions else ("STACK",)
    table = [
        (
            r.service,
            r.lb_id or "-",
            r.external_ip or "<none>",
            _ago(r.last_update, now),
            f"{r.last_kind} {r.last_result}" if r.last_kind else "-",
            ",".join(r.flags) or "-",
            *((f"{r.ready[0]} {r.ready[1]}".strip() if r.ready else "-",) if conditions else ()),
            r.stack,
        )
        for r in rows
    ]
    widths = [max(len(line[i]) for line in [header, *table]) for i in range(len(header))]
    colours = {"failed": "red", "drift": "yellow", "pending": "yellow", "locked": "cyan"}
    out = ["   ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip()]
    for line, r in zip(table, rows, strict=True):
        cells = [cell.ljust(w) for cell, w in zip(line, widths, strict=True)]
        worst = next((c for f, c in colours.items() if f in r.flags), None)
        if worst:
            cells[5] = style(cells[5], worst)
        out.append("   ".join(cells).rstrip())
    return "\n".join(out) + "\n"


def render_json(rows: Sequence[StackRow]) -> str:
    items = [
        {
            "service": r.service,
            "stack": r.stack,
            "lbId": r.lb_id,
            "externalIP": r.external_ip,
            "lastUpdate": r.last_update.isoformat() if r.last_update else None,
            "lastOperation": r.last_kind,
            "lastResult": r.last_result,
            "flags": list(r.flags),
            "resources": r.resources,
            **(
                {"ready": dict(zip(("status", "reason", "message"), r.ready, strict=True))}
                if r.ready
                else {}
            ),
        }
        for r in rows
    ]
    return json.dumps(items, indent=2) + "\n"

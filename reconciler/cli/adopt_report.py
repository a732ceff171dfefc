"""``lb-reconciler adopt``: the result of each Service, as data, text or JSON, and the exit code.
Pure.

A Service ends in one of these states:

``adoptable``  (dry run) its OCCM objects can be imported; the preview imports them and
               replaces or deletes nothing;
``adopted``    (``--apply``) imported, and a preview of the Service's spec afterwards shows no
               change;
``managed``    a stack of this controller already holds it: nothing to adopt;
``nothing``    no load balancer is named for it: the controller will make one;
``refused``    something does not match (the problems say what and how to fix it);
``invalid``    the Service itself is invalid (as the controller would report it);
``failed``     a cloud or stack operation failed (whether it was undone is said).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field

from reconciler.cli.common import EXIT_CHANGES, EXIT_INVALID, EXIT_OK
from reconciler.cli.terminal import Style

__all__ = ["BAD", "ServiceResult", "exit_code", "render_json", "render_text"]

BAD = frozenset({"refused", "invalid", "failed"})
_COLOURS = {
    "adoptable": "yellow",
    "adopted": "green",
    "managed": "dim",
    "nothing": "dim",
    "refused": "red",
    "invalid": "red",
    "failed": "red",
}


@dataclass
class ServiceResult:
    service: str  # namespace/name
    status: str = "nothing"
    stack: str = ""
    lb_id: str | None = None
    lb_name: str | None = None
    imports: dict[str, str] = field(default_factory=dict)  # logical name -> cloud ID
    described: dict[str, str] = field(default_factory=dict)  # logical name -> what it is
    creates: list[str] = field(default_factory=list)  # logical names the up creates
    updates: list[str] = field(default_factory=list)  # allowed in-place updates
    notes: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    preview: dict[str, int] | None = None  # Pulumi's counts for the import
    after: dict[str, int] | None = None  # (--apply) the counts of the preview afterwards
    controller_skips: bool | None = None  # (--apply) the next ensure skipped: no stack operation


def exit_code(results: Sequence[ServiceResult], *, apply: bool) -> int:
    """1 on any problem; 2 when a dry run found Services to adopt; else 0."""
    if any(r.status in BAD or r.problems for r in results):
        return EXIT_INVALID
    if not apply and any(r.status == "adoptable" for r in results):
        return EXIT_CHANGES
    return EXIT_OK


def _counts(counts: dict[str, int] | None) -> str:
    if not counts:
        return "none"
    return ", ".join(f"{op} {n}" for op, n in sorted(counts.items()) if n)


def _service_text(r: ServiceResult, style: Style) -> list[str]:
    head = f"{r.service}: {style(r.status, _COLOURS.get(r.status, 'bold'), 'bold')}"
    if r.lb_id:
        head += f"  load balancer {r.lb_name or ''} ({r.lb_id})"
    lines = [head]
    width = max((len(n) for n in r.imports), default=0)
    for name, ident in r.imports.items():
        lines.append(f"    import  {name:<{width}}  {ident}  {r.described.get(name, '')}")
    for name in r.creates:
        lines.append(f"    create  {name}")
    lines.extend(f"    update  {u}" for u in r.updates)
    lines.extend(f"    note    {n}" for n in r.notes)
    lines.extend(style(f"    problem {p}", "red") for p in r.problems)
    if r.preview is not None:
        lines.append(f"    preview: {_counts(r.preview)}")
    if r.after is not None:
        lines.append(f"    preview after adopting: {_counts(r.after)}")
    if r.controller_skips is not None:
        skip = (
            "the controller's next sync skips it (the stack records this spec)"
            if r.controller_skips
            else "the controller's next sync runs an up (the recorded spec differs)"
        )
        lines.append(f"    {skip}")
    return lines


def render_text(results: Sequence[ServiceResult], *, apply: bool, style: Style) -> str:
    lines: list[str] = []
    for r in results:
        lines.extend(_service_text(r, style))
    if not results:
        lines.append("no Service of type LoadBalancer that this controller serves")
    counts: dict[str, int] = {}
    for r in results:
        counts[r.status] = counts.get(r.status, 0) + 1
    if results:
        lines.append(", ".join(f"{n} {status}" for status, n in sorted(counts.items())))
    if not apply and counts.get("adoptable"):
        lines.append("dry run: nothing was changed; run again with --apply to adopt")
    return "\n".join(lines) + "\n"


def render_json(results: Sequence[ServiceResult]) -> str:
    items = [
        {
            "service": r.service,
            "status": r.status,
            "stack": r.stack or None,
            "lbId": r.lb_id,
            "lbName": r.lb_name,
            "imports": [
                {"name": n, "id": i, "what": r.described.get(n, "")} for n, i in r.imports.items()
            ],
            "creates": list(r.creates),
            "updates": list(r.updates),
            "notes": list(r.notes),
            "problems": list(r.problems),
            "preview": r.preview,
            "after": r.after,
            "controllerSkips": r.controller_skips,
        }
        for r in results
    ]
    return json.dumps(items, indent=2) + "\n"

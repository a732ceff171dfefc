"""``lb-reconciler preview``: what each Service's preview would do, as data, text, JSON or
Markdown. Pure.

Rows. The engine reports Pulumi's steps (:class:`~reconciler.engine.preview.ResourceStep`); a
replacement comes as up to three steps of one resource (``delete-replaced``, ``replace``,
``create-replacement``), shown here as one row with op ``replace``. Pulumi's own resources (the
stack, the provider) are left out: rows are what changes in the cloud. Rows are ordered as the
stack declares them: load balancer, each port's listener, pool, members and monitor (by port),
floating IP and its association, security group.

External IP. A row set changes the Service's address when the floating IP (``fip``) is replaced
or deleted (a changed ``loadBalancerIP`` replaces it; a ``loadBalancerIP`` naming a floating IP
of the user's deletes ours and associates theirs), or when the load balancer (``lb``) is
replaced or deleted: its VIP address changes, which is the Service's address when it has no
floating IP, and the floating IP is moved to the new VIP otherwise. Each reason is one line of
:attr:`ServiceReport.external_ip`.

Not applied. A Service that asks to change a create-only field (the VIP's subnet, the flavor, the
zone, the floating IP's network ...: :mod:`reconciler.model.frozen`) previews no replacement:
the controller keeps the value the load balancer was made with, and
:attr:`ServiceReport.frozen` says so, field by field ("! not applied: ...").

Exit codes: 0 nothing would change, 2 something would, 1 the input was invalid or a preview
failed (:func:`exit_code`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from reconciler.cli.common import EXIT_CHANGES, EXIT_INVALID, EXIT_OK
from reconciler.cli.preview_plan import Skipped
from reconciler.cli.terminal import Style
from reconciler.engine.preview import REPLACING_OPS, PropertyChange, ResourceStep
from stacks.vocabulary import (
    CHAIN_PREFIXES,
    FIP,
    FIP_ASSOCIATION,
    LB,
    SECURITY_GROUP,
    SG_PORT_PREFIX,
    SG_RULE_PREFIX,
)

__all__ = [
    "PreviewReport",
    "ResourceRow",
    "ServiceReport",
    "deleted",
    "exit_code",
    "external_ip_changes",
    "render",
    "render_json",
    "render_markdown",
    "render_text",
    "rows_from_steps",
]

SYMBOLS = {"create": "+", "update": "~", "replace": "+-", "delete": "-", "import": "="}
COLOURS = {"create": "green", "update": "yellow", "replace": "red", "delete": "red"}
OPS = ("create", "update", "replace", "delete", "import")
MAX_VALUE = 60


@dataclass(frozen=True)
class ResourceRow:
    name: str  # the logical name: lb, listener-tcp-80, fip ...
    type: str  # the type's last part: LoadBalancer, Listener, FloatingIp ...
    op: str  # create, update, replace, delete, import ...
    changes: tuple[PropertyChange, ...] = ()
    replace_keys: tuple[str, ...] = ()
    old_id: str | None = None


@dataclass(frozen=True)
class ServiceReport:
    """One Service's preview. ``status``: ``changes``, ``no-changes``, ``deleted`` (no longer
    served: applying removes its load balancer) or ``failed`` (``error`` says why)."""

    key: str  # namespace/name
    where: str  # file:line
    stack: str
    status: str
    new: bool = False  # no stack yet: everything is created
    rows: tuple[ResourceRow, ...] = ()
    external_ip: tuple[str, ...] = ()
    current_ip: str | None = None
    notes: tuple[str, ...] = ()
    error: str = ""
    frozen: tuple[str, ...] = ()  # create-only fields asked to change: kept, nothing happens

    @property
    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for row in self.rows:
            out[row.op] = out.get(row.op, 0) + 1
        return out


@dataclass(frozen=True)
class PreviewReport:
    services: tuple[ServiceReport, ...] = ()
    skipped: tuple[Skipped, ...] = ()
    errors: tuple[str, ...] = ()  # input errors: nothing was previewed


# --- rows ------------------------------------------------------------------------------------

_CHAIN_RANK = {prefix: rank for rank, prefix in enumerate(CHAIN_PREFIXES)}
_CHAIN = re.compile("^(" + "|".join(map(re.escape, CHAIN_PREFIXES)) + r")([a-z]+)-(\d+)$")
_TAIL_RANK = {FIP: 0, FIP_ASSOCIATION: 1, SECURITY_GROUP: 2}


def _order(name: str) -> tuple[int, int, str, int, str]:
    if name == LB:
        return (0, 0, "", 0, name)
    chain = _CHAIN.match(name)
    if chain:
        kind, proto, port = chain.groups()
        return (1, int(port), proto, _CHAIN_RANK[kind], name)
    if name in _TAIL_RANK:
        return (2, _TAIL_RANK[name], "", 0, name)
    prefix = 3 if name.startswith(SG_RULE_PREFIX) else 4 if name.startswith(SG_PORT_PREFIX) else 5
    return (prefix, 0, "", 0, name)


def rows_from_steps(steps: Iterable[ResourceStep]) -> tuple[ResourceRow, ...]:
    """One row per cloud resource, replacements folded into one ``replace`` row."""
    grouped: dict[str, list[ResourceStep]] = {}
    for step in steps:
        if step.type.startswith("pulumi:") or step.op == "same":
            continue
        grouped.setdefault(step.name, []).append(step)
    rows = []
    for name, group in grouped.items():
        ops = [s.op for s in group]
        op = "replace" if any(o in REPLACING_OPS for o in ops) else ops[0]
        changes: dict[str, PropertyChange] = {}
        keys: set[str] = set()
        for step in group:
            for change in step.changes:
                changes.setdefault(change.path, change)
            keys.update(step.replace_keys)
        rows.append(
            ResourceRow(
                name=name,
                type=group[0].type.rsplit(":", 1)[-1],
                op=op,
                changes=tuple(changes[p] for p in sorted(changes)),
                replace_keys=tuple(sorted(keys)),
                old_id=next((s.old_id for s in group if s.old_id), None),
            )
        )
    return tuple(sorted(rows, key=lambda r: _order(r.name)))


def _new_value(row: ResourceRow | None, path: str) -> Any:
    if row is None:
        return None
    return next((c.new for c in row.changes if c.path == path and c.new is not None), None)


def external_ip_changes(rows: Sequence[ResourceRow], *, current: str | None) -> tuple[str, ...]:
    """Why the Service's address would change (empty: it would not); ``current``: its address
    now (the stack's ``lbr:external-ip``), for the message."""
    by_name = {r.name: r for r in rows}
    now = f" {current}" if current else ""
    out = []
    fip, lb = by_name.get(FIP), by_name.get(LB)
    if fip is not None and fip.op in ("replace", "delete"):
        new = _new_value(fip, "address") or _new_value(by_name.get(FIP_ASSOCIATION), "floatingIp")
        then = f"; the new address is {new}" if new else ""
        done = "replaced" if fip.op == "replace" else "deleted"
        out.append(f"the floating IP{now} is {done}{then}")
    if lb is not None and lb.op in ("replace", "delete"):
        done = "replaced" if lb.op == "replace" else "deleted"
        keys = f" ({', '.join(lb.replace_keys)} changes)" if lb.replace_keys else ""
        association = by_name.get(FIP_ASSOCIATION)
        if association is None:  # no floating IP: the VIP is the Service's address
            out.append(f"the load balancer is {done}{keys}: its VIP address{now} changes")
        elif fip is None or fip.op not in ("replace", "delete"):
            out.append(
                f"the load balancer is {done}{keys}: its VIP address changes, and the floating "
                f"IP{now} is associated with the new VIP"
            )
        else:
            out.append(f"the load balancer is {done}{keys}: its VIP address changes")
    return tuple(out)


def deleted(skipped: Skipped, *, stack: str, current_ip: str | None) -> ServiceReport:
    """A Service the controller serves today (it has a stack) whose manifest it would no longer
    serve (another type or class): applying it deletes the load balancer."""
    ip = f" {current_ip}" if current_ip else ""
    return ServiceReport(
        key=skipped.key or skipped.name,
        where=skipped.where,
        stack=stack,
        status="deleted",
        external_ip=(f"{skipped.reason}: the load balancer and its address{ip} are deleted",),
        current_ip=current_ip,
    )


def exit_code(report: PreviewReport) -> int:
    if report.errors or any(s.status == "failed" for s in report.services):
        return EXIT_INVALID
    if any(s.status in ("changes", "deleted") for s in report.services):
        return EXIT_CHANGES
    return EXIT_OK


# --- rendering -------------------------------------------------------------------------------


def _value(value: Any) -> str:
    if value is None:
        return "(none)"
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return text if len(text) <= MAX_VALUE else text[: MAX_VALUE - 3] + "..."


def _change_text(change: PropertyChange) -> str:
    text = f"{change.path}: {_value(change.old)} -> {_value(change.new)}"
    if change.kind.startswith("add") and change.old is None:
        text = f"{change.path}: {_value(change.new)} (added)"
    elif change.kind.startswith("delete") and change.new is None:
        text = f"{change.path}: {_value(change.old)} (removed)"
    return text + (" (forces replacement)" if change.replaces else "")


def _details(row: ResourceRow) -> list[str]:
    out = [_change_text(c) for c in row.changes]
    shown = {c.path for c in row.changes}
    missing = [k for k in row.replace_keys if k not in shown]
    if row.op == "replace" and missing:
        out.append(f"replaced because {', '.join(missing)} changes")
    return out


def _summary(service: ServiceReport) -> str:
    if service.status == "failed":
        return "preview failed"
    if service.status == "deleted":
        return "its load balancer is deleted on apply"
    counts = service.counts
    if not counts:
        return "no changes"
    parts = [f"{n} to {op}" for op, n in sorted(counts.items(), key=_op_order)]
    return ", ".join(parts)


def _op_order(item: tuple[str, int]) -> int:
    return OPS.index(item[0]) if item[0] in OPS else len(OPS)


def _count(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _totals(report: PreviewReport) -> str:
    changed = sum(s.status in ("changes", "deleted") for s in report.services)
    ip = sum(bool(s.external_ip) for s in report.services)
    same = sum(s.status == "no-changes" for s in report.services)
    failed = sum(s.status == "failed" for s in report.services)
    text = f"{_count(len(report.services), 'Service')}: {changed} with changes"
    if ip:
        text += f" ({ip} changing the external IP)"
    text += f", {same} unchanged"
    if failed:
        text += f", {failed} failed"
    return text + f"; {_count(len(report.skipped), 'document')} skipped"


def render_text(report: PreviewReport, *, style: Style | None = None) -> str:
    style = style or Style(enabled=False)
    out: list[str] = []
    if report.errors:
        out.append(style("invalid input, nothing was previewed:", "red", "bold"))
        out += [f"  {e}" for e in report.errors]
    for s in report.services:
        stack = "new stack" if s.new else f"stack {s.stack}"
        out.append(f"{style(s.key, 'bold')} ({s.where}, {stack}): {_summary(s)}")
        for row in s.rows:
            symbol = SYMBOLS.get(row.op, row.op)
            line = f"  {symbol:<2} {row.name:<24} {row.type:<20} {row.op}"
            out.append(style(line.rstrip(), COLOURS[row.op]) if row.op in COLOURS else line)
            out += [f"       {d}" for d in _details(row)]
        out += [style(f"  ! external IP changes: {reason}", "red") for reason in s.external_ip]
        out += [style(f"  ! not applied: {text}", "yellow") for text in s.frozen]
        if s.error:
            out.append(style(f"  error: {s.error}", "red"))
        out += [style(f"  note: {n}", "dim") for n in s.notes]
    if report.skipped:
        out.append("skipped:")
        out += [f"  {k.where} {k.kind} {k.key or k.name}: {k.reason}" for k in report.skipped]
    if not report.errors:
        out.append(_totals(report))
    return "\n".join(out) + "\n"


def render_json(report: PreviewReport) -> str:
    body = {
        "services": [
            {
                "service": s.key,
                "source": s.where,
                "stack": s.stack,
                "status": s.status,
                "new": s.new,
                "summary": s.counts,
                "externalIP": s.current_ip,
                "externalIPChanges": list(s.external_ip),
                "resources": [
                    {
                        "name": r.name,
                        "type": r.type,
                        "op": r.op,
                        "id": r.old_id,
                        "changes": [
                            {"path": c.path, "kind": c.kind, "old": c.old, "new": c.new}
                            for c in r.changes
                        ],
                        "replaceKeys": list(r.replace_keys),
                    }
                    for r in s.rows
                ],
                "notes": list(s.notes),
                "notApplied": list(s.frozen),
                "error": s.error or None,
            }
            for s in report.services
        ],
        "skipped": [
            {"source": k.where, "kind": k.kind, "name": k.key or k.name, "reason": k.reason}
            for k in report.skipped
        ],
        "errors": list(report.errors),
        "exitCode": exit_code(report),
    }
    return json.dumps(body, indent=2) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(report: PreviewReport) -> str:
    """A pull-request comment: a summary line, then a table per Service that changes."""
    out: list[str] = []
    if report.errors:
        out.append("### lb-reconciler preview: invalid input, nothing was previewed")
        out.append("")
        out += [f"- {_cell(e)}" for e in report.errors]
        return "\n".join(out) + "\n"
    out += [f"### lb-reconciler preview: {_totals(report)}", ""]
    for s in report.services:
        warn = " ⚠️ **external IP changes**" if s.external_ip else ""
        stack = "new stack" if s.new else f"stack `{s.stack}`"
        out.append(f"#### `{s.key}`: {_summary(s)}{warn}")
        out.append("")
        out.append(f"From `{s.where}`, {stack}.")
        out.append("")
        out += [f"> ⚠️ **External IP changes**: {_cell(reason)}" for reason in s.external_ip]
        if s.external_ip:
            out.append("")
        out += [f"> ⚠️ **Not applied**: {_cell(text)}" for text in s.frozen]
        if s.frozen:
            out.append("")
        if s.error:
            out += [f"> ❌ {_cell(s.error)}", ""]
        if s.rows:
            out += ["| | resource | type | change | details |", "|---|---|---|---|---|"]
            for r in s.rows:
                details = "<br>".join(_cell(f"`{d}`") for d in _details(r))
                symbol = SYMBOLS.get(r.op, "")
                out.append(f"| `{symbol}` | `{r.name}` | {r.type} | {r.op} | {details} |")
            out.append("")
        out += [f"- note: {_cell(n)}" for n in s.notes]
        if s.notes:
            out.append("")
    if report.skipped:
        out.append("<details><summary>skipped documents</summary>")
        out.append("")
        for k in report.skipped:
            out.append(f"- `{k.where}` {k.kind} `{k.key or k.name}`: {_cell(k.reason)}")
        out += ["", "</details>", ""]
    return "\n".join(out).rstrip("\n") + "\n"


def render(report: PreviewReport, fmt: str, *, style: Style | None = None) -> str:
    if fmt == "json":
        return render_json(report)
    if fmt == "markdown":
        return render_markdown(report)
    return render_text(report, style=style)

"""``lb-reconciler preflight``: the verdict on each Service, its text, JSON and Prometheus forms,
and the exit code. Pure.

A verdict says what the controller would do at its first sync of the Service, from what
``adopt``'s dry run found (:class:`~reconciler.cli.adopt_report.ServiceResult`), the Service's
external IP, and the load balancers named for it under another cluster name:

``managed``    a stack already holds it: the controller serves it today;
``take-over``  OCCM's load balancer is this cluster's and is taken over as is: same IP, and
               nothing of it created, updated or deleted;
``update``     taken over, then changed in place: same IP; the properties updated and the
               objects created (a listener for a port OCCM's load balancer lacks) are listed;
``create``     no load balancer and no external IP: a new one, as for any new Service;
``refuse``     the controller would refuse it (a Warning, retried with backoff) and change
               nothing; the reason is given;
``invalid``    the Service's spec is refused (the field and the fix);
``new-ip``     it has an external IP but no load balancer of this cluster name: the controller
               would make a new load balancer with a new IP;
``second-lb``  a load balancer is named for it under another cluster name: the controller would
               make a second one beside it (``--cluster-name`` is not OCCM's?).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace

from reconciler.cli.adopt_report import ServiceResult
from reconciler.cli.common import EXIT_CHANGES, EXIT_INVALID, EXIT_OK
from reconciler.cli.terminal import Style

__all__ = [
    "LOSES",
    "VERDICTS",
    "Verdict",
    "exit_code",
    "render_json",
    "render_prometheus",
    "render_text",
    "verdict_of",
]

VERDICTS = (
    "managed",
    "take-over",
    "update",
    "create",
    "refuse",
    "invalid",
    "new-ip",
    "second-lb",
)
LOSES = frozenset({"new-ip", "second-lb"})  # an address changes or a load balancer is doubled
ATTENTION = frozenset({"update", "refuse", "invalid"})
_COLOURS = {
    "managed": "dim",
    "take-over": "green",
    "update": "yellow",
    "create": "dim",
    "refuse": "red",
    "invalid": "red",
    "new-ip": "red",
    "second-lb": "red",
}


@dataclass(frozen=True)
class Verdict:
    service: str  # namespace/name
    verdict: str
    external_ip: str | None = None
    load_balancer: str | None = None  # "name (id)" of the one it would take over
    reasons: list[str] = field(default_factory=list)
    updates: list[str] = field(default_factory=list)
    creates: list[str] = field(default_factory=list)


def verdict_of(
    result: ServiceResult, *, external_ip: str | None, elsewhere: Sequence[str], cluster_name: str
) -> Verdict:
    """The verdict on one Service: ``result`` is adopt's dry run with updates allowed (as the
    controller's take-over allows them), ``external_ip`` its status's, ``elsewhere`` the load
    balancers named for it under other cluster names
    (:func:`reconciler.model.naming.named_under_other_clusters`)."""
    lb = f"{result.lb_name or ''} ({result.lb_id})" if result.lb_id else None
    base = Verdict(result.service, "", external_ip=external_ip, load_balancer=lb)

    def v(
        verdict: str,
        *,
        reasons: Sequence[str] = (),
        updates: Sequence[str] = (),
        creates: Sequence[str] = (),
    ) -> Verdict:
        return replace(
            base,
            verdict=verdict,
            reasons=list(reasons),
            updates=list(updates),
            creates=list(creates),
        )

    if result.status == "managed":
        return v("managed", reasons=list(result.notes))
    if result.status == "invalid":
        return v("invalid", reasons=list(result.problems))
    if result.status == "nothing":  # no load balancer of this cluster name
        if elsewhere:
            return v(
                "second-lb",
                reasons=[
                    f"no load balancer is named for it in cluster {cluster_name!r}, but "
                    f"{', '.join(elsewhere)} is: a second one would be made beside it; is "
                    "--cluster-name OCCM's?"
                ],
            )
        if external_ip:
            return v(
                "new-ip",
                reasons=[
                    f"it has the external IP {external_ip} but no load balancer is named for "
                    "it: a new load balancer with a new IP would be made"
                ],
            )
        return v("create", reasons=["a new load balancer, a new Service"])
    if result.status in ("refused", "failed") or result.problems:
        hint = (
            [
                f"{', '.join(elsewhere)} is named for it under another cluster name: is "
                "--cluster-name OCCM's?"
            ]
            if elsewhere
            else []
        )
        return v("refuse", reasons=[*result.problems, *hint])
    if result.updates or result.creates:  # deletes and replacements are refused above
        return v("update", updates=list(result.updates), creates=list(result.creates))
    return v("take-over")


def exit_code(verdicts: Sequence[Verdict]) -> int:
    """1 when a Service would get a new IP or a second load balancer; 2 when one would be
    updated, refused or is invalid (no address changes); else 0: the take-over keeps everything."""
    if any(v.verdict in LOSES for v in verdicts):
        return EXIT_INVALID
    if any(v.verdict in ATTENTION for v in verdicts):
        return EXIT_CHANGES
    return EXIT_OK


def render_text(verdicts: Sequence[Verdict], *, style: Style) -> str:
    lines = []
    for v in verdicts:
        head = f"{v.service}: {style(v.verdict, _COLOURS.get(v.verdict, 'bold'), 'bold')}"
        if v.load_balancer:
            head += f"  {v.load_balancer}"
        if v.external_ip:
            head += f"  {v.external_ip}"
        lines.append(head)
        lines += [f"    update  {u}" for u in v.updates]
        lines += [f"    create  {c}" for c in v.creates]
        lines += [f"    {r}" for r in v.reasons]
    counts = Counter(v.verdict for v in verdicts)
    summary = ", ".join(f"{counts[k]} {k}" for k in VERDICTS if counts[k]) or "no Services"
    lines.append(summary)
    return "\n".join(lines) + "\n"


def render_json(verdicts: Sequence[Verdict]) -> str:
    return json.dumps([asdict(v) for v in verdicts], indent=2) + "\n"


def render_prometheus(verdicts: Sequence[Verdict]) -> str:
    """The counts per verdict in Prometheus' text format (for node_exporter's textfile
    collector, or a Pushgateway), every verdict present so that an alert sees 0 too."""
    counts = Counter(v.verdict for v in verdicts)
    lines = [
        "# HELP lbr_preflight_services Services by what the controller would do at take-over.",
        "# TYPE lbr_preflight_services gauge",
        *(f'lbr_preflight_services{{verdict="{k}"}} {counts[k]}' for k in VERDICTS),
        "# HELP lbr_preflight_exit_code 0: everything kept; 2: updates or refusals; 1: an IP lost.",
        "# TYPE lbr_preflight_exit_code gauge",
        f"lbr_preflight_exit_code {exit_code(verdicts)}",
    ]
    return "\n".join(lines) + "\n"

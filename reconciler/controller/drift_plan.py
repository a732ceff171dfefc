"""Drift: the mode the controller runs in, and what a check's finding says to the user. Pure.

The housekeeper (:mod:`.housekeeping`) asks for a drift check of each stack once per
``--drift-interval``; :mod:`.drift` carries it out in the Service's sync. What the check is, and
what follows, is the mode (``--drift``):

``repair`` (the default)
    ``pulumi refresh`` reads the cloud into the state; a difference makes the sync's ``up`` put
    the cloud back to the Service's spec, and the Service gets a Normal ``DriftRepaired`` Event.
``report``
    ``pulumi refresh --preview-only``: the cloud is read and compared, and *nothing* is written,
    neither the state nor the cloud (the Pulumi Kubernetes Operator's ``autoRemediate: false``,
    tofu-controller's plan-only). A difference is a Warning ``DriftDetected`` naming each
    resource and property, the value in the cloud and the one in the stack, repeated at every
    check while it lasts; once a check finds the cloud matching again, a Normal
    ``DriftResolved``.
``off``
    no checks. ``--drift-interval 0`` (how drift was turned off before ``--drift`` existed)
    still means off.

``lbr_drifted_stacks`` (:mod:`.metrics`) counts the stacks known to differ from the cloud now:
in ``report`` mode from a check that found drift until one that finds none, in ``repair`` mode
until the ``up`` that repairs it succeeds.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Sequence
from typing import Any

from reconciler.controller.sync_plan import Event
from reconciler.engine.results import DriftedResource, DriftReport, PropertyDrift

__all__ = [
    "DRIFT_REPAIRED",
    "DRIFT_RESOLVED",
    "DriftMode",
    "drift_message",
    "drift_mode",
    "drift_summary",
    "report_events",
]


class DriftMode(enum.Enum):
    REPAIR = "repair"
    REPORT = "report"
    OFF = "off"


DRIFT_REPAIRED = Event(
    "Normal", "DriftRepaired", "The cloud differed from the stack (changed outside); restored"
)
DRIFT_RESOLVED = Event(
    "Normal",
    "DriftResolved",
    "The cloud matches the stack again (the drift reported before is gone)",
)
DRIFT_DETECTED = "DriftDetected"
MESSAGE_LIMIT = 1024  # as client-go's recorder cuts an Event's message
_VALUE_LIMIT = 80


def drift_mode(choice: str | None, interval: float) -> DriftMode:
    """The mode of ``--drift`` (None: not given) with ``--drift-interval``. Not given: ``repair``,
    or ``off`` when the interval is 0 (its meaning before ``--drift``). ``repair`` or ``report``
    given with an interval of 0 is a contradiction: ValueError saying what to write instead."""
    if choice is None:
        return DriftMode.OFF if interval <= 0 else DriftMode.REPAIR
    try:
        mode = DriftMode(choice)
    except ValueError:
        allowed = ", ".join(m.value for m in DriftMode)
        raise ValueError(f"--drift={choice}: expected one of {allowed}") from None
    if mode is not DriftMode.OFF and interval <= 0:
        raise ValueError(
            f"--drift={mode.value} needs a --drift-interval above 0 (how often each stack is "
            "checked), got 0; to turn drift checks off, write --drift=off"
        )
    return mode


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _value(value: Any) -> str:
    if value is None:
        return "unset"
    return _cut(json.dumps(value, sort_keys=True, separators=(",", ":"), default=str), _VALUE_LIMIT)


def _item(value: Any) -> str:
    """One element of a list property, by what names it (a member: its name and address)."""
    if isinstance(value, dict):
        named = [str(value[k]) for k in ("name", "address") if value.get(k)]
        port = value.get("protocolPort")
        if named:
            return " ".join(named) + (f":{port}" if port and value.get("address") else "")
    return _value(value)


def _property(change: PropertyDrift) -> str:
    state, cloud = change.state, change.cloud
    if isinstance(state, list) and isinstance(cloud, list):
        parts = [f"{change.name}: {len(cloud)} in the cloud, {len(state)} in the stack"]
        gone = [_item(v) for v in state if v not in cloud]
        new = [_item(v) for v in cloud if v not in state]
        if gone:
            parts.append(f"not in the cloud: {', '.join(gone)}")
        if new:
            parts.append(f"only in the cloud: {', '.join(new)}")
        return "; ".join(parts)
    return f"{change.name} is {_value(cloud)} in the cloud, {_value(state)} in the stack"


def _resource(resource: DriftedResource) -> str:
    named = f"{resource.kind} {resource.name}"
    if resource.cloud_id:
        named += f" ({resource.cloud_id})"
    if resource.deleted:
        return f"{named} is gone from the cloud"
    return f"{named}: " + "; ".join(_property(p) for p in resource.properties)


def drift_summary(report: DriftReport) -> list[str]:
    """One line per drifted resource (for logs)."""
    return [_resource(r) for r in report.resources]


def drift_message(report: DriftReport, *, limit: int = MESSAGE_LIMIT) -> str:
    """The ``DriftDetected`` message: what differs, resource by resource, within ``limit``
    characters (the resources that do not fit are counted; the log has them all)."""
    lines = drift_summary(report)

    def text(shown: list[str], left: int) -> str:
        more = f"; and {left} more (see the controller's log)" if left else ""
        return (
            "The cloud differs from the stack (changed outside lb-reconciler; reported only, "
            f"--drift=report): {'. '.join(shown)}{more}. To put the cloud back: --drift=repair, "
            "or undo the change by hand"
        )

    shown: list[str] = []
    for line in lines:
        if len(text([*shown, line], len(lines) - len(shown) - 1)) > limit:
            break
        shown.append(line)
    if not shown and lines:  # even the first does not fit alone: cut it
        room = limit - len(text([""], len(lines) - 1))
        shown = [_cut(lines[0], max(room, 1))]
    return text(shown, len(lines) - len(shown))


def report_events(report: DriftReport, *, was_drifted: bool) -> Sequence[Event]:
    """The Events of a check in ``report`` mode: a Warning while the cloud differs (the same
    message at each check, so the recorder counts it up), a Normal when it no longer does."""
    if report.drifted:
        return (Event("Warning", DRIFT_DETECTED, drift_message(report)),)
    if was_drifted:
        return (DRIFT_RESOLVED,)
    return ()

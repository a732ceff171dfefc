"""Housekeeping decisions over this cluster's stacks: orphans and drift checks. Pure.

:mod:`reconciler.controller.housekeeping` lists the stacks
(:meth:`reconciler.engine.stack.Engine.stacks`), reads the clock and the controller's Service cache,
and asks these functions what is due; nothing here does I/O or reads a clock (``now`` is a
parameter, any monotonic clock will do as long as the caller uses the same one for ``first_seen``
and ``last_checked``).

* :func:`find_orphans`: stacks no Service will ever clean up, destroyed after a grace period.
* :func:`drift_due`: stacks whose periodic refresh is due, each at its own phase in the interval.
* :func:`fleet_suspects`: after a fleet comparison (:mod:`reconciler.engine.fleet`), the stacks
  whose ``pulumi refresh`` is still needed.
* :func:`not_paused`: the stacks whose Service is not paused (``lb-reconciler.io/reconcile:
  disabled``), the only ones whose drift is checked; a paused Service's stack is no orphan either.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from reconciler.controller.sync_plan import Action, ControllerSettings, decide
from reconciler.engine.fleet_plan import Verdict
from reconciler.engine.plan import StackInfo
from reconciler.model.predicates import CLASS_FINALIZER, paused

__all__ = [
    "DriftScan",
    "OrphanScan",
    "drift_due",
    "drift_phase",
    "find_orphans",
    "fleet_suspects",
    "is_orphan",
    "not_paused",
]


@dataclass(frozen=True)
class OrphanScan:
    """``due``: orphans to destroy now (grace over, no operation running on them); ``waiting``:
    the other orphans; ``new``: orphans first seen in this scan (also in ``due`` or ``waiting``);
    ``first_seen``: the map to pass to the next scan (only current orphans, keyed by stack)."""

    due: tuple[StackInfo, ...] = ()
    waiting: tuple[StackInfo, ...] = ()
    new: tuple[StackInfo, ...] = ()
    first_seen: Mapping[str, float] = field(default_factory=dict)


def is_orphan(
    info: StackInfo, service: Mapping[str, Any] | None, *, settings: ControllerSettings
) -> bool:
    """Whether no sync of the controller will ever take care of the stack ``info``.

    The controller decides per Service with :func:`reconciler.controller.sync_plan.decide`; a stack
    is an orphan exactly when that decision leaves it alone:

    * **no Service** ``namespace/name``: it was deleted while its finalizer was removed by hand,
      or while no controller ran and someone stripped the finalizer; nothing will call ``delete``.
    * the Service **wants our load balancer** (``ENSURE``): not an orphan, *whatever its uid*.
      The stack name is per namespace and name, so a Service deleted and re-created under the
      same name reuses the stack (its ``lbr:uid`` tag still holds the old uid); the next ensure
      takes it over and re-tags it, as OCCM reuses the load balancer named after the Service.
    * the Service **holds one of our finalizers** but no longer wants the load balancer or is
      being deleted (``CLEANUP``): not an orphan; the controller's own cleanup deletes the stack
      and only then releases the finalizer (KEP-980).
    * the Service **wants none of our load balancers and holds none of our finalizers**
      (``IGNORE``: its type changed away from LoadBalancer, or its ``loadBalancerClass`` is not
      ours, and the finalizer was removed by hand; or it is being deleted without our
      finalizer): an orphan, whether or not its uid matches the stack's.
    * the Service is **paused** (``lb-reconciler.io/reconcile: disabled``): never an orphan; a
      person pausing it is repairing or keeping its load balancer on purpose.
    """
    if service is None:
        return True
    if paused(service):
        return False
    return decide(service, settings) is Action.IGNORE


def not_paused(
    stacks: Sequence[StackInfo], services: Mapping[str, Mapping[str, Any]]
) -> tuple[StackInfo, ...]:
    """``stacks`` but those whose Service (in ``services``, by ``namespace/name``) is paused:
    no drift check, no repair for them."""
    return tuple(info for info in stacks if not paused(services.get(info.key) or {}))


def find_orphans(
    *,
    stacks: Sequence[StackInfo],
    services: Mapping[str, Mapping[str, Any]],
    first_seen: Mapping[str, float],
    now: float,
    grace: float,
    owned_classes: frozenset[str] = frozenset(),
    serve_default: bool = True,
    class_finalizer: str = CLASS_FINALIZER,
    namespaces: Collection[str] | None = None,
) -> OrphanScan:
    """Which of ``stacks`` are orphans (see :func:`is_orphan`), and which of them are due.

    ``services``: the controller's cache, ``"namespace/name"`` -> Service; ``first_seen``: stack
    name -> when an earlier scan first found it orphaned (as returned by the last scan);
    ``owned_classes``, ``serve_default``, ``class_finalizer``: which Services and finalizers
    are ours, as in :class:`reconciler.controller.sync_plan.ControllerSettings`. ``namespaces``:
    when the controller watches only some namespaces, the stacks of the others are not judged at all
    (their Services are not in the cache, they would all look orphaned); None: all namespaces.

    An orphan is due once ``now - first_seen >= grace`` (the Service cache may lag behind the API
    server; the grace lets a Service that is being created, or a watch that is catching up, show
    up first), unless its stack is busy (an update in progress, or a live lock): it is never due
    then, and stays waiting with its first-seen time kept.
    """
    settings = ControllerSettings(
        owned_classes=owned_classes, serve_default=serve_default, class_finalizer=class_finalizer
    )
    due: list[StackInfo] = []
    waiting: list[StackInfo] = []
    new: list[StackInfo] = []
    seen: dict[str, float] = {}
    for info in stacks:
        if namespaces is not None and info.namespace not in namespaces:
            continue
        if not is_orphan(info, services.get(info.key), settings=settings):
            continue
        if info.stack not in first_seen:
            new.append(info)
        seen[info.stack] = first = first_seen.get(info.stack, now)
        if now - first >= grace and not info.busy:
            due.append(info)
        else:
            waiting.append(info)
    return OrphanScan(tuple(due), tuple(waiting), tuple(new), seen)


def drift_phase(stack: str, interval: float) -> float:
    """The stack's fixed offset in ``[0, interval)``: a hash of its name, so that the stacks'
    checks spread evenly over the interval and stay put across restarts and replicas."""
    digest = hashlib.sha256(stack.encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 * interval


def _last_slot(stack: str, now: float, interval: float) -> float:
    """The latest time ``<= now`` of the form ``k * interval + phase``."""
    phase = drift_phase(stack, interval)
    k = math.floor((now - phase) / interval)
    if k * interval + phase > now:  # rounding
        k -= 1
    elif (k + 1) * interval + phase <= now:
        k += 1
    return k * interval + phase


@dataclass(frozen=True)
class DriftScan:
    """``due``: the stacks to refresh now; ``last_checked``: the map to pass to the next scan
    (current stacks only; ``now`` for the due ones and for stacks seen for the first time)."""

    due: tuple[str, ...] = ()
    last_checked: Mapping[str, float] = field(default_factory=dict)


def drift_due(
    *,
    stacks: Sequence[StackInfo],
    last_checked: Mapping[str, float],
    now: float,
    interval: float,
    max_per_round: int | None = None,
) -> DriftScan:
    """Which stacks' drift check (a refresh) is due at ``now``.

    Each stack's checks are scheduled at ``k * interval + drift_phase(stack)``: a stack is due
    when such a time has passed since ``last_checked[stack]``, so with a scan every
    ``interval / N`` it is checked exactly once in any N consecutive scans, and 500 stacks spread
    over the interval instead of refreshing together. A stack seen for the first time (new, or
    the caller restarted) counts as checked now: it is due at its next slot, so a restart with
    500 stacks does not refresh them all at once; the gap between two checks of a stack is at
    most one interval plus the time the controller was down. Not due: stacks with an operation
    running (``busy``) and stacks without a spec hash (their next ensure runs ``up`` anyway);
    they come back once that changes. At most ``max_per_round`` names (None: no limit), the
    most overdue first: owed since the earliest slot, so a stack the limit deferred is never
    passed by stacks owed since later. ``interval <= 0`` disables the checks.
    """
    checked = {info.stack: last_checked.get(info.stack, now) for info in stacks}
    if interval <= 0 or (max_per_round is not None and max_per_round <= 0):
        return DriftScan((), checked)
    ranked: list[tuple[float, str]] = []
    for info in stacks:
        if info.busy or info.spec_hash is None:
            continue
        last = checked[info.stack]
        if _last_slot(info.stack, now, interval) > last:
            # owed since its first slot after the last check: a stack deferred by the limit
            # keeps its place and moves up (ranked by its latest slot, it went back every
            # interval and could starve while more is owed than the limit lets run)
            ranked.append((_last_slot(info.stack, last, interval) + interval, info.stack))
    ranked.sort()
    names = [name for _, name in ranked]
    due = tuple(names if max_per_round is None else names[:max_per_round])
    checked.update(dict.fromkeys(due, now))
    return DriftScan(due, checked)


def fleet_suspects(
    *,
    stacks: Sequence[StackInfo],
    verdicts: Mapping[str, Verdict],
    drifted: Collection[str],
) -> tuple[tuple[str, str | None], ...]:
    """After a fleet comparison of ``stacks`` (``verdicts`` by stack name): the Services
    (``namespace/name``) whose stack gets its own check now, each with the fingerprint of what
    the comparison saw (None: nothing it could compare).

    * a stack whose objects differ from its checkpoint (or are gone), or that has resources the
      comparison does not read (``uncovered``: a managed security group);
    * a stack without a verdict (its checkpoint could not be read);
    * a stack known to differ from the cloud now (``drifted``, by key): in ``report`` mode its
      check repeats the Warning while the drift lasts, and says when it is gone.

    Not: stacks with an operation running or no spec hash (as :func:`drift_due`).
    """
    out: list[tuple[str, str | None]] = []
    for info in stacks:
        if info.busy or info.spec_hash is None:
            continue
        verdict = verdicts.get(info.stack)
        if verdict is None:
            out.append((info.key, None))
        elif not verdict.same or info.key in drifted:
            out.append((info.key, verdict.fingerprint if not verdict.uncovered else None))
    return tuple(out)

"""What the controller needs from the engine, as a Protocol, and how it reads engine failures.

The controller does not import the Pulumi engine; it talks to anything with this shape:

* ``ensure(spec)`` makes the load balancer of ``spec.service`` match ``spec`` (create, update, or
  nothing when the stack's recorded spec hash is equal) and returns what the status needs;
* ``delete(service)`` destroys the Service's load balancer and stack; it succeeds when there is
  nothing to destroy. Only after it returns does the controller release the finalizer;
* ``refresh(service)`` (``--drift=repair``), ``check_drift(service)`` (``--drift=report``: a
  refresh that writes nothing) and ``stacks()`` serve the housekeeper (drift, orphans);
  ``cancel()`` interrupts running operations when the process stops; ``take_over()`` runs
  once, when this process becomes the leader, before its first operation (it clears what a
  dead leader left, and warms up what the first new stacks would pay for).

Failures are exceptions. :func:`failure_of` reads one's ``failure_kind`` as a :class:`Failure`,
which decides the retry and whether the Service gets a Warning (see
:mod:`reconciler.controller.loop`):

* ``BUSY``: the cloud or the stack is busy and will not be for long (HTTP 409, Octavia
  ``PENDING_*``, a stack lock held by a live operation): Warning Event, retry in seconds, a
  bounded number of times in a row, then exponential backoff;
* ``BACKOFF``: anything else the engine reports, a 4xx of the cloud included (a zone that does
  not exist, 403, 404, quota), 5xx, an unreachable cloud, unknown errors: Warning Event with the
  cloud's message, exponential backoff (the cloud, or cloud.conf, may change);
* ``RETRY_SOON``: routine waits that are not failures of the cloud (the controller's own
  interruption at shutdown; the API server's conflicts): retry in seconds, bounded, no Event;
* ``INVALID``: the Service's input is invalid as written (found before any engine call): the
  Warning naming the field; no retry until the Service changes.

Which engine error is which kind is said once, by each class of :mod:`reconciler.engine.errors`
(its ``failure_kind``: ``ConflictError`` is ``busy``, ``InterruptedOperationError`` is
``retry_soon``, every other ``EngineError`` is ``backoff``). Other engines (test doubles) set a
``failure_kind`` the same way, a :class:`Failure` or its value; an exception without one, or
with a value that is no kind, is ``BACKOFF``.

:class:`PulumiEngine` adapts :class:`reconciler.engine.stack.Engine` (one ``ServiceStack`` per
Service) to the Protocol. ``ensure`` returns the engine's own
:class:`~reconciler.engine.results.EnsureResult` (Pulumi-free, so test doubles build it too); its
``lb_id``, ``address`` and ``frozen`` are what the status, annotations and Events need.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from reconciler.engine.fleet_plan import FleetReport
from reconciler.engine.plan import StackInfo
from reconciler.engine.results import DriftReport, EnsureResult
from reconciler.model import LoadBalancerSpec, ServiceRef

if TYPE_CHECKING:
    from reconciler.engine.stack import Engine

__all__ = ["Failure", "LoadBalancerEngine", "PulumiEngine", "failure_of"]

_log = logging.getLogger(__name__)


class LoadBalancerEngine(Protocol):
    def ensure(self, spec: LoadBalancerSpec) -> EnsureResult: ...

    def delete(self, service: ServiceRef, *, keep_floating_ip: bool | None = None) -> bool:
        """``keep_floating_ip``: the Service's ``keep-floatingip`` as it is now (None: the
        Service is gone; the value of the last ``up`` holds). True when the stack went without
        ``pulumi destroy`` (one cascade ``DELETE``, the state removed from the backend)."""
        ...

    def refresh(self, service: ServiceRef) -> bool:
        """Read the cloud back into the Service's stack; True when it had drifted (the next
        ``ensure`` then runs an ``up`` that repairs it). False when there is no stack."""
        ...

    def check_drift(self, service: ServiceRef) -> DriftReport:
        """Compare the cloud with the Service's stack, writing neither: what differs (empty
        when nothing does, or when there is no stack)."""
        ...

    def stacks(self) -> Sequence[StackInfo]:
        """This cluster's stacks, cheaply (for the orphan and drift scans)."""
        ...

    def compare_fleet(self, stacks: Sequence[str]) -> FleetReport | None:
        """Compare these stacks' checkpoints with the cloud's lists, without ``pulumi``
        (:mod:`reconciler.engine.fleet`); None when the backend's checkpoints are not readable
        here. Raises when a listing fails."""
        ...

    def cancel(self) -> None:
        """Interrupt running operations (process shutdown); they raise a RETRY_SOON failure."""
        ...

    def take_over(self) -> Sequence[str]:
        """Before the first operation as the leader: remove the stale stack locks (a dead or
        deposed replica's, a dead process's of this host; never a person's); returns the stacks
        whose locks were removed. May also warm up what the first operations would pay for."""
        ...


class Failure(enum.Enum):
    """How a failed sync is retried (see the module docstring)."""

    RETRY_SOON = "retry_soon"  # routine, no Event: retry in seconds (bounded)
    BUSY = "busy"  # the cloud or stack is busy: Warning, retry in seconds (bounded)
    BACKOFF = "backoff"  # Warning, exponential backoff
    INVALID = "invalid"  # the Service's input is invalid: no retry until it changes


def failure_of(exc: BaseException) -> Failure:
    """How a failed engine call is retried: its ``failure_kind`` (see the module docstring)."""
    kind = getattr(exc, "failure_kind", None)
    if isinstance(kind, Failure):
        return kind
    if isinstance(kind, str):
        try:
            return Failure(kind)
        except ValueError:
            return Failure.BACKOFF
    return Failure.BACKOFF


class PulumiEngine:
    """:class:`LoadBalancerEngine` over the Pulumi Automation API engine."""

    def __init__(self, *, engine: Engine) -> None:
        self._engine = engine

    def ensure(self, spec: LoadBalancerSpec) -> EnsureResult:
        return self._engine.stack(service=spec.service).ensure(spec)

    def delete(self, service: ServiceRef, *, keep_floating_ip: bool | None = None) -> bool:
        return self._engine.stack(service=service).delete(keep_floating_ip=keep_floating_ip).direct

    def refresh(self, service: ServiceRef) -> bool:
        changes = self._engine.stack(service=service).refresh()
        return any(kind != "same" and count for kind, count in changes.items())

    def check_drift(self, service: ServiceRef) -> DriftReport:
        return self._engine.stack(service=service).check_drift()

    def stacks(self) -> Sequence[StackInfo]:
        # the scan's needs (names, tags, locks): on a DIY backend no `pulumi` start each scan
        return self._engine.stacks(detail=False)

    def compare_fleet(self, stacks: Sequence[str]) -> FleetReport | None:
        from reconciler.engine.fleet import compare_fleet

        return compare_fleet(self._engine, stacks)

    def cancel(self) -> None:
        self._engine.cancel()

    def take_over(self) -> Sequence[str]:
        taken = self._engine.take_over()
        if taken.foreign:  # each is reported on its Service when its next operation needs it
            _log.warning(
                "stack locks left to their holders (not this controller's)",
                extra={"locks": [f"{lock.stack}: {lock.describe()}" for lock in taken.foreign]},
            )
        cleared = [lock.stack for lock in taken.removed]
        # what the first new stacks would pay (the key, a new backend's setup: Engine.warm_up),
        # paid before the first sync: about 0.25 CPU seconds, 0.3 s more on a new backend
        self._engine.warm_up()
        return cleared

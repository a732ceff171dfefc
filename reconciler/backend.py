"""What the controller needs from the engine, as a Protocol, and how it reads engine failures.

The controller does not import the Pulumi engine; it talks to anything with this shape:

* ``ensure(spec)`` makes the load balancer of ``spec.service`` match ``spec`` (create, update, or
  nothing when the stack's recorded spec hash is equal) and returns what the status needs;
* ``delete(service)`` destroys the Service's load balancer and stack; it succeeds when there is
  nothing to destroy. Only after it returns does the controller release the finalizer;
* ``refresh(service)`` and ``stacks()`` serve the housekeeper (drift, orphans); ``cancel()``
  interrupts running operations when the process stops.

Failures are exceptions. :func:`classify` maps one to a :class:`Failure` kind, which decides the
retry (see :mod:`reconciler.queue`):

* ``RETRY_SOON``: the cloud is busy and will not be for long (Octavia PENDING_*, HTTP 409, a
  stack lock held by a finishing operation): retry in seconds, without growing the backoff;
* ``BACKOFF``: quota, outage, anything unknown: Warning Event, exponential backoff;
* ``INVALID``: the spec cannot be made real as written (a subnet that does not exist): Warning
  Event naming the problem; no retry until the Service changes.

The real engine's hierarchy (:mod:`reconciler.engine_errors`) maps as: ``ConflictError`` and
``UpTimeoutError`` -> ``RETRY_SOON``; ``InvalidConfigError`` -> ``INVALID``; ``QuotaError``,
``InternalError`` -> ``BACKOFF``. Other engines (test doubles) may instead set a
``failure_kind`` attribute holding a :class:`Failure` or its value; anything else is ``BACKOFF``.

:class:`PulumiEngine` adapts :class:`reconciler.engine.Engine` (one ``ServiceStack`` per Service)
to the Protocol: the stack outputs ``lb_id``, ``vip_address``, ``floating_ip`` become an
:class:`EnsureResult`.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from reconciler import engine_errors
from reconciler.engine_plan import StackInfo
from reconciler.model import LoadBalancerSpec, ServiceRef
from reconciler.model.frozen import FrozenChange

if TYPE_CHECKING:
    from reconciler.engine import Engine

__all__ = ["EnsureResult", "Failure", "LoadBalancerEngine", "PulumiEngine", "classify"]


@dataclass(frozen=True)
class EnsureResult:
    """The stack's outputs after ``ensure``. ``changed``: an ``up`` ran and changed something."""

    lb_id: str
    vip_address: str
    floating_ip: str | None
    changed: bool
    frozen: tuple[FrozenChange, ...] = ()  # create-only fields asked to change, kept as made

    @property
    def address(self) -> str:
        """The address users reach: the floating IP if there is one, else the VIP (OCCM)."""
        return self.floating_ip or self.vip_address


class LoadBalancerEngine(Protocol):
    def ensure(self, spec: LoadBalancerSpec) -> EnsureResult: ...

    def delete(self, service: ServiceRef, *, keep_floating_ip: bool | None = None) -> None:
        """``keep_floating_ip``: the Service's ``keep-floatingip`` as it is now (None: the
        Service is gone; the value of the last ``up`` holds)."""
        ...

    def refresh(self, service: ServiceRef) -> bool:
        """Read the cloud back into the Service's stack; True when it had drifted (the next
        ``ensure`` then runs an ``up`` that repairs it). False when there is no stack."""
        ...

    def stacks(self) -> Sequence[StackInfo]:
        """This cluster's stacks, cheaply (for the orphan and drift scans)."""
        ...

    def cancel(self) -> None:
        """Interrupt running operations (process shutdown); they raise a RETRY_SOON failure."""
        ...


class Failure(enum.Enum):
    RETRY_SOON = "retry_soon"
    BACKOFF = "backoff"
    INVALID = "invalid"


def classify(exc: BaseException) -> Failure:
    if isinstance(
        exc,
        engine_errors.ConflictError
        | engine_errors.UpTimeoutError
        | engine_errors.InterruptedOperationError,
    ):
        return Failure.RETRY_SOON
    if isinstance(exc, engine_errors.InvalidConfigError):
        return Failure.INVALID
    if isinstance(exc, engine_errors.EngineError):
        return Failure.BACKOFF
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
        result = self._engine.stack(service=spec.service).ensure(spec)
        out = result.outputs
        fip = out.get("floating_ip")
        return EnsureResult(
            lb_id=str(out.get("lb_id") or ""),
            vip_address=str(out.get("vip_address") or ""),
            floating_ip=str(fip) if fip else None,
            changed=result.changed,
            frozen=result.frozen,
        )

    def delete(self, service: ServiceRef, *, keep_floating_ip: bool | None = None) -> None:
        self._engine.stack(service=service).delete(keep_floating_ip=keep_floating_ip)

    def refresh(self, service: ServiceRef) -> bool:
        changes = self._engine.stack(service=service).refresh()
        return any(kind != "same" and count for kind, count in changes.items())

    def stacks(self) -> Sequence[StackInfo]:
        return self._engine.stacks()

    def cancel(self) -> None:
        self._engine.cancel()

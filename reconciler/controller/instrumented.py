"""The engine as the controller's workers call it: every stack operation timed and counted.

``lbr_stack_operations_total{kind,result}`` and ``lbr_stack_operation_duration_seconds{kind}``
(:mod:`reconciler.controller.metrics`): ``ensure`` counts as ``up``, or as ``skip`` when the engine
found the spec already applied; ``delete`` as ``destroy``, or ``direct-delete`` when it went
without ``pulumi`` (one cascade ``DELETE``); ``refresh`` as ``refresh`` and
``check_drift`` as ``refresh-preview`` (both also in ``lbr_drift_checks_total{drifted}``).
Failures are counted and re-raised unchanged.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TypeVar

from reconciler.controller.backend import LoadBalancerEngine
from reconciler.controller.metrics import Metrics
from reconciler.engine.errors import NotLeaderError
from reconciler.engine.plan import StackInfo
from reconciler.engine.results import DriftReport, EnsureResult
from reconciler.model import LoadBalancerSpec, ServiceRef

__all__ = ["InstrumentedEngine"]

T = TypeVar("T")


class InstrumentedEngine:
    """A :class:`~reconciler.controller.backend.LoadBalancerEngine` that reports to ``metrics``."""

    def __init__(self, engine: LoadBalancerEngine, metrics: Metrics) -> None:
        self._engine = engine
        self._metrics = metrics

    def _timed(self, kind: str, call: Callable[[], T], done: Callable[[T], str]) -> T:
        started = time.monotonic()
        try:
            value = call()
        except NotLeaderError:
            self._metrics.fenced("operation")
            raise
        except Exception:
            self._metrics.stack_operation(kind, "error", time.monotonic() - started)
            raise
        self._metrics.stack_operation(done(value), "success", time.monotonic() - started)
        return value

    def ensure(self, spec: LoadBalancerSpec) -> EnsureResult:
        return self._timed("up", lambda: self._engine.ensure(spec), _ensure_kind)

    def delete(self, service: ServiceRef, *, keep_floating_ip: bool | None = None) -> bool:
        return self._timed(
            "destroy",
            lambda: self._engine.delete(service, keep_floating_ip=keep_floating_ip),
            lambda direct: "direct-delete" if direct else "destroy",
        )

    def refresh(self, service: ServiceRef) -> bool:
        drifted = self._timed(
            "refresh", lambda: self._engine.refresh(service), lambda _r: "refresh"
        )
        self._metrics.drift_checked(drifted)
        return drifted

    def check_drift(self, service: ServiceRef) -> DriftReport:
        report = self._timed(
            "refresh-preview",
            lambda: self._engine.check_drift(service),
            lambda _r: "refresh-preview",
        )
        self._metrics.drift_checked(report.drifted)
        return report

    def stacks(self) -> Sequence[StackInfo]:
        return self._engine.stacks()

    def cancel(self) -> None:
        self._engine.cancel()

    def take_over(self) -> Sequence[str]:
        cleared = self._engine.take_over()
        self._metrics.stale_locks_cleared(len(cleared))
        return cleared


def _ensure_kind(result: EnsureResult) -> str:
    """``up``; ``direct-update`` for pool members changed without it; ``skip``: nothing ran."""
    if not result.changed:
        return "skip"
    return "direct-update" if result.direct else "up"

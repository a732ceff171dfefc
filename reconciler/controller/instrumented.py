"""The engine as the controller's workers call it: every stack operation timed and counted.

``lbr_stack_operations_total{kind,result}`` and ``lbr_stack_operation_duration_seconds{kind}``
(:mod:`reconciler.controller.metrics`): ``ensure`` counts as ``up``, or as ``skip`` when the engine
found the spec already applied; ``delete`` as ``destroy``, or ``direct-delete`` when it went
without ``pulumi`` (one cascade ``DELETE``); ``refresh`` as ``refresh`` and
``check_drift`` as ``refresh-preview`` (both also in ``lbr_drift_checks_total{drifted}``).
Failures are counted and re-raised unchanged.

And one log line per finished operation (``stack operation finished`` at INFO, ``stack
operation failed`` at WARNING; a skip, which runs nothing, at DEBUG), with the fields a person
looks for: ``service``, ``stack``, ``operation``, ``result``, ``duration_seconds``,
``resources_created``/``_updated``/``_replaced``/``_deleted``/``_unchanged`` where the operation
reports them (``up``), ``drifted`` (a drift check's resources), and for a failure ``failure_kind``
(``reconciler.engine.errors``) and ``error``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from reconciler.controller.backend import LoadBalancerEngine
from reconciler.controller.metrics import Metrics
from reconciler.engine.errors import NotLeaderError
from reconciler.engine.fleet_plan import FleetReport
from reconciler.engine.plan import StackInfo, stack_name
from reconciler.engine.results import DriftReport, EnsureResult
from reconciler.model import LoadBalancerSpec, ServiceRef

__all__ = ["InstrumentedEngine"]

T = TypeVar("T")
log = logging.getLogger("reconciler.controller.operations")
# EnsureResult.resource_changes keys (Pulumi's ops) -> the log line's fields
_COUNTED = (
    ("create", "resources_created"),  # not "created": every LogRecord has that
    ("update", "resources_updated"),
    ("replace", "resources_replaced"),
    ("delete", "resources_deleted"),
    ("same", "resources_unchanged"),
)


def _counts(changes: Mapping[str, int]) -> dict[str, int]:
    return {field: int(changes.get(op, 0)) for op, field in _COUNTED}


class InstrumentedEngine:
    """A :class:`~reconciler.controller.backend.LoadBalancerEngine` that reports to ``metrics``."""

    def __init__(
        self, engine: LoadBalancerEngine, metrics: Metrics, *, cluster_name: str = "kubernetes"
    ) -> None:
        self._engine = engine
        self._metrics = metrics
        self._cluster_name = cluster_name

    def _timed(
        self,
        kind: str,
        service: ServiceRef,
        call: Callable[[], T],
        done: Callable[[T], str],
        fields: Callable[[T], Mapping[str, Any]] = lambda _value: {},
    ) -> T:
        started = time.monotonic()
        line = {
            "service": f"{service.namespace}/{service.name}",
            "stack": stack_name(
                cluster_name=self._cluster_name, namespace=service.namespace, name=service.name
            ),
        }
        try:
            value = call()
        except NotLeaderError:
            self._metrics.fenced("operation")
            raise
        except Exception as exc:
            took = time.monotonic() - started
            self._metrics.stack_operation(kind, "error", took)
            log.warning(
                "stack operation failed",
                extra={
                    **line,
                    "operation": kind,
                    "result": "failed",
                    "duration_seconds": round(took, 3),
                    "failure_kind": getattr(exc, "failure_kind", "backoff"),
                    "error": str(exc),
                },
            )
            raise
        took, ran = time.monotonic() - started, done(value)
        self._metrics.stack_operation(ran, "success", took)
        log.log(
            logging.DEBUG if ran == "skip" else logging.INFO,
            "stack operation finished",
            extra={
                **line,
                "operation": ran,
                "result": "succeeded",
                "duration_seconds": round(took, 3),
                **fields(value),
            },
        )
        return value

    def ensure(self, spec: LoadBalancerSpec) -> EnsureResult:
        return self._timed(
            "up",
            spec.service,
            lambda: self._engine.ensure(spec),
            _ensure_kind,
            lambda result: _counts(result.resource_changes) if result.changed else {},
        )

    def delete(self, service: ServiceRef, *, keep_floating_ip: bool | None = None) -> bool:
        return self._timed(
            "destroy",
            service,
            lambda: self._engine.delete(service, keep_floating_ip=keep_floating_ip),
            lambda direct: "direct-delete" if direct else "destroy",
        )

    def refresh(self, service: ServiceRef) -> bool:
        drifted = self._timed(
            "refresh",
            service,
            lambda: self._engine.refresh(service),
            lambda _r: "refresh",
            lambda changed: {"drifted": changed},
        )
        self._metrics.drift_checked(drifted)
        return drifted

    def check_drift(self, service: ServiceRef) -> DriftReport:
        report = self._timed(
            "refresh-preview",
            service,
            lambda: self._engine.check_drift(service),
            lambda _r: "refresh-preview",
            lambda found: {"drifted": len(found.resources)},
        )
        self._metrics.drift_checked(report.drifted)
        return report

    def stacks(self) -> Sequence[StackInfo]:
        return self._engine.stacks()

    def compare_fleet(self, stacks: Sequence[str]) -> FleetReport | None:
        return self._engine.compare_fleet(stacks)

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

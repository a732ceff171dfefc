"""Drift checks of Services' stacks, carried out in their syncs (the modes: :mod:`.drift_plan`).

The housekeeper asks for a check (:meth:`DriftChecks.request`); the next sync of that Service
runs it before its ensure (:meth:`DriftChecks.check`), so a check and an operation never touch one
stack at once: the work queue gives each Service one worker at a time.

* ``repair``: ``engine.refresh``; drift found makes the ensure that follows an ``up``, which puts
  the cloud back; when that ensure succeeds, :meth:`DriftChecks.ensured` records the Normal
  ``DriftRepaired`` Event and ``lbr_drift_repaired_total``.
* ``report``: ``engine.check_drift`` (a preview-only refresh, nothing written); the Events of
  :func:`.drift_plan.report_events`; the ensure that follows sees the stack's spec hash
  unchanged and runs no ``up``.

Both keep the set of Services whose stack is known to differ from the cloud, which
``lbr_drifted_stacks`` counts; a Service that is gone, or whose stack was deleted, leaves it
(:meth:`DriftChecks.forget`). A check that fails is logged and changes nothing; the ensure that
follows reports what is wrong with the stack or the cloud, as every sync does.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import Any

from reconciler.controller.backend import LoadBalancerEngine
from reconciler.controller.drift_plan import (
    DRIFT_REPAIRED,
    DriftMode,
    drift_summary,
    report_events,
)
from reconciler.controller.events import EventRecorder
from reconciler.controller.metrics import Metrics
from reconciler.model import ServiceRef

__all__ = ["DriftChecks"]

_log = logging.getLogger("reconciler.controller.loop")


class DriftChecks:
    def __init__(
        self,
        *,
        engine: LoadBalancerEngine,
        mode: DriftMode,
        recorder: EventRecorder,
        metrics: Metrics,
    ) -> None:
        self.mode = mode
        self._engine = engine
        self._recorder = recorder
        self._metrics = metrics
        self._lock = threading.Lock()
        self._requested: set[str] = set()  # keys whose stack is checked before the next ensure
        self._drifted: set[str] = set()  # keys whose stack is known to differ from the cloud

    def request(self, key: str) -> None:
        if self.mode is DriftMode.OFF:
            return
        with self._lock:
            self._requested.add(key)

    def forget(self, key: str) -> None:
        """The Service is gone or its stack deleted: no check, nothing drifted."""
        with self._lock:
            self._requested.discard(key)
            self._mark(key, drifted=False)

    def _mark(self, key: str, *, drifted: bool) -> bool:
        """Record whether ``key`` differs now (lock held); returns whether it did before."""
        was = key in self._drifted
        if drifted:
            self._drifted.add(key)
        else:
            self._drifted.discard(key)
        self._metrics.set_drifted_stacks(len(self._drifted))
        return was

    def check(self, key: str, ref: ServiceRef, service: Mapping[str, Any]) -> bool:
        """Run the requested check of ``key``'s stack, if one is; True when the ensure that
        follows is to repair drift (``repair`` mode, drift found)."""
        with self._lock:
            if key not in self._requested:
                return False
            self._requested.discard(key)
        if self.mode is DriftMode.REPORT:
            self._report(key, ref, service)
            return False
        try:
            drifted = self._engine.refresh(ref)
        except Exception as exc:  # the ensure that follows reports what is wrong
            _log.warning("drift check failed", extra={"service": key, "error": str(exc)})
            return False
        if drifted:
            _log.warning("the cloud drifted from the stack; repairing", extra={"service": key})
            with self._lock:
                self._mark(key, drifted=True)
        return drifted

    def _report(self, key: str, ref: ServiceRef, service: Mapping[str, Any]) -> None:
        try:
            report = self._engine.check_drift(ref)
        except Exception as exc:
            _log.warning("drift check failed", extra={"service": key, "error": str(exc)})
            return
        with self._lock:
            was = self._mark(key, drifted=report.drifted)
        if report.drifted:
            _log.warning(
                "the cloud drifted from the stack; reporting only (--drift=report)",
                extra={"service": key, "drift": drift_summary(report)},
            )
        elif was:
            _log.info("the drift reported before is gone", extra={"service": key})
        for event in report_events(report, was_drifted=was):
            self._recorder.record(service, event)

    def ensured(self, key: str, service: Mapping[str, Any], *, changed: bool) -> None:
        """An ensure of ``key`` succeeded (``changed``: it ran ``up``). In ``repair`` mode that
        ``up`` repaired a drift found before (in this sync or one that failed since)."""
        if self.mode is not DriftMode.REPAIR or not changed:
            return
        with self._lock:
            if key not in self._drifted:
                return
            self._mark(key, drifted=False)
        self._metrics.drift_repaired()
        self._recorder.record(service, DRIFT_REPAIRED)

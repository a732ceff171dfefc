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

A request may carry the *fingerprint* of the cloud's objects that the fleet comparison saw
(:mod:`reconciler.engine.fleet_plan`): a check that finds no drift remembers it, and a later
request with the same fingerprint is dropped (the cloud is as that check saw it: no ``pulumi``
start to learn the same again), unless the stack is known to differ. So a difference the
comparison sees but ``pulumi refresh`` does not (a field the cloud reports in another form) costs
one check per change of the cloud, not one per interval.

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
        # keys whose stack is checked before the next ensure, with the fingerprint asked with
        self._requested: dict[str, str | None] = {}
        self._drifted: set[str] = set()  # keys whose stack is known to differ from the cloud
        self._clean: dict[str, str] = {}  # key -> the fingerprint a check found no drift at

    def request(self, key: str, fingerprint: str | None = None) -> bool:
        """Ask for a check of ``key``'s stack at its next sync; False when none is needed: drift
        checks are off, or ``fingerprint`` is the one a check found no drift at (and the stack
        is not known to differ)."""
        if self.mode is DriftMode.OFF:
            return False
        with self._lock:
            if (
                fingerprint is not None
                and key not in self._drifted
                and self._clean.get(key) == fingerprint
            ):
                return False
            self._requested[key] = fingerprint
        return True

    def drifted(self) -> frozenset[str]:
        """The keys whose stack is known to differ from the cloud now."""
        with self._lock:
            return frozenset(self._drifted)

    def forget(self, key: str) -> None:
        """The Service is gone or its stack deleted: no check, nothing drifted."""
        with self._lock:
            self._requested.pop(key, None)
            self._clean.pop(key, None)
            self._mark(key, drifted=False)

    def _checked(self, key: str, fingerprint: str | None, *, drifted: bool | None) -> None:
        """Remember a check's outcome (lock held): ``fingerprint`` is clean when it found no
        drift; anything else (drift, a failure: None) forgets it."""
        if drifted is False and fingerprint is not None:
            self._clean[key] = fingerprint
        else:
            self._clean.pop(key, None)

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
            fingerprint = self._requested.pop(key)
        if self.mode is DriftMode.REPORT:
            self._report(key, ref, service, fingerprint)
            return False
        try:
            drifted = self._engine.refresh(ref)
        except Exception as exc:  # the ensure that follows reports what is wrong
            _log.warning("drift check failed", extra={"service": key, "error": str(exc)})
            with self._lock:
                self._checked(key, fingerprint, drifted=None)
            return False
        with self._lock:
            self._checked(key, fingerprint, drifted=drifted)
            if drifted:
                self._mark(key, drifted=True)
        if drifted:
            _log.warning("the cloud drifted from the stack; repairing", extra={"service": key})
        return drifted

    def _report(
        self, key: str, ref: ServiceRef, service: Mapping[str, Any], fingerprint: str | None
    ) -> None:
        try:
            report = self._engine.check_drift(ref)
        except Exception as exc:
            _log.warning("drift check failed", extra={"service": key, "error": str(exc)})
            with self._lock:
                self._checked(key, fingerprint, drifted=None)
            return
        with self._lock:
            self._checked(key, fingerprint, drifted=report.drifted)
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

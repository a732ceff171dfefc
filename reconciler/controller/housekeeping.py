"""The housekeeper: a periodic scan of this cluster's stacks for orphans and drift.

The decisions are :mod:`reconciler.controller.housekeeping_plan`'s (pure); this thread only lists
the stacks, asks those functions, and hands the results to the controller as *requests*: the
controller carries them out in its workers, through the same queue as every Service event, so a
stack is never touched by two operations at once.

* **Orphans** (a stack whose Service is gone, e.g. its finalizer was removed by hand, or wants no
  load balancer and holds none of our finalizers): logged and counted when first seen; after
  ``orphan_grace`` the controller destroys it, if its Service is still absent at that moment.
* **Drift** (OCCM's issue #1597: a listener deleted by hand stays deleted): every stack is
  checked once per ``drift_interval``, staggered across the interval, but a paused Service's
  (``lb-reconciler.io/reconcile: disabled``), which is no orphan either. What a check is and what
  follows is the ``drift`` mode (:mod:`.drift_plan`): ``repair`` refreshes, and a difference
  makes the following ``up`` put the cloud back; ``report`` compares without writing anything
  and tells the Service's Events and ``lbr_drifted_stacks``; ``off`` (or an interval of 0)
  checks nothing.

The first scan runs as soon as the controller starts (orphans from a time the controller was
down are found then), the next ones every ``interval`` seconds.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from reconciler.controller.backend import LoadBalancerEngine
from reconciler.controller.drift_plan import DriftMode
from reconciler.controller.housekeeping_plan import drift_due, find_orphans, not_paused
from reconciler.controller.metrics import Metrics
from reconciler.controller.sync_plan import ControllerSettings
from reconciler.model import ServiceRef

__all__ = ["Housekeeper", "HousekeepingSettings"]

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class HousekeepingSettings:
    interval: float = 30.0  # seconds between scans; 0 disables housekeeping
    orphan_grace: float = 120.0
    drift_interval: float = 3600.0  # 0 disables drift checks, whatever ``drift`` says
    max_drift_checks_per_scan: int = 10
    drift: DriftMode = DriftMode.REPAIR

    def __post_init__(self) -> None:
        for name in ("interval", "orphan_grace", "drift_interval"):
            if getattr(self, name) < 0:
                raise ValueError(f"housekeeping {name} must be 0 or more seconds")

    @property
    def drift_mode(self) -> DriftMode:
        """The mode in effect: ``off`` when the interval is 0."""
        return DriftMode.OFF if self.drift_interval <= 0 else self.drift


class Housekeeper:
    def __init__(
        self,
        *,
        engine: LoadBalancerEngine,
        services: Callable[[], Mapping[str, Mapping[str, Any]]],
        settings: HousekeepingSettings,
        controller_settings: ControllerSettings,
        request_orphan_delete: Callable[[str, ServiceRef], None],
        request_drift_check: Callable[[str], None],
        metrics: Metrics,
        namespace: str | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``namespace``: the controller watches only this namespace; other stacks are not
        judged (their Services are not in its cache)."""
        self._engine = engine
        self._services = services
        self._settings = settings
        self._controller = controller_settings
        self._orphan = request_orphan_delete
        self._drift = request_drift_check
        self._metrics = metrics
        self._clock = clock
        self._namespaces = None if namespace is None else {namespace}
        self._first_seen: dict[str, float] = {}
        self._last_checked: dict[str, float] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._settings.interval <= 0:
            return
        self._thread = threading.Thread(target=self._run, name="housekeeper", daemon=True)
        self._thread.start()

    def stop(self, *, timeout: float = 10.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.scan()
            except Exception:  # the next scan retries; a failing scan must not end the thread
                _log.exception("housekeeping scan failed")
            self._stop.wait(self._settings.interval)

    def scan(self) -> None:
        """One pass: list the stacks, request orphan deletions and drift checks that are due."""
        now = self._clock()
        stacks = self._engine.stacks()
        services = self._services()
        result = find_orphans(
            stacks=stacks,
            services=services,
            first_seen=self._first_seen,
            now=now,
            grace=self._settings.orphan_grace,
            owned_classes=self._controller.owned_classes,
            serve_default=self._controller.serve_default,
            class_finalizer=self._controller.class_finalizer,
            namespaces=self._namespaces,
        )
        for info in result.new:
            self._metrics.orphan_found()
            _log.warning(
                "orphaned stack found (no Service wants it); destroying it after the grace period",
                extra={
                    "stack": info.stack,
                    "service": info.key,
                    "grace_seconds": self._settings.orphan_grace,
                },
            )
        self._first_seen = dict(result.first_seen)
        for info in result.due:
            self._orphan(info.key, ServiceRef(info.namespace, info.name, info.uid))
        if self._settings.drift_mode is DriftMode.OFF:
            return
        stacks = not_paused(stacks, services)  # a paused Service's stack is left as it is
        by_name = {info.stack: info for info in stacks}
        scan = drift_due(
            stacks=stacks,
            last_checked=self._last_checked,
            now=now,
            interval=self._settings.drift_interval,
            max_per_round=self._settings.max_drift_checks_per_scan,
        )
        self._last_checked = dict(scan.last_checked)
        for name in scan.due:
            self._drift(by_name[name].key)

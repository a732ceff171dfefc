"""The housekeeper: a periodic scan of this cluster's stacks for orphans and drift.

The decisions are :mod:`reconciler.controller.housekeeping_plan`'s (pure); this thread only lists
the stacks, asks those functions, and hands the results to the controller as *requests*: the
controller carries them out in its workers, through the same queue as every Service event, so a
stack is never touched by two operations at once.

* **Orphans** (a stack whose Service is gone, e.g. its finalizer was removed by hand, or wants no
  load balancer and holds none of our finalizers): logged and counted when first seen; after
  ``orphan_grace`` the controller destroys it, if its Service is still absent at that moment.
* **Drift** (OCCM's issue #1597: a listener deleted by hand stays deleted): every stack is
  compared with the cloud once per ``drift_interval``, but a paused Service's
  (``lb-reconciler.io/reconcile: disabled``), which is no orphan either. What a check is and what
  follows is the ``drift`` mode (:mod:`.drift_plan`): ``repair`` refreshes, and a difference
  makes the following ``up`` put the cloud back; ``report`` compares without writing anything
  and tells the Service's Events and ``lbr_drifted_stacks``; ``off`` (or an interval of 0)
  checks nothing.

  How: once per ``drift_interval`` a *fleet comparison* (:mod:`reconciler.engine.fleet`) lists
  the project's objects and compares them with every stack's checkpoint, without a ``pulumi``
  process; only the stacks it finds different (:func:`.housekeeping_plan.fleet_suspects`) get
  their ``pulumi refresh``. Each stack still gets one once per ``drift_sweep_interval`` (a week),
  staggered: the *sweep*, for what the comparison does not read. When the comparison cannot be
  made (a backend whose checkpoints only the CLI reads, a listing that failed) every stack gets
  its refresh once per ``drift_interval``, staggered, until one succeeds; so it does with a
  ``drift_sweep_interval`` not above ``drift_interval``. At most ``max_drift_checks_per_scan``
  checks are asked for per scan (the fleet's suspects first); the rest wait for the next scans.

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
from reconciler.controller.housekeeping_plan import (
    drift_due,
    find_orphans,
    fleet_suspects,
    not_paused,
)
from reconciler.controller.metrics import Metrics
from reconciler.controller.sync_plan import ControllerSettings
from reconciler.engine.plan import StackInfo
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
    # each stack's full refresh at least this often (a week: the fleet comparison reads every
    # field the program declares, the sweep is its safety net); not above drift_interval: every
    # check is a full refresh, no fleet comparison
    drift_sweep_interval: float = 604800.0

    def __post_init__(self) -> None:
        for name in ("interval", "orphan_grace", "drift_interval", "drift_sweep_interval"):
            if getattr(self, name) < 0:
                raise ValueError(f"housekeeping {name} must be 0 or more seconds")

    @property
    def drift_mode(self) -> DriftMode:
        """The mode in effect: ``off`` when the interval is 0."""
        return DriftMode.OFF if self.drift_interval <= 0 else self.drift

    @property
    def fleet(self) -> bool:
        """Whether drift is found by fleet comparisons (plus the sweep)."""
        return self.drift_mode is not DriftMode.OFF and (
            self.drift_sweep_interval > self.drift_interval
        )


class Housekeeper:
    def __init__(
        self,
        *,
        engine: LoadBalancerEngine,
        services: Callable[[], Mapping[str, Mapping[str, Any]]],
        settings: HousekeepingSettings,
        controller_settings: ControllerSettings,
        request_orphan_delete: Callable[[str, ServiceRef], None],
        request_drift_check: Callable[[str, str | None], None],
        metrics: Metrics,
        drifted: Callable[[], frozenset[str]] = frozenset,
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
        self._drifted = drifted
        self._metrics = metrics
        self._clock = clock
        self._namespaces = None if namespace is None else {namespace}
        self._first_seen: dict[str, float] = {}
        self._last_checked: dict[str, float] = {}
        self._next_round: float | None = None  # the next fleet comparison (None: not planned)
        # the last fleet comparison was made (before the first: as if it was, so that the stacks
        # keep their sweep's slots rather than each its own check per drift interval)
        self._fleet_ok = settings.fleet
        self._told_unavailable = False
        self._suspects: dict[str, str | None] = {}  # key -> fingerprint, not yet asked for
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
            self._stop.wait(self._until_next_scan())

    def _until_next_scan(self) -> float:
        """The scan interval, or less when the next fleet comparison is due sooner: a change
        made by hand is found within one drift interval, not one plus a scan interval."""
        wait = self._settings.interval
        if self._settings.fleet and self._next_round is not None:
            wait = min(wait, max(0.0, self._next_round - self._clock()))
        return wait

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
        if self._settings.fleet:
            self._fleet_round(stacks, now)
        budget = self._settings.max_drift_checks_per_scan
        keys = {info.key for info in stacks}
        self._suspects = {k: f for k, f in self._suspects.items() if k in keys}
        for key in list(self._suspects)[:budget]:
            self._drift(key, self._suspects.pop(key))
            budget -= 1
        scan = drift_due(
            stacks=stacks,
            last_checked=self._last_checked,
            now=now,
            interval=(
                self._settings.drift_sweep_interval
                if self._fleet_ok
                else self._settings.drift_interval
            ),
            max_per_round=budget,
        )
        self._last_checked = dict(scan.last_checked)
        for name in scan.due:
            self._drift(by_name[name].key, None)

    def _fleet_round(self, stacks: tuple[StackInfo, ...], now: float) -> None:
        """Once per drift interval: compare every stack with the cloud's lists, and queue the
        suspects (:func:`.housekeeping_plan.fleet_suspects`) for their own check."""
        if self._next_round is None:  # the first one a scan after the start: not beside the
            # syncs of every Service that a start runs (what changed while down is found then)
            self._next_round = now + min(self._settings.interval, self._settings.drift_interval)
        if now < self._next_round:
            return
        self._next_round = now + self._settings.drift_interval
        if not stacks:
            return  # nothing to compare: no listing
        try:
            report = self._engine.compare_fleet([info.stack for info in stacks])
        except Exception as exc:  # every stack gets its own check until a comparison works
            _log.warning(
                "the fleet drift comparison failed; each stack gets its own drift check this "
                "interval",
                extra={"error": str(exc)},
            )
            self._metrics.fleet_compared("failed")
            self._fleet_ok = False
            return
        if report is None:
            if not self._told_unavailable:
                self._told_unavailable = True
                _log.info(
                    "the backend's checkpoints are read only by the CLI: each stack gets its own "
                    "drift check (no fleet comparison)"
                )
            self._metrics.fleet_compared("unavailable")
            self._fleet_ok = False
            return
        suspects = fleet_suspects(stacks=stacks, verdicts=report.verdicts, drifted=self._drifted())
        for key, fingerprint in suspects:
            self._suspects[key] = fingerprint
        differing = {name: v.differs[:3] for name, v in report.verdicts.items() if v.differs}
        if differing:
            _log.info(
                "the fleet drift comparison found stacks that differ from the cloud; checking them",
                extra={"count": len(differing), "stacks": dict(list(differing.items())[:20])},
            )
        self._metrics.fleet_compared("compared", suspects=len(suspects))
        self._fleet_ok = True

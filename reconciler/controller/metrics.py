"""Prometheus metrics of the controller, served on ``/metrics`` by :mod:`.health`.

Every :class:`Metrics` owns its own :class:`prometheus_client.CollectorRegistry` (nothing goes to
the library's global registry), so tests and embedded controllers can make as many as they like.
The controller calls the methods below; it never touches the ``prometheus_client`` objects.

Metrics (all names prefixed ``lbr_``; see docs/operations.md for queries):

* ``lbr_reconciles_total{result}``: syncs of one Service key, by outcome;
* ``lbr_reconcile_duration_seconds{result}``: histogram, wall time of one sync;
* ``lbr_stack_operations_total{kind,result}``: Pulumi stack operations;
* ``lbr_stack_operation_duration_seconds{kind}``: histogram, wall time of one operation;
* ``lbr_workqueue_depth``: keys waiting in the work queue (read at scrape time);
* ``lbr_workqueue_in_flight``: keys a worker is syncing (read at scrape time);
* ``lbr_services_failing``: keys whose last sync failed and that are backing off (read at scrape
  time), each with a Warning Event saying why;
* ``lbr_last_success_timestamp_seconds``: when a sync last succeeded (Unix time; 0 before the
  first), for "nothing has synced for N minutes";
* ``lbr_orphan_stacks_found_total``: stacks the housekeeper found without a Service wanting them;
* ``lbr_orphan_stacks_deleted_total``: orphaned stacks destroyed;
* ``lbr_drift_checks_total{drifted}``: refreshes comparing cloud and stack (``true``/``false``);
* ``lbr_drift_repaired_total``: drifted stacks brought back to their spec by an ``up``;
* ``lbr_drift_fleet_comparisons_total{result}``: fleet comparisons of every stack with the
  cloud's lists (``compared``; ``failed``: a listing failed; ``unavailable``: the backend's
  checkpoints are read only by the CLI), once per drift interval;
* ``lbr_drift_fleet_suspects_total``: stacks a fleet comparison sent to their own check;
* ``lbr_drifted_stacks``: stacks known to differ from the cloud now (``--drift=report``: from a
  check that found drift until one that finds none; ``repair``: until the ``up`` that repairs);
* ``lbr_leader``: 1 while this replica holds the leader lease, else 0;
* ``lbr_fenced_total{at}``: work refused because this replica no longer holds the lease
  (``sync``: a sync not started; ``operation``: an engine write refused or a running operation
  killed);
* ``lbr_stale_locks_cleared_total``: stack locks a new leader removed at takeover (a dead or
  deposed replica's, a dead process's of this host);
* ``lbr_stacks_held_by_others``: Services whose last sync found their stack locked by a holder
  that is not this controller (a person's or CI's ``pulumi``), which it never removes: each has
  a Warning ``StackLocked`` naming the holder.

``result`` of a reconcile is one of ``success``, ``retry`` (retried soon: a routine wait),
``error`` (backed off) and ``invalid`` (the Service's input is wrong; no retry until it changes).
``kind`` of a stack operation is ``up``, ``direct-update`` (pool members changed without
``pulumi``: one batch ``PUT`` per pool), ``destroy``, ``direct-delete`` (a delete without
``pulumi``: one cascade ``DELETE``), ``refresh``, ``refresh-preview`` (the drift
check of ``--drift=report``, which writes nothing) or ``skip`` (the engine found the stack up to
date and ran no ``up``); its ``result`` is ``success`` or ``error``.

Labels are checked: an unknown value raises :class:`ValueError` naming the allowed ones, so that
a typo fails loudly in the tests instead of quietly starting a new time series. Every allowed
label combination is created at start-up with value 0, so that ``rate()`` and alerts see the
first error. The registry also carries the library's standard ``process_*`` and ``python_*``
metrics (memory, CPU, open file descriptors, garbage collections).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    PlatformCollector,
    ProcessCollector,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client.gc_collector import GCCollector

__all__ = ["CONTENT_TYPE", "DRIFT", "RECONCILE_RESULTS", "STACK_KINDS", "STACK_RESULTS", "Metrics"]

_log = logging.getLogger(__name__)

RECONCILE_RESULTS = ("success", "retry", "error", "invalid")
STACK_KINDS = (
    "up",
    "direct-update",
    "destroy",
    "direct-delete",
    "refresh",
    "refresh-preview",
    "skip",
)
STACK_RESULTS = ("success", "error")
DRIFT = ("true", "false")
FLEET_RESULTS = ("compared", "failed", "unavailable")
FENCED_AT = ("sync", "operation")

# The classic text format (0.0.4) that every Prometheus version scrapes. generate_latest writes
# exactly that for metric names that need no escaping, which all of ours are.
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

# One sync: a no-op is tens of milliseconds; a first ``up`` that creates an Octavia load balancer
# with its listeners and a floating IP takes minutes.
_RECONCILE_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600)
# One Pulumi operation: "skip" reads the stack (sub-second); up/destroy wait on Octavia.
_STACK_BUCKETS = (0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 900)

# No ``*_created`` series beside every counter and histogram: they double the series count and no
# query here needs them. (A process-wide switch of the library; this process is the controller.)
disable_created_metrics()  # type: ignore[no-untyped-call]  # the library leaves it unannotated


def _check(what: str, value: str, allowed: Iterable[str]) -> str:
    allowed = tuple(allowed)
    if value not in allowed:
        raise ValueError(f"unknown {what} {value!r}; allowed: {', '.join(allowed)}")
    return value


def _check_seconds(seconds: float) -> float:
    if math.isnan(seconds) or seconds < 0:
        raise ValueError(f"a duration must be 0 or more seconds, got {seconds!r}")
    return seconds


class Metrics:
    """The controller's metrics in a registry of their own; :meth:`render` gives ``/metrics``."""

    def __init__(self, *, process_metrics: bool = True) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        if process_metrics:
            ProcessCollector(registry=r)
            PlatformCollector(registry=r)
            GCCollector(registry=r)
        self._reconciles = Counter(
            "lbr_reconciles_total",
            "Syncs of one Service key, by result: success, retry (soon), error (backed off), "
            "invalid (input to fix).",
            ["result"],
            registry=r,
        )
        self._reconcile_seconds = Histogram(
            "lbr_reconcile_duration_seconds",
            "Wall time of one sync of a Service key, by result.",
            ["result"],
            buckets=_RECONCILE_BUCKETS,
            registry=r,
        )
        self._stack_ops = Counter(
            "lbr_stack_operations_total",
            "Pulumi stack operations by kind (up, direct-update, destroy, direct-delete, refresh, "
            "refresh-preview, skip) and result.",
            ["kind", "result"],
            registry=r,
        )
        self._stack_seconds = Histogram(
            "lbr_stack_operation_duration_seconds",
            "Wall time of one Pulumi stack operation, by kind.",
            ["kind"],
            buckets=_STACK_BUCKETS,
            registry=r,
        )
        self._queue_depth = Gauge(
            "lbr_workqueue_depth", "Service keys waiting in the work queue.", registry=r
        )
        self._in_flight = Gauge(
            "lbr_workqueue_in_flight", "Service keys being synced by a worker.", registry=r
        )
        self._failing = Gauge(
            "lbr_services_failing",
            "Service keys whose last sync failed and that are backing off (each has a Warning "
            "Event saying why).",
            registry=r,
        )
        self._last_success = Gauge(
            "lbr_last_success_timestamp_seconds",
            "When a sync of a Service key last succeeded (Unix time; 0 before the first).",
            registry=r,
        )
        self._orphans_found = Counter(
            "lbr_orphan_stacks_found_total",
            "Stacks the housekeeper found without a Service that wants them.",
            registry=r,
        )
        self._orphans_deleted = Counter(
            "lbr_orphan_stacks_deleted_total", "Orphaned stacks destroyed.", registry=r
        )
        self._drift_checks = Counter(
            "lbr_drift_checks_total",
            "Refreshes that compared the cloud with a stack, by whether it had drifted.",
            ["drifted"],
            registry=r,
        )
        self._fleet = Counter(
            "lbr_drift_fleet_comparisons_total",
            "Fleet comparisons of every stack with the cloud's lists, by result (compared, "
            "failed, unavailable).",
            ["result"],
            registry=r,
        )
        self._fleet_suspects = Counter(
            "lbr_drift_fleet_suspects_total",
            "Stacks a fleet comparison sent to their own drift check.",
            registry=r,
        )
        self._drift_repaired = Counter(
            "lbr_drift_repaired_total",
            "Drifted stacks brought back to their spec by an up.",
            registry=r,
        )
        self._drifted = Gauge(
            "lbr_drifted_stacks",
            "Stacks known to differ from the cloud now (found by a drift check; report mode: "
            "until a check finds none, repair mode: until the up that repairs).",
            registry=r,
        )
        self._held = Gauge(
            "lbr_stacks_held_by_others",
            "Services whose last sync found their stack locked by a holder that is not this "
            "controller (a person's or CI's pulumi); each has a Warning StackLocked.",
            registry=r,
        )
        self._leader = Gauge(
            "lbr_leader", "1 while this replica holds the leader lease, else 0.", registry=r
        )
        self._fenced = Counter(
            "lbr_fenced_total",
            "Work refused because this replica no longer holds the leader lease: a sync not "
            "started, an engine write refused or a running operation killed.",
            ["at"],
            registry=r,
        )
        self._locks_cleared = Counter(
            "lbr_stale_locks_cleared_total",
            "Stack locks that no operation of this leader held, removed as it began to lead.",
            registry=r,
        )
        for at in FENCED_AT:
            self._fenced.labels(at)
        for result in RECONCILE_RESULTS:
            self._reconciles.labels(result)
            self._reconcile_seconds.labels(result)
        for kind in STACK_KINDS:
            self._stack_seconds.labels(kind)
            for result in STACK_RESULTS:
                self._stack_ops.labels(kind, result)
        for drifted in DRIFT:
            self._drift_checks.labels(drifted)
        for result in FLEET_RESULTS:
            self._fleet.labels(result)

    # -- work --------------------------------------------------------------------------------

    def reconcile(self, result: str, seconds: float) -> None:
        """One sync of a Service key ended with ``result`` after ``seconds``."""
        _check("reconcile result", result, RECONCILE_RESULTS)
        seconds = _check_seconds(seconds)
        self._reconciles.labels(result).inc()
        self._reconcile_seconds.labels(result).observe(seconds)
        if result == "success":
            self._last_success.set_to_current_time()

    def stack_operation(self, kind: str, result: str, seconds: float) -> None:
        """One Pulumi operation of ``kind`` ended with ``result`` after ``seconds``."""
        _check("stack operation kind", kind, STACK_KINDS)
        _check("stack operation result", result, STACK_RESULTS)
        seconds = _check_seconds(seconds)
        self._stack_ops.labels(kind, result).inc()
        self._stack_seconds.labels(kind).observe(seconds)

    # -- the queue, read at scrape time ------------------------------------------------------

    def set_queue_depth_source(self, fn: Callable[[], int]) -> None:
        """``lbr_workqueue_depth`` becomes ``fn()`` at every scrape."""
        self._queue_depth.set_function(_safe("lbr_workqueue_depth", fn))

    def set_in_flight_source(self, fn: Callable[[], int]) -> None:
        """``lbr_workqueue_in_flight`` becomes ``fn()`` at every scrape."""
        self._in_flight.set_function(_safe("lbr_workqueue_in_flight", fn))

    def set_failing_source(self, fn: Callable[[], int]) -> None:
        """``lbr_services_failing`` becomes ``fn()`` at every scrape."""
        self._failing.set_function(_safe("lbr_services_failing", fn))

    # -- housekeeping ------------------------------------------------------------------------

    def orphan_found(self) -> None:
        self._orphans_found.inc()

    def orphan_deleted(self) -> None:
        self._orphans_deleted.inc()

    def drift_checked(self, drifted: bool) -> None:
        self._drift_checks.labels("true" if drifted else "false").inc()

    def fleet_compared(self, result: str, *, suspects: int = 0) -> None:
        self._fleet.labels(_check("fleet comparison result", result, FLEET_RESULTS)).inc()
        self._fleet_suspects.inc(suspects)

    def drift_repaired(self) -> None:
        self._drift_repaired.inc()

    def set_drifted_stacks(self, count: int) -> None:
        self._drifted.set(count)

    def set_stacks_held_by_others(self, count: int) -> None:
        self._held.set(count)

    # -- leader election ---------------------------------------------------------------------

    def set_leader(self, is_leader: bool) -> None:
        self._leader.set(1 if is_leader else 0)

    def fenced(self, at: str) -> None:
        """Work refused at ``at`` (``sync`` or ``operation``): not the leader any more."""
        self._fenced.labels(_check("fenced at", at, FENCED_AT)).inc()

    def stale_locks_cleared(self, count: int) -> None:
        self._locks_cleared.inc(count)

    # -- exposition --------------------------------------------------------------------------

    def render(self) -> tuple[bytes, str]:
        """The ``/metrics`` body in Prometheus' text format, and its content type."""
        return generate_latest(self.registry), CONTENT_TYPE


def _safe(name: str, fn: Callable[[], int]) -> Callable[[], float]:
    """A gauge source that cannot break the scrape: a failure is logged and reads as NaN."""

    def read() -> float:
        try:
            return float(fn())
        except Exception:
            _log.warning("metric source failed", exc_info=True, extra={"metric": name})
            return math.nan

    return read

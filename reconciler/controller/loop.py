"""The controller: watches feed a work queue; workers carry out the plans of :mod:`.sync_plan`.

Shape (the upstream service controller's, with kopf's per-object serialisation):

    Reflector(Services) --on_add/on_update--> WorkQueue(key = namespace/name) --> N workers
    Reflector(Nodes) --eligible set or addresses changed--> every LB Service's key

A worker takes a key, reads the latest Service from the Service store, asks
:func:`.sync_plan.decide` what to do and carries out the plan. It makes no decisions of its own
beyond the order of the effects, which is where the guarantees live:

* **ensure**: Events ``EnsuringLoadBalancer`` (and ``UnAvailableLoadBalancer``); the finalizer
  patch, *before* the engine is called (a failure here stops the sync: no cloud change without
  the finalizer); ``engine.ensure(spec)``; then annotations ``load-balancer-id`` /
  ``load-balancer-address``, ``status.loadBalancer.ingress`` (each only when it differs) and the
  closing Event;
* **cleanup**: ``DeletingLoadBalancer``; ``engine.delete``; only when that returned, the
  finalizer patch; ``DeletedLoadBalancer``; empty status (not for a Service being deleted: it is
  gone once the finalizer is);
* **invalid input**: a Warning naming field, value and fix; no finalizer, no engine call; the
  key is not retried until the Service changes (a watch event brings it back).
* **paused** (``lb-reconciler.io/reconcile: disabled``): no engine call, no finalizer change;
  the condition says ``Paused`` and a paused Service being deleted keeps its finalizer, with a
  Warning ``DeletionPaused``; removing the annotation (a watch event) resumes.

Each sync also leaves the Service's condition ``lb-reconciler.io/LoadBalancerReady``
(:mod:`.conditions`, written by :mod:`.sync` only when it differs from what the Service has).

Failures decide the retry and the Warning (:mod:`.backend`, :func:`settle`): every failure of
the engine, in ``up`` or ``destroy`` alike, gets a Warning ``SyncLoadBalancerFailed`` carrying
the cloud's own message and when the next attempt is, on the first failure. ``BUSY`` (a 409,
Octavia ``PENDING_*``, a stack lock) retries soon, a bounded number of times in a row, then
backs off; ``BACKOFF`` (any other cloud answer, 4xx included, an outage, anything unknown)
backs off exponentially, 5 s to 5 min per Service; ``RETRY_SOON`` (the API server's conflicts,
the controller's own interruption at shutdown) retries soon without an Event; ``INVALID`` (the
Service's input, found before any engine call) is not retried until the Service changes.
Success resets the backoff; a watch event for the Service makes it ready at once, whatever
it waited for. Cleanup never gives up: a failed ``destroy`` (a 404 or "not found" included)
keeps the finalizer and is retried with backoff. While the controller stops, failures are
logged but get no Event (they are most likely its own interruption; the next process retries).

Finalizer patches are merge patches with ``resourceVersion`` (see :mod:`.sync_plan`). On a 409 the
worker reads the Service again and recomputes the patch once, so a label edit that raced the
sync does not cost a retry delay.

Leadership: the controller runs only while its process leads (:mod:`.runner`). ``leading`` says
whether it still does (the Lease held and renewed within the renew deadline, on this process's
own clock): a worker whose key comes up when it no longer does drops it without a sync (no
Event, no patch: the new leader does it; ``lbr_fenced_total{at="sync"}``), and the engine
fences its own writes the same way. Before the first worker starts, the engine's ``take_over``
clears what a dead leader left (its stacks' locks).

The controller (:class:`.sync.ServiceSync`, which carries out one sync) remembers, per
key, the last spec it applied and the load balancer id the engine returned. That memory only
shapes Events (a members-only change is ``UpdatedLoadBalancer``; our own ``load-balancer-id``
annotation coming back is not a change); whether ``up`` runs is the engine's decision, by the
spec hash it stores with the stack.
"""

from __future__ import annotations

import enum
import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from reconciler.config import CloudConfig
from reconciler.controller.backend import Failure, LoadBalancerEngine
from reconciler.controller.changes import node_fingerprint
from reconciler.controller.drift_plan import DriftMode
from reconciler.controller.events import EventRecorder
from reconciler.controller.housekeeping import Housekeeper, HousekeepingSettings
from reconciler.controller.instrumented import InstrumentedEngine
from reconciler.controller.kubeapi import KubeApi
from reconciler.controller.metrics import Metrics
from reconciler.controller.queue import Backoff, WorkQueue
from reconciler.controller.sync import ServiceSync, SyncOutcome
from reconciler.controller.sync_plan import (
    Action,
    ControllerSettings,
    decide,
    failure_event,
    should_enqueue_on_add,
    should_enqueue_on_update,
)
from reconciler.controller.watch import Reflector, object_key
from reconciler.model import ServiceRef

__all__ = ["Controller", "Retry", "Settle", "SyncOutcome", "settle"]

_log = logging.getLogger(__name__)

# the Warning reason of a sync refused by a stack lock that is not this controller's
# (reconciler.engine.errors.StackLockedError's event_reason)
HELD_BY_OTHERS = "StackLocked"


_RESULTS = {
    None: "success",
    Failure.RETRY_SOON: "retry",
    Failure.BUSY: "retry",
    Failure.BACKOFF: "error",
    Failure.INVALID: "invalid",
}


class Retry(enum.Enum):
    FORGET = "forget"  # a success: reset the key's backoff
    SOON = "soon"  # the queue's retry-soon: a short delay, bounded, then backoff
    BACKOFF = "backoff"  # exponential backoff
    NONE = "none"  # until the Service changes (a watch event)


@dataclass(frozen=True)
class Settle:
    retry: Retry
    warn: bool  # a Warning SyncLoadBalancerFailed (when there is a Service to attach it to)


def settle(failure: Failure | None) -> Settle:
    """What the worker does after a sync that ended with ``failure`` (None: success)."""
    if failure is None:
        return Settle(Retry.FORGET, warn=False)
    if failure is Failure.RETRY_SOON:
        return Settle(Retry.SOON, warn=False)
    if failure is Failure.BUSY:
        return Settle(Retry.SOON, warn=True)
    if failure is Failure.INVALID:
        return Settle(Retry.NONE, warn=True)
    return Settle(Retry.BACKOFF, warn=True)


class Controller:
    def __init__(
        self,
        *,
        kube: KubeApi,
        engine: LoadBalancerEngine,
        config: CloudConfig,
        settings: ControllerSettings | None = None,
        workers: int = 4,
        backoff: Backoff | None = None,
        recorder: EventRecorder | None = None,
        instance: str | None = None,
        watch_timeout: int = 300,
        namespace: str | None = None,
        metrics: Metrics | None = None,
        housekeeping: HousekeepingSettings | None = None,
        leading: Callable[[], bool] | None = None,
    ) -> None:
        """``namespace``: watch Services of this namespace only (default: all namespaces).
        ``housekeeping``: orphan and drift scans (:mod:`.housekeeping`); None: none.
        ``leading``: whether this process still leads (None: always, a single replica)."""
        self._kube = kube
        self._leading = leading or (lambda: True)
        self._config = config
        self._settings = settings or ControllerSettings()
        self._workers = workers
        self.queue = WorkQueue(backoff=backoff)
        instance = instance or f"{socket.gethostname()}-{os.getpid()}"
        self._recorder = recorder or EventRecorder(kube=kube, instance=instance)
        self._lock = threading.Lock()
        self._node_fp: frozenset[tuple[Any, ...]] | None = None
        self._threads: list[threading.Thread] = []
        self._stopping = threading.Event()
        self._held: set[str] = set()  # keys whose stack a holder not this controller's locks
        self._held_lock = threading.Lock()
        self.metrics = metrics or Metrics()
        self._engine = InstrumentedEngine(
            engine, self.metrics, cluster_name=self._settings.cluster_name
        )
        self.metrics.set_queue_depth_source(self.queue.depth)
        self.metrics.set_in_flight_source(self.queue.in_flight)
        self.metrics.set_failing_source(self.queue.failing)
        self._sync = ServiceSync(
            kube=kube,
            engine=self._engine,
            config=config,
            settings=self._settings,
            recorder=self._recorder,
            metrics=self.metrics,
            nodes=lambda: self.nodes.items(),
            drift=housekeeping.drift_mode if housekeeping is not None else DriftMode.OFF,
        )
        self.housekeeper = (
            Housekeeper(
                engine=self._engine,
                services=self._services_by_key,
                settings=housekeeping,
                controller_settings=self._settings,
                request_orphan_delete=self.request_orphan_delete,
                request_drift_check=self.request_drift_check,
                drifted=self._sync.drift.drifted,
                metrics=self.metrics,
                namespace=namespace,
            )
            if housekeeping is not None
            else None
        )
        self.services = Reflector(
            kube=kube,
            path=f"/api/v1/namespaces/{namespace}/services" if namespace else "/api/v1/services",
            name="services",
            on_add=self._service_added,
            on_update=self._service_updated,
            watch_timeout=watch_timeout,
        )
        self.nodes = Reflector(
            kube=kube,
            path="/api/v1/nodes",
            name="nodes",
            on_add=lambda _n: self._nodes_changed(),
            on_update=lambda _o, _n: self._nodes_changed(),
            on_delete=lambda _n: self._nodes_changed(),
            watch_timeout=watch_timeout,
        )

    # -- watch handlers: enqueue only ---------------------------------------------------------

    def _service_added(self, svc: dict[str, Any]) -> None:
        if should_enqueue_on_add(svc, self._settings):
            self.queue.add(object_key(svc))

    def _service_updated(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        if should_enqueue_on_update(old, new, self._settings):
            self.queue.add(object_key(new))

    def _nodes_changed(self) -> None:
        fingerprint = node_fingerprint(self.nodes.items())
        with self._lock:
            if fingerprint == self._node_fp:
                return
            first = self._node_fp is None
            self._node_fp = fingerprint
        if first:
            return  # the initial Service list enqueues every Service anyway
        _log.info("node set changed, syncing every load balancer")
        for svc in self.services.items():
            if decide(svc, self._settings) is Action.ENSURE:
                self.queue.add(object_key(svc))

    # -- housekeeping requests: also go through the queue, so one worker per Service holds -----

    def _services_by_key(self) -> dict[str, dict[str, Any]]:
        return {object_key(svc): svc for svc in self.services.items()}

    def request_orphan_delete(self, key: str, ref: ServiceRef) -> None:
        """Destroy the stack of ``key`` at its next sync if its Service still wants none."""
        self._sync.request_orphan_delete(key, ref)
        self.queue.add(key)

    def request_drift_check(self, key: str, fingerprint: str | None = None) -> None:
        """Check the stack of ``key`` for drift before its next ensure (:mod:`.drift`), unless a
        check already found none at this ``fingerprint`` of the cloud."""
        if self._sync.request_drift_check(key, fingerprint):
            self.queue.add(key)

    # -- lifecycle ----------------------------------------------------------------------------

    def live(self) -> tuple[bool, str]:
        dead = [t.name for t in self._threads if not t.is_alive()]
        if dead and not self._stopping.is_set():
            return False, f"threads ended: {', '.join(dead)}"
        return True, "ok"

    def ready(self) -> tuple[bool, str]:
        if not self._threads:
            return False, "starting: waiting for the Service and Node lists"
        if self._stopping.is_set():
            return False, "stopping"
        return True, "ok"

    def start(self, *, sync_timeout: float = 60.0) -> None:
        """Start both watches, wait for their first list, then start the workers."""
        self.nodes.start()
        self.services.start()
        for reflector in (self.nodes, self.services):
            if not reflector.synced.wait(sync_timeout):
                raise TimeoutError(f"the {reflector.name} list did not complete in {sync_timeout}s")
        self._nodes_changed()
        self._take_over()
        for i in range(self._workers):
            t = threading.Thread(target=self._worker, name=f"worker-{i}", daemon=True)
            t.start()
            self._threads.append(t)
        if self.housekeeper is not None:
            self.housekeeper.start()
        _log.info("controller started", extra={"workers": self._workers})

    def _take_over(self) -> None:
        """Clear what a dead leader left before the first operation (the engine's
        ``take_over``); a failure is logged, the stacks' locks are cleared one by one then,
        before each stack's next operation."""
        try:
            cleared = self._engine.take_over()
        except Exception as exc:
            _log.warning(
                "could not clear the previous leader's stack locks at takeover; each stack's "
                "are cleared before its next operation",
                extra={"error": str(exc)},
            )
            return
        if cleared:
            _log.warning(
                "removed stale stack locks (a dead or deposed replica's, a dead process's)",
                extra={"stacks": sorted(set(cleared))},
            )

    def stop(self, *, timeout: float = 30.0, drain: bool = True) -> None:
        """Stop taking work; give running syncs half of ``timeout`` to finish (``drain``), then
        interrupt the engine's running operations (their stacks are recovered by the next
        operation, here or in the next leader) and wait for the workers; stop the watches."""
        self._stopping.set()
        if self.housekeeper is not None:
            self.housekeeper.stop()
        self.queue.shutdown()
        deadline = time.monotonic() + (timeout / 2 if drain else 0.0)
        for t in self._threads:
            t.join(max(0.0, deadline - time.monotonic()))
        if any(t.is_alive() for t in self._threads):
            cancel = getattr(self._engine, "cancel", None)
            if callable(cancel):
                _log.info("interrupting running stack operations")
                cancel()
            for t in self._threads:
                t.join(timeout / 2)
        self.services.stop()
        self.nodes.stop()
        _log.info("controller stopped")

    def _worker(self) -> None:
        while True:
            key = self.queue.get()
            if key is None:
                return
            if not self._leading():  # the Lease is lost: the new leader syncs it
                self.metrics.fenced("sync")
                _log.info("not the leader any more: sync not started", extra={"service": key})
                self.queue.done(key)
                continue
            started = time.monotonic()
            try:
                outcome = self.sync(key)
            except Exception as exc:  # a bug, not a cloud failure: back off, keep the worker
                _log.exception("sync crashed", extra={"service": key})
                outcome = SyncOutcome(Failure.BACKOFF, f"internal error: {exc}")
            try:
                self.metrics.reconcile(_RESULTS[outcome.failure], time.monotonic() - started)
                self._settle(key, outcome)
            finally:
                self.queue.done(key)

    def _settle(self, key: str, outcome: SyncOutcome) -> None:
        self._count_held(key, held=outcome.reason == HELD_BY_OTHERS)
        plan = settle(outcome.failure)
        if plan.retry is Retry.FORGET:
            self.queue.forget(key)
            return
        retry: float | None = None
        if plan.retry is Retry.SOON:
            retry = self.queue.retry_soon(key)
        elif plan.retry is Retry.BACKOFF:
            retry = self.queue.backoff(key)
        extra = {"service": key, "error": outcome.error, "retry_in": retry}
        if not plan.warn:
            _log.info("sync will retry soon", extra=extra)
            return
        _log.warning("sync failed", extra=extra)
        if outcome.service is None or self._stopping.is_set():
            return  # no Service to attach it to (an orphan), or our own shutdown's doing
        event = failure_event(
            action=outcome.action, error=outcome.error, retry_in=retry, reason=outcome.reason
        )
        self._recorder.record(outcome.service, event)

    def _count_held(self, key: str, *, held: bool) -> None:
        """``lbr_stacks_held_by_others``: the Services whose last sync found their stack locked
        by a holder that is not this controller."""
        with self._held_lock:
            if held:
                self._held.add(key)
            else:
                self._held.discard(key)
            self.metrics.set_stacks_held_by_others(len(self._held))

    # -- one sync -----------------------------------------------------------------------------

    def sync(self, key: str) -> SyncOutcome:
        return self._sync.sync(key, self.services.get(key))

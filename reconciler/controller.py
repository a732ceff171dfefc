"""The controller: watches feed a work queue; workers carry out the plans of :mod:`.sync`.

Shape (the upstream service controller's, with kopf's per-object serialisation):

    Reflector(Services) --on_add/on_update--> WorkQueue(key = namespace/name) --> N workers
    Reflector(Nodes) --eligible set or addresses changed--> every LB Service's key

A worker takes a key, reads the latest Service from the Service store, asks :func:`.sync.decide`
what to do and carries out the plan. It makes no decisions of its own beyond the order of the
effects, which is where the guarantees live:

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

Failures decide the retry (:mod:`.backend`): the API server unreachable or a 409 on a patch ->
retry soon; an engine failure classified ``RETRY_SOON`` -> retry soon (logged, no Event: Octavia's
PENDING_* states are routine); ``BACKOFF`` -> Warning ``SyncLoadBalancerFailed`` naming the next
attempt, exponential backoff; ``INVALID`` -> the Warning, no retry. Success resets the backoff.

Finalizer patches are merge patches with ``resourceVersion`` (see :mod:`.sync`). On a 409 the
worker reads the Service again and recomputes the patch once, so a label edit that raced the
sync does not cost a retry delay.

The controller remembers, per key, the last spec it applied and the load balancer id the engine
returned. That memory only shapes Events (a members-only change is ``UpdatedLoadBalancer``; our
own ``load-balancer-id`` annotation coming back is not a change); whether ``up`` runs is the
engine's decision, by the spec hash it stores with the stack.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reconciler.backend import Failure, LoadBalancerEngine, PulumiEngine, classify
from reconciler.config import CloudConfig, parse_cloud_conf
from reconciler.events import EventRecorder
from reconciler.kube import api_client
from reconciler.kubeio import KubeApi, KubeError, KubeUnavailableError
from reconciler.model import LoadBalancerSpec, ServiceRef
from reconciler.queue import Backoff, WorkQueue
from reconciler.sync import (
    Action,
    ControllerSettings,
    Event,
    add_finalizer_patch,
    decide,
    failure_event,
    node_fingerprint,
    plan_after_ensure,
    plan_cleanup,
    plan_ensure,
    should_enqueue_on_add,
    should_enqueue_on_update,
)
from reconciler.watch import Reflector, object_key

__all__ = ["Controller", "SyncOutcome", "run_controller"]

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SyncOutcome:
    """What one sync ended with; the worker turns it into a queue operation and an Event."""

    failure: Failure | None = None
    error: str = ""
    service: Mapping[str, Any] | None = None
    action: Action = Action.IGNORE

    @property
    def ok(self) -> bool:
        return self.failure is None


@dataclass(frozen=True)
class _Applied:
    uid: str
    spec: LoadBalancerSpec
    lb_id: str


def _service_path(ns: str, name: str) -> str:
    return f"/api/v1/namespaces/{ns}/services/{name}"


def _split(key: str) -> tuple[str, str]:
    ns, _, name = key.partition("/")
    return ns, name


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
    ) -> None:
        """``namespace``: watch Services of this namespace only (default: all namespaces)."""
        self._kube = kube
        self._engine = engine
        self._config = config
        self._settings = settings or ControllerSettings()
        self._workers = workers
        self.queue = WorkQueue(backoff=backoff)
        instance = instance or f"{socket.gethostname()}-{os.getpid()}"
        self._recorder = recorder or EventRecorder(kube=kube, instance=instance)
        self._lock = threading.Lock()
        self._applied: dict[str, _Applied] = {}
        self._node_fp: frozenset[tuple[Any, ...]] | None = None
        self._threads: list[threading.Thread] = []
        self._stopping = threading.Event()
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

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self, *, sync_timeout: float = 60.0) -> None:
        """Start both watches, wait for their first list, then start the workers."""
        self.nodes.start()
        self.services.start()
        for reflector in (self.nodes, self.services):
            if not reflector.synced.wait(sync_timeout):
                raise TimeoutError(f"the {reflector.name} list did not complete in {sync_timeout}s")
        self._nodes_changed()
        for i in range(self._workers):
            t = threading.Thread(target=self._worker, name=f"worker-{i}", daemon=True)
            t.start()
            self._threads.append(t)
        _log.info("controller started", extra={"workers": self._workers})

    def stop(self, *, timeout: float = 30.0) -> None:
        """Stop taking work; let running syncs finish (up to ``timeout``); stop the watches."""
        self._stopping.set()
        self.queue.shutdown()
        for t in self._threads:
            t.join(timeout)
        self.services.stop()
        self.nodes.stop()
        _log.info("controller stopped")

    def _worker(self) -> None:
        while True:
            key = self.queue.get()
            if key is None:
                return
            try:
                outcome = self.sync(key)
                self._settle(key, outcome)
            except Exception as exc:  # a bug, not a cloud failure: back off, keep the worker
                _log.exception("sync crashed", extra={"service": key})
                self._settle(key, SyncOutcome(Failure.BACKOFF, f"internal error: {exc}"))
            finally:
                self.queue.done(key)

    def _settle(self, key: str, outcome: SyncOutcome) -> None:
        if outcome.failure is None:
            self.queue.forget(key)
            return
        if outcome.failure is Failure.RETRY_SOON:
            delay = self.queue.retry_soon(key)
            _log.info(
                "sync will retry soon",
                extra={"service": key, "error": outcome.error, "retry_in": delay},
            )
            return
        retry: float | None = None
        if outcome.failure is Failure.BACKOFF:
            retry = self.queue.backoff(key)
        _log.warning(
            "sync failed", extra={"service": key, "error": outcome.error, "retry_in": retry}
        )
        if outcome.service is not None:
            event = failure_event(action=outcome.action, error=outcome.error, retry_in=retry)
            self._recorder.record(outcome.service, event)

    # -- one sync -----------------------------------------------------------------------------

    def sync(self, key: str) -> SyncOutcome:
        service = self.services.get(key)
        if service is None:
            with self._lock:
                self._applied.pop(key, None)
            return SyncOutcome()
        action = decide(service, self._settings)
        try:
            if action is Action.ENSURE:
                return self._ensure(key, service)
            if action is Action.CLEANUP:
                return self._cleanup(key, service)
            return SyncOutcome()
        except KubeUnavailableError as exc:
            return SyncOutcome(Failure.RETRY_SOON, str(exc), service, action)
        except KubeError as exc:
            kind = Failure.RETRY_SOON if exc.conflict else Failure.BACKOFF
            if exc.not_found:
                return SyncOutcome()  # deleted meanwhile; nothing of ours can be left to do
            return SyncOutcome(kind, f"Kubernetes API: {exc}", service, action)

    def _engine_failure(
        self, exc: Exception, service: Mapping[str, Any], action: Action
    ) -> SyncOutcome:
        return SyncOutcome(classify(exc), str(exc) or type(exc).__name__, service, action)

    def _patch_fresh(
        self,
        service: Mapping[str, Any],
        make: Callable[[Mapping[str, Any]], dict[str, Any] | None],
    ) -> Mapping[str, Any]:
        """Apply ``make(service)`` (a merge patch with resourceVersion); on 409, read the Service
        again and recompute once. Returns the Service as the server has it afterwards."""
        meta = service["metadata"]
        path = _service_path(meta["namespace"], meta["name"])
        patch = make(service)
        if patch is None:
            return service
        try:
            return self._kube.patch(path, patch)
        except KubeError as exc:
            if not exc.conflict:
                raise
        fresh = self._kube.get(path)
        if fresh.get("metadata", {}).get("uid") != meta.get("uid"):
            raise KubeError(status=409, reason="Conflict", message="the Service was re-created")
        patch = make(fresh)
        return fresh if patch is None else self._kube.patch(path, patch)

    def _ensure(self, key: str, service: Mapping[str, Any]) -> SyncOutcome:
        uid = str(service["metadata"].get("uid") or "")
        with self._lock:
            applied = self._applied.get(key)
        if applied is not None and applied.uid != uid:
            applied = None
        plan = plan_ensure(
            service=service,
            nodes=self.nodes.items(),
            config=self._config,
            settings=self._settings,
            previous=applied.spec if applied else None,
            previous_lb_id=applied.lb_id if applied else None,
        )
        for notice in plan.notices:
            _log.info("spec notice", extra={"service": key, "notice": notice})
        if plan.spec is None:
            self._record(service, plan.events)
            return SyncOutcome(Failure.INVALID, "invalid configuration")  # Event already sent
        spec = plan.spec
        self._record(service, plan.events)
        if plan.finalizer_patch is not None:

            def add(svc: Mapping[str, Any]) -> dict[str, Any] | None:
                if decide(svc, self._settings) is not Action.ENSURE:
                    return None
                return add_finalizer_patch(svc, self._settings)

            service = self._patch_fresh(service, add)
            if decide(service, self._settings) is not Action.ENSURE:
                return SyncOutcome(Failure.RETRY_SOON, "the Service changed during the sync")
        try:
            result = self._engine.ensure(spec)
        except Exception as exc:
            return self._engine_failure(exc, service, Action.ENSURE)
        with self._lock:
            self._applied[key] = _Applied(uid, spec, result.lb_id)
        no_nodes = any(e.reason == "UnAvailableLoadBalancer" for e in plan.events)
        after = plan_after_ensure(
            service=service, spec=spec, result=result, change=plan.change, no_nodes=no_nodes
        )
        meta = service["metadata"]
        path = _service_path(meta["namespace"], meta["name"])
        if after.annotation_patch is not None:
            service = self._kube.patch(path, after.annotation_patch)
        if after.status_patch is not None:
            self._kube.patch(path + "/status", after.status_patch)
        self._record(service, after.events)
        _log.info(
            "load balancer ensured",
            extra={"service": key, "lb_id": result.lb_id, "address": result.address},
        )
        return SyncOutcome()

    def _cleanup(self, key: str, service: Mapping[str, Any]) -> SyncOutcome:
        meta = service["metadata"]
        plan = plan_cleanup(service, self._settings)
        self._record(service, plan.events_before)
        ref = ServiceRef(str(meta["namespace"]), str(meta["name"]), str(meta.get("uid") or ""))
        try:
            self._engine.delete(ref)
        except Exception as exc:
            return self._engine_failure(exc, service, Action.CLEANUP)
        with self._lock:
            self._applied.pop(key, None)
        service = self._patch_fresh(
            service, lambda svc: plan_cleanup(svc, self._settings).finalizer_patch
        )
        self._record(service, plan.events_after)
        deleting = bool(service.get("metadata", {}).get("deletionTimestamp"))
        status_patch = plan_cleanup(service, self._settings).status_patch
        if status_patch is not None and not deleting:
            try:
                self._kube.patch(
                    _service_path(meta["namespace"], meta["name"]) + "/status", status_patch
                )
            except KubeError as exc:
                if not exc.not_found:
                    raise
        _log.info("load balancer deleted", extra={"service": key})
        return SyncOutcome()

    def _record(self, service: Mapping[str, Any], events: Iterable[Event]) -> None:
        for event in events:
            self._recorder.record(service, event)


def run_controller(
    *,
    kubeconfig: Path | None,
    cloud_config: Path,
    engine: LoadBalancerEngine | None = None,
    state_dir: Path | None = None,
    backend_url: str = "",
    cluster_name: str = "kubernetes",
    owned_classes: Iterable[str] = (),
    serve_default: bool = True,
    workers: int = 4,
    stop: threading.Event | None = None,
) -> int:
    """Run until ``stop`` is set (or SIGTERM/SIGINT when called from the main thread without
    ``stop``). Returns a process exit code: 0 after a clean stop, 2 for an unusable cloud.conf.

    Without ``engine``, the Pulumi engine is built: stacks under ``state_dir`` (default
    ``./lbr-state``), backend ``backend_url`` (default ``file://<state_dir>/backend``), the
    secrets passphrase from ``PULUMI_CONFIG_PASSPHRASE``."""
    parsed = parse_cloud_conf(text=cloud_config.read_text())
    for issue in parsed.warnings:
        _log.warning("cloud.conf", extra={"issue": str(issue)})
    if parsed.config is None:
        for issue in parsed.errors:
            _log.error("cloud.conf", extra={"issue": str(issue)})
        return 2
    if engine is None:
        engine = _default_engine(
            config=parsed.config,
            cluster_name=cluster_name,
            state_dir=state_dir or Path("lbr-state"),
            backend_url=backend_url,
        )
    settings = ControllerSettings(
        cluster_name=cluster_name,
        owned_classes=frozenset(c for c in owned_classes if c),
        serve_default=serve_default,
    )
    kube = KubeApi(api_client=api_client(kubeconfig=kubeconfig))
    controller = Controller(
        kube=kube, engine=engine, config=parsed.config, settings=settings, workers=workers
    )
    done = stop or threading.Event()
    if stop is None and threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda _s, _f: done.set())
    controller.start()
    try:
        done.wait()
    finally:
        controller.stop()
        kube.close()
    return 0


def _default_engine(
    *, config: CloudConfig, cluster_name: str, state_dir: Path, backend_url: str
) -> LoadBalancerEngine:
    from reconciler.config import Secret
    from reconciler.engine import Engine, EngineSettings
    from reconciler.toolchain import find_toolchain

    settings = EngineSettings(
        cluster_name=cluster_name,
        state_dir=state_dir,
        auth=config.auth,
        toolchain=find_toolchain(),
        backend_url=backend_url,
        passphrase=Secret(os.environ.get("PULUMI_CONFIG_PASSPHRASE", "")),
    )
    return PulumiEngine(engine=Engine(settings=settings))

"""One sync of one Service: carry out the plans of :mod:`.sync_plan`, in the order that keeps the
guarantees (see :mod:`.loop` for the order and the failure handling).

:class:`ServiceSync` owns what a sync needs besides the Service: the engine, the Kubernetes
writes (merge patches with resourceVersion, re-read once on 409) and Events, and the memory
of the last spec applied per key (it only shapes Events). It never schedules: the controller's
work queue guarantees one sync per key at a time, and the housekeeper's requests (destroy an
orphan, check drift: :mod:`.drift`) are recorded here and carried out by the next sync of that
key.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reconciler.config import CloudConfig
from reconciler.controller.backend import Failure, LoadBalancerEngine, failure_of
from reconciler.controller.drift import DriftChecks
from reconciler.controller.drift_plan import DriftMode
from reconciler.controller.events import EventRecorder
from reconciler.controller.kubeapi import KubeApi, KubeError, KubeUnavailableError
from reconciler.controller.metrics import Metrics
from reconciler.controller.sync_plan import (
    Action,
    ControllerSettings,
    Event,
    add_finalizer_patch,
    decide,
    plan_after_ensure,
    plan_cleanup,
    plan_ensure,
)
from reconciler.model import LoadBalancerSpec, ServiceRef

__all__ = ["ServiceSync", "SyncOutcome"]

_log = logging.getLogger("reconciler.controller.loop")


@dataclass(frozen=True)
class SyncOutcome:
    """What one sync ended with; the worker turns it into a queue operation and an Event."""

    failure: Failure | None = None
    error: str = ""
    service: Mapping[str, Any] | None = None
    action: Action = Action.IGNORE
    # the Warning's reason when the failure names one (the engine error's ``event_reason``,
    # e.g. StackLocked); "": SyncLoadBalancerFailed
    reason: str = ""

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


class ServiceSync:
    def __init__(
        self,
        *,
        kube: KubeApi,
        engine: LoadBalancerEngine,
        config: CloudConfig,
        settings: ControllerSettings,
        recorder: EventRecorder,
        metrics: Metrics,
        nodes: Callable[[], Sequence[Mapping[str, Any]]],
        drift: DriftMode = DriftMode.REPAIR,
    ) -> None:
        self._kube = kube
        self._engine = engine
        self._config = config
        self._settings = settings
        self._recorder = recorder
        self.metrics = metrics
        self._nodes = nodes
        self._lock = threading.Lock()
        self._applied: dict[str, _Applied] = {}
        self._orphans: dict[str, ServiceRef] = {}  # key -> stack to destroy (housekeeper)
        self.drift = DriftChecks(engine=engine, mode=drift, recorder=recorder, metrics=metrics)

    def request_orphan_delete(self, key: str, ref: ServiceRef) -> None:
        with self._lock:
            self._orphans[key] = ref

    def request_drift_check(self, key: str) -> None:
        self.drift.request(key)

    def sync(self, key: str, service: Mapping[str, Any] | None) -> SyncOutcome:
        """Carry out what :func:`.sync_plan.decide` says for ``service`` (None: it is gone)."""
        action = Action.IGNORE if service is None else decide(service, self._settings)
        with self._lock:
            orphan = self._orphans.pop(key, None)
            if service is None:
                self._applied.pop(key, None)
        if service is None:
            self.drift.forget(key)
        if action is Action.IGNORE:
            return self._delete_orphan(key, orphan) if orphan is not None else SyncOutcome()
        assert service is not None
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

    def _delete_orphan(self, key: str, ref: ServiceRef) -> SyncOutcome:
        """The housekeeper found this stack without a Service that wants it, past the grace
        period; the Service is still absent (or wants no load balancer) now."""
        _log.warning("destroying an orphaned stack", extra={"service": key, "uid": ref.uid or None})
        try:
            self._engine.delete(ref)
        except Exception as exc:
            return self._engine_failure(exc, None, Action.CLEANUP)
        self.metrics.orphan_deleted()
        self.drift.forget(key)
        _log.info("orphaned stack destroyed", extra={"service": key})
        return SyncOutcome()

    def _engine_failure(
        self, exc: Exception, service: Mapping[str, Any] | None, action: Action
    ) -> SyncOutcome:
        reason = str(getattr(exc, "event_reason", "") or "")
        error = str(exc) or type(exc).__name__
        return SyncOutcome(failure_of(exc), error, service, action, reason)

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
            nodes=self._nodes(),
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
        ref = spec.service
        self.drift.check(key, ref, service)
        try:
            result = self._engine.ensure(spec)
        except Exception as exc:
            return self._engine_failure(exc, service, Action.ENSURE)
        self.drift.ensured(key, service, changed=result.changed)
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
            self._engine.delete(ref, keep_floating_ip=plan.keep_floating_ip)
        except Exception as exc:
            return self._engine_failure(exc, service, Action.CLEANUP)
        with self._lock:
            self._applied.pop(key, None)
        self.drift.forget(key)
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

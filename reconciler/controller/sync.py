"""One sync of one Service: carry out the plans of :mod:`.sync_plan`, in the order that keeps the
guarantees (see :mod:`.loop` for the order and the failure handling).

:class:`ServiceSync` owns what a sync needs besides the Service: the engine, the Kubernetes
writes (merge patches with resourceVersion, re-read once on 409) and Events, and the memory
of the last spec applied per key (it only shapes Events). It never schedules: the controller's
work queue guarantees one sync per key at a time, and the housekeeper's requests (destroy an
orphan, check drift: :mod:`.drift`) are recorded here and carried out by the next sync of that
key.

It also writes the Service's condition ``lb-reconciler.io/LoadBalancerReady``
(:mod:`.conditions` decides which, and whether the Service already has it): ``Updating`` before
an ``up`` for a change, ``Provisioned`` with the status after a success (one strategic merge
patch of the status subresource for both), ``CloudError`` / ``StackLocked`` after an engine
failure, ``Refused`` for invalid input, ``Paused`` for a paused Service (which gets no engine
call, no finalizer change and no orphan deletion). A condition that is already there is not
written again; a failure to write one after a failure is logged, not added to the failure.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from reconciler.config import CloudConfig
from reconciler.controller import conditions
from reconciler.controller.backend import Failure, LoadBalancerEngine, failure_of
from reconciler.controller.changes import Change
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
    plan_paused,
)
from reconciler.model import LoadBalancerSpec, ServiceRef
from reconciler.model.predicates import paused

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


def _status_path(service: Mapping[str, Any]) -> str:
    meta = service["metadata"]
    return _service_path(meta["namespace"], meta["name"]) + "/status"


def _key(service: Mapping[str, Any]) -> str:
    meta = service["metadata"]
    return f"{meta.get('namespace')}/{meta.get('name')}"


def _merged(*patches: dict[str, Any] | None) -> dict[str, Any] | None:
    """Status patches in one (each ``{"status": {...}}`` with keys of its own)."""
    status: dict[str, Any] = {}
    for patch in patches:
        if patch is not None:
            status.update(patch["status"])
    return {"status": status} if status else None


def _utc_now() -> datetime:
    return datetime.now(UTC)


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
        clock: Callable[[], datetime] = _utc_now,
    ) -> None:
        """``clock``: the wall clock of the conditions' ``lastTransitionTime``."""
        self._kube = kube
        self._clock = clock
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

    def request_drift_check(self, key: str, fingerprint: str | None = None) -> bool:
        return self.drift.request(key, fingerprint)

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
            if orphan is None or (service is not None and paused(service)):
                return SyncOutcome()  # nothing to do; a paused Service's stack is no orphan
            return self._delete_orphan(key, orphan)
        assert service is not None
        try:
            if action is Action.ENSURE:
                return self._ensure(key, service)
            if action is Action.CLEANUP:
                return self._cleanup(key, service)
            if action is Action.PAUSED:
                return self._paused(key, service)
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
        outcome = SyncOutcome(failure_of(exc), error, service, action, reason)
        if service is not None and outcome.failure is not Failure.RETRY_SOON:
            condition = conditions.failed(
                deleting=action is Action.CLEANUP, error=error, locked=reason == "StackLocked"
            )
            self._condition_after_failure(service, condition)
        return outcome

    def _condition(
        self, service: Mapping[str, Any], condition: conditions.Condition
    ) -> Mapping[str, Any]:
        """Write ``condition`` unless the Service has it; the Service as it is afterwards."""
        patch = conditions.condition_patch(service, condition, now=self._clock())
        if patch is None:
            return service
        return self._kube.patch(_status_path(service), patch, kind="strategic")

    def _condition_after_failure(
        self, service: Mapping[str, Any], condition: conditions.Condition
    ) -> None:
        """The condition of a failure already reported otherwise (a Warning follows): an API
        error here is logged; the sync's outcome stays the failure it is."""
        try:
            self._condition(service, condition)
        except (KubeError, KubeUnavailableError) as exc:
            _log.warning(
                "could not write the Service's condition",
                extra={"service": _key(service), "error": str(exc)},
            )

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
            message = plan.events[0].message if plan.events else "invalid configuration"
            self._condition_after_failure(service, conditions.refused(message))
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
        # an edit this process saw (Services have no metadata.generation): Updating
        remembered = applied is not None and plan.change is Change.FULL
        update = conditions.updating(service, remembered_change=remembered)
        if update is not None:
            service = self._condition(service, update)
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
        # the events before the status, as the Kubernetes service controller does: whoever sees
        # the address finds EnsuredLoadBalancer already there
        self._record(service, after.events)
        ready = conditions.provisioned(lb_id=result.lb_id, address=result.address)
        status = _merged(
            after.status_patch,
            conditions.condition_patch(service, ready, now=self._clock()),
        )
        if status is not None:
            self._kube.patch(path + "/status", status, kind="strategic")
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
        status_patch = _merged(
            plan_cleanup(service, self._settings).status_patch,
            conditions.removal_patch(service),
        )
        if status_patch is not None and not deleting:
            try:
                self._kube.patch(
                    _service_path(meta["namespace"], meta["name"]) + "/status",
                    status_patch,
                    kind="strategic",
                )
            except KubeError as exc:
                if not exc.not_found:
                    raise
        _log.info("load balancer deleted", extra={"service": key})
        return SyncOutcome()

    def _paused(self, key: str, service: Mapping[str, Any]) -> SyncOutcome:
        """``lb-reconciler.io/reconcile: disabled``: no engine call, no finalizer change; the
        condition says so, and its Events go with a change of it."""
        plan = plan_paused(service, self._settings)
        patch = conditions.condition_patch(service, plan.condition, now=self._clock())
        if patch is not None:
            service = self._kube.patch(_status_path(service), patch, kind="strategic")
            self._record(service, plan.events)
            _log.info("reconciling paused", extra={"service": key, "cleanup": plan.cleanup})
        return SyncOutcome()

    def _record(self, service: Mapping[str, Any], events: Iterable[Event]) -> None:
        for event in events:
            self._recorder.record(service, event)

"""The condition as :class:`ServiceSync` writes it, against a stand-in API server that merges
``status.conditions`` by type as the real one does (the real one: ``tests/e2e/test_conditions.py``):
which writes a sync makes, and that a resync of unchanged Services makes none."""

from __future__ import annotations

import copy
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from reconciler.config import default_config
from reconciler.controller.conditions import CONDITION_TYPE
from reconciler.controller.events import EventRecorder
from reconciler.controller.metrics import Metrics
from reconciler.controller.sync import ServiceSync
from reconciler.controller.sync_plan import ControllerSettings
from reconciler.engine.results import EnsureResult
from reconciler.model import FINALIZER, LoadBalancerSpec, ServiceRef
from reconciler.model.predicates import RECONCILE
from tests.builders import make_node, make_service

NODES = [make_node("worker-a", internal="10.0.0.11")]
OTHER = {"type": "example.com/Healthy", "status": "True", "reason": "Fine", "message": "theirs"}


@dataclass
class Write:
    path: str
    body: Any
    kind: str


@dataclass
class Kube:
    """Services by path; merge patches of metadata, strategic ones of the status (conditions
    merged by type, ``loadBalancer`` replaced); Events created and counted as writes too."""

    services: dict[str, dict[str, Any]] = field(default_factory=dict)
    writes: list[Write] = field(default_factory=list)

    def add(self, service: dict[str, Any]) -> None:
        meta = service["metadata"]
        meta.update(generation=1, resourceVersion="1")
        self.services[f"/api/v1/namespaces/{meta['namespace']}/services/{meta['name']}"] = service

    def get(self, path: str) -> dict[str, Any]:
        return copy.deepcopy(self.services[path])

    def patch(self, path: str, body: Any, *, kind: str = "merge") -> dict[str, Any]:
        self.writes.append(Write(path, copy.deepcopy(body), kind))
        if "/events/" in path:
            return {}
        service = self.services[path.removesuffix("/status")]
        if path.endswith("/status"):
            assert kind == "strategic", "status writes merge conditions by type"
            status = service.setdefault("status", {})
            for key, value in body["status"].items():
                if key != "conditions":
                    status[key] = value
                    continue
                items = status.setdefault("conditions", [])
                for entry in value:
                    items[:] = [i for i in items if i["type"] != entry["type"]]
                    if entry.get("$patch") != "delete":
                        items.append(entry)
        else:
            meta = service["metadata"]
            for key, value in body["metadata"].items():
                if key == "annotations":
                    meta.setdefault("annotations", {}).update(value)
                elif key != "resourceVersion":
                    meta[key] = value
        return copy.deepcopy(service)

    def create(self, path: str, body: Mapping[str, Any]) -> dict[str, Any]:
        self.writes.append(Write(path, dict(body), "create"))
        return dict(body)


@dataclass
class Engine:
    fail: Exception | None = None
    calls: list[str] = field(default_factory=list)

    def ensure(self, spec: LoadBalancerSpec) -> EnsureResult:
        self.calls.append(f"ensure {spec.service.name}")
        if self.fail is not None:
            raise self.fail
        lb_id = str(uuid.uuid5(uuid.NAMESPACE_URL, spec.service.uid))
        outputs = {"lb_id": lb_id, "floating_ip": "172.24.4.10"}
        return EnsureResult(changed=False, spec_hash=spec.spec_hash(), outputs=outputs)

    def delete(self, service: ServiceRef, *, keep_floating_ip: bool | None = None) -> bool:
        self.calls.append(f"delete {service.name}")
        return False

    def refresh(self, service: ServiceRef) -> bool:
        raise AssertionError("no drift checks here")

    def check_drift(self, service: ServiceRef) -> Any:
        raise AssertionError("no drift checks here")


def new_sync(kube: Kube, engine: Engine) -> ServiceSync:
    return ServiceSync(
        kube=kube,  # type: ignore[arg-type]
        engine=engine,  # type: ignore[arg-type]
        config=default_config(),
        settings=ControllerSettings(),
        recorder=EventRecorder(kube=kube, instance="test"),  # type: ignore[arg-type]
        metrics=Metrics(process_metrics=False),
        nodes=lambda: NODES,
        clock=lambda: datetime(2026, 11, 27, 12, 0, tzinfo=UTC),
    )


def service(name: str, **kw: Any) -> dict[str, Any]:
    svc = make_service(name, namespace="default", uid=f"uid-{name}", **kw)
    svc["spec"]["ports"][0]["nodePort"] = 30080
    return svc


def sync_all(sync: ServiceSync, kube: Kube) -> None:
    for path, svc in list(kube.services.items()):
        outcome = sync.sync(f"default/{path.rsplit('/', 1)[1]}", copy.deepcopy(svc))
        assert outcome.ok, outcome


def ours(kube: Kube, name: str) -> dict[str, Any]:
    items = kube.services[f"/api/v1/namespaces/default/services/{name}"]["status"]["conditions"]
    (mine,) = [c for c in items if c["type"] == CONDITION_TYPE]
    return mine


def test_a_resync_of_unchanged_services_writes_nothing() -> None:
    kube, engine = Kube(), Engine()
    for i in range(200):  # the rule is per Service: 200 show it as well as 2,000
        kube.add(service(f"svc-{i}"))
    sync = new_sync(kube, engine)
    sync_all(sync, kube)
    assert ours(kube, "svc-7")["reason"] == "Provisioned"
    kube.writes.clear()
    sync_all(sync, kube)  # the same process: no Events either
    assert kube.writes == []
    sync_all(new_sync(kube, engine), kube)  # a restart: upstream's Events, no Service write
    assert [w for w in kube.writes if "/services/" in w.path] == []


def test_create_then_failure_then_recovery_leave_the_other_condition_alone() -> None:
    kube, engine = Kube(), Engine()
    kube.add(service("web", status={"conditions": [OTHER]}))
    sync = new_sync(kube, engine)
    sync_all(sync, kube)
    status_writes = [w for w in kube.writes if w.path.endswith("/status")]
    reasons = [w.body["status"]["conditions"][0]["reason"] for w in status_writes]
    assert reasons == ["Updating", "Provisioned"]  # the ingress goes with the second one
    assert "loadBalancer" in status_writes[1].body["status"]
    assert ours(kube, "web")["status"] == "True"
    engine.fail = RuntimeError("the cloud answered 500: boom\nmore")
    kube.writes.clear()
    outcome = sync.sync("default/web", kube.get("/api/v1/namespaces/default/services/web"))
    assert not outcome.ok
    failed = ours(kube, "web")
    assert (failed["status"], failed["reason"]) == ("False", "CloudError")
    assert failed["message"] == "failed to ensure the load balancer: the cloud answered 500: boom"
    # the same failure again: no write
    kube.writes.clear()
    sync.sync("default/web", kube.get("/api/v1/namespaces/default/services/web"))
    assert [w for w in kube.writes if w.path.endswith("/status")] == []
    engine.fail = None
    sync_all(sync, kube)
    assert ours(kube, "web")["reason"] == "Provisioned"
    conditions = kube.services["/api/v1/namespaces/default/services/web"]["status"]["conditions"]
    assert OTHER in conditions


def test_a_paused_service_gets_no_engine_call_and_keeps_its_finalizer() -> None:
    kube, engine = Kube(), Engine()
    kube.add(service("web", finalizers=[FINALIZER], annotations={RECONCILE: "disabled"}))
    sync = new_sync(kube, engine)
    sync_all(sync, kube)
    assert (ours(kube, "web")["status"], ours(kube, "web")["reason"]) == ("Unknown", "Paused")
    path = "/api/v1/namespaces/default/services/web"
    kube.services[path]["metadata"]["deletionTimestamp"] = "2026-11-27T12:00:00Z"
    kube.writes.clear()
    sync_all(sync, kube)
    events = [w.body for w in kube.writes if w.kind == "create"]
    assert [(e["type"], e["reason"]) for e in events] == [("Warning", "DeletionPaused")]
    kube.writes.clear()
    sync_all(sync, kube)  # nothing new: nothing written, no second Warning
    assert kube.writes == []
    assert engine.calls == []
    assert kube.services[path]["metadata"]["finalizers"] == [FINALIZER]
    # resumed: the delete runs and the finalizer goes
    del kube.services[path]["metadata"]["annotations"][RECONCILE]
    sync_all(sync, kube)
    assert engine.calls == ["delete web"]
    assert kube.services[path]["metadata"]["finalizers"] == []

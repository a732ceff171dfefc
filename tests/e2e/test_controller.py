"""The controller's Kubernetes semantics against a real kube-apiserver (KEP-980, upstream Events).

The cloud side is :class:`RecordingEngine`, a test double of our own engine interface
(:class:`reconciler.controller.backend.LoadBalancerEngine`): it records each call, and at each call
reads the Service from the API server to record whether our finalizer was already there. It can be
told to fail, or to block until released, so the tests can look at the Service in between. Runs of
the real engine against the emulator are in ``test_controller_engine.py``.

Each test runs its own controller, scoped to its own namespace, with a short backoff so retries
happen within the test's deadlines. Tests poll with deadlines; they never sleep a fixed time.
"""

from __future__ import annotations

import itertools
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pytest

from reconciler.config import default_config
from reconciler.controller.backend import Failure
from reconciler.controller.events import COMPONENT
from reconciler.controller.kubeapi import KubeApi, KubeError
from reconciler.controller.kubeconfig import api_client
from reconciler.controller.loop import Controller
from reconciler.controller.queue import Backoff
from reconciler.controller.sync_plan import ControllerSettings
from reconciler.engine.fleet_plan import FleetReport
from reconciler.engine.plan import StackInfo
from reconciler.engine.results import DriftReport, EnsureResult
from reconciler.local.plane import LocalControlPlane
from reconciler.local.toolchain import Toolchain
from reconciler.model import FINALIZER, LoadBalancerSpec, ServiceRef
from reconciler.model.annotations import LOAD_BALANCER_ADDRESS, LOAD_BALANCER_ID
from tests.builders import make_node, make_service

pytestmark = pytest.mark.e2e
T = TypeVar("T")
_counter = itertools.count()


class EngineFailedError(Exception):
    """What RecordingEngine raises when told to fail; ``failure_kind`` as a real engine would."""

    def __init__(self, message: str, kind: Failure) -> None:
        super().__init__(message)
        self.failure_kind = kind


@dataclass
class Call:
    op: str  # "ensure" or "delete"
    key: str
    finalizers_at_call: list[str]
    spec: LoadBalancerSpec | None = None
    keep_floating_ip: bool | None = None  # what a delete was told


@dataclass
class RecordingEngine:
    """Test double of LoadBalancerEngine: records calls, can fail or block on request."""

    kube: KubeApi
    calls: list[Call] = field(default_factory=list)
    fail_ensure: Exception | None = None
    fail_delete: Exception | None = None
    delete_gate: threading.Event | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)
    applied: set[str] = field(default_factory=set)  # spec hashes "in the cloud"

    def _finalizers(self, ns: str, name: str) -> list[str]:
        try:
            svc = self.kube.get(f"/api/v1/namespaces/{ns}/services/{name}")
        except KubeError:
            return []
        return list(svc["metadata"].get("finalizers") or [])

    def ensure(self, spec: LoadBalancerSpec) -> EnsureResult:
        ref = spec.service
        call = Call(
            "ensure", f"{ref.namespace}/{ref.name}", self._finalizers(ref.namespace, ref.name), spec
        )
        with self.lock:
            self.calls.append(call)
            failure = self.fail_ensure
        if failure is not None:
            raise failure
        with self.lock:
            changed = spec.spec_hash() not in self.applied
            self.applied.add(spec.spec_hash())
        n = abs(hash(ref.uid)) % 200 + 10
        outputs = {
            "lb_id": str(uuid.uuid5(uuid.NAMESPACE_URL, ref.uid)),
            "vip_address": f"10.0.0.{n}",
            "floating_ip": f"172.24.4.{n}",
        }
        return EnsureResult(changed=changed, spec_hash=spec.spec_hash(), outputs=outputs)

    def delete(self, service: ServiceRef, *, keep_floating_ip: bool | None = None) -> bool:
        call = Call(
            "delete",
            f"{service.namespace}/{service.name}",
            self._finalizers(service.namespace, service.name),
            keep_floating_ip=keep_floating_ip,
        )
        with self.lock:
            self.calls.append(call)
            failure = self.fail_delete
            gate = self.delete_gate
        if gate is not None:
            assert gate.wait(60), "delete gate never opened"
        if failure is not None:
            raise failure
        return False

    def refresh(self, service: ServiceRef) -> bool:
        with self.lock:
            self.calls.append(Call("refresh", f"{service.namespace}/{service.name}", []))
        return False

    def check_drift(self, service: ServiceRef) -> DriftReport:
        with self.lock:
            self.calls.append(Call("check_drift", f"{service.namespace}/{service.name}", []))
        return DriftReport()

    def stacks(self) -> list[StackInfo]:
        return []

    def compare_fleet(self, stacks: Sequence[str]) -> FleetReport | None:
        return None  # as a backend the CLI alone reads: every stack gets its own check

    def cancel(self) -> None:
        pass

    def take_over(self) -> list[str]:
        return []

    def ops(self, key: str) -> list[str]:
        with self.lock:
            return [c.op for c in self.calls if c.key == key]


def wait_for(
    fn: Callable[[], T | None], *, what: str, timeout: float = 30.0, interval: float = 0.05
) -> T:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = fn()
        except KubeError as exc:
            last = exc
        else:
            if last:
                return last
        time.sleep(interval)  # the deadline above bounds the wait
    raise AssertionError(f"timed out waiting for {what}; last: {last!r}")


NODES = [("e2e-worker-a", "10.0.0.11"), ("e2e-worker-b", "10.0.0.12")]


def ensure_nodes(kube: KubeApi) -> None:
    for name, ip in NODES:
        try:
            # a bare Node: no labels, no provider ID
            kube.create(
                "/api/v1/nodes",
                make_node(name, labels=None, provider_id=None, taints=None, status=False),
            )
        except KubeError as exc:
            if not exc.conflict:
                raise
        node = make_node(name, internal=ip, hostname=False, ready=None)
        kube.patch(f"/api/v1/nodes/{name}/status", {"status": node["status"]})


@pytest.fixture
def kube(control_plane: LocalControlPlane) -> Iterator[KubeApi]:
    api = KubeApi(api_client=api_client(kubeconfig=control_plane.kubeconfig))
    ensure_nodes(api)
    yield api
    api.close()


@pytest.fixture
def namespace(kube: KubeApi) -> str:
    name = f"ctl-{next(_counter)}-{uuid.uuid4().hex[:6]}"
    kube.create("/api/v1/namespaces", {"metadata": {"name": name}})
    return name


@dataclass
class Running:
    controller: Controller
    engine: RecordingEngine
    kube: KubeApi
    namespace: str

    def svc_path(self, name: str) -> str:
        return f"/api/v1/namespaces/{self.namespace}/services/{name}"

    def create(self, name: str, **spec: Any) -> dict[str, Any]:
        annotations = spec.pop("annotations", None) or None
        body = make_service(name, annotations=annotations, **spec)
        return self.kube.create(f"/api/v1/namespaces/{self.namespace}/services", body)

    def get(self, name: str) -> dict[str, Any]:
        return self.kube.get(self.svc_path(name))

    def events(self, name: str) -> list[dict[str, Any]]:
        out = self.kube.list(
            f"/api/v1/namespaces/{self.namespace}/events",
            query={"fieldSelector": f"involvedObject.name={name}"},
        )
        # Only ours: kube-apiserver posts its own (e.g. ClusterIPNotAllocated from
        # the ipallocator repair loop) about Services it has just created.
        return [e for e in out.get("items") or [] if e.get("reportingComponent") == COMPONENT]

    def reasons(self, name: str) -> list[str]:
        return [e["reason"] for e in sorted(self.events(name), key=lambda e: e["firstTimestamp"])]

    def event(self, name: str, reason: str, contains: str = "") -> dict[str, Any] | None:
        for e in self.events(name):
            if e["reason"] == reason and contains in e["message"]:
                return e
        return None

    def ingress(self, name: str) -> list[dict[str, Any]]:
        return list(self.get(name).get("status", {}).get("loadBalancer", {}).get("ingress") or [])

    def gone(self, name: str) -> bool:
        try:
            self.get(name)
        except KubeError as exc:
            return exc.not_found
        return False


def start_controller(
    kube: KubeApi, namespace: str, *, settings: ControllerSettings | None = None
) -> Running:
    engine = RecordingEngine(kube=kube)
    controller = Controller(
        kube=kube,
        engine=engine,
        config=default_config(),
        settings=settings,
        workers=2,
        backoff=Backoff(base=0.2, cap=1.0, soon=0.1),
        namespace=namespace,
        watch_timeout=30,
    )
    controller.start(sync_timeout=30)
    return Running(controller, engine, kube, namespace)


@pytest.fixture
def running(kube: KubeApi, namespace: str) -> Iterator[Running]:
    r = start_controller(kube, namespace)
    yield r
    r.controller.stop(timeout=10)


def test_ensure_adds_finalizer_first_then_annotations_events_status(running: Running) -> None:
    running.create("web")
    ingress = wait_for(lambda: running.ingress("web"), what="an ingress IP")
    key = f"{running.namespace}/web"
    calls = [c for c in running.engine.calls if c.key == key]
    assert calls
    for call in calls:
        assert FINALIZER in call.finalizers_at_call, "the engine ran before the finalizer"
    svc = running.get("web")
    uid = svc["metadata"]["uid"]
    n = abs(hash(uid)) % 200 + 10
    assert ingress == [{"ip": f"172.24.4.{n}", "ipMode": "VIP"}]
    annotations = svc["metadata"]["annotations"]
    assert annotations[LOAD_BALANCER_ID] == str(uuid.uuid5(uuid.NAMESPACE_URL, uid))
    assert annotations[LOAD_BALANCER_ADDRESS] == f"172.24.4.{n}"
    assert svc["metadata"]["finalizers"] == [FINALIZER]
    wait_for(lambda: running.event("web", "EnsuredLoadBalancer"), what="EnsuredLoadBalancer")
    # Event timestamps have one-second resolution: check presence, not order
    reasons = running.reasons("web")
    assert "EnsuringLoadBalancer" in reasons
    assert "UpdatedLoadBalancer" not in reasons
    ensured = running.event("web", "EnsuredLoadBalancer")
    assert ensured is not None
    assert ensured["type"] == "Normal"
    assert ensured["involvedObject"]["uid"] == uid


class StatusWatcher(KubeApi):
    """The controller's API client, which at each status write that shows an address reads the
    Service's events as a user would at that moment (``kubectl get`` shows the EXTERNAL-IP, then
    ``kubectl describe``)."""

    seen: list[list[str]]

    def patch(self, path: str, body: Any, *, kind: str = "merge") -> dict[str, Any]:
        ingress = (body.get("status") or {}).get("loadBalancer", {}).get("ingress")
        if path.endswith("/status") and ingress:
            ns, name = path.split("/")[4], path.split("/")[6]
            events = self.list(
                f"/api/v1/namespaces/{ns}/events",
                query={"fieldSelector": f"involvedObject.name={name}"},
            )
            self.seen.append([e["reason"] for e in events.get("items") or []])
        return super().patch(path, body, kind=kind)


def test_ensured_event_is_recorded_before_the_address_shows(
    control_plane: LocalControlPlane, kube: KubeApi, namespace: str
) -> None:
    """As the Kubernetes service controller does: EnsuredLoadBalancer, then the status. A user
    who sees the EXTERNAL-IP and then looks at the events finds it (a CI run once saw only
    EnsuringLoadBalancer there)."""
    watcher = StatusWatcher(api_client=api_client(kubeconfig=control_plane.kubeconfig))
    watcher.seen = []
    r = start_controller(watcher, namespace)
    try:
        r.create("web")
        wait_for(lambda: r.ingress("web"), what="an ingress IP")
        assert watcher.seen, "no status write with an address"
        assert "EnsuredLoadBalancer" in watcher.seen[0], watcher.seen
        assert "EnsuredLoadBalancer" in r.reasons("web")
    finally:
        r.controller.stop(timeout=10)
        watcher.close()


def test_label_change_does_not_sync_but_port_change_does(running: Running) -> None:
    running.create("web")
    wait_for(lambda: running.ingress("web"), what="an ingress IP")
    key = f"{running.namespace}/web"
    # our own annotation write brings one more sync; wait for the queue to settle
    wait_for(
        lambda: running.controller.queue.idle() and len(running.engine.ops(key)) >= 1,
        what="settled",
    )
    before = len(running.engine.ops(key))
    running.kube.patch(running.svc_path("web"), {"metadata": {"labels": {"team": "x"}}})
    running.kube.patch(
        running.svc_path("web"),
        {"spec": {"ports": [{"port": 81, "targetPort": 8080, "protocol": "TCP"}]}},
        kind="merge",
    )
    wait_for(
        lambda: any(
            c.spec is not None and c.spec.listeners[0].protocol_port == 81
            for c in running.engine.calls
            if c.key == key
        ),
        what="an ensure with the new port",
    )
    assert len(running.engine.ops(key)) == before + 1


def test_delete_is_held_until_engine_delete_succeeded(running: Running) -> None:
    running.create("web")
    wait_for(lambda: running.ingress("web"), what="an ingress IP")
    gate = threading.Event()
    running.engine.delete_gate = gate
    running.kube.request(method="DELETE", path=running.svc_path("web"))
    key = f"{running.namespace}/web"
    wait_for(lambda: "delete" in running.engine.ops(key), what="the engine's delete")
    held = running.get("web")  # still there while the engine works
    assert held["metadata"].get("deletionTimestamp")
    assert FINALIZER in held["metadata"]["finalizers"]
    gate.set()
    wait_for(lambda: running.gone("web"), what="the Service to be deleted")
    wait_for(lambda: running.event("web", "DeletedLoadBalancer"), what="DeletedLoadBalancer")
    assert running.event("web", "DeletingLoadBalancer") is not None


def test_failing_engine_keeps_finalizer_and_warns(running: Running) -> None:
    running.engine.fail_ensure = EngineFailedError(
        "Quota exceeded for resource loadbalancer: request a higher quota or delete unused LBs",
        Failure.BACKOFF,
    )
    running.create("web")
    event = wait_for(
        lambda: running.event("web", "SyncLoadBalancerFailed", "Quota exceeded"),
        what="SyncLoadBalancerFailed",
    )
    assert event["type"] == "Warning"
    assert event["message"].startswith(
        "Error syncing load balancer: failed to ensure load balancer: Quota exceeded"
    )
    svc = running.get("web")
    assert svc["metadata"]["finalizers"] == [FINALIZER]
    assert not running.ingress("web")
    key = f"{running.namespace}/web"
    wait_for(lambda: len(running.engine.ops(key)) >= 2, what="a retry after backoff")
    # the cloud recovers: the next retry succeeds
    running.engine.fail_ensure = None
    wait_for(lambda: running.ingress("web"), what="an ingress IP after recovery")

    # a failing delete keeps the Service (and the finalizer) until it succeeds
    running.engine.fail_delete = EngineFailedError("Octavia unavailable", Failure.BACKOFF)
    running.kube.request(method="DELETE", path=running.svc_path("web"))
    wait_for(
        lambda: running.event("web", "SyncLoadBalancerFailed", "failed to delete load balancer"),
        what="SyncLoadBalancerFailed for delete",
    )
    held = running.get("web")
    assert held["metadata"]["finalizers"] == [FINALIZER]
    running.engine.fail_delete = None
    wait_for(lambda: running.gone("web"), what="the Service to be deleted")


def test_invalid_annotation_warns_and_never_calls_the_engine(running: Running) -> None:
    running.create("bad", annotations={"loadbalancer.openstack.org/connection-limit": "lots"})
    event = wait_for(
        lambda: running.event("bad", "SyncLoadBalancerFailed", "connection-limit"),
        what="a Warning naming the annotation",
    )
    assert event["type"] == "Warning"
    assert "'lots'" in event["message"]
    running.create("good")  # a barrier: once it is done, the bad one had its turn too
    wait_for(lambda: running.ingress("good"), what="the valid Service's IP")
    assert running.engine.ops(f"{running.namespace}/bad") == []
    assert not running.get("bad")["metadata"].get("finalizers")
    # fixing the annotation makes it work
    running.kube.patch(
        running.svc_path("bad"),
        {"metadata": {"annotations": {"loadbalancer.openstack.org/connection-limit": "100"}}},
    )
    wait_for(lambda: running.ingress("bad"), what="an IP once the annotation is fixed")


def test_invalid_annotation_on_existing_lb_leaves_it_alone(running: Running) -> None:
    running.create("web")
    ingress = wait_for(lambda: running.ingress("web"), what="an ingress IP")
    key = f"{running.namespace}/web"
    wait_for(lambda: running.controller.queue.idle(), what="settled")
    calls = len(running.engine.ops(key))
    running.kube.patch(
        running.svc_path("web"),
        {"metadata": {"annotations": {"loadbalancer.openstack.org/lb-method": "FASTEST"}}},
    )
    wait_for(
        lambda: running.event("web", "SyncLoadBalancerFailed", "lb-method"),
        what="a Warning naming lb-method",
    )
    assert len(running.engine.ops(key)) == calls
    assert running.ingress("web") == ingress
    assert running.get("web")["metadata"]["finalizers"] == [FINALIZER]


def test_other_load_balancer_class_is_untouched(running: Running) -> None:
    running.create("theirs", loadBalancerClass="example.com/other-lb")
    running.create("ours")
    wait_for(lambda: running.ingress("ours"), what="our Service's IP")
    theirs = running.get("theirs")
    assert not theirs["metadata"].get("finalizers")
    assert not running.ingress("theirs")
    assert running.engine.ops(f"{running.namespace}/theirs") == []
    assert running.events("theirs") == []


def test_owned_class_gets_our_own_finalizer(kube: KubeApi, namespace: str) -> None:
    settings = ControllerSettings(owned_classes=frozenset({"example.com/gold"}))
    r = start_controller(kube, namespace, settings=settings)
    try:
        r.create("gold", loadBalancerClass="example.com/gold")
        wait_for(lambda: r.ingress("gold"), what="an IP for the owned class")
        assert r.get("gold")["metadata"]["finalizers"] == [settings.class_finalizer]
        r.kube.request(method="DELETE", path=r.svc_path("gold"))
        wait_for(lambda: r.gone("gold"), what="deletion")
        assert r.engine.ops(f"{namespace}/gold")[-1] == "delete"
    finally:
        r.controller.stop(timeout=10)


def test_type_change_away_from_load_balancer_cleans_up(running: Running) -> None:
    running.create("web")
    wait_for(lambda: running.ingress("web"), what="an ingress IP")
    running.kube.patch(
        running.svc_path("web"),
        {"spec": {"type": "ClusterIP"}},
    )
    key = f"{running.namespace}/web"

    def cleaned() -> bool:
        svc = running.get("web")
        return not svc["metadata"].get("finalizers") and not running.ingress("web")

    wait_for(cleaned, what="finalizer and status removed")
    assert running.engine.ops(key)[-1] == "delete"
    annotations = running.get("web")["metadata"].get("annotations") or {}
    assert LOAD_BALANCER_ID not in annotations
    assert LOAD_BALANCER_ADDRESS not in annotations
    wait_for(lambda: running.event("web", "DeletedLoadBalancer"), what="DeletedLoadBalancer")


def test_node_change_resyncs_but_ready_flap_does_not(running: Running) -> None:
    running.create("web")
    wait_for(lambda: running.ingress("web"), what="an ingress IP")
    key = f"{running.namespace}/web"
    wait_for(lambda: running.controller.queue.idle(), what="settled")
    calls = len(running.engine.ops(key))
    running.kube.patch(
        "/api/v1/nodes/e2e-worker-a/status",
        {"status": {"conditions": [{"type": "Ready", "status": "False", "reason": "Test"}]}},
    )
    name = f"e2e-worker-z{uuid.uuid4().hex[:6]}"  # sorts after worker-a (see report)
    running.kube.create("/api/v1/nodes", {"metadata": {"name": name}})
    running.kube.patch(
        f"/api/v1/nodes/{name}/status",
        {"status": {"addresses": [{"type": "InternalIP", "address": "10.0.0.99"}]}},
    )
    try:
        call = wait_for(
            lambda: next(
                (
                    c
                    for c in running.engine.calls[calls:]
                    if c.key == key
                    and c.spec is not None
                    and any(m.name == name for m in c.spec.listeners[0].pool.members)
                ),
                None,
            ),
            what="an ensure with the new node as member",
        )
        assert call.spec is not None
        wait_for(lambda: running.event("web", "UpdatedLoadBalancer"), what="UpdatedLoadBalancer")
    finally:
        running.kube.request(method="DELETE", path=f"/api/v1/nodes/{name}")
        running.kube.patch(
            "/api/v1/nodes/e2e-worker-a/status",
            {"status": {"conditions": [{"type": "Ready", "status": "True", "reason": "Test"}]}},
        )


# -- the watch across an API server restart ---------------------------------------------------


def restart_apiserver(plane: LocalControlPlane) -> None:
    """Stop the plane's kube-apiserver and start it again on the same port and etcd."""
    procs = plane._procs
    index = next(i for i, (n, _p, _l) in enumerate(procs) if n == "kube-apiserver")
    _name, proc, _log = procs.pop(index)
    argv = [str(a) for a in proc.args]
    proc.kill()  # a crash, not a graceful stop: open watches are cut, not closed
    proc.wait(timeout=30)
    plane._spawn("kube-apiserver", argv)
    plane._wait("kube-apiserver", f"{plane.server}/readyz", timeout=90)


@pytest.fixture
def own_plane(
    toolchain: Toolchain, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalControlPlane]:
    with LocalControlPlane.start(
        toolchain=toolchain, folder=tmp_path_factory.mktemp("plane2")
    ) as plane:
        yield plane


def test_watch_survives_apiserver_restart(own_plane: LocalControlPlane) -> None:
    kube = KubeApi(api_client=api_client(kubeconfig=own_plane.kubeconfig))
    try:
        ensure_nodes(kube)
        kube.create("/api/v1/namespaces", {"metadata": {"name": "restart"}})
        r = start_controller(kube, "restart")
        try:
            r.create("before")
            wait_for(lambda: r.ingress("before"), what="an IP before the restart")
            restart_apiserver(own_plane)
            r.create("after")
            wait_for(lambda: r.ingress("after"), what="an IP after the restart", timeout=60)
            r.kube.request(method="DELETE", path=r.svc_path("before"))
            wait_for(lambda: r.gone("before"), what="deletion after the restart", timeout=60)
        finally:
            r.controller.stop(timeout=10)
    finally:
        kube.close()

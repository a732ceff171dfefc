"""The controller as a process with the RBAC of deploy/, the real engine and the emulator.

Everything here is what a cluster operator would see: ``kubectl`` (admin) applies and deletes
Services; ``lb-reconciler run`` (a separate process, ServiceAccount token, leader election on)
gives them load balancers in the emulator; the emulator's inventory is the cloud's truth. A
module-scoped control plane keeps these tests off the shared one (the controller watches every
namespace, as it does in a cluster).
"""

from __future__ import annotations

import contextlib
import random
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

import pytest

from emulator.server import EmulatorHandle
from emulator.timing import INSTANT
from reconciler.controller.events import COMPONENT
from reconciler.controller.kubeapi import KubeApi, KubeError
from reconciler.controller.kubeconfig import api_client
from reconciler.local.demo import EXAMPLE_SERVICE
from reconciler.local.plane import LocalControlPlane
from reconciler.local.toolchain import Toolchain
from reconciler.model import FINALIZER
from tests.backends import Backend
from tests.builders import HOSTNAME_LABEL, make_node, make_service
from tests.e2e.controller_process import ControllerProcess, ControllerSetup
from tests.e2e.rbac import install_rbac, service_account_kubeconfig
from tests.e2e.test_controller import wait_for
from tests.emulated import (
    EmulatorAdmin,
    cloud_conf_text,
    connect,
    emulator_fixture,
    forget_certificates,
    store_certificate,
)

pytestmark = pytest.mark.e2e
T = TypeVar("T")
LB = "loadbalancer.openstack.org/"
EXCLUDE = "node.kubernetes.io/exclude-from-external-load-balancers"
# Leader election faster than the defaults (15 s, 10 s, 2 s), with a renew deadline long enough
# for a loaded test machine: at 4 s, a leader on 2 cores running four test workers (load 13) once
# missed it mid-operation and stepped down, as it must, leaving no replica (the other had been
# killed) and a Service without an IP.
FAST_LEASE = [
    "--leader-elect",
    "--leader-elect-lease-duration",
    "10",
    "--leader-elect-renew-deadline",
    "8",
    "--leader-elect-retry-period",
    "1",
]


def eventually(probe: Callable[[], T | None], *, what: str, timeout: float = 180.0) -> T:
    return wait_for(probe, what=what, timeout=timeout, interval=0.2)


# -- fixtures ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def plane(
    toolchain: Toolchain, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalControlPlane]:
    with LocalControlPlane.start(
        toolchain=toolchain, folder=tmp_path_factory.mktemp("proc-plane")
    ) as p:
        yield p


@pytest.fixture(scope="module")
def admin_kube(plane: LocalControlPlane) -> Iterator[KubeApi]:
    kube = KubeApi(api_client=api_client(kubeconfig=plane.kubeconfig))
    yield kube
    kube.close()


emu = emulator_fixture(scope="module", timing=INSTANT)


@pytest.fixture(scope="module")
def cloud(emu: EmulatorHandle) -> EmulatorAdmin:
    return EmulatorAdmin(emu)


@pytest.fixture(scope="module")
def sa_kubeconfig(
    plane: LocalControlPlane, toolchain: Toolchain, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    install_rbac(kubectl=toolchain.path("kubectl"), kubeconfig=plane.kubeconfig)
    return service_account_kubeconfig(
        kubeconfig=plane.kubeconfig,
        server=plane.server,
        ca_cert=plane.pki.ca_cert,
        out=tmp_path_factory.mktemp("sa") / "kubeconfig",
    )


def put_node(kube: KubeApi, name: str, ip: str, labels: dict[str, str] | None = None) -> None:
    labels = {HOSTNAME_LABEL: name, **(labels or {})}
    with contextlib.suppress(KubeError):
        kube.create("/api/v1/nodes", make_node(name, labels=labels, taints=None, status=False))
    status = make_node(name, internal=ip, hostname=False)["status"]
    kube.patch(f"/api/v1/nodes/{name}/status", {"status": status})


@pytest.fixture(scope="module", autouse=True)
def nodes(admin_kube: KubeApi) -> None:
    put_node(admin_kube, "worker-a", "10.0.0.11")
    put_node(admin_kube, "worker-b", "10.0.0.12")
    put_node(admin_kube, "worker-excluded", "10.0.0.19", {EXCLUDE: "true"})


class Cluster:
    """One test's view: a namespace, kubectl as admin, the cloud, controller replicas."""

    def __init__(
        self,
        *,
        plane: LocalControlPlane,
        kube: KubeApi,
        toolchain: Toolchain,
        cloud: EmulatorAdmin,
        setup: ControllerSetup,
    ) -> None:
        self.plane, self.kube, self.toolchain, self.cloud = plane, kube, toolchain, cloud
        self.setup = setup
        self.ns = f"t-{uuid.uuid4().hex[:6]}"
        self.replicas: list[ControllerProcess] = []
        kube.create("/api/v1/namespaces", {"metadata": {"name": self.ns}})

    def controller(self, identity: str = "", args: list[str] | None = None) -> ControllerProcess:
        proc = ControllerProcess(
            self.setup, identity=identity or f"replica-{len(self.replicas)}", args=args
        )
        self.replicas.append(proc.start())
        return proc

    def kubectl(self, *args: str, stdin: str | None = None, timeout: float = 300) -> str:
        done = subprocess.run(
            [
                str(self.toolchain.path("kubectl")),
                "--kubeconfig",
                str(self.plane.kubeconfig),
                "-n",
                self.ns,
                *args,
            ],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        assert done.returncode == 0, f"kubectl {' '.join(args)}: {done.stderr}"
        return done.stdout

    def svc_path(self, name: str) -> str:
        return f"/api/v1/namespaces/{self.ns}/services/{name}"

    def create(self, name: str, annotations: dict[str, str] | None = None, **spec: Any) -> None:
        body = make_service(name, annotations=annotations or {}, **spec)
        self.kube.create(f"/api/v1/namespaces/{self.ns}/services", body)

    def get(self, name: str) -> dict[str, Any]:
        return self.kube.get(self.svc_path(name))

    def ingress_ip(self, name: str) -> str | None:
        ingress = (self.get(name).get("status", {}).get("loadBalancer") or {}).get("ingress")
        return str(ingress[0].get("ip")) if ingress else None

    def gone(self, name: str) -> bool:
        try:
            self.get(name)
        except KubeError as exc:
            return exc.not_found
        return False

    def events(self, name: str) -> list[dict[str, Any]]:
        answer = self.kube.list(
            f"/api/v1/namespaces/{self.ns}/events",
            query={"fieldSelector": f"involvedObject.name={name}"},
        )
        # Only ours: kube-apiserver posts its own (e.g. ClusterIPNotAllocated from
        # the ipallocator repair loop) about Services it has just created.
        return [e for e in answer.get("items") or [] if e.get("reportingComponent") == COMPONENT]

    def event(self, name: str, reason: str) -> dict[str, Any] | None:
        return next((e for e in self.events(name) if e.get("reason") == reason), None)

    def lbs_named(self, name: str) -> list[dict[str, Any]]:
        want = f"kube_service_{self.setup.cluster_name}_{self.ns}_{name}"
        return [lb for lb in self.cloud.lbs() if lb["name"] == want]

    def listeners_of(self, lb_id: str) -> list[dict[str, Any]]:
        return [
            li
            for li in self.cloud.inventory()["listeners"]
            if any(x.get("id") == lb_id for x in li.get("loadbalancers", []))
        ]

    def members(self, name: str) -> set[str]:
        """Addresses of the pool members of the Service's load balancer (Octavia's shapes:
        a pool lists its load balancers and its members by id)."""
        lbs = self.lbs_named(name)
        if len(lbs) != 1:
            return set()
        inv = self.cloud.inventory()
        ids = {
            m["id"]
            for p in inv["pools"]
            if any(lb.get("id") == lbs[0]["id"] for lb in p.get("loadbalancers", []))
            for m in p.get("members", [])
        }
        return {m["address"] for m in inv["members"] if m["id"] in ids}

    def why(self, name: str) -> str:
        events = [f"{e.get('reason')}: {e.get('message')}" for e in self.events(name)]
        logs = "\n".join(r.log_tail(30) for r in self.replicas)
        return f"events: {events}\ncontroller logs:\n{logs}"

    def close(self) -> None:
        for proc in self.replicas:
            if proc.alive():
                proc.terminate(timeout=60)


@pytest.fixture
def cluster(
    request: pytest.FixtureRequest,
    plane: LocalControlPlane,
    admin_kube: KubeApi,
    toolchain: Toolchain,
    emu: EmulatorHandle,
    cloud: EmulatorAdmin,
    sa_kubeconfig: Path,
    tmp_path: Path,
) -> Iterator[Cluster]:
    """A test's cluster; on the ``backend`` fixture's backend when the test asks for it (one run
    per kind: file, postgres, s3), else on run's default ``file://`` in the state folder."""
    backend: Backend | None = (
        request.getfixturevalue("backend") if "backend" in request.fixturenames else None
    )
    topo = emu.topology()
    conf = tmp_path / "cloud.conf"
    conf.write_text(
        cloud_conf_text(
            topo,
            f"subnet-id = {topo['subnet_id']}\nfloating-network-id = {topo['external_network_id']}",
        )
    )
    setup = ControllerSetup(
        toolchain=toolchain,
        kubeconfig=sa_kubeconfig,
        cloud_conf=conf,
        state_dir=tmp_path / "state",
        logs=tmp_path / "logs",
        # no drift checks unless a test asks for them: they run at each stack's slot of the wall
        # clock's hour (a hash of its name), so one would hold a stack's lock, and count as an
        # operation, at a moment no test chose (a refresh of fo-1 at its slot, xx:59:10, held
        # its lock as the failover test looked for locks left behind)
        extra_args=["--housekeeping-interval", "2", "--orphan-grace", "3", "--drift-interval", "0"],
        backend_url=backend.url if backend is not None else "",
        backend_env=dict(backend.env) if backend is not None else {},
    )
    c = Cluster(plane=plane, kube=admin_kube, toolchain=toolchain, cloud=cloud, setup=setup)
    try:
        yield c
    finally:
        cloud.clear_faults()  # a test that failed midway may have left a rule (a hold) in place
        c.close()
        # nothing this test made may be left in the cloud; what is left is removed, so that the
        # module's next tests (on the same emulator) start from the seeded topology and this
        # test fails alone
        left = [lb["name"] for lb in cloud.lbs() if f"_{c.ns}_" in lb["name"]]
        if left:
            removed = cloud.forget_created()
            raise AssertionError(f"load balancers left behind: {left} (removed: {removed})")


# -- the seed's flow ---------------------------------------------------------------------------


def test_kubectl_flow_pending_to_ip_and_delete_waits_for_the_cloud(
    cluster: Cluster, backend: Backend
) -> None:
    """On each kind of backend (file, postgres, s3): the seed's flow, an edit, and the delete;
    afterwards the backend holds nothing of the Service's stack."""
    c = cluster
    c.controller(args=FAST_LEASE)
    c.kubectl("apply", "-f", "-", stdin=EXAMPLE_SERVICE)
    first = c.kubectl("get", "service", "example-service")
    assert "example-service" in first
    ip = eventually(lambda: c.ingress_ip("example-service"), what="an EXTERNAL-IP")
    shown = c.kubectl("get", "service", "example-service")
    assert ip in shown, shown
    assert "<pending>" not in shown
    svc = c.get("example-service")
    assert svc["metadata"]["finalizers"] == [FINALIZER]
    lbs = c.lbs_named("example-service")
    assert len(lbs) == 1, c.why("example-service")
    assert svc["metadata"]["annotations"][LB + "load-balancer-id"] == lbs[0]["id"]
    assert c.members("example-service") == {"10.0.0.11", "10.0.0.12"}  # not the excluded node
    reasons = [e["reason"] for e in c.events("example-service")]
    assert "EnsuringLoadBalancer" in reasons
    assert "EnsuredLoadBalancer" in reasons

    # an edit: a second port, applied in place (same load balancer)
    ports = [
        {"name": "main", "port": 8765, "targetPort": 9376, "protocol": "TCP"},
        {"name": "alt", "port": 8766, "targetPort": 9376, "protocol": "TCP"},
    ]
    c.kube.patch(c.svc_path("example-service"), {"spec": {"ports": ports}})
    eventually(lambda: len(c.listeners_of(lbs[0]["id"])) == 2, what="the second listener")
    assert [lb["id"] for lb in c.lbs_named("example-service")] == [lbs[0]["id"]]
    store = backend.store()
    stack = f"{c.setup.cluster_name}.{c.ns}.example-service"
    assert store.stack_exists(stack)

    c.kubectl("delete", "service", "example-service", timeout=300)  # waits for the finalizer
    assert c.gone("example-service")
    assert c.lbs_named("example-service") == []
    assert c.cloud.created() == {}  # the emulator's inventory: nothing left that was made
    assert store.objects_of(stack) == []  # no checkpoint, history, backup, tags or lock left
    store.close()


# -- type change, nodes ------------------------------------------------------------------------


def test_nodes_update_members_and_type_change_cleans_up(cluster: Cluster) -> None:
    c = cluster
    c.controller(args=FAST_LEASE)
    c.create("web")
    eventually(lambda: c.ingress_ip("web"), what="an EXTERNAL-IP")
    assert c.members("web") == {"10.0.0.11", "10.0.0.12"}, c.why("web")

    put_node(c.kube, "worker-c", "10.0.0.13")
    try:
        eventually(
            lambda: c.members("web") == {"10.0.0.11", "10.0.0.12", "10.0.0.13"},
            what="the new node as a member",
        )
        eventually(lambda: c.event("web", "UpdatedLoadBalancer"), what="UpdatedLoadBalancer")
    finally:
        c.kube.request(method="DELETE", path="/api/v1/nodes/worker-c")
    eventually(
        lambda: c.members("web") == {"10.0.0.11", "10.0.0.12"}, what="the node's member gone"
    )
    lb_id = c.lbs_named("web")[0]["id"]  # members changed in place: same load balancer

    c.kube.patch(c.svc_path("web"), {"spec": {"type": "ClusterIP"}})

    def cleaned() -> bool:
        svc = c.get("web")
        return (
            not svc["metadata"].get("finalizers")
            and not (svc.get("status", {}).get("loadBalancer") or {}).get("ingress")
            and c.lbs_named("web") == []
        )

    eventually(cleaned, what="the load balancer removed after the type change")
    assert c.event("web", "DeletedLoadBalancer") is not None
    annotations = c.get("web")["metadata"].get("annotations") or {}
    assert LB + "load-balancer-id" not in annotations
    assert all(lb["id"] != lb_id for lb in c.cloud.lbs())


# -- crashes and downtime ----------------------------------------------------------------------


def test_sigkill_during_up_then_restart_converges_without_orphan_or_duplicate(
    cluster: Cluster,
) -> None:
    c = cluster
    # the listener create is held until the faults are cleared: the up is still running after
    # the LB exists, for as long as the test needs
    c.cloud.post(
        "/faults/rules", {"operation": "octavia.listener.create", "hold": True, "status": 200}
    )
    try:
        first = c.controller("crashing", args=FAST_LEASE)
        c.create("crash")
        eventually(lambda: c.lbs_named("crash"), what="the LB being created", timeout=120)
        assert c.ingress_ip("crash") is None  # the up is still running
        first.kill()  # the whole process group, as a container runtime does
    finally:
        c.cloud.clear_faults()
    second = c.controller("restarted", args=FAST_LEASE)
    ip = eventually(lambda: c.ingress_ip("crash"), what="an IP after the restart")
    assert len(c.lbs_named("crash")) == 1, c.why("crash")  # no duplicate
    assert c.members("crash") == {"10.0.0.11", "10.0.0.12"}
    svc = c.get("crash")
    assert svc["metadata"]["annotations"][LB + "load-balancer-address"] == ip

    # a restart with nothing changed runs no up: the engine's spec hash says "applied"
    assert second.terminate() == 0
    third = c.controller("unchanged", args=FAST_LEASE)
    eventually(
        lambda: third.metric("lbr_stack_operations_total", kind="skip", result="success") >= 1,
        what="the restarted controller's first sync",
    )
    assert third.metric("lbr_stack_operations_total", kind="up", result="success") == 0
    assert third.metric("lbr_stack_operations_total", kind="up", result="error") == 0
    c.kube.request(method="DELETE", path=c.svc_path("crash"))
    eventually(lambda: c.gone("crash"), what="the Service gone")
    assert c.lbs_named("crash") == []
    assert c.cloud.created() == {}


def test_deleted_while_down_and_finalizer_stripped_while_down(cluster: Cluster) -> None:
    c = cluster
    first = c.controller("first", args=FAST_LEASE)
    c.create("held")
    c.create("stripped")
    for name in ("held", "stripped"):
        eventually(lambda n=name: c.ingress_ip(n), what=f"an IP for {name}")  # type: ignore[misc]
    dump = first.stacks()  # SIGUSR1: every thread's stack, and the controller goes on
    main = dump.split("Thread MainThread")[1].split("\nThread ")[0]
    assert "reconciler/controller/runner.py" in main, dump  # the main thread, waiting to stop
    assert "reconciler/controller/loop.py" in dump, dump  # the workers, waiting for work
    assert first.http("/healthz")[0] == 200
    assert first.terminate() == 0  # graceful stop, lease released

    # while no controller runs: one Service is deleted (the finalizer holds it), the other
    # loses its finalizer by hand and is deleted (its stack becomes an orphan)
    c.kube.request(method="DELETE", path=c.svc_path("held"))
    c.kube.patch(c.svc_path("stripped"), {"metadata": {"finalizers": None}})
    c.kube.request(method="DELETE", path=c.svc_path("stripped"))
    assert not c.gone("held")
    eventually(lambda: c.gone("stripped"), what="the stripped Service gone", timeout=30)
    assert len(c.lbs_named("held")) == 1
    assert len(c.lbs_named("stripped")) == 1  # an orphan in the cloud, for now

    second = c.controller("second", args=FAST_LEASE)
    eventually(lambda: c.gone("held"), what="the held Service cleaned up at start")
    eventually(lambda: c.lbs_named("stripped") == [], what="the orphan destroyed")
    assert c.lbs_named("held") == []
    eventually(lambda: second.metric("lbr_orphan_stacks_deleted_total") >= 1, what="orphan metric")
    assert second.metric("lbr_orphan_stacks_found_total") >= 1
    assert any("orphan" in str(r.get("msg", "")) for r in second.log_records())
    assert c.cloud.created() == {}


# -- high availability -------------------------------------------------------------------------


def lease_holder(c: Cluster) -> str:
    lease = c.kube.get("/apis/coordination.k8s.io/v1/namespaces/lb-reconciler/leases/lb-reconciler")
    return str(lease.get("spec", {}).get("holderIdentity") or "")


def test_two_replicas_only_the_leader_acts_and_a_killed_leader_hands_over(
    cluster: Cluster,
) -> None:
    c = cluster
    a = c.controller("replica-a", args=FAST_LEASE)
    b = c.controller("replica-b", args=FAST_LEASE)
    holder = eventually(
        lambda: lease_holder(c) in ("replica-a", "replica-b") and lease_holder(c),
        what="a leader",
        timeout=60,
    )
    leader, follower = (a, b) if holder == "replica-a" else (b, a)
    eventually(lambda: follower.http("/readyz")[0] == 200, what="the follower ready (standby)")
    c.create("ha-one")
    eventually(lambda: c.ingress_ip("ha-one"), what="an IP from the leader")
    assert leader.metric("lbr_stack_operations_total", kind="up", result="success") >= 1
    assert follower.metric("lbr_stack_operations_total", kind="up", result="success") == 0
    assert follower.metric("lbr_leader") == 0
    assert leader.metric("lbr_leader") == 1

    killed_at = time.monotonic()
    leader.kill()
    eventually(
        lambda: lease_holder(c) == follower.identity, what="the follower leading", timeout=60
    )
    handover = time.monotonic() - killed_at
    c.create("ha-two")
    eventually(lambda: c.ingress_ip("ha-two"), what="an IP from the new leader")
    assert follower.metric("lbr_leader") == 1
    print(f"handover after SIGKILL of the leader: {handover:.1f}s (lease duration 6 s)")
    for name in ("ha-one", "ha-two"):
        c.kube.request(method="DELETE", path=c.svc_path(name))
    for name in ("ha-one", "ha-two"):
        eventually(lambda n=name: c.gone(n), what=f"{name} deleted")  # type: ignore[misc]
    assert c.cloud.created() == {}


def test_a_replica_that_cannot_log_in_says_so_and_never_takes_the_lease(
    cluster: Cluster, emu: EmulatorHandle, tmp_path: Path
) -> None:
    c = cluster
    topo = emu.topology()
    wrong = "not-the-demo-password-42"
    good_text = c.setup.cloud_conf.read_text()
    bad = tmp_path / "bad-cloud.conf"
    bad.write_text(good_text.replace(f"password = {topo['password']}", f"password = {wrong}"))
    assert bad.read_text() != good_text
    # the Lease of deploy/rbac.yaml (the only one the ServiceAccount may touch), held by no
    # replica now: this test's are the only ones running
    path = "/apis/coordination.k8s.io/v1/namespaces/lb-reconciler/leases/lb-reconciler"
    with contextlib.suppress(KubeError):
        c.kube.request(method="DELETE", path=path)
    args = FAST_LEASE
    refused = ControllerProcess(replace(c.setup, cloud_conf=bad), identity="no-login", args=args)
    c.replicas.append(refused.start())
    assert refused.proc is not None
    assert refused.proc.wait(timeout=120) == 2
    said = [r for r in refused.log_records() if r.get("level") == "error"]
    assert [r["msg"] for r in said] == [
        "cannot use the OpenStack cloud; not leading, exiting (the Deployment restarts the "
        "process, which tries again)"
    ]
    error = said[0]["error"]
    assert f"cannot log in to Keystone at {topo['auth_url']} (auth-url)" in error
    assert "the cloud answered 401: The request you have made requires authentication." in error
    assert "check username, password" in error
    assert wrong not in refused.log_path.read_text()
    with pytest.raises(KubeError) as missing:
        c.kube.get(path)
    assert missing.value.not_found  # never asked for, so never held
    # the same Lease with the right password: taken (so the check above can fail)
    good = c.controller("logged-in", args=args)
    eventually(
        lambda: c.kube.get(path).get("spec", {}).get("holderIdentity") == good.identity,
        what="the Lease held by the replica that logged in",
        timeout=60,
    )
    assert any(r.get("msg") == "logged in to OpenStack" for r in good.log_records())


def test_a_replica_whose_credential_can_only_read_names_the_role_and_never_takes_the_lease(
    cluster: Cluster, emu: EmulatorHandle, tmp_path: Path
) -> None:
    """Issue 41: a credential with only ``reader`` logs in, and every write it makes would be
    refused (403). The controller says so at start, from the token's roles (nothing written),
    naming the role to grant, instead of taking Services it cannot serve."""
    c = cluster
    topo = emu.topology()
    good_text = c.setup.cloud_conf.read_text()
    reader = tmp_path / "reader-cloud.conf"
    reader.write_text(
        good_text.replace(f"username = {topo['username']}", "username = viewer").replace(
            f"password = {topo['password']}", "password = viewer-password"
        )
    )
    assert "username = viewer" in reader.read_text()
    path = "/apis/coordination.k8s.io/v1/namespaces/lb-reconciler/leases/lb-reconciler"
    with contextlib.suppress(KubeError):
        c.kube.request(method="DELETE", path=path)
    refused = ControllerProcess(
        replace(c.setup, cloud_conf=reader), identity="reader", args=FAST_LEASE
    )
    c.replicas.append(refused.start())
    assert refused.proc is not None
    assert refused.proc.wait(timeout=120) == 2
    said = [r["msg"] for r in refused.log_records() if r.get("level") == "error"]
    assert said == [
        "the OpenStack credential's roles on project 'demo' are reader: it can read load "
        "balancers but not make them; it needs the role 'member' on the project (Octavia's and "
        "Neutron's default policy), or 'load-balancer_member' where the cloud runs Octavia's "
        "advanced policy. Ask the cloud's administrator: openstack role add --user <user> "
        "--project demo member; not starting"
    ]
    with pytest.raises(KubeError) as missing:
        c.kube.get(path)
    assert missing.value.not_found  # never asked for, so never held


# -- bad input next to good ---------------------------------------------------------------------

INVALID_ANNOTATIONS: list[tuple[str, str]] = [
    (LB + "keep-floatingip", "maybe"),
    (LB + "timeout-client-data", "-5"),
    (LB + "timeout-member-connect", "soon"),
    (LB + "proxy-protocol", "v7"),
    (LB + "x-forwarded-for", "yes please"),
    (LB + "health-monitor-delay", "0x"),
    (LB + "health-monitor-max-retries", "99"),
    (LB + "subnet-id", "not-a-uuid"),
    (LB + "network-id", "nope"),
    (LB + "enable-health-monitor", "perhaps"),
    (LB + "connection-limit", "-2"),
    (LB + "lb-method", "FASTEST"),
    ("service.beta.kubernetes.io/openstack-internal-load-balancer", "sometimes"),
]


def test_invalid_annotations_warn_and_valid_services_get_ips(cluster: Cluster) -> None:
    c = cluster
    proc = c.controller(args=FAST_LEASE)
    rng = random.Random(20261122)
    invalid = []
    for i in range(20):
        key, value = rng.choice(INVALID_ANNOTATIONS)
        name = f"bad-{i:02d}"
        c.create(name, annotations={key: value})
        invalid.append((name, key))
    valid = [f"good-{i}" for i in range(5)]
    for name in valid:
        c.create(name)
    for name in valid:
        eventually(lambda n=name: c.ingress_ip(n), what=f"an IP for {name}", timeout=300)  # type: ignore[misc]
    for name, key in invalid:
        warning = eventually(
            lambda n=name: c.event(n, "SyncLoadBalancerFailed"),  # type: ignore[misc]
            what=f"a Warning for {name}",
        )
        assert warning["type"] == "Warning"
        assert key in warning["message"], warning["message"]
        assert c.ingress_ip(name) is None
        assert not c.get(name)["metadata"].get("finalizers")
        assert c.lbs_named(name) == []
    assert proc.alive()
    assert proc.http("/healthz")[0] == 200
    for name in valid + [n for n, _k in invalid]:
        c.kube.request(method="DELETE", path=c.svc_path(name))
    for name in valid:
        eventually(lambda n=name: c.gone(n), what=f"{name} deleted")  # type: ignore[misc]
    assert c.cloud.created() == {}


def test_source_ip_port_on_amphora_is_refused_before_the_cloud_and_the_rest_still_works(
    cluster: Cluster, tmp_path: Path
) -> None:
    """Issue 41: Octavia's amphora driver answers 501 to a pool with ``SOURCE_IP_PORT``, after
    the load balancer and listener are made. With cloud.conf naming the amphora provider, the
    Service's annotation is refused before any call: a Warning naming the option and the
    provider, nothing in the cloud; once the annotation goes, the Service gets its IP."""
    c = cluster
    conf = tmp_path / "amphora-cloud.conf"
    conf.write_text(
        c.setup.cloud_conf.read_text().replace(
            "[LoadBalancer]", "[LoadBalancer]\nlb-provider = amphora"
        )
    )
    assert "lb-provider = amphora" in conf.read_text()
    proc = ControllerProcess(replace(c.setup, cloud_conf=conf), identity="amphora", args=FAST_LEASE)
    c.replicas.append(proc.start())
    c.create("hashed", annotations={LB + "lb-method": "SOURCE_IP_PORT"})
    warning = eventually(
        lambda: c.event("hashed", "SyncLoadBalancerFailed"), what="a Warning for hashed"
    )
    assert warning["type"] == "Warning"
    assert "lb-method" in warning["message"]
    assert "SOURCE_IP_PORT" in warning["message"]
    assert "amphora provider" in warning["message"]
    assert c.lbs_named("hashed") == []  # nothing half made
    assert not c.get("hashed")["metadata"].get("finalizers")
    c.kube.patch(c.svc_path("hashed"), {"metadata": {"annotations": {LB + "lb-method": None}}})
    eventually(
        lambda: c.ingress_ip("hashed"), what="an IP once the annotation is gone", timeout=300
    )
    (lb,) = c.lbs_named("hashed")
    pools = c.cloud.inventory()["pools"]
    mine = [p["lb_algorithm"] for p in pools if p["name"].endswith(lb["name"])]
    assert mine == ["ROUND_ROBIN"]
    c.kube.request(method="DELETE", path=c.svc_path("hashed"))
    eventually(lambda: c.gone("hashed"), what="hashed deleted")


def test_a_certificate_barbican_does_not_know_is_refused_before_any_listener(
    cluster: Cluster, emu: EmulatorHandle
) -> None:
    """Issue 41: Octavia refuses a ``TERMINATED_HTTPS`` listener whose certificate reference
    Barbican does not know (400 ``Could not retrieve certificate``), after the load balancer is
    made. The controller asks Barbican first: a Warning naming the field and quoting Barbican,
    nothing in the cloud; once the container exists, the next attempt serves the Service."""
    c = cluster
    proc = c.controller(args=FAST_LEASE)
    conn = connect(emu.topology())
    base = conn.key_manager.get_endpoint().rstrip("/").removesuffix("/v1")
    missing = f"{base}/v1/containers/{uuid.uuid4()}"
    c.create("tls", annotations={LB + "default-tls-container-ref": missing})
    warning = eventually(lambda: c.event("tls", "SyncLoadBalancerFailed"), what="a Warning")
    assert warning["type"] == "Warning"
    message = warning["message"]
    assert "default-tls-container-ref (or cloud.conf [LoadBalancer] " in message
    assert f"{missing}: no such certificate container or secret" in message
    assert "the key manager answered 404: Secrets container not found." in message
    assert c.lbs_named("tls") == []  # no listener touched: nothing made at all
    made, _cert = store_certificate(conn)
    c.kube.patch(
        c.svc_path("tls"),
        {"metadata": {"annotations": {LB + "default-tls-container-ref": made.container_ref}}},
    )
    eventually(lambda: c.ingress_ip("tls"), what="an IP once the container exists", timeout=300)
    (lb,) = c.lbs_named("tls")
    (listener,) = c.listeners_of(lb["id"])
    assert listener["protocol"] == "TERMINATED_HTTPS"
    assert listener["default_tls_container_ref"] == made.container_ref
    assert proc.alive()
    c.kube.request(method="DELETE", path=c.svc_path("tls"))
    eventually(lambda: c.gone("tls"), what="tls deleted")
    forget_certificates(conn)
    left = c.cloud.created()
    assert (left.get("containers"), left.get("secrets")) == (None, None), left


# -- drift -------------------------------------------------------------------------------------


def test_a_listener_deleted_by_hand_comes_back(cluster: Cluster, emu: EmulatorHandle) -> None:
    c = cluster
    proc = c.controller(args=[*FAST_LEASE, "--drift-interval", "4"])
    c.create("drifty")
    eventually(lambda: c.ingress_ip("drifty"), what="an EXTERNAL-IP")
    conn = connect(emu.topology())
    lb = c.lbs_named("drifty")[0]
    listeners = c.listeners_of(lb["id"])
    assert len(listeners) == 1
    conn.load_balancer.delete_listener(listeners[0]["id"])  # by hand, as a user
    eventually(
        lambda: proc.metric("lbr_drift_repaired_total") >= 1, what="drift repaired", timeout=120
    )
    back = c.listeners_of(lb["id"])
    assert len(back) == 1
    assert back[0]["protocol_port"] == 80
    assert c.event("drifty", "DriftRepaired") is not None
    c.kube.request(method="DELETE", path=c.svc_path("drifty"))
    eventually(lambda: c.gone("drifty"), what="drifty deleted")
    assert c.cloud.created() == {}


def test_a_quiet_stack_gets_no_refresh_and_a_member_removed_by_hand_comes_back(
    cluster: Cluster, emu: EmulatorHandle
) -> None:
    """Drift found by the fleet comparison: while nothing changes, the controller compares
    every interval and starts no ``pulumi refresh`` (the sweep is an hour away); a member removed
    by hand is found at the next comparison and put back."""
    c = cluster
    proc = c.controller(
        args=[*FAST_LEASE, "--drift-interval", "2", "--drift-sweep-interval", "3600"]
    )
    c.create("quiet")
    eventually(lambda: c.ingress_ip("quiet"), what="an EXTERNAL-IP")

    def compared() -> float:
        return proc.metric("lbr_drift_fleet_comparisons_total", result="compared")

    start = compared()
    eventually(lambda: compared() >= start + 3, what="three fleet comparisons", timeout=120)
    for result in ("success", "error"):
        assert proc.metric("lbr_stack_operations_total", kind="refresh", result=result) == 0
    assert proc.metric("lbr_drift_fleet_suspects_total") == 0

    (lb,) = c.lbs_named("quiet")
    (pool,) = [p for p in c.cloud.inventory()["pools"] if p["loadbalancers"] == [{"id": lb["id"]}]]
    gone = pool["members"][0]["id"]
    before = c.members("quiet")
    connect(emu.topology()).load_balancer.delete_member(gone, pool["id"])  # by hand, as a user
    eventually(
        lambda: proc.metric("lbr_drift_repaired_total") >= 1, what="drift repaired", timeout=120
    )
    assert proc.metric("lbr_drift_fleet_suspects_total") >= 1
    assert proc.metric("lbr_stack_operations_total", kind="refresh", result="success") >= 1
    assert c.members("quiet") == before  # put back
    assert c.event("quiet", "DriftRepaired") is not None
    c.kube.request(method="DELETE", path=c.svc_path("quiet"))
    eventually(lambda: c.gone("quiet"), what="quiet deleted")
    assert c.cloud.created() == {}

"""The container image (``make image``) run as a pod would run it (:mod:`tests.e2e.container`):
in-cluster configuration from a mounted ServiceAccount, cloud.conf and the backend settings as
the Deployment mounts them, a read-only root filesystem, an arbitrary non-root uid, the shared
``postgres://`` backend of ``deploy/``.

* **One pod**: it takes the Lease, a Service gets its IP and its members, deleting the Service
  removes the load balancer, and SIGTERM stops it well within the 60 s grace period, with exit 0
  and the Lease released.
* **What the image holds**: no compiler, pip or test tool, Debian's CA bundle (not this
  machine's), no variable of the build machine's environment.
* **Two pods**: the leader is SIGKILLed (every process in it); the standby takes over, the
  Services stay as they were, and a Service created afterwards gets its IP from the new leader.

The image must be built from this tree: ``make test`` runs ``make image`` first.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from reconciler.cli.version import revision
from reconciler.local.plane import LocalControlPlane
from tests.backends import BackendServers
from tests.e2e import test_controller_process as proc
from tests.e2e.container import (
    IMAGE,
    ContainerController,
    image_revision,
    podman_flags,
    service_account_files,
)
from tests.e2e.test_controller_process import FAST_LEASE, Cluster, eventually, lease_holder

# test_controller_process's fixtures (a control plane, the emulator, the RBAC, the Nodes, a
# test's cluster), instantiated for this module too
plane, admin_kube, emu, cloud = proc.plane, proc.admin_kube, proc.emu, proc.cloud
sa_kubeconfig, nodes, cluster = proc.sa_kubeconfig, proc.nodes, proc.cluster

pytestmark = pytest.mark.e2e

GRACE = 60.0  # the Deployment's terminationGracePeriodSeconds


@pytest.fixture(scope="module", autouse=True)
def image_of_this_tree() -> None:
    """The image is this tree's (its revision label: the commit, ``-dirty`` included), else the
    test would pass or fail on another code."""
    tree = revision()
    built = image_revision()
    assert built == tree, f"the image is of {built}, this tree is {tree}: run `make image`"


@pytest.fixture
def pods(
    cluster: Cluster,
    plane: LocalControlPlane,
    sa_kubeconfig: Path,
    backend_servers: BackendServers,
    tmp_path: Path,
) -> Iterator[list[ContainerController]]:
    """A function that starts a pod of the image on the test's cluster, sharing a
    ``postgres://`` backend; the pods are stopped at the end."""
    pg = backend_servers.backend("postgres", folder=tmp_path)
    cluster.setup.backend_url, cluster.setup.backend_env = pg.url, dict(pg.env)
    started: list[ContainerController] = []
    yield started
    for pod in started:
        if pod.alive():
            pod.kill()


def start_pod(
    c: Cluster,
    plane: LocalControlPlane,
    sa_kubeconfig: Path,
    pods: list[ContainerController],
    identity: str,
) -> ContainerController:
    sa = service_account_files(sa_kubeconfig, plane.pki.ca_cert, c.setup.logs.parent / "sa")
    pod = ContainerController(
        c.setup, identity=identity, server=plane.server, service_account=sa, args=FAST_LEASE
    )
    pods.append(pod)
    c.replicas.append(pod.start())
    return pod


def test_the_image_runs_as_a_pod_from_lease_to_delete_and_stops_on_sigterm(
    cluster: Cluster,
    plane: LocalControlPlane,
    sa_kubeconfig: Path,
    pods: list[ContainerController],
) -> None:
    c = cluster
    pod = start_pod(c, plane, sa_kubeconfig, pods, "image-a")
    eventually(lambda: lease_holder(c) == "image-a", what="the pod leading", timeout=120)
    eventually(lambda: pod.http("/readyz")[0] == 200, what="/readyz")
    records = pod.log_records()
    assert any(r.get("msg") == "logged in to OpenStack" for r in records), pod.log_tail()

    c.create("web")
    eventually(lambda: c.ingress_ip("web"), what="an EXTERNAL-IP", timeout=240)
    assert len(c.lbs_named("web")) == 1, c.why("web")
    assert c.members("web") == {"10.0.0.11", "10.0.0.12"}, c.why("web")

    c.kube.request(method="DELETE", path=c.svc_path("web"))
    eventually(lambda: c.gone("web"), what="web deleted", timeout=240)
    assert c.lbs_named("web") == []
    assert c.cloud.created() == {}

    asked = time.monotonic()
    code = pod.terminate(timeout=GRACE)
    took = time.monotonic() - asked
    assert code == 0, pod.log_tail()
    print(f"stopped {took:.1f}s after SIGTERM (grace period {GRACE:g}s)")
    assert lease_holder(c) == ""  # released on the way out: a standby need not wait it out


def test_two_pods_a_killed_leader_hands_over(
    cluster: Cluster,
    plane: LocalControlPlane,
    sa_kubeconfig: Path,
    pods: list[ContainerController],
) -> None:
    c = cluster
    a = start_pod(c, plane, sa_kubeconfig, pods, "image-a")
    eventually(lambda: lease_holder(c) == "image-a", what="image-a leading", timeout=120)
    b = start_pod(c, plane, sa_kubeconfig, pods, "image-b")
    eventually(lambda: b.http("/readyz")[0] == 200, what="image-b ready as standby")
    c.create("before")
    eventually(lambda: c.ingress_ip("before"), what="before's EXTERNAL-IP", timeout=240)
    ip = c.ingress_ip("before")

    a.kill()
    eventually(lambda: lease_holder(c) == "image-b", what="image-b leading", timeout=120)
    c.create("after")
    eventually(lambda: c.ingress_ip("after"), what="after's EXTERNAL-IP", timeout=240)
    assert c.ingress_ip("before") == ip
    for name in ("before", "after"):
        assert len(c.lbs_named(name)) == 1, c.why(name)
        c.kube.request(method="DELETE", path=c.svc_path(name))
    for name in ("before", "after"):
        eventually(lambda n=name: c.gone(n), what=f"{name} deleted", timeout=240)  # type: ignore[misc]
    assert c.cloud.created() == {}
    assert b.terminate(timeout=GRACE) == 0, b.log_tail()


def test_the_image_holds_no_test_tool_and_nothing_of_this_machine() -> None:
    """No compiler, pip or test tool; the CA bundle is Debian's, not this machine's (which trusts
    the proxy of the package registries); no variable of the build machine's environment."""

    def inside(script: str) -> str:
        return subprocess.run(
            [
                "podman",
                "run",
                "--rm",
                *podman_flags(),
                "--read-only",
                "--entrypoint",
                "sh",
                IMAGE,
                "-c",
                script,
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout

    found = inside(
        "for t in etcd kube-apiserver kubectl minio helm gcc cc go pip pip3 pytest; do "
        "command -v $t || true; done; ls /opt/lb-reconciler/bin"
    ).split()
    assert [t for t in found if t.startswith("/")] == []
    assert {"lb-reconciler", "python3"} <= set(found)
    assert "pip" not in found  # removed from the virtualenv too
    bundle = "/etc/ssl/certs/ca-certificates.crt"
    image_bundle = inside(f"cat {bundle}")
    assert image_bundle != Path(bundle).read_text()
    assert inside("ls /usr/local/share/ca-certificates 2>/dev/null || true").strip() == ""
    env = subprocess.run(
        ["podman", "image", "inspect", "--format", "{{json .Config.Env}}", IMAGE],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    for name in ("PIP_CERT", "REQUESTS_CA_BUNDLE", "SSL_CERT_FILE", "HTTP_PROXY", "http_proxy"):
        assert name not in env, env

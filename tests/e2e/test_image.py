"""The container image (``make image``) run as a pod would run it (:mod:`tests.e2e.container`):
in-cluster configuration from a mounted ServiceAccount, cloud.conf and the backend settings as
the Deployment mounts them, a read-only root filesystem, an arbitrary non-root uid, the shared
``postgres://`` backend of ``deploy/``.

* **One pod**: it takes the Lease, a Service gets its IP and its members, deleting the Service
  removes the load balancer, and SIGTERM stops it well within the 60 s grace period, with exit 0
  and the Lease released.
* **What the image holds**: no compiler, pip or test tool, Debian's CA bundle (not this
  machine's), no variable of the build machine's environment; only what the controller and the
  CLI need (issue 40), under 400 MB: every module of the package imports, with its bytecode,
  the S3 client and those of botocore's credential providers are made, and what ``make image``
  leaves out is absent; ``demo`` and ``emulator`` name the extra they need.
* **Two pods**: the leader is SIGKILLed (every process in it); the standby takes over, the
  Services stay as they were, and a Service created afterwards gets its IP from the new leader.

The image must be built from this tree: ``make test`` runs ``make image`` first.
"""

from __future__ import annotations

import json
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


def run_inside(*argv: str, entrypoint: str | None = None) -> subprocess.CompletedProcess[str]:
    """``argv`` in a container of the image, as the pod runs it: read-only root, its own user."""
    flags = ["--entrypoint", entrypoint] if entrypoint else []
    return subprocess.run(
        ["podman", "run", "--rm", *podman_flags(), "--read-only", *flags, IMAGE, *argv],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def inside(script: str) -> str:
    """The output of the shell ``script`` in the image; it must succeed."""
    done = run_inside("-c", script, entrypoint="sh")
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_image_holds_no_test_tool_and_nothing_of_this_machine() -> None:
    """No compiler, pip or test tool; the CA bundle is Debian's, not this machine's (which trusts
    the proxy of the package registries); no variable of the build machine's environment."""
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


SIZE_BUDGET = 400_000_000  # bytes, as `podman image inspect` counts them (issue 40: 636 MB before)

# Run by the image's python3: import every module of the package and what its functions import
# on first use, create the S3 client and those of botocore's credential providers (their API
# models are all of botocore's that the image keeps), then report.
IMPORT_PROBE = """
import importlib, importlib.util, json, os, pkgutil, sys
for package in ("reconciler", "stacks"):
    root = importlib.import_module(package)
    for info in pkgutil.walk_packages(root.__path__, package + "."):
        if not info.name.endswith("__main__"):
            importlib.import_module(info.name)
import psycopg, psycopg.conninfo, psycopg.sql, pulumi.automation
from reconciler.engine.state.aws import botocore_client
endpoints = {
    service: botocore_client(
        service, region_name="eu-west-1", aws_access_key_id="a", aws_secret_access_key="b"
    ).meta.endpoint_url
    for service in ("s3", "sts", "sso", "sso-oidc", "signin")
}
files = {name: getattr(m, "__file__", None) or "" for name, m in sys.modules.copy().items()}
print(json.dumps({
    "uncompiled": sorted(
        name for name, path in files.items()
        if path.startswith("/opt/lb-reconciler/") and path.endswith(".py")
        and not os.path.exists(importlib.util.cache_from_source(path))
    ),
    "installed": sorted(
        name for name in ("aiohttp", "debugpy", "setuptools", "pip", "kubernetes.aio")
        if importlib.util.find_spec(name) is not None
    ),
    "endpoints": endpoints,
    "kubernetes": files["kubernetes"],
}))
"""


def test_the_image_holds_what_the_controller_and_the_cli_need_in_under_400_mb() -> None:
    """What `make image` leaves out (deploy/README.md, "The image") stays out, what the package
    imports is in, compiled: no module it loads is compiled at each start on the read-only root
    filesystem; and the whole is under the size budget."""
    size = int(
        subprocess.run(
            ["podman", "image", "inspect", "--format", "{{.Size}}", IMAGE],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    assert size < SIZE_BUDGET, f"the image is {size / 1e6:.0f} MB"
    done = run_inside("-c", IMPORT_PROBE, entrypoint="python3")
    assert done.returncode == 0, done.stderr
    probe = json.loads(done.stdout)
    assert probe["installed"] == []  # kubernetes' asyncio client and what only it, pip, build need
    assert probe["uncompiled"] == []
    assert probe["endpoints"] == {
        "s3": "https://s3.eu-west-1.amazonaws.com",
        "sts": "https://sts.eu-west-1.amazonaws.com",
        "sso": "https://portal.sso.eu-west-1.amazonaws.com",
        "sso-oidc": "https://oidc.eu-west-1.amazonaws.com",
        "signin": "https://signin.eu-west-1.amazonaws.com",
    }
    assert "/site-packages/kubernetes.zip/kubernetes/" in probe["kubernetes"]  # zipimport's


@pytest.mark.parametrize("command", ["demo", "emulator"])
def test_demo_and_emulator_in_the_image_name_the_extra_they_need(command: str) -> None:
    """The image leaves the emulator's aiohttp out: the two commands that run it say what to
    install, where the image's user would otherwise get a traceback."""
    done = run_inside(command)
    assert done.returncode == 1, done.stderr
    assert done.stdout == ""
    assert done.stderr.startswith(f"error: `lb-reconciler {command}` runs the OpenStack emulator")
    assert done.stderr.rstrip().endswith("pip install 'lb-reconciler[local]'")

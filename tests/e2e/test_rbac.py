"""deploy/ against the real kube-apiserver: the ServiceAccount may do exactly what the controller
does and nothing more, and every manifest is valid for the API server (server-side dry run)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from reconciler.localplane import LocalControlPlane
from reconciler.toolchain import Toolchain
from tests.e2e.rbac import DEPLOY, install_rbac

pytestmark = pytest.mark.e2e
SA = "system:serviceaccount:lb-reconciler:lb-reconciler"

# (verb, resource, namespace or "" for all/cluster): what the controller's code calls
ALLOWED = [
    ("list", "services", ""),
    ("watch", "services", ""),
    ("get", "services", "default"),
    ("patch", "services", "default"),
    ("patch", "services/status", "default"),
    ("list", "nodes", ""),
    ("watch", "nodes", ""),
    ("create", "events", "default"),
    ("patch", "events", "default"),
    ("create", "leases.coordination.k8s.io", "lb-reconciler"),
    ("get", "leases.coordination.k8s.io/lb-reconciler", "lb-reconciler"),
    ("patch", "leases.coordination.k8s.io/lb-reconciler", "lb-reconciler"),
]
DENIED = [
    ("delete", "services", "default"),
    ("create", "services", "default"),
    ("update", "services", "default"),
    ("list", "secrets", ""),
    ("get", "secrets", "lb-reconciler"),
    ("patch", "nodes", ""),
    ("delete", "nodes", ""),
    ("create", "pods", "default"),
    ("list", "pods", ""),
    ("get", "leases.coordination.k8s.io/lb-reconciler", "kube-system"),
    ("get", "leases.coordination.k8s.io/other-lease", "lb-reconciler"),
    ("delete", "leases.coordination.k8s.io/lb-reconciler", "lb-reconciler"),
    ("create", "clusterroles.rbac.authorization.k8s.io", ""),
]


def kubectl(toolchain: Toolchain, plane: LocalControlPlane, *args: str) -> tuple[int, str]:
    done = subprocess.run(
        [str(toolchain.path("kubectl")), "--kubeconfig", str(plane.kubeconfig), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return done.returncode, (done.stdout + done.stderr).strip()


def can_i(toolchain: Toolchain, plane: LocalControlPlane, verb: str, resource: str, ns: str) -> str:
    where = ["-n", ns] if ns else ["--all-namespaces"]
    _code, out = kubectl(toolchain, plane, "auth", "can-i", verb, resource, "--as", SA, *where)
    return out.splitlines()[-1] if out else ""


@pytest.fixture(scope="module")
def installed(control_plane: LocalControlPlane, toolchain: Toolchain) -> LocalControlPlane:
    install_rbac(kubectl=toolchain.path("kubectl"), kubeconfig=control_plane.kubeconfig)
    return control_plane


@pytest.mark.parametrize(("verb", "resource", "ns"), ALLOWED)
def test_the_service_account_may_do_what_the_controller_does(
    installed: LocalControlPlane, toolchain: Toolchain, verb: str, resource: str, ns: str
) -> None:
    assert can_i(toolchain, installed, verb, resource, ns) == "yes"


@pytest.mark.parametrize(("verb", "resource", "ns"), DENIED)
def test_and_nothing_more(
    installed: LocalControlPlane, toolchain: Toolchain, verb: str, resource: str, ns: str
) -> None:
    assert can_i(toolchain, installed, verb, resource, ns) == "no"


def test_every_manifest_is_valid_for_the_api_server(
    installed: LocalControlPlane, toolchain: Toolchain
) -> None:
    manifests = sorted(p.name for p in Path(DEPLOY).glob("*.yaml"))
    assert {"rbac.yaml", "deployment.yaml", "pvc.yaml", "cloud-config-secret.example.yaml"} <= set(
        manifests
    )
    code, out = kubectl(toolchain, installed, "apply", "--dry-run=server", "-f", str(DEPLOY))
    assert code == 0, out
    assert "deployment.apps/lb-reconciler created (server dry run)" in out

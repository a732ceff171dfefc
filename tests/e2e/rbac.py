"""The RBAC of deploy/ in a test cluster, and a kubeconfig that authenticates as its
ServiceAccount (a TokenRequest bearer token), so tests run the controller with exactly the
permissions a cluster would give it, never as cluster admin."""

from __future__ import annotations

import subprocess
from pathlib import Path

from reconciler.controller import kubeconfig as kube
from reconciler.local.toolchain import Toolchain

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
NAMESPACE = NAME = "lb-reconciler"


def install_rbac(*, kubectl: Path, kubeconfig: Path) -> None:
    """``kubectl apply -f deploy/rbac.yaml`` as admin (idempotent)."""
    done = subprocess.run(
        [str(kubectl), "--kubeconfig", str(kubeconfig), "apply", "-f", str(DEPLOY / "rbac.yaml")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if done.returncode != 0:
        raise AssertionError(f"kubectl apply -f deploy/rbac.yaml failed: {done.stderr}")


def service_account_kubeconfig(
    *,
    kubeconfig: Path,
    server: str,
    ca_cert: Path,
    out: Path,
    namespace: str = NAMESPACE,
    name: str = NAME,
    hours: int = 2,
) -> Path:
    """A kubeconfig (written to ``out``, mode 0600) that authenticates as the ServiceAccount
    ``namespace/name`` (default: deploy/'s) with a bearer token from the TokenRequest API, asked
    for with the admin ``kubeconfig``; the token expires after ``hours``."""
    return kube.service_account_kubeconfig(
        admin_kubeconfig=kubeconfig,
        server=server,
        ca_cert=ca_cert,
        out=out,
        namespace=namespace,
        name=name,
        seconds=hours * 3600,
    )


def kubectl(toolchain: Toolchain, kubeconfig: Path, *args: str) -> tuple[int, str]:
    """``kubectl --kubeconfig <kubeconfig> <args>``: its exit code and output."""
    done = subprocess.run(
        [str(toolchain.path("kubectl")), "--kubeconfig", str(kubeconfig), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return done.returncode, (done.stdout + done.stderr).strip()

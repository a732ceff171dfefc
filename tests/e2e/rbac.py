"""The RBAC of deploy/ in a test cluster, and a kubeconfig that authenticates as its
ServiceAccount (a TokenRequest bearer token), so tests run the controller with exactly the
permissions a cluster would give it, never as cluster admin."""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml

from reconciler.kube import api_client
from reconciler.kubeio import KubeApi

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
    """Ask the TokenRequest API (as admin) for a token of the ServiceAccount and write a
    kubeconfig that uses it as a bearer token."""
    admin = KubeApi(api_client=api_client(kubeconfig=kubeconfig))
    try:
        answer = admin.create(
            f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token",
            {
                "apiVersion": "authentication.k8s.io/v1",
                "kind": "TokenRequest",
                "spec": {"expirationSeconds": hours * 3600},
            },
        )
    finally:
        admin.close()
    token = str(answer["status"]["token"])
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "local", "cluster": {"server": server, "certificate-authority": str(ca_cert)}}
        ],
        "users": [{"name": f"system:serviceaccount:{namespace}:{name}", "user": {"token": token}}],
        "contexts": [
            {
                "name": "sa",
                "context": {
                    "cluster": "local",
                    "user": f"system:serviceaccount:{namespace}:{name}",
                },
            }
        ],
        "current-context": "sa",
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(yaml.safe_dump(config))
    out.chmod(0o600)
    return out

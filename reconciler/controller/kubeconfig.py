"""Thin helpers over the `kubernetes` client. No decisions live here."""

from __future__ import annotations

from pathlib import Path

import yaml
from kubernetes import client, config


def api_client(*, kubeconfig: Path | None = None) -> client.ApiClient:
    """An API client from a kubeconfig file, or from the in-cluster service account."""
    if kubeconfig is None:
        cfg = client.Configuration()
        config.load_incluster_config(client_configuration=cfg)  # type: ignore[no-untyped-call]
        return client.ApiClient(cfg)
    return config.new_client_from_config(str(kubeconfig))  # type: ignore[no-untyped-call,no-any-return]


def service_account_kubeconfig(
    *,
    admin_kubeconfig: Path,
    server: str,
    ca_cert: Path,
    out: Path,
    namespace: str = "lb-reconciler",
    name: str = "lb-reconciler",
    seconds: int = 7200,
) -> Path:
    """Ask the TokenRequest API (with ``admin_kubeconfig``) for a token of the ServiceAccount
    ``namespace/name`` and write a kubeconfig that authenticates with it (mode 0600)."""
    from reconciler.controller.kubeapi import KubeApi

    admin = KubeApi(api_client=api_client(kubeconfig=admin_kubeconfig))
    try:
        answer = admin.create(
            f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token",
            {
                "apiVersion": "authentication.k8s.io/v1",
                "kind": "TokenRequest",
                "spec": {"expirationSeconds": seconds},
            },
        )
    finally:
        admin.close()
    user = f"system:serviceaccount:{namespace}:{name}"
    kubeconfig = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "local", "cluster": {"server": server, "certificate-authority": str(ca_cert)}}
        ],
        "users": [{"name": user, "user": {"token": str(answer["status"]["token"])}}],
        "contexts": [{"name": "sa", "context": {"cluster": "local", "user": user}}],
        "current-context": "sa",
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.touch(mode=0o600)
    out.write_text(yaml.safe_dump(kubeconfig))
    return out

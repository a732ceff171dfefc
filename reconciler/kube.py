"""Thin helpers over the `kubernetes` client. No decisions live here."""

from __future__ import annotations

from pathlib import Path

from kubernetes import client, config


def api_client(*, kubeconfig: Path | None = None) -> client.ApiClient:
    """An API client from a kubeconfig file, or from the in-cluster service account."""
    if kubeconfig is None:
        cfg = client.Configuration()
        config.load_incluster_config(client_configuration=cfg)  # type: ignore[no-untyped-call]
        return client.ApiClient(cfg)
    return config.new_client_from_config(str(kubeconfig))  # type: ignore[no-untyped-call,no-any-return]

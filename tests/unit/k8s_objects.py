"""Services and Nodes as Kubernetes API JSON, for the pure unit tests."""

from __future__ import annotations

from typing import Any

# The Service from the Kubernetes docs "Create an External Load Balancer" (seed 002), as the API
# server stores it after creation (uid, nodePort, defaults filled in).
EXAMPLE_SERVICE: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Service",
    "metadata": {
        "name": "example-service",
        "namespace": "default",
        "uid": "6d0ad3ad-4c8e-4a4e-9bb0-0c6b7d3e8f10",
        "labels": {"app": "example"},
    },
    "spec": {
        "selector": {"app": "example"},
        "ports": [{"port": 8765, "targetPort": 9376, "protocol": "TCP", "nodePort": 30593}],
        "type": "LoadBalancer",
        "clusterIP": "10.3.22.96",
        "sessionAffinity": "None",
        "externalTrafficPolicy": "Cluster",
        "ipFamilies": ["IPv4"],
        "ipFamilyPolicy": "SingleStack",
        "allocateLoadBalancerNodePorts": True,
    },
    "status": {"loadBalancer": {}},
}


def make_node(
    name: str,
    *,
    internal: str | None = None,
    external: str | None = None,
    labels: dict[str, str] | None = None,
    taints: list[dict[str, str]] | None = None,
    ready: str = "True",
    deleting: bool = False,
) -> dict[str, Any]:
    addresses = [{"type": "Hostname", "address": name}]
    if external:
        addresses.append({"type": "ExternalIP", "address": external})
    if internal:
        addresses.append({"type": "InternalIP", "address": internal})
    node: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels or {"kubernetes.io/hostname": name}},
        "spec": {"providerID": f"openstack:///{name}", "taints": taints or []},
        "status": {
            "addresses": addresses,
            "conditions": [{"type": "Ready", "status": ready}],
        },
    }
    if deleting:
        node["metadata"]["deletionTimestamp"] = "2025-01-01T00:00:00Z"
    return node

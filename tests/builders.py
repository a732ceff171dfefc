"""Services and Nodes as Kubernetes API JSON, for tests at every level.

One module builds them, so that a test names only what matters to it and every level (the pure
unit tests, the engine against the emulator, the controller against a real kube-apiserver)
speaks of the same objects:

* :func:`make_service`: a Service; by default as a user writes it (``apiVersion``, ``kind``,
  ``metadata.name``, ``spec.type: LoadBalancer``, ``selector: {app: <name>}``, one TCP port 80
  to 8080). Every part is a keyword; spec fields not named here are given by their API names
  (``loadBalancerClass=``, ``externalTrafficPolicy=``, ``type="ClusterIP"`` ...).
* :func:`stored_service`: a Service as the controller reads it from the API server in namespace
  ``default`` (uid, node port, the server's defaults filled in): what the engine tests build
  specs from.
* :data:`EXAMPLE_SERVICE` and :func:`example_service`: the Service from the Kubernetes docs, as
  stored, with changes.
* :func:`make_node` and :func:`example_nodes`: Nodes.

The rule for every keyword that names a part of the object, spec fields included: ``None``
leaves the part out; a value (even an empty one) puts it in. Defaults that depend on the
object's name are marked :data:`FROM_NAME`. Every call returns a new object (nothing is shared
with the arguments).
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Mapping, Sequence
from typing import Any, Final

DELETED_AT: Final = "2025-01-01T00:00:00Z"
"""``metadata.deletionTimestamp`` of an object built with ``deleting=True``."""

HOSTNAME_LABEL: Final = "kubernetes.io/hostname"
EXCLUDE_LABEL: Final = "node.kubernetes.io/exclude-from-external-load-balancers"


class _FromName:
    def __repr__(self) -> str:
        return "FROM_NAME"


FROM_NAME: Final = _FromName()
"""A default derived from the object's name: a Service's ``selector`` ``{app: <name>}``, a
Node's ``kubernetes.io/hostname`` label and ``openstack:///<name>`` provider ID."""

WEB_PORTS: Final = ({"port": 80, "targetPort": 8080, "protocol": "TCP"},)
"""The ports of :func:`make_service` unless told otherwise."""

HTTP_PORTS: Final = ({"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"},)
""":data:`WEB_PORTS` with the port named ``http``."""

STORED_PORTS: Final = ({"port": 80, "protocol": "TCP", "nodePort": 30080},)
"""The ports of :func:`stored_service` unless told otherwise."""

STORED_DEFAULTS: Final[Mapping[str, Any]] = {
    "sessionAffinity": "None",
    "externalTrafficPolicy": "Cluster",
    "ipFamilies": ["IPv4"],
    "allocateLoadBalancerNodePorts": True,
}
"""What the API server fills in that :func:`stored_service` writes out."""

# The Service from the Kubernetes docs "Create an External Load Balancer" (seed 002), as the API
# server stores it after creation (uid, nodePort, defaults filled in).
EXAMPLE_SERVICE: Final[dict[str, Any]] = {
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


def _put(part: dict[str, Any], key: str, value: Any) -> None:
    if value is not None:
        part[key] = copy.deepcopy(value)


def _changed_metadata(
    meta: dict[str, Any],
    *,
    resource_version: str | None,
    finalizers: Sequence[str] | None,
    deleting: bool,
    annotations: Mapping[str, Any] | None,
) -> None:
    _put(meta, "resourceVersion", resource_version)
    _put(meta, "finalizers", None if finalizers is None else list(finalizers))
    if deleting:
        meta["deletionTimestamp"] = DELETED_AT
    _put(meta, "annotations", None if annotations is None else dict(annotations))


def make_service(
    name: str = "web",
    *,
    namespace: str | None = None,
    uid: str | None = None,
    labels: Mapping[str, str] | None = None,
    resource_version: str | None = None,
    finalizers: Sequence[str] | None = None,
    deleting: bool = False,
    annotations: Mapping[str, Any] | None = None,
    selector: Mapping[str, str] | _FromName | None = FROM_NAME,
    ports: Sequence[Mapping[str, Any]] | None = WEB_PORTS,
    status: Mapping[str, Any] | None = None,
    header: bool = True,
    **spec: Any,
) -> dict[str, Any]:
    """A Service of ``type: LoadBalancer`` (or ``type=`` another); ``header=False`` leaves out
    ``apiVersion`` and ``kind`` (as some callers' plain dicts do), ``deleting=True`` sets
    ``deletionTimestamp``."""
    meta: dict[str, Any] = {"name": name}
    _put(meta, "namespace", namespace)
    _put(meta, "uid", uid)
    _put(meta, "labels", None if labels is None else dict(labels))
    _changed_metadata(
        meta,
        resource_version=resource_version,
        finalizers=finalizers,
        deleting=deleting,
        annotations=annotations,
    )
    body: dict[str, Any] = {"type": "LoadBalancer"}
    _put(body, "selector", {"app": name} if isinstance(selector, _FromName) else selector)
    _put(body, "ports", None if ports is None else list(ports))
    for key, value in spec.items():
        _put(body, key, value)
    service: dict[str, Any] = {"apiVersion": "v1", "kind": "Service"} if header else {}
    service.update(metadata=meta, spec=body)
    _put(service, "status", status)
    return service


def stored_service(
    name: str,
    *,
    ports: Sequence[Mapping[str, Any]] | None = None,
    annotations: Mapping[str, Any] | None = None,
    uid: str | None = None,
    **spec: Any,
) -> dict[str, Any]:
    """Service ``default/<name>`` as the API server stores it: a uid (by default one of its
    own, the same on every call for ``name``), node ports (``ports``: by default TCP 80 on node
    port 30080), the server's defaults (:data:`STORED_DEFAULTS`, which ``spec`` overrides),
    an empty status, ``annotations`` always present; no selector."""
    return make_service(
        name,
        namespace="default",
        uid=uid or str(uuid.uuid5(uuid.NAMESPACE_URL, f"service/{name}")),
        annotations=dict(annotations or {}),
        selector=None,
        ports=ports or STORED_PORTS,
        status={"loadBalancer": {}},
        **{**STORED_DEFAULTS, **spec},
    )


def example_service(
    *,
    resource_version: str | None = None,
    finalizers: Sequence[str] | None = None,
    deleting: bool = False,
    annotations: Mapping[str, Any] | None = None,
    ingress: Sequence[Mapping[str, Any]] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    """:data:`EXAMPLE_SERVICE` (a copy) with changes: metadata as named, ``spec`` fields set
    (by API name), ``ingress`` as its ``status.loadBalancer.ingress``."""
    service = copy.deepcopy(EXAMPLE_SERVICE)
    _changed_metadata(
        service["metadata"],
        resource_version=resource_version,
        finalizers=finalizers,
        deleting=deleting,
        annotations=annotations,
    )
    for key, value in spec.items():
        _put(service["spec"], key, value)
    if ingress is not None:
        service["status"] = {"loadBalancer": {"ingress": copy.deepcopy(list(ingress))}}
    return service


def make_node(
    name: str,
    *,
    internal: str | None = None,
    external: str | None = None,
    hostname: bool = True,
    labels: Mapping[str, str] | _FromName | None = FROM_NAME,
    provider_id: str | _FromName | None = FROM_NAME,
    taints: Sequence[Mapping[str, str]] | None = (),
    ready: str | None = "True",
    deleting: bool = False,
    status: bool = True,
    header: bool = True,
) -> dict[str, Any]:
    """A Node. Its addresses: ``Hostname`` (``hostname=True``), ``ExternalIP``, ``InternalIP``
    (when given), in that order; a ``Ready`` condition of status ``ready``; ``status=False``
    leaves the whole status out (as a body to create, whose status is patched after)."""
    meta: dict[str, Any] = {"name": name}
    _put(meta, "labels", {HOSTNAME_LABEL: name} if isinstance(labels, _FromName) else labels)
    if deleting:
        meta["deletionTimestamp"] = DELETED_AT
    body: dict[str, Any] = {}
    provider = f"openstack:///{name}" if isinstance(provider_id, _FromName) else provider_id
    _put(body, "providerID", provider)
    _put(body, "taints", None if taints is None else list(taints))
    node: dict[str, Any] = {"apiVersion": "v1", "kind": "Node"} if header else {}
    node["metadata"] = meta
    if body:
        node["spec"] = body
    if status:
        addresses = [{"type": "Hostname", "address": name}] if hostname else []
        if external:
            addresses.append({"type": "ExternalIP", "address": external})
        if internal:
            addresses.append({"type": "InternalIP", "address": internal})
        node["status"] = {"addresses": addresses}
        if ready is not None:
            node["status"]["conditions"] = [{"type": "Ready", "status": ready}]
    return node


def example_nodes() -> list[dict[str, Any]]:
    """The example cluster's Nodes: two workers and a control-plane Node excluded from load
    balancers (unordered, as the API lists them)."""
    return [
        make_node("worker-b", internal="10.0.0.12"),
        make_node("worker-a", internal="10.0.0.11"),
        make_node("control-plane", internal="10.0.0.10", labels={EXCLUDE_LABEL: ""}),
    ]

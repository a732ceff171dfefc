"""A typed, validated view of a Service dict (``kubectl get svc -o json`` / the client's JSON).

Everything downstream works on :class:`ServiceView`, so the shape checks (is ``spec.ports`` a list,
is ``port`` an integer in range) are made once, here, and turn into :class:`ValidationError` values
instead of exceptions. Missing optional fields get the API server's defaults (``protocol: TCP``,
``namespace: default``, ``sessionAffinity: None``, ``externalTrafficPolicy: Cluster``), so a
manifest that was never applied (``lb-reconciler preview -f``) reads like the stored object.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from reconciler.model.errors import ValidationError

__all__ = ["PortView", "ServiceView", "read_service"]

PROTOCOLS = ("TCP", "UDP", "SCTP")


@dataclass(frozen=True)
class PortView:
    index: int
    name: str
    protocol: str
    port: int
    node_port: int


@dataclass(frozen=True)
class ServiceView:
    namespace: str
    name: str
    uid: str
    annotations: Mapping[str, Any]
    type: str
    load_balancer_class: str | None
    ports: tuple[PortView, ...]
    load_balancer_ip: str
    source_ranges: tuple[str, ...]
    session_affinity: str
    external_traffic_policy: str
    health_check_node_port: int
    ip_families: tuple[str, ...]


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def _port(raw: Any, index: int, errors: list[ValidationError]) -> PortView | None:
    where = f"spec.ports[{index}]"
    if not isinstance(raw, Mapping):
        errors.append(ValidationError(where, repr(raw), "is not a port", "give port and protocol"))
        return None
    protocol = raw.get("protocol") or "TCP"
    if protocol not in PROTOCOLS:
        reason = "is not a protocol a load balancer can carry"
        fix = "use TCP, UDP or SCTP"
        errors.append(ValidationError(f"{where}.protocol", str(protocol), reason, fix))
        return None
    port = _int(raw.get("port"))
    if port is None or not 1 <= port <= 65535:
        reason, fix = "is not a port number", "use a number from 1 to 65535"
        errors.append(ValidationError(f"{where}.port", str(raw.get("port")), reason, fix))
        return None
    node_port = _int(raw.get("nodePort", 0) or 0)
    if node_port is None or not 0 <= node_port <= 65535:
        reason, fix = "is not a node port", "leave it to Kubernetes or use 1 to 65535"
        errors.append(ValidationError(f"{where}.nodePort", str(raw.get("nodePort")), reason, fix))
        return None
    return PortView(index, str(raw.get("name") or ""), str(protocol), port, node_port)


def _strings(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list | tuple):
        return ()
    return tuple(str(v) for v in value)


def read_service(service: Any) -> tuple[ServiceView | None, list[ValidationError]]:
    errors: list[ValidationError] = []
    meta = _mapping(_mapping(service).get("metadata"))
    spec = _mapping(_mapping(service).get("spec"))
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        errors.append(ValidationError("metadata.name", str(name), "is missing", "name the Service"))
        return None, errors
    raw_ports = spec.get("ports")
    if not isinstance(raw_ports, list) or not raw_ports:
        reason = "is empty: a load balancer needs at least one port"
        fix = "add a port to spec.ports"
        errors.append(ValidationError("spec.ports", repr(raw_ports), reason, fix))
        return None, errors
    ports = tuple(p for i, r in enumerate(raw_ports) if (p := _port(r, i, errors)) is not None)
    lb_class = spec.get("loadBalancerClass")
    view = ServiceView(
        namespace=str(meta.get("namespace") or "default"),
        name=name,
        uid=str(meta.get("uid") or ""),
        annotations=_mapping(meta.get("annotations")),
        type=str(spec.get("type") or "ClusterIP"),
        load_balancer_class=lb_class if isinstance(lb_class, str) else None,
        ports=ports,
        load_balancer_ip=str(spec.get("loadBalancerIP") or ""),
        source_ranges=_strings(spec.get("loadBalancerSourceRanges")),
        session_affinity=str(spec.get("sessionAffinity") or "None"),
        external_traffic_policy=str(spec.get("externalTrafficPolicy") or "Cluster"),
        health_check_node_port=_int(spec.get("healthCheckNodePort")) or 0,
        ip_families=_strings(spec.get("ipFamilies")),
    )
    return view, errors

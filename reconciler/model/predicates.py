"""Which Services are ours, which need their load balancer removed, which changes matter.

The Kubernetes service controller's predicates (``wantsLoadBalancer``, ``needsCleanup``,
``needsUpdate`` in staging/src/k8s.io/cloud-provider/controllers/service/controller.go), over
Service dicts. One extension: ``spec.loadBalancerClass``. Upstream, a class means "another
controller"; this controller can also be the one named by a class (``owned_classes``), and can be
told not to serve classless Services (``serve_default=False``) when it runs beside OCCM.

``needs_update`` decides whether a watch event is worth a sync. It follows upstream: type (through
wanting a load balancer), source ranges, ports (name, protocol, port, nodePort, targetPort,
appProtocol, in order), sessionAffinity and its config, loadBalancerIP, externalIPs, any
annotation, uid, externalTrafficPolicy, healthCheckNodePort, the number of ipFamilies; plus
loadBalancerClass. Labels, selector and status do not count. Node changes reach a Service through
the node sync, not through this predicate.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

__all__ = [
    "FINALIZER",
    "has_finalizer",
    "needs_cleanup",
    "needs_update",
    "part",
    "wants_load_balancer",
]

FINALIZER = "service.kubernetes.io/load-balancer-cleanup"


def part(obj: Any, key: str) -> Mapping[str, Any]:
    """``obj[key]`` when both are mappings, else an empty mapping (Services are untrusted dicts)."""
    value = obj.get(key) if isinstance(obj, Mapping) else None
    return value if isinstance(value, Mapping) else {}


def has_finalizer(service: Mapping[str, Any]) -> bool:
    finalizers = part(service, "metadata").get("finalizers") or []
    return isinstance(finalizers, list) and FINALIZER in finalizers


def wants_load_balancer(
    service: Mapping[str, Any], *, owned_classes: Collection[str], serve_default: bool = True
) -> bool:
    spec = part(service, "spec")
    if spec.get("type") != "LoadBalancer":
        return False
    cls = spec.get("loadBalancerClass")
    return serve_default if cls is None else cls in owned_classes


def needs_cleanup(service: Mapping[str, Any]) -> bool:
    """Has our finalizer and is being deleted or is no longer of type LoadBalancer (KEP-980)."""
    if not has_finalizer(service):
        return False
    if part(service, "metadata").get("deletionTimestamp"):
        return True
    return part(service, "spec").get("type") != "LoadBalancer"


_PORT_KEYS = ("name", "protocol", "port", "nodePort", "targetPort", "appProtocol")
_SPEC_KEYS = (
    "loadBalancerSourceRanges",
    "sessionAffinity",
    "sessionAffinityConfig",
    "loadBalancerIP",
    "externalIPs",
    "externalTrafficPolicy",
    "healthCheckNodePort",
    "loadBalancerClass",
)


def _ports(spec: Mapping[str, Any]) -> list[tuple[Any, ...]]:
    ports = spec.get("ports") or []
    if not isinstance(ports, list):
        return [("<invalid>", repr(ports))]
    return [tuple(p.get(k) if isinstance(p, Mapping) else p for k in _PORT_KEYS) for p in ports]


def needs_update(
    old: Mapping[str, Any],
    new: Mapping[str, Any],
    *,
    owned_classes: Collection[str] = (),
    serve_default: bool = True,
) -> bool:
    wants_old = wants_load_balancer(old, owned_classes=owned_classes, serve_default=serve_default)
    wants_new = wants_load_balancer(new, owned_classes=owned_classes, serve_default=serve_default)
    if not wants_old and not wants_new:
        return False
    if wants_old != wants_new:
        return True
    old_spec, new_spec = part(old, "spec"), part(new, "spec")
    if any(old_spec.get(k) != new_spec.get(k) for k in _SPEC_KEYS):
        return True
    if _ports(old_spec) != _ports(new_spec):
        return True
    if len(old_spec.get("ipFamilies") or []) != len(new_spec.get("ipFamilies") or []):
        return True
    old_meta, new_meta = part(old, "metadata"), part(new, "metadata")
    if (old_meta.get("annotations") or {}) != (new_meta.get("annotations") or {}):
        return True
    return old_meta.get("uid") != new_meta.get("uid")

"""Which Services are ours, which need their load balancer removed, which changes matter.

The Kubernetes service controller's predicates (``wantsLoadBalancer``, ``needsCleanup``,
``needsUpdate`` and the finalizer helpers in staging/src/k8s.io/cloud-provider/controllers/
service/controller.go, and KEP-980), over Service dicts. These are the ones the controller runs:
:mod:`reconciler.controller.sync_plan` decides with them, the CLI picks Services with them.

One extension, ``spec.loadBalancerClass``, described by an :class:`Ownership`. Upstream, a class
means "another controller"; this controller can also be the one named by a class
(``owned_classes``), and can be told not to serve classless Services (``serve_default=False``)
when it runs beside OCCM. ``Ownership()`` is upstream's rules exactly, but for one difference
(on purpose): the standard finalizer on a Service *of a class* is not ours, so such a Service
never needs our cleanup. A cloud controller manager treats that finalizer as its own on any
Service (upstream ``needsCleanup`` ignores the class); on a Service of another class it belongs
to that class's controller, and a Service of a class we own gets ``class_finalizer`` instead
(the class cannot change while the type is LoadBalancer, so we never put the standard one there).

* :func:`wants_load_balancer`: type LoadBalancer and a class we serve;
* :func:`held_finalizers` / :func:`has_finalizer`: which of our finalizers the Service holds;
  :func:`finalizer_for`: the one we put on it;
* :func:`needs_cleanup`: we hold a finalizer and the Service is being deleted or no longer
  wants our load balancer (KEP-980);
* :func:`paused`: the Service asks not to be reconciled (``lb-reconciler.io/reconcile:
  disabled``, Flux's convention); :func:`reconcile_value_problem`: an annotation value that is
  neither ``disabled`` nor ``enabled`` (it reconciles as usual, and the Service is told);
* :func:`needs_update`: whether a watch event is worth a sync. It follows upstream: type (through
  wanting a load balancer), source ranges, ports (name, protocol, port, nodePort, targetPort,
  appProtocol, in order), sessionAffinity and its config, loadBalancerIP, externalIPs, any
  annotation, uid, externalTrafficPolicy, healthCheckNodePort, the number of ipFamilies; plus
  loadBalancerClass. Labels, selector and status do not count. Node changes reach a Service
  through the node sync, not through this predicate.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "CLASS_FINALIZER",
    "FINALIZER",
    "UPSTREAM",
    "Ownership",
    "being_deleted",
    "external_address",
    "finalizer_for",
    "finalizers",
    "has_finalizer",
    "held_finalizers",
    "needs_cleanup",
    "needs_update",
    "part",
    "paused",
    "reconcile_value_problem",
    "wants_load_balancer",
]

# upstream's (KEP-980), on the Services without a class
FINALIZER = "service.kubernetes.io/load-balancer-cleanup"
# ours, on the Services of a class we own (the default of Ownership.class_finalizer)
CLASS_FINALIZER = "lb-reconciler.openstack.org/load-balancer-cleanup"
# the pause switch of one Service (Flux's `<domain>/reconcile: disabled`), and its values
RECONCILE = "lb-reconciler.io/reconcile"
RECONCILE_DISABLED = "disabled"
RECONCILE_ENABLED = "enabled"


@dataclass(frozen=True)
class Ownership:
    """Which Services this controller serves and the finalizer it marks them with.

    ``owned_classes``: the ``loadBalancerClass`` values it serves; ``serve_default``: also the
    Services without a class; ``class_finalizer``: the finalizer on a Service of an owned class.
    """

    owned_classes: frozenset[str] = frozenset()
    serve_default: bool = True
    class_finalizer: str = CLASS_FINALIZER


UPSTREAM = Ownership()  # upstream's rules: classless Services, the standard finalizer


def part(obj: Any, key: str) -> Mapping[str, Any]:
    """``obj[key]`` when both are mappings, else an empty mapping (Services are untrusted dicts)."""
    value = obj.get(key) if isinstance(obj, Mapping) else None
    return value if isinstance(value, Mapping) else {}


def external_address(service: Mapping[str, Any]) -> str | None:
    """The first address of ``status.loadBalancer.ingress`` (its IP, else its hostname); None
    when the Service has none."""
    ingress = part(part(service, "status"), "loadBalancer").get("ingress")
    first = ingress[0] if isinstance(ingress, list) and ingress else None
    if not isinstance(first, Mapping):
        return None
    return str(first.get("ip") or first.get("hostname") or "") or None


def _class(service: Mapping[str, Any]) -> Any:
    return part(service, "spec").get("loadBalancerClass")


def finalizers(service: Mapping[str, Any]) -> list[str]:
    """``metadata.finalizers``, anyone's, in order ([] when absent or not a list)."""
    value = part(service, "metadata").get("finalizers")
    return [str(f) for f in value] if isinstance(value, list) else []


def being_deleted(service: Mapping[str, Any]) -> bool:
    """``metadata.deletionTimestamp`` is set: the Service goes once its finalizers are gone."""
    return bool(part(service, "metadata").get("deletionTimestamp"))


def wants_load_balancer(service: Mapping[str, Any], ours: Ownership = UPSTREAM) -> bool:
    """Upstream ``wantsLoadBalancer``: type LoadBalancer and no class; here, a class we own too
    (and no class only when we serve classless Services)."""
    if part(service, "spec").get("type") != "LoadBalancer":
        return False
    cls = _class(service)
    return ours.serve_default if cls is None else cls in ours.owned_classes


def finalizer_for(service: Mapping[str, Any], ours: Ownership = UPSTREAM) -> str:
    """The finalizer we put on ``service`` before its load balancer is made."""
    return FINALIZER if _class(service) is None else ours.class_finalizer


def held_finalizers(service: Mapping[str, Any], ours: Ownership = UPSTREAM) -> tuple[str, ...]:
    """Our finalizers on ``service``, in its order. The standard one is ours only on a classless
    Service we serve; ``class_finalizer`` on one without a class or of a class we own."""
    cls = _class(service)
    mine = set()
    if ours.serve_default and cls is None:
        mine.add(FINALIZER)
    if ours.owned_classes and (cls is None or cls in ours.owned_classes):
        mine.add(ours.class_finalizer)
    return tuple(f for f in finalizers(service) if f in mine)


def has_finalizer(service: Mapping[str, Any], ours: Ownership = UPSTREAM) -> bool:
    """Upstream ``HasLBFinalizer``, limited to the finalizers that are ours (see the module)."""
    return bool(held_finalizers(service, ours))


def paused(service: Mapping[str, Any]) -> bool:
    """The annotation ``lb-reconciler.io/reconcile`` is exactly ``disabled``: no stack operation,
    cloud call, drift check or orphan deletion for this Service, and its finalizer stays (nothing
    is destroyed while paused). Any other value, or none, reconciles as usual."""
    return part(part(service, "metadata"), "annotations").get(RECONCILE) == RECONCILE_DISABLED


def reconcile_value_problem(service: Mapping[str, Any]) -> str | None:
    """What is wrong with the value of ``lb-reconciler.io/reconcile`` (None: absent,
    ``disabled`` or ``enabled``): the field, the value, and the accepted values."""
    annotations = part(part(service, "metadata"), "annotations")
    if RECONCILE not in annotations:
        return None
    value = annotations.get(RECONCILE)
    if value in (RECONCILE_DISABLED, RECONCILE_ENABLED):
        return None
    return (
        f"metadata.annotations[{RECONCILE}]: unknown value {value!r}, reconciling as usual; "
        f"to pause this Service set it to {RECONCILE_DISABLED!r} (exactly), to resume remove it "
        f"or set {RECONCILE_ENABLED!r}"
    )


def needs_cleanup(service: Mapping[str, Any], ours: Ownership = UPSTREAM) -> bool:
    """KEP-980 and upstream ``needsCleanup``: we hold a finalizer and the Service is being
    deleted or no longer wants our load balancer (upstream: its type is no longer LoadBalancer;
    here also: its class is no longer one we serve). A Service being deleted that never got our
    finalizer needs nothing: nothing of ours was made for it."""
    if not has_finalizer(service, ours):
        return False
    return being_deleted(service) or not wants_load_balancer(service, ours)


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
    old: Mapping[str, Any], new: Mapping[str, Any], ours: Ownership = UPSTREAM
) -> bool:
    """Upstream ``needsUpdate`` (see the module docstring for what counts)."""
    wants_old = wants_load_balancer(old, ours)
    wants_new = wants_load_balancer(new, ours)
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

"""The controller's rules (reconciler/model/predicates.py) against the upstream controller's.

Each table names what upstream's function (staging/src/k8s.io/cloud-provider/controllers/service/
controller.go; KEP-980) returns for the same Service where it has an opinion, and what ours returns
under an :class:`Ownership`. ``UPSTREAM`` (classless Services, the standard finalizer) must agree
with upstream on every row but the one deviation the module docstring names: the standard
finalizer on a Service of a class is not ours.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from reconciler.model.predicates import (
    CLASS_FINALIZER,
    FINALIZER,
    UPSTREAM,
    Ownership,
    being_deleted,
    finalizer_for,
    finalizers,
    has_finalizer,
    held_finalizers,
    needs_cleanup,
    needs_update,
    wants_load_balancer,
)
from tests.builders import example_service

Svc = dict[str, Any]
GOLD = "example.com/gold"
OTHER = "example.com/other"
OWNS_GOLD = Ownership(owned_classes=frozenset({GOLD}))
BESIDE_OCCM = Ownership(owned_classes=frozenset({GOLD}), serve_default=False)
NO_UPSTREAM_VIEW = None  # upstream has no such notion (our class finalizer, owned classes)


def svc(
    *,
    type_: str = "LoadBalancer",
    cls: str | None = None,
    fins: tuple[str, ...] | None = None,
    deleting: bool = False,
) -> Svc:
    spec: dict[str, Any] = {"type": type_}
    if cls is not None:
        spec["loadBalancerClass"] = cls
    return example_service(finalizers=fins, deleting=deleting, **spec)


# -- wantsLoadBalancer: type LoadBalancer and no class -----------------------------------------


@pytest.mark.parametrize(
    ("service", "ours", "upstream", "wants"),
    [
        (svc(), UPSTREAM, True, True),
        (svc(type_="ClusterIP"), UPSTREAM, False, False),
        (svc(type_="NodePort"), UPSTREAM, False, False),
        (svc(type_="ExternalName"), UPSTREAM, False, False),
        (svc(cls=OTHER), UPSTREAM, False, False),
        (svc(deleting=True), UPSTREAM, True, True),  # deletion is needs_cleanup's business
        # the extension: a class we own, and not serving classless Services beside OCCM
        (svc(cls=GOLD), OWNS_GOLD, NO_UPSTREAM_VIEW, True),
        (svc(cls=OTHER), OWNS_GOLD, False, False),
        (svc(), OWNS_GOLD, True, True),
        (svc(), BESIDE_OCCM, NO_UPSTREAM_VIEW, False),
        (svc(cls=GOLD), BESIDE_OCCM, NO_UPSTREAM_VIEW, True),
        (svc(type_="ClusterIP", cls=GOLD), OWNS_GOLD, False, False),
    ],
)
def test_wants_load_balancer(
    service: Svc, ours: Ownership, upstream: bool | None, wants: bool
) -> None:
    assert wants_load_balancer(service, ours) is wants
    if upstream is not None:
        assert wants is upstream


# -- finalizers: which are ours, which we put on ------------------------------------------------


@pytest.mark.parametrize(
    ("service", "ours", "held"),
    [
        (svc(), UPSTREAM, ()),
        (svc(fins=(FINALIZER,)), UPSTREAM, (FINALIZER,)),
        (svc(fins=("example.com/keep", FINALIZER)), UPSTREAM, (FINALIZER,)),
        (svc(fins=("example.com/keep",)), UPSTREAM, ()),
        (svc(type_="ClusterIP", fins=(FINALIZER,)), UPSTREAM, (FINALIZER,)),
        # the deviation: the standard finalizer on a Service of a class is not ours
        (svc(cls=OTHER, fins=(FINALIZER,)), UPSTREAM, ()),
        (svc(cls=GOLD, fins=(FINALIZER,)), OWNS_GOLD, ()),
        # our class finalizer: on a Service of an owned class, or on a classless one
        (svc(cls=GOLD, fins=(CLASS_FINALIZER,)), OWNS_GOLD, (CLASS_FINALIZER,)),
        (svc(type_="ClusterIP", fins=(CLASS_FINALIZER,)), OWNS_GOLD, (CLASS_FINALIZER,)),
        (svc(cls=OTHER, fins=(CLASS_FINALIZER,)), OWNS_GOLD, ()),
        (svc(fins=(CLASS_FINALIZER,)), UPSTREAM, ()),  # no owned class: not ours
        # beside OCCM the standard finalizer is OCCM's
        (svc(fins=(FINALIZER,)), BESIDE_OCCM, ()),
        (svc(fins=(FINALIZER, CLASS_FINALIZER)), BESIDE_OCCM, (CLASS_FINALIZER,)),
        (svc(fins=(CLASS_FINALIZER, FINALIZER)), OWNS_GOLD, (CLASS_FINALIZER, FINALIZER)),
        (
            svc(fins=("x", FINALIZER), cls=GOLD),
            Ownership(frozenset({GOLD}), class_finalizer="example.com/mine"),
            (),
        ),
    ],
)
def test_held_finalizers(service: Svc, ours: Ownership, held: tuple[str, ...]) -> None:
    assert held_finalizers(service, ours) == held
    assert has_finalizer(service, ours) is bool(held)


@pytest.mark.parametrize(
    ("service", "ours", "finalizer"),
    [
        (svc(), UPSTREAM, FINALIZER),  # upstream's addFinalizer
        (svc(), OWNS_GOLD, FINALIZER),
        (svc(cls=GOLD), OWNS_GOLD, CLASS_FINALIZER),
        (
            svc(cls=GOLD),
            Ownership(frozenset({GOLD}), class_finalizer="example.com/mine"),
            "example.com/mine",
        ),
    ],
)
def test_finalizer_for(service: Svc, ours: Ownership, finalizer: str) -> None:
    assert finalizer_for(service, ours) == finalizer


@pytest.mark.parametrize(
    ("metadata", "listed", "deleting"),
    [
        ({}, [], False),
        ({"finalizers": None}, [], False),
        ({"finalizers": "not-a-list"}, [], False),
        ({"finalizers": ["a", FINALIZER]}, ["a", FINALIZER], False),
        ({"deletionTimestamp": "2025-01-01T00:00:00Z"}, [], True),
        ({"deletionTimestamp": None}, [], False),
    ],
)
def test_finalizers_and_deletion(
    metadata: dict[str, Any], listed: list[str], deleting: bool
) -> None:
    service = {"metadata": metadata}
    assert finalizers(service) == listed
    assert being_deleted(service) is deleting


def test_untrusted_shapes_are_no_ones() -> None:
    for odd in ({}, {"metadata": "x", "spec": []}, {"spec": {"type": None}}):
        assert not wants_load_balancer(odd)
        assert not needs_cleanup(odd)
        assert held_finalizers(odd) == ()


# -- needsCleanup: our finalizer, and deleted or no longer wanting our load balancer ----------


@pytest.mark.parametrize(
    ("service", "ours", "upstream", "cleanup"),
    [
        (svc(), UPSTREAM, False, False),
        (svc(fins=(FINALIZER,)), UPSTREAM, False, False),
        (svc(fins=(FINALIZER,), deleting=True), UPSTREAM, True, True),
        (svc(deleting=True), UPSTREAM, False, False),  # no finalizer: nothing of ours was made
        (svc(type_="ClusterIP", fins=(FINALIZER,)), UPSTREAM, True, True),
        (svc(type_="NodePort", fins=(FINALIZER,), deleting=True), UPSTREAM, True, True),
        (svc(type_="ClusterIP"), UPSTREAM, False, False),
        (svc(type_="ClusterIP", fins=("example.com/x",)), UPSTREAM, False, False),
        # the deviation: upstream cleans up any Service holding the standard finalizer
        (svc(cls=OTHER, fins=(FINALIZER,), deleting=True), UPSTREAM, True, False),
        (svc(cls=OTHER, fins=(FINALIZER,)), UPSTREAM, False, False),
        # owned classes: our class finalizer
        (svc(cls=GOLD, fins=(CLASS_FINALIZER,)), OWNS_GOLD, NO_UPSTREAM_VIEW, False),
        (svc(cls=GOLD, fins=(CLASS_FINALIZER,), deleting=True), OWNS_GOLD, NO_UPSTREAM_VIEW, True),
        (svc(type_="ClusterIP", fins=(CLASS_FINALIZER,)), OWNS_GOLD, NO_UPSTREAM_VIEW, True),
        # a classless Service holding our class finalizer beside OCCM: no longer ours to serve
        (svc(fins=(CLASS_FINALIZER,)), BESIDE_OCCM, NO_UPSTREAM_VIEW, True),
        (svc(type_="ClusterIP", fins=(FINALIZER,)), BESIDE_OCCM, NO_UPSTREAM_VIEW, False),
    ],
)
def test_needs_cleanup(service: Svc, ours: Ownership, upstream: bool | None, cleanup: bool) -> None:
    assert needs_cleanup(service, ours) is cleanup
    if upstream is not None and not _the_deviation(service):
        assert cleanup is upstream


def _the_deviation(service: Svc) -> bool:
    """The one place ours differs from upstream: the standard finalizer on a Service of a
    class (upstream's ``HasLBFinalizer`` ignores the class; there it is that class's
    controller's)."""
    return service["spec"].get("loadBalancerClass") is not None and FINALIZER in finalizers(service)


# -- needsUpdate: which changes of a Service are worth a sync ---------------------------------


def _set(path: str, value: Any) -> Callable[[Svc], None]:
    def apply(s: Svc) -> None:
        *parents, last = path.split(".")
        target: Any = s
        for part in parents:
            target = target[int(part)] if part.isdigit() else target.setdefault(part, {})
        target[int(last) if last.isdigit() else last] = value

    return apply


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (_set("spec.ports.0.port", 80), True),
        (_set("spec.ports.0.nodePort", 31000), True),
        (_set("spec.ports.0.targetPort", 8080), True),
        (_set("spec.ports.0.protocol", "UDP"), True),
        (_set("spec.ports.0.name", "http"), True),
        (_set("spec.ports.0.appProtocol", "http"), True),
        (_set("spec.ports", []), True),
        (_set("spec.loadBalancerSourceRanges", ["10.0.0.0/8"]), True),
        (_set("spec.loadBalancerIP", "203.0.113.5"), True),
        (
            _set("metadata.annotations", {"loadbalancer.openstack.org/x-forwarded-for": "true"}),
            True,
        ),
        (_set("spec.externalTrafficPolicy", "Local"), True),
        (_set("spec.healthCheckNodePort", 32000), True),
        (_set("spec.sessionAffinity", "ClientIP"), True),
        (_set("spec.sessionAffinityConfig", {"clientIP": {"timeoutSeconds": 60}}), True),
        (_set("spec.ipFamilies", ["IPv4", "IPv6"]), True),
        (_set("spec.externalIPs", ["198.51.100.1"]), True),
        (_set("metadata.uid", "another-uid"), True),
        (_set("spec.type", "ClusterIP"), True),
        (_set("spec.loadBalancerClass", OTHER), True),
        (_set("metadata.labels", {"app": "changed"}), False),
        (_set("spec.selector", {"app": "changed"}), False),
        (_set("status.loadBalancer", {"ingress": [{"ip": "1.2.3.4"}]}), False),
        (_set("metadata.resourceVersion", "42"), False),
        (_set("metadata.finalizers", [FINALIZER]), False),
        (_set("spec.ipFamilies", ["IPv6"]), False),  # only the count is compared, as upstream
    ],
)
def test_needs_update(change: Callable[[Svc], None], expected: bool) -> None:
    old = svc()
    new = copy.deepcopy(old)
    change(new)
    assert needs_update(old, new) is expected


@pytest.mark.parametrize(
    ("old", "new", "ours", "expected"),
    [
        # neither wants a load balancer: nothing to do, whatever changed
        (svc(type_="ClusterIP"), svc(type_="NodePort"), UPSTREAM, False),
        (svc(cls=OTHER), svc(cls=OTHER, type_="ClusterIP"), UPSTREAM, False),
        (svc(), svc(type_="ClusterIP"), BESIDE_OCCM, False),
        # wanting changed: upstream's "Type" event
        (svc(type_="ClusterIP"), svc(), UPSTREAM, True),
        (svc(cls=GOLD), svc(cls=GOLD), OWNS_GOLD, False),
        (svc(type_="ClusterIP"), svc(cls=GOLD), OWNS_GOLD, True),
        (svc(type_="ClusterIP"), svc(cls=GOLD), UPSTREAM, False),
    ],
)
def test_needs_update_follows_wanting(old: Svc, new: Svc, ours: Ownership, expected: bool) -> None:
    assert needs_update(old, new, ours) is expected


def test_external_address_is_the_first_ingress_ip_or_hostname() -> None:
    from reconciler.model.predicates import external_address

    def svc(ingress: object) -> dict[str, object]:
        return {"status": {"loadBalancer": {"ingress": ingress}}}

    assert external_address(svc([{"ip": "203.0.113.7", "ipMode": "VIP"}])) == "203.0.113.7"
    assert external_address(svc([{"hostname": "lb.example"}, {"ip": "x"}])) == "lb.example"
    assert external_address(svc([])) is None
    assert external_address(svc(None)) is None
    assert external_address(svc(["not a mapping"])) is None
    assert external_address({"status": None}) is None

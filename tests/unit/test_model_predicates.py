"""wants_load_balancer, needs_cleanup, needs_update: the upstream service controller's rules."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from reconciler.model import FINALIZER, needs_cleanup, needs_update, wants_load_balancer
from tests.builders import example_service as svc

Svc = dict[str, Any]


@pytest.mark.parametrize(
    ("service", "owned", "default", "wants"),
    [
        (svc(), (), True, True),
        (svc(type="ClusterIP"), (), True, False),
        (svc(type="NodePort"), (), True, False),
        (svc(loadBalancerClass="example.com/other"), (), True, False),
        (
            svc(loadBalancerClass="openstack.org/lb-reconciler"),
            ("openstack.org/lb-reconciler",),
            True,
            True,
        ),
        (svc(), ("openstack.org/lb-reconciler",), False, False),
    ],
)
def test_wants_load_balancer(
    service: Svc, owned: tuple[str, ...], default: bool, wants: bool
) -> None:
    assert wants_load_balancer(service, owned_classes=owned, serve_default=default) is wants


@pytest.mark.parametrize(
    ("service", "cleanup"),
    [
        (svc(), False),
        (svc(finalizers=[FINALIZER]), False),
        (svc(finalizers=[FINALIZER], deleting=True), True),
        (svc(deleting=True), False),  # no finalizer: nothing of ours to clean
        (svc(type="ClusterIP", finalizers=[FINALIZER]), True),
        (svc(type="ClusterIP"), False),
    ],
)
def test_needs_cleanup(service: Svc, cleanup: bool) -> None:
    assert needs_cleanup(service) is cleanup


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
        (_set("spec.loadBalancerClass", "example.com/other"), True),
        (_set("metadata.labels", {"app": "changed"}), False),
        (_set("spec.selector", {"app": "changed"}), False),
        (_set("status.loadBalancer", {"ingress": [{"ip": "1.2.3.4"}]}), False),
        (_set("metadata.resourceVersion", "42"), False),
        (_set("spec.ipFamilies", ["IPv6"]), False),  # only the count is compared, as upstream
    ],
)
def test_needs_update(change: Callable[[Svc], None], expected: bool) -> None:
    old = svc()
    new = copy.deepcopy(old)
    change(new)
    assert needs_update(old, new) is expected


def test_needs_update_false_when_neither_wants_a_load_balancer() -> None:
    old, new = svc(type="ClusterIP"), svc(type="ClusterIP", ports=[{"port": 1}])
    assert needs_update(old, new) is False

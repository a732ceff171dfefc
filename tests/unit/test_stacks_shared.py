"""Joining a shared load balancer: refused up front, with the reason (stacks/shared.py)."""

from __future__ import annotations

from dataclasses import replace

from stacks.shared import SharedLoadBalancer, shared_problems
from tests.unit.model_helpers import UUID2, spec_of

A = "loadbalancer.openstack.org/"


def _shared(*ports: tuple[str, int, str], fip: str | None = "172.24.4.10") -> SharedLoadBalancer:
    name = "kube_service_kubernetes_default_owner"
    return SharedLoadBalancer(UUID2, "10.0.0.5", "port", ("kube_service_x",), fip, ports, name)


def test_a_port_another_service_uses_is_refused():
    spec = spec_of({A + "load-balancer-id": UUID2})
    port = spec.listeners[0].protocol_port
    (problem,) = shared_problems(
        spec, _shared(("HTTP", port, "kube_service_x")), wants_floating_ip=True
    )
    assert f"port {port}/TCP is already used on it by kube_service_x" in problem
    assert shared_problems(spec, _shared(("UDP", port, "x")), wants_floating_ip=True) == []
    assert shared_problems(spec, _shared(("TCP", port + 1, "x")), wants_floating_ip=True) == []


def test_an_external_service_on_a_load_balancer_without_floating_ip_is_refused():
    spec = spec_of({A + "load-balancer-id": UUID2})
    (problem,) = shared_problems(spec, _shared(fip=None), wants_floating_ip=True)
    assert "no floating IP (its owner is internal)" in problem
    # a cloud without an external network: nobody gets a floating IP, sharing is fine
    assert shared_problems(spec, _shared(fip=None), wants_floating_ip=False) == []
    # a user's own load balancer without one: served at its VIP, as OCCM does
    users = replace(_shared(fip=None), name="user-made-lb")
    assert shared_problems(spec, users, wants_floating_ip=True) == []

"""A load balancer this cluster did not make is never deleted (issue 13: "a user's own load
balancer was deleted"), on the real engine and provider against the emulator.

OCCM's rule: a load balancer reached through ``load-balancer-id`` that was created outside the
cluster outlives every Service on it; only the Services' listeners, pools, members and monitors
go. Here two Services share a user-made load balancer and are deleted in either order.
"""

from __future__ import annotations

from typing import Any

import pytest

from reconciler.engine.errors import InvalidConfigError
from tests.builders import stored_service
from tests.emulated import connect
from tests.integration.engine.conftest import Env, only, spec_for

# each test starts real pulumi runs or servers for many seconds: not in make test-fast
pytestmark = pytest.mark.slow

A = "loadbalancer.openstack.org/"


def _user_lb(env: Env, name: str) -> Any:
    conn = connect(env.topo)
    lb = conn.load_balancer.create_load_balancer(name=name, vip_subnet_id=env.topo["subnet_id"])
    conn.load_balancer.wait_for_load_balancer(lb.id, interval=0.2, wait=30)
    return lb


@pytest.mark.parametrize("order", [("first", "second"), ("second", "first")])
def test_user_made_load_balancer_outlives_its_services(env: Env, order: tuple[str, str]) -> None:
    lb = _user_lb(env, "user-made-lb")
    try:
        config = env.config()
        stacks = {}
        for port, name in ((81, "first"), (82, "second")):
            svc = stored_service(
                name,
                ports=[{"port": port, "protocol": "TCP", "nodePort": 30000 + port}],
                annotations={A + "load-balancer-id": lb.id},
            )
            stacks[name] = env.stack(config, svc)
            out = stacks[name].ensure(spec_for(svc, config)).outputs
            assert (out["lb_id"], out["shared"]) == (lb.id, True)
        assert sorted(li["protocol_port"] for li in env.cloud.inventory()["listeners"]) == [81, 82]
        for name in order:
            result = stacks[name].delete()
            assert not result.deleted_shared_load_balancer
        inv = env.cloud.inventory()
        kept = only(inv["loadbalancers"])
        assert (kept["id"], kept["name"]) == (lb.id, "user-made-lb")
        assert kept["vip_address"] == lb.vip_address
        assert inv["listeners"] == []
        assert inv["pools"] == []
        assert inv["members"] == []
    finally:
        connect(env.topo).load_balancer.delete_load_balancer(lb.id, cascade=True)


def test_joining_on_a_port_in_use_is_refused_up_front(env: Env) -> None:
    """Octavia would answer 409 to the listener for ever; the program says why instead."""
    lb = _user_lb(env, "user-made-busy")
    conn = connect(env.topo)
    conn.load_balancer.create_listener(
        name="users-own", loadbalancer_id=lb.id, protocol="TCP", protocol_port=80
    )
    conn.load_balancer.wait_for_load_balancer(lb.id, interval=0.2, wait=30)
    try:
        config = env.config()
        svc = stored_service("busy", annotations={A + "load-balancer-id": lb.id})
        stack = env.stack(config, svc)
        try:
            with pytest.raises(InvalidConfigError, match=r"port 80/TCP is already used on it by"):
                stack.ensure(spec_for(svc, config))
            assert [li["name"] for li in env.cloud.inventory()["listeners"]] == ["users-own"]
        finally:
            stack.delete()
    finally:
        conn.load_balancer.delete_load_balancer(lb.id, cascade=True)


def test_an_external_service_cannot_join_an_internal_owner(env: Env) -> None:
    config = env.config()
    owner_svc = stored_service(
        "inner", annotations={"service.beta.kubernetes.io/openstack-internal-load-balancer": "true"}
    )
    owner = env.stack(config, owner_svc)
    lb_id = owner.ensure(spec_for(owner_svc, config)).outputs["lb_id"]
    try:
        svc = stored_service(
            "outer",
            ports=[{"port": 81, "protocol": "TCP", "nodePort": 30081}],
            annotations={A + "load-balancer-id": lb_id},
        )
        stack = env.stack(config, svc)
        try:
            with pytest.raises(
                InvalidConfigError, match=r"no floating IP \(its owner is internal\)"
            ):
                stack.ensure(spec_for(svc, config))
            assert len(env.cloud.inventory()["listeners"]) == 1
        finally:
            stack.delete()
    finally:
        owner.delete()

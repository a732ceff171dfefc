"""A load balancer this cluster did not make is never deleted (issue 13: "a user's own load
balancer was deleted"), on the real engine and provider against the emulator.

OCCM's rule: a load balancer reached through ``load-balancer-id`` that was created outside the
cluster outlives every Service on it; only the Services' listeners, pools, members and monitors
go. Here two Services share a user-made load balancer and are deleted in either order.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration.engine.conftest import Env, only, service, spec_for
from tests.integration.engine.test_engine_cases import sdk

A = "loadbalancer.openstack.org/"


def _user_lb(env: Env, name: str) -> Any:
    conn = sdk(env)
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
            svc = service(
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
        sdk(env).load_balancer.delete_load_balancer(lb.id, cascade=True)

"""``keep-floatingip`` is read from the Service as it is when it is deleted (issue 13), not as
it was at its last ``up``: on the real engine against the emulator."""

from __future__ import annotations

import pytest

from tests.builders import stored_service
from tests.emulated import connect
from tests.integration.engine.conftest import Env, only, spec_for

# each test starts real pulumi runs or servers for many seconds: not in make test-fast
pytestmark = pytest.mark.slow

A = "loadbalancer.openstack.org/"


@pytest.mark.parametrize(("at_up", "at_delete"), [(False, True), (True, False)])
def test_keep_floating_ip_as_the_service_says_at_deletion(
    env: Env, at_up: bool, at_delete: bool
) -> None:
    config = env.config()
    svc = stored_service("keepnow", annotations={A + "keep-floatingip": str(at_up).lower()})
    stack = env.stack(config, svc)
    address = stack.ensure(spec_for(svc, config)).outputs["floating_ip"]
    stack.delete(keep_floating_ip=at_delete)
    inv = env.cloud.inventory()
    assert inv["loadbalancers"] == []
    kept = [f for f in inv["floatingips"] if f["floating_ip_address"] == address]
    if at_delete:
        fip = only(kept)
        assert fip["port_id"] is None
        connect(env.topo).network.delete_ip(fip["id"])
    else:
        assert kept == []


def test_owner_keep_floating_ip_holds_through_the_last_sharer(env: Env) -> None:
    """The owner (keep-floatingip) goes first: its load balancer is released to the Service
    still on it, whose delete then removes the load balancer but not the kept floating IP."""
    config = env.config()
    owner_svc = stored_service("keeper", annotations={A + "keep-floatingip": "true"})
    owner = env.stack(config, owner_svc)
    out = owner.ensure(spec_for(owner_svc, config)).outputs
    sharer_svc = stored_service(
        "rider",
        ports=[{"port": 81, "protocol": "TCP", "nodePort": 30081}],
        annotations={A + "load-balancer-id": out["lb_id"]},
    )
    sharer = env.stack(config, sharer_svc)
    sharer.ensure(spec_for(sharer_svc, config))
    assert owner.delete().released_load_balancer
    assert sharer.delete().deleted_shared_load_balancer
    inv = env.cloud.inventory()
    assert inv["loadbalancers"] == []
    kept = only([f for f in inv["floatingips"] if f["floating_ip_address"] == out["floating_ip"]])
    assert kept["port_id"] is None
    connect(env.topo).network.delete_ip(kept["id"])

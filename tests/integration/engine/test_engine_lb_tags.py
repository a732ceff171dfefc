"""A load balancer's own tags are kept as OCCM keeps them (issue 13, "the LB's own tags are kept
as OCCM keeps them, so OCCM and this controller count sharers the same way"), and OCCM 2.36's
tag annotations (``load-balancer-tags``, ``listener-tags``, ``pool-tags``) reach the cloud; on
the real engine and provider against the emulator.

OCCM (pkg/openstack/loadbalancer.go): every Service on a load balancer adds its name
(``kube_service_<cluster>_<ns>_<name>``) to the load balancer's tags, ``max-shared-lb`` counts
those tags, and a Service that leaves a load balancer it does not delete takes its name off.
"""

from __future__ import annotations

from typing import Any

import pytest

from reconciler.engine.errors import InvalidConfigError
from tests.builders import stored_service
from tests.emulated import connect
from tests.integration.engine.conftest import Env, only, owner_and_joiner, spec_for

# each test starts real pulumi runs or servers for many seconds: not in make test-fast
pytestmark = pytest.mark.slow

A = "loadbalancer.openstack.org/"


def _lb(env: Env, lb_id: str) -> dict[str, Any]:
    return only([lb for lb in env.cloud.lbs() if lb["id"] == lb_id])


def _tags(env: Env, lb_id: str) -> set[str]:
    return set(_lb(env, lb_id)["tags"])


def test_every_service_on_a_load_balancer_is_among_its_tags(env: Env) -> None:
    config = env.config()
    owner, joiner, owner_svc, joiner_svc, lb_id = owner_and_joiner(env)
    owner_name, joiner_name = spec_for(owner_svc, config).name, spec_for(joiner_svc, config).name
    try:
        assert {owner_name, joiner_name} <= _tags(env, lb_id)

        # an `up` of the owner (an in-place change) does not take the joiner's name away
        owner_svc["metadata"]["annotations"][A + "connection-limit"] = "1000"
        assert owner.ensure(spec_for(owner_svc, config)).changed
        assert {owner_name, joiner_name} <= _tags(env, lb_id)

        # the joiner leaves: its name goes, the owner's stays
        assert joiner.delete().existed
        tags = _tags(env, lb_id)
        assert owner_name in tags
        assert joiner_name not in tags
    finally:
        joiner.delete()
        owner.delete()
    assert env.cloud.lbs() == []


def test_an_owner_that_leaves_first_takes_its_name_off(env: Env) -> None:
    config = env.config()
    owner, joiner, owner_svc, joiner_svc, lb_id = owner_and_joiner(env)
    owner_name, joiner_name = spec_for(owner_svc, config).name, spec_for(joiner_svc, config).name
    try:
        result = owner.delete()
        assert result.released_load_balancer
        tags = _tags(env, lb_id)
        assert joiner_name in tags
        assert owner_name not in tags
    finally:
        joiner.delete()
        owner.delete()
    assert env.cloud.lbs() == []  # the last Service on it deleted it


def test_max_shared_lb_counts_the_services_on_the_load_balancer_tags(env: Env) -> None:
    """A Service OCCM put on the load balancer is among its tags; with max-shared-lb=2 and the
    owner, a third Service is refused (it counted only listeners before)."""
    config = env.config(load_balancer="max-shared-lb = 2")
    owner_svc = stored_service("owner")
    owner = env.stack(config, owner_svc)
    lb_id = owner.ensure(spec_for(owner_svc, config)).outputs["lb_id"]
    occms = "kube_service_kubernetes_other_occms"
    conn = connect(env.topo)
    conn.load_balancer.update_load_balancer(lb_id, tags=[*_tags(env, lb_id), occms])
    conn.load_balancer.wait_for_load_balancer(lb_id, interval=0.2, wait=30)
    try:
        svc = stored_service(
            "third",
            ports=[{"port": 81, "protocol": "TCP", "nodePort": 30081}],
            annotations={A + "load-balancer-id": lb_id},
        )
        stack = env.stack(config, svc)
        try:
            with pytest.raises(InvalidConfigError, match=r"already serves 2 Services"):
                stack.ensure(spec_for(svc, config))
            assert len(env.cloud.inventory()["listeners"]) == 1
        finally:
            stack.delete()
        # the owner goes: a Service OCCM counts is still on it, so it is released, not deleted
        assert owner.delete().released_load_balancer
        assert _tags(env, lb_id) >= {occms}
    finally:
        owner.delete()
        # what was left for the Service OCCM counts (here nobody): the released load balancer
        # and its owner's floating IP
        for fip in conn.network.ips(port_id=_lb(env, lb_id)["vip_port_id"]):
            conn.network.delete_ip(fip)
        conn.load_balancer.delete_load_balancer(lb_id, cascade=True)


def test_tag_annotations_reach_the_cloud_and_change_in_place(env: Env) -> None:
    config = env.config()
    svc = stored_service(
        "tagged",
        annotations={
            A + "load-balancer-tags": "env=prod, team=net",
            A + "listener-tags": "listener-a",
            A + "pool-tags": "pool-a,pool-b",
        },
    )
    stack = env.stack(config, svc)
    name = spec_for(svc, config).name
    try:
        lb_id = stack.ensure(spec_for(svc, config)).outputs["lb_id"]
        assert {name, "env=prod", "team=net"} <= _tags(env, lb_id)
        inv = env.cloud.inventory()
        listener, pool = only(inv["listeners"]), only(inv["pools"])
        assert sorted(listener["tags"]) == sorted([name, "listener-a"])
        assert sorted(pool["tags"]) == ["pool-a", "pool-b"]

        notes = svc["metadata"]["annotations"]
        notes[A + "load-balancer-tags"] = "env=prod,owner=me"
        notes[A + "listener-tags"] = "listener-b"
        notes[A + "pool-tags"] = "pool-c"
        assert stack.ensure(spec_for(svc, config)).changed
        inv = env.cloud.inventory()
        assert (only(inv["listeners"])["id"], only(inv["pools"])["id"]) == (
            listener["id"],
            pool["id"],
        )
        assert sorted(only(inv["listeners"])["tags"]) == sorted([name, "listener-b"])
        assert only(inv["pools"])["tags"] == ["pool-c"]
        # added to the load balancer's tags, never taken away (it may be shared; OCCM's merge)
        assert {name, "env=prod", "team=net", "owner=me"} <= _tags(env, lb_id)
        assert only(env.cloud.lbs())["id"] == lb_id
    finally:
        result = stack.delete()
    # its own listener carries tags other than its name: still deleted, not released (leaked)
    assert not result.released_load_balancer
    assert env.cloud.lbs() == []

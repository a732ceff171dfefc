"""Octavia's rules for ERROR, read in openstack/octavia (not from memory):

* ``octavia/common/constants.py``: ``MUTABLE_STATUSES = (ACTIVE,)``,
  ``DELETABLE_STATUSES = FAILOVERABLE_STATUSES = (ACTIVE, ERROR)``.
* ``octavia/db/repositories.py`` ``test_and_set_provisioning_status``: a child change (which sets
  the LB ``PENDING_UPDATE``) needs the LB in ``MUTABLE_STATUSES``, else the controllers
  (``listener.py``/``pool.py`` ``_test_lb_and_listener_statuses``, ``member.py``/
  ``health_monitor.py`` ``_test_lb_and_listener_and_pool_statuses``) answer 409 ``Load Balancer
  <id> is immutable and cannot be updated.``; members and health monitors first need their pool
  ACTIVE (``Pool <id> is immutable and cannot be updated.``).
* ``load_balancer.py`` ``_test_lb_status``: an LB update needs ``ACTIVE`` and an LB delete
  (cascade or not) ``ACTIVE``/``ERROR``, else 409 ``Invalid state <status> of loadbalancer
  resource <id>``; failover (``_test_and_set_failover_prov_status``) needs ``ACTIVE``/``ERROR``.
* ``controller/worker/v2/tasks/lifecycle_tasks.py``: a failed child flow's revert
  (``ListenerToErrorOnRevertTask``, ``PoolToErrorOnRevertTask``, ``MemberToErrorOnRevertTask``,
  ``MembersToErrorOnRevertTask``, ``HealthMonitorToErrorOnRevertTask``) marks the child ERROR,
  its pool and listeners ACTIVE, and the load balancer ACTIVE.
"""

from __future__ import annotations

from typing import Any

import pytest

from emulator.cloud import Cloud
from emulator.context import AuthContext
from emulator.errors import Conflict
from emulator.faults import FaultConfig, LbFault
from emulator.store import Record
from emulator.timing import ManualClock
from tests.unit.emulator.test_octavia import active_lb, build_tree, get, settle


def fail_next(cloud: Cloud, phase: str) -> None:
    cloud.faults.configure(FaultConfig(loadbalancers=(LbFault(outcome="error", phase=phase),)))


def errored_lb(cloud: Cloud, clock: ManualClock, ctx: AuthContext, topo: dict[str, str]) -> Record:
    lb = active_lb(cloud, clock, ctx, topo)
    fail_next(cloud, "update")
    cloud.octavia.update_loadbalancer(ctx, lb["id"], {"name": "renamed"})
    settle(cloud, clock)
    assert get(cloud, ctx, "loadbalancer", lb["id"])["provisioning_status"] == "ERROR"
    return lb


def statuses(cloud: Cloud, ctx: AuthContext, tree: dict[str, Any]) -> dict[str, str]:
    kinds = {"lb": "loadbalancer", "listener": "listener", "pool": "pool", "hm": "healthmonitor"}
    return {
        key: get(cloud, ctx, kind, tree[key]["id"])["provisioning_status"]
        for key, kind in kinds.items()
    }


def test_child_changes_on_an_lb_in_error_are_409_immutable(
    cloud: Cloud, clock: ManualClock, ctx: AuthContext, topo: dict[str, str]
) -> None:
    tree = build_tree(cloud, clock, ctx, topo)
    lb_id = tree["lb"]["id"]
    fail_next(cloud, "update")
    cloud.octavia.update_loadbalancer(ctx, lb_id, {"name": "renamed"})
    settle(cloud, clock)
    assert get(cloud, ctx, "loadbalancer", lb_id)["provisioning_status"] == "ERROR"
    o = cloud.octavia
    immutable = f"Load Balancer {lb_id} is immutable and cannot be updated."
    body = {"loadbalancer_id": lb_id, "protocol": "TCP", "protocol_port": 81}
    pool_id, hm_id, listener_id = tree["pool"]["id"], tree["hm"]["id"], tree["listener"]["id"]
    member = o.list_records("member", ctx, {}, _pool_id=pool_id)[0]
    attempts = [
        lambda: o.create_listener(ctx, body),
        lambda: o.update_listener(ctx, listener_id, {"connection_limit": 5}),
        lambda: o.delete_listener(ctx, listener_id),
        lambda: o.update_pool(ctx, pool_id, {"name": "p"}),
        lambda: o.delete_pool(ctx, pool_id),
        lambda: o.update_healthmonitor(ctx, hm_id, {"delay": 7}),
        lambda: o.delete_healthmonitor(ctx, hm_id),
        lambda: o.update_member(ctx, pool_id, member["id"], {"weight": 3}),
        lambda: o.delete_member(ctx, pool_id, member["id"]),
        lambda: o.batch_update_members(ctx, pool_id, [], additive_only=False),
    ]
    for attempt in attempts:
        with pytest.raises(Conflict) as err:
            attempt()
        assert err.value.message == immutable
    with pytest.raises(Conflict) as err:
        o.update_loadbalancer(ctx, lb_id, {"name": "again"})
    assert err.value.message == f"Invalid state ERROR of loadbalancer resource {lb_id}"
    assert statuses(cloud, ctx, tree) == {
        "lb": "ERROR",
        "listener": "ACTIVE",
        "pool": "ACTIVE",
        "hm": "ACTIVE",
    }


def test_child_change_while_pending_is_409_immutable(
    cloud: Cloud, clock: ManualClock, ctx: AuthContext, topo: dict[str, str]
) -> None:
    lb = cloud.octavia.create_loadbalancer(ctx, {"name": "lb", "vip_subnet_id": topo["subnet_id"]})
    body = {"loadbalancer_id": lb["id"], "protocol": "TCP", "protocol_port": 80}
    with pytest.raises(Conflict) as err:
        cloud.octavia.create_listener(ctx, body)
    assert err.value.message == f"Load Balancer {lb['id']} is immutable and cannot be updated."
    with pytest.raises(Conflict) as err:
        cloud.octavia.update_loadbalancer(ctx, lb["id"], {"name": "x"})
    assert err.value.message == f"Invalid state PENDING_CREATE of loadbalancer resource {lb['id']}"
    with pytest.raises(Conflict) as err:
        cloud.octavia.delete_loadbalancer(ctx, lb["id"], cascade=True)
    assert err.value.message == f"Invalid state PENDING_CREATE of loadbalancer resource {lb['id']}"
    with pytest.raises(Conflict) as err:
        cloud.octavia.failover_loadbalancer(ctx, lb["id"])
    assert err.value.message == f"Invalid state PENDING_CREATE of loadbalancer resource {lb['id']}"


def test_an_lb_in_error_can_be_failed_over_and_deleted(
    cloud: Cloud, clock: ManualClock, ctx: AuthContext, topo: dict[str, str]
) -> None:
    lb = errored_lb(cloud, clock, ctx, topo)
    cloud.faults.configure(FaultConfig())
    cloud.octavia.failover_loadbalancer(ctx, lb["id"])
    assert get(cloud, ctx, "loadbalancer", lb["id"])["provisioning_status"] == "PENDING_UPDATE"
    settle(cloud, clock)
    assert get(cloud, ctx, "loadbalancer", lb["id"])["provisioning_status"] == "ACTIVE"


def test_cascade_delete_of_an_lb_in_error_empties_it(
    cloud: Cloud, clock: ManualClock, ctx: AuthContext, topo: dict[str, str]
) -> None:
    tree = build_tree(cloud, clock, ctx, topo)
    fail_next(cloud, "update")
    cloud.octavia.update_loadbalancer(ctx, tree["lb"]["id"], {"name": "renamed"})
    settle(cloud, clock)
    cloud.octavia.delete_loadbalancer(ctx, tree["lb"]["id"], cascade=True)
    settle(cloud, clock)
    assert cloud.inventory()["created"] == {}


def test_a_failed_listener_update_leaves_the_lb_active(
    cloud: Cloud, clock: ManualClock, ctx: AuthContext, topo: dict[str, str]
) -> None:
    tree = build_tree(cloud, clock, ctx, topo)
    fail_next(cloud, "update")
    cloud.octavia.update_listener(ctx, tree["listener"]["id"], {"connection_limit": 5})
    settle(cloud, clock)
    assert statuses(cloud, ctx, tree) == {
        "lb": "ACTIVE",
        "listener": "ERROR",
        "pool": "ACTIVE",
        "hm": "ACTIVE",
    }
    listener = get(cloud, ctx, "listener", tree["listener"]["id"])
    assert listener["operating_status"] == "ERROR"
    # the LB is ACTIVE, so the listener in ERROR can be changed again (only the LB is tested)
    cloud.octavia.update_listener(ctx, tree["listener"]["id"], {"connection_limit": 6})
    settle(cloud, clock)
    assert get(cloud, ctx, "listener", tree["listener"]["id"])["provisioning_status"] == "ACTIVE"


def test_a_failed_pool_update_errors_the_pool_only_and_locks_its_members(
    cloud: Cloud, clock: ManualClock, ctx: AuthContext, topo: dict[str, str]
) -> None:
    tree = build_tree(cloud, clock, ctx, topo)
    pool_id = tree["pool"]["id"]
    fail_next(cloud, "update")
    cloud.octavia.update_pool(ctx, pool_id, {"name": "p"})
    settle(cloud, clock)
    assert statuses(cloud, ctx, tree) == {
        "lb": "ACTIVE",
        "listener": "ACTIVE",
        "pool": "ERROR",
        "hm": "ACTIVE",
    }
    member = cloud.octavia.list_records("member", ctx, {}, _pool_id=pool_id)[0]
    immutable = f"Pool {pool_id} is immutable and cannot be updated."
    for attempt in (
        lambda: cloud.octavia.delete_member(ctx, pool_id, member["id"]),
        lambda: cloud.octavia.batch_update_members(ctx, pool_id, [], additive_only=False),
        lambda: cloud.octavia.delete_healthmonitor(ctx, tree["hm"]["id"]),
    ):
        with pytest.raises(Conflict) as err:
            attempt()
        assert err.value.message == immutable
    cloud.octavia.delete_pool(ctx, pool_id)  # the pool itself can go: only the LB is tested
    settle(cloud, clock)
    assert cloud.octavia.list_records("member", ctx, {}) == []


@pytest.mark.parametrize("action", ["update", "delete"])
def test_a_failed_member_or_monitor_change_errors_it_and_frees_its_parents(
    cloud: Cloud, clock: ManualClock, ctx: AuthContext, topo: dict[str, str], action: str
) -> None:
    tree = build_tree(cloud, clock, ctx, topo)
    pool_id, hm_id = tree["pool"]["id"], tree["hm"]["id"]
    member = cloud.octavia.list_records("member", ctx, {}, _pool_id=pool_id)[0]
    fail_next(cloud, "update")
    if action == "update":
        cloud.octavia.update_member(ctx, pool_id, member["id"], {"weight": 3})
    else:
        cloud.octavia.delete_member(ctx, pool_id, member["id"])
    settle(cloud, clock)
    assert get(cloud, ctx, "member", member["id"])["provisioning_status"] == "ERROR"
    assert set(statuses(cloud, ctx, tree).values()) == {"ACTIVE"}
    fail_next(cloud, "update")
    if action == "update":
        cloud.octavia.update_healthmonitor(ctx, hm_id, {"delay": 7})
    else:
        cloud.octavia.delete_healthmonitor(ctx, hm_id)
    settle(cloud, clock)
    after = statuses(cloud, ctx, tree)
    assert after == {"lb": "ACTIVE", "listener": "ACTIVE", "pool": "ACTIVE", "hm": "ERROR"}


def test_failed_batch_member_update_errors_every_touched_member(
    cloud: Cloud, clock: ManualClock, ctx: AuthContext, topo: dict[str, str]
) -> None:
    tree = build_tree(cloud, clock, ctx, topo)
    pool_id = tree["pool"]["id"]
    fail_next(cloud, "update")
    cloud.octavia.batch_update_members(
        ctx, pool_id, [{"address": "10.0.0.12", "protocol_port": 30000}], additive_only=False
    )
    settle(cloud, clock)
    members = cloud.octavia.list_records("member", ctx, {}, _pool_id=pool_id)
    assert sorted((m["address"], m["provisioning_status"]) for m in members) == [
        ("10.0.0.10", "ERROR"),
        ("10.0.0.11", "ERROR"),
        ("10.0.0.12", "ERROR"),
    ]
    assert set(statuses(cloud, ctx, tree).values()) == {"ACTIVE"}


def test_lb_level_failures_still_leave_the_lb_in_error(
    cloud: Cloud, clock: ManualClock, ctx: AuthContext, topo: dict[str, str]
) -> None:
    lb = errored_lb(cloud, clock, ctx, topo)  # an LB update
    fail_next(cloud, "update")
    cloud.octavia.failover_loadbalancer(ctx, lb["id"])
    settle(cloud, clock)
    assert get(cloud, ctx, "loadbalancer", lb["id"])["provisioning_status"] == "ERROR"


def test_a_batch_that_changes_nothing_leaves_every_status_alone(
    cloud: Cloud, clock: ManualClock, ctx: AuthContext, topo: dict[str, str]
) -> None:
    """Octavia's member.py MembersController.put: "Member batch update is a noop", no flow."""
    lb = active_lb(cloud, clock, ctx, topo)
    listener = cloud.octavia.create_listener(
        ctx, {"loadbalancer_id": lb["id"], "protocol": "TCP", "protocol_port": 80}
    )
    settle(cloud, clock)
    pool = cloud.octavia.create_pool(
        ctx, {"listener_id": listener["id"], "protocol": "TCP", "lb_algorithm": "ROUND_ROBIN"}
    )
    settle(cloud, clock)
    fail_next(cloud, "update")
    cloud.octavia.batch_update_members(ctx, pool["id"], [], additive_only=False)
    assert get(cloud, ctx, "loadbalancer", lb["id"])["provisioning_status"] == "ACTIVE"
    settle(cloud, clock)
    assert get(cloud, ctx, "pool", pool["id"])["provisioning_status"] == "ACTIVE"
    assert cloud.faults.fired() == {}

"""Octavia rules: the status machine, 409 unless ACTIVE, validation, batch members, cascade."""

from __future__ import annotations

from typing import Any

import pytest

from emulator.cloud import Cloud
from emulator.context import AuthContext
from emulator.errors import BadRequest, Conflict, Forbidden, Unsupported
from emulator.faults import FaultConfig, LbFault
from emulator.store import Record
from emulator.timing import ManualClock


def settle(cloud: Cloud, clock: ManualClock, seconds: float = 5.0) -> None:
    clock.advance(seconds)
    cloud.advance()


def active_lb(cloud: Cloud, clock: ManualClock, ctx: AuthContext, topo: dict[str, str]) -> Record:
    lb = cloud.octavia.create_loadbalancer(ctx, {"name": "lb", "vip_subnet_id": topo["subnet_id"]})
    settle(cloud, clock)
    return lb


def get(cloud: Cloud, ctx: AuthContext, kind: str, rid: str) -> Record:
    return cloud.octavia.get(kind, rid, ctx)


def test_lb_create_goes_pending_then_active_with_a_vip_port(
    cloud: Cloud, clock: ManualClock, ctx: AuthContext, topo: dict[str, str]
) -> None:
    lb = cloud.octavia.create_loadbalancer(ctx, {"name": "lb", "vip_subnet_id": topo["subnet_id"]})
    assert (lb["provisioning_status"], lb["operating_status"]) == ("PENDING_CREATE", "OFFLINE")
    port = cloud.neutron.get("port", lb["vip_port_id"], ctx)
    assert (port["device_owner"], port["name"]) == ("Octavia", f"octavia-lb-{lb['id']}")
    assert lb["vip_address"] == port["fixed_ips"][0]["ip_address"]
    clock.advance(2.9)
    cloud.advance()
    assert get(cloud, ctx, "loadbalancer", lb["id"])["provisioning_status"] == "PENDING_CREATE"
    settle(cloud, clock, 0.2)
    lb = get(cloud, ctx, "loadbalancer", lb["id"])
    assert (lb["provisioning_status"], lb["operating_status"]) == ("ACTIVE", "ONLINE")


def test_mutation_while_pending_is_409_with_octavias_message(
    cloud: Cloud, clock: ManualClock, ctx: AuthContext, topo: dict[str, str]
) -> None:
    lb = active_lb(cloud, clock, ctx, topo)
    body = {"loadbalancer_id": lb["id"], "protocol": "TCP", "protocol_port": 80}
    cloud.octavia.create_listener(ctx, body)
    with pytest.raises(Conflict) as err:
        cloud.octavia.create_listener(ctx, {**body, "protocol_port": 81})
    # Octavia's listener.py _test_lb_and_listener_statuses: a child change on a non-ACTIVE LB
    assert err.value.message == f"Load Balancer {lb['id']} is immutable and cannot be updated."
    settle(cloud, clock)
    with pytest.raises(Conflict, match="already using protocol TCP and protocol_port 80"):
        cloud.octavia.create_listener(ctx, body)
    cloud.octavia.create_listener(ctx, {**body, "protocol": "UDP"})  # other family: allowed


def test_validation_errors_name_the_field(
    cloud: Cloud, clock: ManualClock, ctx: AuthContext, topo: dict[str, str]
) -> None:
    with pytest.raises(BadRequest, match="VIP must contain one of"):
        cloud.octavia.create_loadbalancer(ctx, {"name": "x"})
    with pytest.raises(BadRequest, match="Unknown attribute for argument loadbalancer: vip"):
        cloud.octavia.create_loadbalancer(ctx, {"vip": "x", "vip_subnet_id": topo["subnet_id"]})
    lb = active_lb(cloud, clock, ctx, topo)
    with pytest.raises(BadRequest, match="field/attribute protocol_port"):
        cloud.octavia.create_listener(
            ctx, {"loadbalancer_id": lb["id"], "protocol": "TCP", "protocol_port": 0}
        )
    listener = cloud.octavia.create_listener(
        ctx, {"loadbalancer_id": lb["id"], "protocol": "TCP", "protocol_port": 80}
    )
    settle(cloud, clock)
    with pytest.raises(BadRequest, match="pool protocol 'UDP' is invalid"):
        cloud.octavia.create_pool(
            ctx, {"listener_id": listener["id"], "protocol": "UDP", "lb_algorithm": "ROUND_ROBIN"}
        )
    with pytest.raises(Unsupported, match="does not support a requested option"):  # 501
        cloud.octavia.create_pool(
            ctx,
            {"listener_id": listener["id"], "protocol": "TCP", "lb_algorithm": "SOURCE_IP_PORT"},
        )


def build_tree(
    cloud: Cloud, clock: ManualClock, ctx: AuthContext, topo: dict[str, str]
) -> dict[str, Any]:
    o = cloud.octavia
    lb = active_lb(cloud, clock, ctx, topo)
    listener = o.create_listener(
        ctx, {"loadbalancer_id": lb["id"], "protocol": "TCP", "protocol_port": 80}
    )
    settle(cloud, clock)
    pool = o.create_pool(
        ctx, {"listener_id": listener["id"], "protocol": "TCP", "lb_algorithm": "ROUND_ROBIN"}
    )
    settle(cloud, clock)
    o.batch_update_members(
        ctx,
        pool["id"],
        [
            {"address": "10.0.0.10", "protocol_port": 30000},
            {"address": "10.0.0.11", "protocol_port": 30000},
        ],
        additive_only=False,
    )
    assert get(cloud, ctx, "pool", pool["id"])["provisioning_status"] == "PENDING_UPDATE"
    settle(cloud, clock)
    hm = o.create_healthmonitor(
        ctx, {"pool_id": pool["id"], "type": "TCP", "delay": 5, "timeout": 3, "max_retries": 3}
    )
    settle(cloud, clock)
    return {"lb": lb, "listener": listener, "pool": pool, "hm": hm}


def test_batch_members_create_update_delete_in_one_update(
    cloud: Cloud, clock: ManualClock, ctx: AuthContext, topo: dict[str, str]
) -> None:
    tree = build_tree(cloud, clock, ctx, topo)
    pool_id = tree["pool"]["id"]
    members = cloud.octavia.list_records("member", ctx, {}, _pool_id=pool_id)
    assert {m["operating_status"] for m in members} == {"ONLINE"}
    cloud.octavia.batch_update_members(
        ctx,
        pool_id,
        [
            {"address": "10.0.0.11", "protocol_port": 30000, "weight": 5},
            {"address": "10.0.0.12", "protocol_port": 30000},
        ],
        additive_only=False,
    )
    settle(cloud, clock)
    members = cloud.octavia.list_records("member", ctx, {}, _pool_id=pool_id)
    assert sorted((m["address"], m["weight"]) for m in members) == [
        ("10.0.0.11", 5),
        ("10.0.0.12", 1),
    ]
    tree_view = cloud.octavia.status_tree(ctx, tree["lb"]["id"])["loadbalancer"]
    pool_view = tree_view["listeners"][0]["pools"][0]
    assert pool_view["health_monitor"]["type"] == "TCP"
    assert len(pool_view["members"]) == 2


def test_delete_needs_cascade_and_cascade_removes_everything(
    cloud: Cloud, clock: ManualClock, ctx: AuthContext, topo: dict[str, str]
) -> None:
    tree = build_tree(cloud, clock, ctx, topo)
    lb_id = tree["lb"]["id"]
    with pytest.raises(BadRequest, match="it has children"):
        cloud.octavia.delete_loadbalancer(ctx, lb_id, cascade=False)
    cloud.octavia.delete_loadbalancer(ctx, lb_id, cascade=True)
    assert get(cloud, ctx, "pool", tree["pool"]["id"])["provisioning_status"] == "PENDING_DELETE"
    settle(cloud, clock)
    assert cloud.inventory()["created"] == {}


def test_lb_fault_error_and_stuck(
    cloud: Cloud, clock: ManualClock, ctx: AuthContext, topo: dict[str, str]
) -> None:
    cloud.faults.configure(
        FaultConfig(
            loadbalancers=(
                LbFault(name="bad-*", outcome="error"),
                LbFault(name="stuck-*", outcome="stuck"),
            )
        )
    )
    bad = cloud.octavia.create_loadbalancer(
        ctx, {"name": "bad-1", "vip_subnet_id": topo["subnet_id"]}
    )
    stuck = cloud.octavia.create_loadbalancer(
        ctx, {"name": "stuck-1", "vip_subnet_id": topo["subnet_id"]}
    )
    settle(cloud, clock, 3600)
    assert get(cloud, ctx, "loadbalancer", bad["id"])["provisioning_status"] == "ERROR"
    assert get(cloud, ctx, "loadbalancer", stuck["id"])["provisioning_status"] == "PENDING_CREATE"
    cloud.octavia.delete_loadbalancer(ctx, bad["id"], cascade=False)  # ERROR LBs can be deleted
    settle(cloud, clock)
    assert [lb["name"] for lb in cloud.octavia.list_records("loadbalancer", ctx, {})] == ["stuck-1"]


def test_octavia_quota_is_403(cloud: Cloud, ctx: AuthContext, topo: dict[str, str]) -> None:
    admin = AuthContext(user_id="a", project_id=ctx.project_id, roles=("admin",))
    cloud.octavia.set_quota(admin, ctx.project_id, {"load_balancer": 0})
    with pytest.raises(Forbidden, match="Quota has been met for resources: Load Balancer"):
        cloud.octavia.create_loadbalancer(ctx, {"vip_subnet_id": topo["subnet_id"]})


def test_listeners_and_pools_filter_by_loadbalancer_id(
    cloud: Cloud, clock: ManualClock, ctx: AuthContext, topo: dict[str, str]
) -> None:
    """Octavia filters children by ``?loadbalancer_id=`` (gophercloud's ListOpts, which OCCM
    and the engine use to find what else is on a load balancer)."""
    ids = {}
    for name in ("one", "two"):
        lb = cloud.octavia.create_loadbalancer(
            ctx, {"name": name, "vip_subnet_id": topo["subnet_id"]}
        )
        settle(cloud, clock)
        listener = cloud.octavia.create_listener(
            ctx, {"loadbalancer_id": lb["id"], "protocol": "TCP", "protocol_port": 80}
        )
        settle(cloud, clock)
        pool = cloud.octavia.create_pool(
            ctx, {"listener_id": listener["id"], "protocol": "TCP", "lb_algorithm": "ROUND_ROBIN"}
        )
        settle(cloud, clock)
        ids[lb["id"]] = (listener["id"], pool["id"])
    for lb_id, (listener_id, pool_id) in ids.items():
        query = {"loadbalancer_id": [lb_id]}
        assert [r["id"] for r in cloud.octavia.list_records("listener", ctx, query)] == [
            listener_id
        ]
        assert [r["id"] for r in cloud.octavia.list_records("pool", ctx, query)] == [pool_id]

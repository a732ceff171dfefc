"""bench/invariants.py (the chaos run's end check) and the pure parts of bench/chaos.py, on small
hand-made states."""

from __future__ import annotations

import random
from typing import Any

import pytest

from bench.chaos import FAULTS, draw_fault, operator_fix, parse_args, service_ports
from bench.invariants import CLOUD, STACKS, ServiceView, check, node_addresses, service_view
from emulator.faults import FaultRule, LbFault

NODES = {"10.0.0.11", "10.0.0.12"}
LB_NAME = "kube_service_bench_bench_web"


def svc(
    name: str = "web",
    *,
    ports: tuple[tuple[str, int, int], ...] = (("TCP", 80, 30080),),
    limit: int = -1,
    ips: tuple[str, ...] = ("172.24.0.20",),
    deleting: bool = False,
) -> ServiceView:
    return ServiceView(
        name=name,
        is_load_balancer=True,
        ports=ports,
        connection_limit=limit,
        ingress_ips=ips,
        deleting=deleting,
        finalizers=("service.kubernetes.io/load-balancer-cleanup",),
    )


def cloud(
    *, lb_ids: tuple[str, ...] = ("lb1",), status: str = "ACTIVE", monitor: bool = True
) -> dict[str, list[dict[str, Any]]]:
    """One LB (or duplicates) of ``web`` with a listener :80, a pool, two members, a monitor
    and a floating IP on the VIP port, as the emulator's inventory shows them."""
    res: dict[str, list[dict[str, Any]]] = {k: [] for k in ("loadbalancers", "listeners")}
    res.update(pools=[], members=[], healthmonitors=[], floatingips=[], ports=[])
    for i, lb in enumerate(lb_ids):
        res["loadbalancers"].append(
            {"id": lb, "name": LB_NAME, "provisioning_status": status, "vip_port_id": f"vip-{lb}"}
        )
        res["ports"].append({"id": f"vip-{lb}", "device_owner": "Octavia", "device_id": lb})
        if i:
            continue
        members = [
            {"id": f"m{n}", "address": ip, "protocol_port": 30080}
            for n, ip in enumerate(sorted(NODES))
        ]
        res["members"] += members
        res["listeners"].append(
            {
                "id": "l1",
                "protocol": "TCP",
                "protocol_port": 80,
                "loadbalancers": [{"id": lb}],
                "default_pool_id": "p1",
                "connection_limit": -1,
            }
        )
        res["pools"].append(
            {
                "id": "p1",
                "loadbalancers": [{"id": lb}],
                "members": [{"id": m["id"]} for m in members],
                "healthmonitor_id": "h1" if monitor else None,
            }
        )
        if monitor:
            res["healthmonitors"].append({"id": "h1", "pools": [{"id": "p1"}]})
        res["floatingips"].append(
            {"id": "f1", "port_id": f"vip-{lb}", "floating_ip_address": "172.24.0.20"}
        )
        res["ports"].append(
            {"id": "fport", "device_owner": "network:floatingip", "device_id": "f1"}
        )
    return res


def created_of(res: dict[str, list[dict[str, Any]]]) -> dict[str, list[str]]:
    return {kind: [r["id"] for r in records] for kind, records in res.items() if records}


def run(
    services: list[ServiceView],
    res: dict[str, list[dict[str, Any]]],
    *,
    stacks: tuple[str, ...] = ("bench/web",),
    nodes: set[str] = NODES,
) -> list[str]:
    found = check(
        cluster="bench",
        namespace="bench",
        services=services,
        nodes=nodes,
        resources=res,
        created=created_of(res),
        stacks=stacks,
    )
    return [str(v) for v in found]


def test_a_converged_service_breaks_nothing() -> None:
    assert run([svc()], cloud()) == []


def test_nothing_at_all_breaks_nothing() -> None:
    assert run([], {}, stacks=()) == []


def test_missing_lb_and_ip_are_reported_for_the_service() -> None:
    assert run([svc(ips=())], {}) == [
        f"bench/web: no load balancer named {LB_NAME}",
        "bench/web: no IP in status.loadBalancer.ingress",
    ]


def test_duplicate_lbs_are_one_violation_naming_both() -> None:
    assert run([svc()], cloud(lb_ids=("lb1", "lb2"))) == [
        "bench/web: 2 load balancers (duplicates): lb1, lb2"
    ]


def test_an_lb_in_error_is_a_violation() -> None:
    assert run([svc()], cloud(status="ERROR")) == ["bench/web: load balancer lb1 is ERROR"]


def test_ports_members_limit_and_monitor_must_match_the_spec() -> None:
    wrong_ports = svc(ports=(("TCP", 443, 30443),))
    assert run([wrong_ports], cloud()) == [
        "bench/web: listeners [('TCP', 80)], want [('TCP', 443)]"
    ]
    three_nodes = run([svc()], cloud(), nodes={*NODES, "10.0.1.5"})
    assert len(three_nodes) == 1
    assert three_nodes[0].startswith("bench/web: listener TCP:80: members [")
    assert run([svc(limit=100)], cloud()) == [
        "bench/web: listener TCP:80: connection_limit -1, want 100"
    ]
    assert run([svc()], cloud(monitor=False)) == ["bench/web: listener TCP:80: no health monitor"]


def test_ingress_must_be_the_floating_ip() -> None:
    assert run([svc(ips=("172.24.0.99",))], cloud()) == [
        "bench/web: ingress ['172.24.0.99'] is not the floating IP 172.24.0.20"
    ]


def test_everything_of_a_deleted_service_is_an_orphan() -> None:
    found = run([], cloud())
    assert f"{CLOUD}: loadbalancer lb1 ({LB_NAME}) has no Service" in found
    for what in ("listener l1", "pool p1", "member m0", "member m1", "healthmonitor h1"):
        assert any(f.startswith(f"{CLOUD}: {what} ") for f in found), what
    assert f"{CLOUD}: floatingip f1 has no Service" in found
    assert f"{CLOUD}: port vip-lb1 has no Service" in found
    assert f"{CLOUD}: port fport has no Service" in found
    assert f"{STACKS}: stack of bench/web has no Service" in found
    assert len(found) == 10


def test_a_stuck_finalizer_is_reported_once() -> None:
    """Its load balancer and stack are not reported again as orphans."""
    assert run([svc(deleting=True)], cloud()) == [
        "bench/web: deleted but still held by finalizers "
        "['service.kubernetes.io/load-balancer-cleanup']"
    ]


def test_an_unknown_created_kind_is_an_orphan() -> None:
    found = check(
        cluster="bench",
        namespace="bench",
        services=[],
        nodes=NODES,
        resources={"security_groups": [{"id": "sg1"}]},
        created={"security_groups": ["sg1"]},
        stacks=[],
    )
    assert [str(v) for v in found] == [f"{CLOUD}: security_group sg1 has no Service"]


def test_service_view_and_node_addresses_from_api_json() -> None:
    obj = {
        "metadata": {
            "name": "web",
            "annotations": {"loadbalancer.openstack.org/connection-limit": "100"},
            "deletionTimestamp": "2024-01-01T00:00:00Z",
            "finalizers": ["f"],
        },
        "spec": {"type": "LoadBalancer", "ports": [{"port": 80, "nodePort": 30080}]},
        "status": {"loadBalancer": {"ingress": [{"ip": "172.24.0.20"}]}},
    }
    assert service_view(obj) == ServiceView(
        name="web",
        is_load_balancer=True,
        ports=(("TCP", 80, 30080),),
        connection_limit=100,
        ingress_ips=("172.24.0.20",),
        deleting=True,
        finalizers=("f",),
    )
    nodes = [
        {
            "status": {
                "addresses": [
                    {"type": "Hostname", "address": "n1"},
                    {"type": "InternalIP", "address": "10.0.0.11"},
                ]
            }
        },
        {
            "metadata": {"deletionTimestamp": "x"},
            "status": {"addresses": [{"type": "InternalIP", "address": "10.0.0.12"}]},
        },
    ]
    assert node_addresses(nodes) == {"10.0.0.11"}


def test_every_drawn_fault_is_bounded() -> None:
    rng = random.Random(3)
    for kind in FAULTS * 20:
        rule = draw_fault(rng, kind)
        assert rule.count is not None
        if kind.startswith("lb_"):
            assert isinstance(rule, LbFault)
            assert rule.outcome == ("stuck" if kind == "lb_stuck" else "error")
        else:
            assert isinstance(rule, FaultRule)
            assert not rule.operation.startswith("keystone")
            assert rule.fails == (kind != "latency")


def test_service_ports_are_one_to_three_distinct_tcp_ports() -> None:
    rng = random.Random(5)
    for _ in range(50):
        ports = service_ports(rng)
        assert 1 <= len(ports) <= 3
        assert len({p["port"] for p in ports}) == len(ports)
        assert {p["protocol"] for p in ports} == {"TCP"}


def test_parse_args_defaults_and_out() -> None:
    options, out = parse_args(["--duration", "60", "--max-ops", "5", "--out", "r.json"])
    assert (options.duration, options.max_ops, options.seed, options.services) == (60, 5, 1, 8)
    assert str(out) == "r.json"
    options, out = parse_args([])
    assert (options.duration, out) == (1200.0, None)


@pytest.mark.parametrize(
    ("status", "name", "expected"),
    [
        ("ACTIVE", "live", None),
        ("PENDING_CREATE", "live", ("unstick_pending_lb", "ACTIVE")),
        ("PENDING_UPDATE", "gone", ("unstick_pending_lb", "ACTIVE")),
        ("PENDING_DELETE", "live", ("finish_stuck_delete", "DELETED")),
        ("ERROR", "live", ("repair_error_lb", "ACTIVE")),
        ("ERROR", "gone", None),  # the controller deletes it with cascade
    ],
)
def test_operator_fixes_only_what_an_api_user_cannot(
    status: str, name: str, expected: tuple[str, str] | None
) -> None:
    lb = {"id": "lb-1", "name": name, "provisioning_status": status}
    assert operator_fix(lb, live_names={"live"}) == expected

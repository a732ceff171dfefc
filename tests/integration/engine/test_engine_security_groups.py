"""``manage-security-groups = true``: OCCM's Node security group, through the real engine.

OCCM (``pkg/openstack/loadbalancer_sg.go``, ``ensureAndUpdateOctaviaSecurityGroup``) makes one
group per Service, ``lb-sg-<uid>-<namespace>-<name>``, with one ingress rule per NodePort (and
the health-check NodePort): from the member subnet's CIDR with ``amphora`` (which proxies, so
packets come from the amphora), from each ``loadBalancerSourceRanges`` CIDR with ``ovn`` (which
keeps the client address). It adds the group to the Neutron ports of the member Nodes, keeping
their other groups, and on delete takes it off those ports before deleting the group (Neutron
refuses to delete a group a port still uses). The test checks each step on the emulator's
inventory: create, a port removed (its rules follow), delete (nothing left, the Node ports as
they were).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.builders import stored_service
from tests.emulated import connect
from tests.integration.engine.conftest import CLUSTER, NODES, Env, only, spec_for

# each test starts real pulumi runs or servers for many seconds: not in make test-fast
pytestmark = pytest.mark.slow

RANGES = ["192.0.2.0/24", "198.51.100.7/32"]
TWO_PORTS = [
    {"name": "http", "port": 80, "protocol": "TCP", "nodePort": 30080},
    {"name": "dns", "port": 53, "protocol": "UDP", "nodePort": 30053},
]
ONE_PORT = [TWO_PORTS[0]]

Rule = tuple[str, str, str, int, int, str]


@pytest.fixture
def node_ports(env: Env) -> Iterator[dict[str, dict[str, Any]]]:
    """A Neutron port per Node of ``NODES`` (name -> the port as the emulator lists it)."""
    conn = connect(env.topo)
    made = []
    for item in NODES:
        name = item["metadata"]["name"]
        address = item["status"]["addresses"][0]["address"]
        made.append(
            conn.network.create_port(
                network_id=env.topo["network_id"], fixed_ips=[{"ip_address": address}], name=name
            )
        )
    try:
        yield {p.name: _port(env, p.id) for p in made}
    finally:
        for port in made:
            conn.network.delete_port(port)


def _port(env: Env, port_id: str) -> dict[str, Any]:
    return only([p for p in env.cloud.inventory()["ports"] if p["id"] == port_id])


def _groups(env: Env, name: str) -> list[dict[str, Any]]:
    return [g for g in env.cloud.inventory()["security_groups"] if g["name"] == name]


def _ingress(env: Env, group_id: str) -> set[Rule]:
    return {
        (
            r["direction"],
            r["ethertype"],
            r["protocol"],
            r["port_range_min"],
            r["port_range_max"],
            r["remote_ip_prefix"],
        )
        for r in env.cloud.inventory()["security_group_rules"]
        if r["security_group_id"] == group_id and r["direction"] == "ingress"
    }


def _expected(ports: list[dict[str, Any]], cidrs: list[str]) -> set[Rule]:
    return {
        ("ingress", "IPv4", p["protocol"].lower(), p["nodePort"], p["nodePort"], cidr)
        for p in ports
        for cidr in cidrs
    }


@pytest.mark.parametrize("provider", ["amphora", "ovn"])
def test_manage_security_groups(
    env: Env, node_ports: dict[str, dict[str, Any]], provider: str
) -> None:
    lb_options = "manage-security-groups = true\n"
    if provider == "ovn":
        lb_options += "lb-provider = ovn\nlb-method = SOURCE_IP_PORT\n"
    config = env.config(lb_options)
    # amphora proxies (rules from the member subnet); ovn keeps client addresses (the ranges)
    cidrs = ["10.0.0.0/24"] if provider == "amphora" else RANGES
    name = f"sg-{provider}"
    svc = stored_service(name, ports=TWO_PORTS, loadBalancerSourceRanges=RANGES)
    spec = spec_for(svc, config)
    uid = svc["metadata"]["uid"]
    group_name = f"lb-sg-{uid}-default-{name}"
    before = {n: sorted(p["security_groups"]) for n, p in node_ports.items()}
    stack = env.engine(config).stack(service=spec.service)

    try:
        assert stack.ensure(spec).changed
        group = only(_groups(env, group_name))
        assert group["description"] == (
            f"Security Group for default/{name} Service LoadBalancer in cluster {CLUSTER}"
        )
        assert _ingress(env, group["id"]) == _expected(TWO_PORTS, cidrs)
        for node_name, port in node_ports.items():
            now = _port(env, port["id"])["security_groups"]
            assert sorted(now) == sorted([*before[node_name], group["id"]]), node_name
        if provider == "amphora":  # amphora enforces the source ranges on the listeners
            for listener in env.cloud.inventory()["listeners"]:
                assert sorted(listener["allowed_cidrs"]) == RANGES
        assert not stack.ensure(spec).changed

        one = stored_service(name, ports=ONE_PORT, loadBalancerSourceRanges=RANGES)
        assert stack.ensure(spec_for(one, config)).changed
        assert only(_groups(env, group_name))["id"] == group["id"]
        assert _ingress(env, group["id"]) == _expected(ONE_PORT, cidrs)
        for node_name, port in node_ports.items():
            now = _port(env, port["id"])["security_groups"]
            assert sorted(now) == sorted([*before[node_name], group["id"]]), node_name

    finally:  # a failure above must not leave cloud objects to the next tests
        deleted = stack.delete()
    assert deleted.existed
    assert _groups(env, group_name) == []
    rules = env.cloud.inventory()["security_group_rules"]
    assert [r for r in rules if r["security_group_id"] == group["id"]] == []
    for node_name, port in node_ports.items():
        assert sorted(_port(env, port["id"])["security_groups"]) == before[node_name]
    created = env.cloud.created()
    assert set(created) <= {"ports"}, created  # only the Node ports this test made remain
    assert sorted(created.get("ports", [])) == sorted(p["id"] for p in node_ports.values())

"""OCCM's e2e cases, through the real engine, Pulumi and provider, against the emulator.

Each test builds specs from Services with the pure model (as the controller will), runs
``ensure``, checks the cloud through the emulator's inventory (never through Pulumi's outputs
alone), and ends with ``delete``; the ``env`` fixture then requires the inventory to show nothing
created. A second ``ensure`` of an unchanged spec must skip (no stack operation).
"""

from __future__ import annotations

from typing import Any

import pytest

from reconciler.engine.errors import InvalidConfigError
from tests.builders import make_node, stored_service
from tests.emulated import connect, forget_certificates, store_certificate
from tests.integration.engine.conftest import NODES, Env, only, spec_for

# each test starts real pulumi runs or servers for many seconds: not in make test-fast
pytestmark = pytest.mark.slow

A = "loadbalancer.openstack.org/"


def lb_records(env: Env) -> tuple[dict[str, Any], dict[str, list[dict[str, Any]]]]:
    inv = env.cloud.inventory()
    return only(inv["loadbalancers"]), inv


def test_basic_tcp_with_load_balancer_ip_and_vip_autodetect(env: Env) -> None:
    conn = connect(env.topo)
    fip = conn.network.create_ip(
        floating_network_id=env.topo["external_network_id"], floating_ip_address="172.24.4.100"
    )
    ports = [
        conn.network.create_port(
            network_id=env.topo["network_id"], fixed_ips=[{"ip_address": addr}], name=name
        )
        for name, addr in (("worker-a", "10.0.0.11"), ("worker-b", "10.0.0.12"))
    ]
    try:
        config = env.config_without_subnet()
        svc = stored_service("basic", loadBalancerIP="172.24.4.100")
        spec = spec_for(svc, config)
        assert spec.vip_autodetect_address is not None
        stack = env.engine(config).stack(service=spec.service)
        first = stack.ensure(spec)
        assert first.changed
        lb, inv = lb_records(env)
        assert lb["name"] == "kube_service_itest_default_basic"
        assert lb["tags"] == ["kube_service_itest_default_basic"]
        assert lb["vip_subnet_id"] == env.topo["subnet_id"]
        listener = only(inv["listeners"])
        assert (listener["protocol"], listener["protocol_port"]) == ("TCP", 80)
        assert listener["name"] == "listener_0_kube_service_itest_default_basic"
        pool = only(inv["pools"])
        assert pool["name"] == "pool_0_kube_service_itest_default_basic"
        assert sorted((m["address"], m["protocol_port"]) for m in inv["members"]) == [
            ("10.0.0.11", 30080),
            ("10.0.0.12", 30080),
        ]
        got = only([f for f in inv["floatingips"] if f["id"] == fip.id])
        assert got["port_id"] == lb["vip_port_id"]
        assert first.outputs["floating_ip"] == "172.24.4.100"
        assert first.outputs["lb_id"] == lb["id"]

        again = stack.ensure(spec)
        assert not again.changed
        assert again.outputs["lb_id"] == lb["id"]

        # credentials are encrypted in the config file and in the state
        password = env.topo["password"]
        for path in env.state_dir.rglob("*"):
            if path.is_file():
                assert password not in path.read_text(errors="replace"), path

        assert stack.delete().existed
        kept = only([f for f in env.cloud.inventory()["floatingips"] if f["id"] == fip.id])
        assert kept["port_id"] is None  # the user's floating IP stays, unassociated
    finally:
        conn.network.delete_ip(fip)
        for port in ports:
            conn.network.delete_port(port)


TLS_REF = "https://barbican.example/v1/containers/3f1b7d0e-8a55-4f39-9a43-1f1c2b2a9c11"


def certificate_container(env: Env) -> str:
    """A certificate container in the emulator's Barbican, as a user stores one; its ref."""
    return str(store_certificate(connect(env.topo))[0].container_ref)


@pytest.mark.parametrize(
    ("name", "annotations", "ports", "listener", "pool_protocol"),
    [
        pytest.param(
            "xff",
            {A + "x-forwarded-for": "true"},
            None,
            {"protocol": "HTTP", "insert_headers": {"X-Forwarded-For": "true"}},
            "HTTP",
            id="x-forwarded-for",
        ),
        pytest.param(
            "proxy",
            {A + "proxy-protocol": "v2"},
            None,
            {"protocol": "TCP"},
            "PROXYV2",
            id="proxy-protocol-v2",
        ),
        pytest.param(
            "tls",
            {A + "default-tls-container-ref": TLS_REF},
            [{"port": 443, "protocol": "TCP", "nodePort": 30443}],
            {"protocol": "TERMINATED_HTTPS", "default_tls_container_ref": TLS_REF},
            "HTTP",
            id="tls-termination",
        ),
    ],
)
def test_listener_and_pool_protocols(
    env: Env,
    name: str,
    annotations: dict[str, str],
    ports: list[dict[str, Any]] | None,
    listener: dict[str, Any],
    pool_protocol: str,
) -> None:
    """An annotation that changes the protocols: the listener's fields, the pool's protocol."""
    if TLS_REF in annotations.values():  # a container Barbican knows (the engine asks it first)
        ref = certificate_container(env)
        annotations = {k: ref if v == TLS_REF else v for k, v in annotations.items()}
        listener = {k: ref if v == TLS_REF else v for k, v in listener.items()}
    config = env.config()
    svc = stored_service(name, ports=ports, annotations=annotations)
    stack = env.stack(config, svc)
    stack.ensure(spec_for(svc, config))
    _lb, inv = lb_records(env)
    got = only(inv["listeners"])
    assert {field: got[field] for field in listener} == listener
    assert only(inv["pools"])["protocol"] == pool_protocol
    stack.delete()
    forget_certificates(connect(env.topo))


def test_two_ports_then_one_with_a_changed_node_port(env: Env) -> None:
    config = env.config()
    two = [
        {"name": "http", "port": 80, "protocol": "TCP", "nodePort": 30080},
        {"name": "https", "port": 443, "protocol": "TCP", "nodePort": 30443},
    ]
    svc = stored_service("ports", ports=two)
    stack = env.stack(config, svc)
    stack.ensure(spec_for(svc, config))
    _lb, inv = lb_records(env)
    assert sorted(li["protocol_port"] for li in inv["listeners"]) == [80, 443]
    https = only([li for li in inv["listeners"] if li["protocol_port"] == 443])

    one = [{"name": "https", "port": 443, "protocol": "TCP", "nodePort": 31443}]
    svc2 = stored_service("ports", ports=one)
    result = stack.ensure(spec_for(svc2, config))
    assert result.changed
    _lb, inv = lb_records(env)
    listener = only(inv["listeners"])
    assert listener["id"] == https["id"]  # kept, renamed in place
    assert listener["name"] == "listener_0_kube_service_itest_default_ports"
    assert only(inv["pools"])["name"] == "pool_0_kube_service_itest_default_ports"
    assert {m["protocol_port"] for m in inv["members"]} == {31443}
    assert len(inv["members"]) == 2
    stack.delete()


def test_internal_load_balancer_has_no_floating_ip(env: Env) -> None:
    config = env.config()
    svc = stored_service(
        "internal",
        annotations={"service.beta.kubernetes.io/openstack-internal-load-balancer": "true"},
    )
    stack = env.stack(config, svc)
    result = stack.ensure(spec_for(svc, config))
    assert result.outputs["floating_ip"] is None
    lb, inv = lb_records(env)
    assert not [f for f in inv["floatingips"] if f["port_id"] == lb["vip_port_id"]]
    assert env.cloud.created().get("floatingips") in (None, [])
    stack.delete()


def test_shared_load_balancer_max_shared_and_owner_deletion(env: Env) -> None:
    config = env.config("max-shared-lb = 3")
    owner_svc = stored_service("owner")
    owner = env.stack(config, owner_svc)
    lb_id = owner.ensure(spec_for(owner_svc, config)).outputs["lb_id"]

    def sharer(name: str, port: int) -> tuple[Any, Any]:
        svc = stored_service(
            name,
            ports=[{"port": port, "protocol": "TCP", "nodePort": 30000 + port}],
            annotations={A + "load-balancer-id": lb_id},
        )
        return env.stack(config, svc), spec_for(svc, config)

    second, second_spec = sharer("second", 81)
    third, third_spec = sharer("third", 82)
    fourth, fourth_spec = sharer("fourth", 83)
    out = second.ensure(second_spec).outputs
    assert out["lb_id"] == lb_id
    assert out["shared"] is True
    third.ensure(third_spec)
    lb, inv = lb_records(env)
    assert sorted(li["protocol_port"] for li in inv["listeners"]) == [80, 81, 82]
    with pytest.raises(InvalidConfigError, match="max-shared-lb=3"):
        fourth.ensure(fourth_spec)
    fourth.delete()
    assert len(only(env.cloud.lbs())["listeners"]) == 3

    deleted = owner.delete()
    assert deleted.released_load_balancer
    lb, inv = lb_records(env)  # the load balancer outlives its owner
    assert lb["id"] == lb_id
    assert sorted(li["protocol_port"] for li in inv["listeners"]) == [81, 82]
    assert not second.delete().deleted_shared_load_balancer
    assert third.delete().deleted_shared_load_balancer
    assert env.cloud.lbs() == []


def test_source_ranges(env: Env) -> None:
    config = env.config()
    svc = stored_service("ranges", loadBalancerSourceRanges=["192.0.2.0/24", "198.51.100.7/32"])
    stack = env.stack(config, svc)
    stack.ensure(spec_for(svc, config))
    _lb, inv = lb_records(env)
    assert sorted(only(inv["listeners"])["allowed_cidrs"]) == ["192.0.2.0/24", "198.51.100.7/32"]
    svc2 = stored_service("ranges", loadBalancerSourceRanges=["192.0.2.0/24"])
    assert stack.ensure(spec_for(svc2, config)).changed
    _lb, inv = lb_records(env)
    assert only(inv["listeners"])["allowed_cidrs"] == ["192.0.2.0/24"]
    stack.delete()


def test_external_traffic_policy_local_health_monitor(env: Env) -> None:
    config = env.config()
    svc = stored_service(
        "local",
        annotations={A + "enable-health-monitor": "true"},
        externalTrafficPolicy="Local",
        healthCheckNodePort=32000,
    )
    stack = env.stack(config, svc)
    stack.ensure(spec_for(svc, config))
    _lb, inv = lb_records(env)
    monitor = only(inv["healthmonitors"])
    assert (monitor["type"], monitor["url_path"], monitor["http_method"]) == (
        "HTTP",
        "/healthz",
        "GET",
    )
    assert monitor["name"] == "monitor_0_kube_service_itest_default_local"
    assert {m["monitor_port"] for m in inv["members"]} == {32000}
    stack.delete()


def test_keep_floating_ip_on_delete(env: Env) -> None:
    config = env.config()
    svc = stored_service("keep", annotations={A + "keep-floatingip": "true"})
    stack = env.stack(config, svc)
    address = stack.ensure(spec_for(svc, config)).outputs["floating_ip"]
    stack.delete()
    inv = env.cloud.inventory()
    assert inv["loadbalancers"] == []
    kept = only([f for f in inv["floatingips"] if f["floating_ip_address"] == address])
    assert kept["port_id"] is None
    assert kept["description"].startswith("Floating IP for Kubernetes external service")
    connect(env.topo).network.delete_ip(kept["id"])


def test_load_balancer_class(env: Env) -> None:
    topo = env.topo
    config = env.config_without_subnet(
        extra=f"""
[LoadBalancerClass "dmz"]
floating-network-id = {topo["external_network_id"]}
floating-subnet-id = {topo["external_subnet_id"]}
subnet-id = {topo["subnet_id"]}
"""
    )
    svc = stored_service("classy", annotations={A + "class": "dmz"})
    spec = spec_for(svc, config)
    assert spec.vip_subnet_id == topo["subnet_id"]
    stack = env.engine(config).stack(service=spec.service)
    out = stack.ensure(spec).outputs
    lb, inv = lb_records(env)
    assert lb["vip_subnet_id"] == topo["subnet_id"]
    fip = only([f for f in inv["floatingips"] if f["floating_ip_address"] == out["floating_ip"]])
    assert fip["floating_network_id"] == topo["external_network_id"]
    assert fip["port_id"] == lb["vip_port_id"]
    stack.delete()


def test_own_load_balancer_id_annotation_changes_nothing(env: Env) -> None:
    """The controller writes ``load-balancer-id`` back as OCCM does; read back as
    ``existing_lb_id`` it names the stack's own load balancer and must not make it shared."""
    config = env.config()
    svc = stored_service("ownid")
    stack = env.stack(config, svc)
    first = stack.ensure(spec_for(svc, config))
    lb, _inv = lb_records(env)
    annotated = stored_service("ownid", annotations={A + "load-balancer-id": lb["id"]})
    spec = spec_for(annotated, config)
    assert spec.existing_lb_id == lb["id"]
    again = stack.ensure(spec)
    assert not again.changed
    assert again.outputs["lb_id"] == first.outputs["lb_id"] == lb["id"]
    assert not again.outputs.get("shared")
    result = stack.delete()
    assert result.existed
    assert not result.released_load_balancer
    assert env.cloud.lbs() == []


def test_a_node_that_sorts_first_changes_members_not_the_vip(env: Env) -> None:
    """Without subnet-id the VIP subnet is the first Node's (OCCM); it is detected once. A Node
    on another network whose name sorts first must not move the VIP (a replacement)."""
    conn = connect(env.topo)
    other = conn.network.create_network(name="other-nodes")
    other_subnet = conn.network.create_subnet(
        network_id=other.id, cidr="10.1.0.0/24", ip_version=4, name="other-nodes"
    )
    ports = [
        conn.network.create_port(network_id=net, fixed_ips=[{"ip_address": addr}], name=name)
        for name, addr, net in (
            ("worker-a", "10.0.0.11", env.topo["network_id"]),
            ("worker-b", "10.0.0.12", env.topo["network_id"]),
            ("aaa-first", "10.1.0.13", other.id),
        )
    ]
    try:
        config = env.config_without_subnet()
        svc = stored_service("autovip")
        first_spec = spec_for(svc, config)
        stack = env.engine(config).stack(service=first_spec.service)
        first = stack.ensure(first_spec)
        lb, _inv = lb_records(env)
        assert lb["vip_subnet_id"] == env.topo["subnet_id"]

        nodes = [*NODES, make_node("aaa-first", internal="10.1.0.13", hostname=False)]
        second_spec = spec_for(svc, config, nodes)
        assert second_spec.vip_autodetect_address == "10.1.0.13"  # the first Node moved
        second = stack.ensure(second_spec)
        assert second.changed
        lb2, inv = lb_records(env)
        assert lb2["id"] == lb["id"]  # not replaced
        assert lb2["vip_address"] == lb["vip_address"] == first.outputs["vip_address"]
        assert lb2["vip_subnet_id"] == env.topo["subnet_id"]
        assert sorted(m["address"] for m in inv["members"]) == [
            "10.0.0.11",
            "10.0.0.12",
            "10.1.0.13",
        ]
        assert not stack.ensure(second_spec).changed  # and it stays a skip
        stack.delete()
    finally:
        for port in ports:
            conn.network.delete_port(port)
        conn.network.delete_subnet(other_subnet)
        conn.network.delete_network(other)

"""The emulator driven by openstacksdk, a client nobody here wrote."""

from __future__ import annotations

import time
from typing import Any

import openstack
import pytest
import requests
from openstack import exceptions

from emulator.server import EmulatorHandle
from tests.emulated import connect, running_emulator
from tests.integration.emulator.conftest import Admin, wait_until


def wait_active(conn: Any, lb_id: str) -> Any:
    return conn.load_balancer.wait_for_load_balancer(lb_id, interval=0.05, wait=15)


def test_lb_lifecycle_with_floating_ip(conn: Any, topo: dict[str, Any], admin: Admin) -> None:
    lb = conn.load_balancer.create_load_balancer(name="sdk-lb", vip_subnet_id=topo["subnet_id"])
    assert lb.provisioning_status == "PENDING_CREATE"
    with pytest.raises(exceptions.ConflictException) as err:
        conn.load_balancer.create_listener(load_balancer_id=lb.id, protocol="TCP", protocol_port=80)
    assert f"Load Balancer {lb.id} is immutable and cannot be updated." in str(err.value)
    lb = wait_active(conn, lb.id)
    assert lb.operating_status == "ONLINE"

    listener = conn.load_balancer.create_listener(
        name="listener_0_sdk",
        load_balancer_id=lb.id,
        protocol="TCP",
        protocol_port=80,
        allowed_cidrs=["10.0.0.0/8"],
        timeout_client_data=60000,
    )
    wait_active(conn, lb.id)
    with pytest.raises(exceptions.ConflictException, match="already using"):
        conn.load_balancer.create_listener(load_balancer_id=lb.id, protocol="TCP", protocol_port=80)
    pool = conn.load_balancer.create_pool(
        name="pool_0_sdk",
        listener_id=listener.id,
        protocol="PROXY",
        lb_algorithm="ROUND_ROBIN",
        session_persistence={"type": "SOURCE_IP"},
    )
    wait_active(conn, lb.id)
    for address in ("10.0.0.21", "10.0.0.22"):
        conn.load_balancer.create_member(
            pool, address=address, protocol_port=30080, subnet_id=topo["subnet_id"]
        )
        wait_active(conn, lb.id)
    monitor = conn.load_balancer.create_health_monitor(
        pool_id=pool.id, type="HTTP", delay=5, timeout=3, max_retries=2, url_path="/healthz"
    )
    wait_active(conn, lb.id)
    assert conn.load_balancer.get_health_monitor(monitor.id).expected_codes == "200"
    members = list(conn.load_balancer.members(pool))
    assert sorted(m.address for m in members) == ["10.0.0.21", "10.0.0.22"]
    assert {m.operating_status for m in members} == {"ONLINE"}

    status = conn.load_balancer.get(f"/lbaas/loadbalancers/{lb.id}/status").json()
    tree = status["statuses"]["loadbalancer"]
    assert tree["listeners"][0]["pools"][0]["health_monitor"]["id"] == monitor.id
    assert len(tree["listeners"][0]["pools"][0]["members"]) == 2

    fip = conn.network.create_ip(
        floating_network_id=topo["external_network_id"], description="kube_service_x"
    )
    assert (fip.status, fip.port_id) == ("DOWN", None)
    fip = conn.network.update_ip(fip, port_id=lb.vip_port_id)
    assert (fip.fixed_ip_address, fip.status) == (lb.vip_address, "ACTIVE")
    assert [f.id for f in conn.network.ips(port_id=lb.vip_port_id)] == [fip.id]
    assert [f.id for f in conn.network.ips(floating_ip_address=fip.floating_ip_address)] == [fip.id]

    conn.load_balancer.delete_load_balancer(lb.id, cascade=True)
    conn.load_balancer.wait_for_delete(lb, interval=0.05, wait=15)
    assert conn.network.get_ip(fip.id).port_id is None
    assert conn.network.find_port(lb.vip_port_id) is None
    conn.network.delete_ip(fip)


def test_batch_member_update(conn: Any, topo: dict[str, Any]) -> None:
    lb = conn.load_balancer.create_load_balancer(vip_network_id=topo["network_id"])
    wait_active(conn, lb.id)
    pool = conn.load_balancer.create_pool(
        loadbalancer_id=lb.id, protocol="TCP", lb_algorithm="LEAST_CONNECTIONS"
    )
    wait_active(conn, lb.id)
    url = f"/lbaas/pools/{pool.id}/members"
    body = {
        "members": [
            {"address": "10.0.0.31", "protocol_port": 80, "monitor_port": 8080},
            {"address": "10.0.0.32", "protocol_port": 80},
        ]
    }
    assert conn.load_balancer.put(url, json=body).status_code == 202
    assert conn.load_balancer.put(url, json=body).status_code == 409  # LB is PENDING_UPDATE
    wait_active(conn, lb.id)
    body = {"members": [{"address": "10.0.0.32", "protocol_port": 80, "weight": 7}]}
    assert conn.load_balancer.put(url, json=body).status_code == 202
    wait_active(conn, lb.id)
    members = list(conn.load_balancer.members(pool))
    assert [(m.address, m.weight) for m in members] == [("10.0.0.32", 7)]
    conn.load_balancer.delete_load_balancer(lb.id, cascade=True)
    conn.load_balancer.wait_for_delete(lb, interval=0.05, wait=15)


def test_bad_input_is_400_with_faultstring(emu: EmulatorHandle, conn: Any) -> None:
    token = conn.auth_token
    response = requests.post(
        f"{emu.url}/load-balancer/v2/lbaas/loadbalancers",
        json={"loadbalancer": {"name": "x"}},
        headers={"X-Auth-Token": token},
        timeout=10,
    )
    assert response.status_code == 400
    body = response.json()
    assert body["faultcode"] == "Client"
    assert "VIP must contain one of" in body["faultstring"]
    assert response.headers["X-OpenStack-Request-Id"].startswith("req-")


def test_neutron_filters_tags_pagination_and_fields(conn: Any, topo: dict[str, Any]) -> None:
    assert [n.id for n in conn.network.networks(name="private")] == [topo["network_id"]]
    assert [n.name for n in conn.network.networks(is_router_external=True)] == ["public"]
    net = conn.network.create_network(name="tagged")
    conn.network.set_tags(net, ["cluster-a", "svc-1"])
    assert [n.id for n in conn.network.networks(tags="cluster-a,svc-1")] == [net.id]
    assert list(conn.network.networks(tags="cluster-b")) == []
    ports = [conn.network.create_port(network_id=topo["network_id"]) for _ in range(3)]
    listed = list(conn.network.ports(fixed_ips=f"subnet_id={topo['subnet_id']}", limit=1))
    assert {p.id for p in ports} <= {p.id for p in listed}
    page = conn.network.get("/networks?limit=1&fields=id&fields=name").json()
    assert list(page["networks"][0]) == ["id", "name"]
    assert page["networks_links"][0]["rel"] == "next"
    for port in ports:
        conn.network.delete_port(port)
    conn.network.delete_network(net)


def test_security_groups(conn: Any) -> None:
    sg = conn.network.create_security_group(name="lb-sg")
    tcp_80 = {
        "security_group_id": sg.id,
        "direction": "ingress",
        "protocol": "tcp",
        "port_range_min": 80,
        "port_range_max": 80,
        "remote_ip_prefix": "0.0.0.0/0",
    }
    rule = conn.network.create_security_group_rule(**tcp_80)
    with pytest.raises(exceptions.ConflictException):  # the same rule again
        conn.network.create_security_group_rule(**tcp_80)
    rules = conn.network.get_security_group(sg.id).security_group_rules
    assert rule.id in {r["id"] for r in rules}
    conn.network.delete_security_group(sg)


def test_requests_without_valid_token_are_401(emu: EmulatorHandle) -> None:
    for headers in ({}, {"X-Auth-Token": "bogus"}):
        for path in ("/networking/v2.0/networks", "/load-balancer/v2/lbaas/loadbalancers"):
            response = requests.get(emu.url + path, headers=headers, timeout=10)
            assert response.status_code == 401, path


def test_application_credential_auth(emu: EmulatorHandle, topo: dict[str, Any]) -> None:
    conn = openstack.connect(
        auth_type="v3applicationcredential",
        auth_url=emu.auth_url,
        application_credential_id=topo["application_credential_id"],
        application_credential_secret=topo["application_credential_secret"],
        region_name=topo["region_name"],
    )
    assert conn.current_project_id == topo["project_id"]
    assert list(conn.load_balancer.load_balancers()) == []


def test_injected_errors_latency_drops_and_quota(
    emu: EmulatorHandle, conn: Any, admin: Admin, topo: dict[str, Any]
) -> None:
    admin.post(
        "/faults/rules", {"operation": "octavia.loadbalancer.create", "status": 503, "count": 1}
    )
    with pytest.raises(exceptions.HttpException) as err:
        conn.load_balancer.create_load_balancer(vip_subnet_id=topo["subnet_id"])
    assert err.value.status_code == 503
    admin.post(
        "/faults/rules",
        {"operation": "neutron.network.list", "latency": 0.3, "status": 200, "count": 1},
    )
    started = time.monotonic()
    list(conn.network.networks())
    assert time.monotonic() - started >= 0.3
    admin.post("/faults/rules", {"operation": "neutron.port.list", "drop": True, "count": 1})
    with pytest.raises(requests.ConnectionError):
        requests.get(
            f"{emu.url}/networking/v2.0/ports",
            headers={"X-Auth-Token": conn.auth_token},
            timeout=10,
        )
    admin.post("/faults/rules", {"operation": "neutron.floatingip.create", "quota": True})
    with pytest.raises(exceptions.ConflictException, match="Quota exceeded"):
        conn.network.create_ip(floating_network_id=topo["external_network_id"])
    fired = admin.get("/faults/fired")
    assert fired == {"rules[0]": 1, "rules[1]": 1, "rules[2]": 1, "rules[3]": 1}


def test_lb_that_goes_to_error(conn: Any, admin: Admin, topo: dict[str, Any]) -> None:
    admin.post("/faults/loadbalancers", {"name": "doomed-*", "outcome": "error"})
    lb = conn.load_balancer.create_load_balancer(name="doomed-1", vip_subnet_id=topo["subnet_id"])
    with pytest.raises(exceptions.ResourceFailure):
        wait_active(conn, lb.id)
    assert conn.load_balancer.get_load_balancer(lb.id).provisioning_status == "ERROR"
    conn.load_balancer.delete_load_balancer(lb.id)
    conn.load_balancer.wait_for_delete(lb, interval=0.05, wait=15)


def test_a_failed_listener_update_and_an_lb_in_error_as_octavia_answers(
    conn: Any, admin: Admin, topo: dict[str, Any]
) -> None:
    """Octavia's lifecycle_tasks.py ListenerToErrorOnRevertTask: the listener goes ERROR, the LB
    ACTIVE. An LB in ERROR refuses child changes (MUTABLE_STATUSES) and LB updates, and is
    deleted with cascade (DELETABLE_STATUSES)."""
    lb = conn.load_balancer.create_load_balancer(name="sickly-1", vip_subnet_id=topo["subnet_id"])
    wait_active(conn, lb.id)
    listener = conn.load_balancer.create_listener(
        load_balancer_id=lb.id, protocol="TCP", protocol_port=80
    )
    wait_active(conn, lb.id)
    admin.post("/faults/loadbalancers", {"name": "sickly-*", "outcome": "error", "phase": "update"})
    conn.load_balancer.update_listener(listener, connection_limit=5)
    lb = wait_active(conn, lb.id)
    assert conn.load_balancer.get_listener(listener.id).provisioning_status == "ERROR"

    admin.post("/faults/loadbalancers", {"name": "sickly-*", "outcome": "error", "phase": "update"})
    conn.load_balancer.update_load_balancer(lb, description="x")
    with pytest.raises(exceptions.ResourceFailure):
        wait_active(conn, lb.id)
    with pytest.raises(exceptions.ConflictException) as err:
        conn.load_balancer.delete_listener(listener.id)
    assert f"Load Balancer {lb.id} is immutable and cannot be updated." in str(err.value)
    with pytest.raises(exceptions.ConflictException) as err:
        conn.load_balancer.update_load_balancer(lb, description="y")
    assert f"Invalid state ERROR of loadbalancer resource {lb.id}" in str(err.value)
    conn.load_balancer.delete_load_balancer(lb.id, cascade=True)
    conn.load_balancer.wait_for_delete(lb, interval=0.05, wait=15)


def test_restart_keeps_state(tmp_path: Any) -> None:
    state_file = tmp_path / "cloud.db"
    with running_emulator(state_file=state_file) as first:
        topo = first.topology()
        conn = connect(topo)
        lb = conn.load_balancer.create_load_balancer(name="kept", vip_subnet_id=topo["subnet_id"])
    with running_emulator(state_file=state_file) as second:
        conn2 = connect(second.topology())
        got = wait_until(lambda: conn2.load_balancer.find_load_balancer("kept"))
        assert got.id == lb.id
        port = conn2.network.get_port(got.vip_port_id)
        assert port.fixed_ips[0]["ip_address"] == got.vip_address

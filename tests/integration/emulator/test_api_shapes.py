"""Response bodies against the OpenStack API reference: exact key sets, status codes, errors.

The expected key lists are copied from the "Response Parameters" tables of the api-ref sources
(the same text as https://docs.openstack.org/api-ref/...):

* Octavia: ``openstack/octavia`` ``api-ref/source/v2/{loadbalancer,listener,pool,member,
  healthmonitor}.inc`` (https://docs.openstack.org/api-ref/load-balancer/v2/).
* Neutron: ``openstack/neutron-lib`` ``api-ref/source/v2/{networks,subnets,ports,floatingips,
  security-groups,security-group-rules}.inc`` (https://docs.openstack.org/api-ref/network/v2/).

Where the reference and the running service disagree, the service wins and the comment says so
(Octavia's code, ``octavia/api/v2/types`` and ``controllers``, is what clients talk to).
Neutron's tables list attributes of every extension; the emulator advertises only some
extensions (``GET /v2.0/extensions``), and the attributes of those it does not are listed per
resource in ``NOT_EMULATED`` with the extension they belong to.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import requests

from emulator.server import EmulatorHandle
from tests.integration.emulator.conftest import wait_until

# load-balancer/v2 "Show Load Balancer details" (loadbalancer.inc)
LOADBALANCER = """additional_vips admin_state_up availability_zone created_at description
flavor_id id listeners name operating_status pools project_id provider provisioning_status tags
updated_at vip_address vip_network_id vip_port_id vip_qos_policy_id vip_subnet_id vip_sg_ids
vip_vnic_type"""
# load-balancer/v2 "Show Listener details" (listener.inc)
LISTENER = """admin_state_up allowed_cidrs alpn_protocols client_authentication
client_ca_tls_container_ref client_crl_container_ref connection_limit created_at default_pool_id
default_tls_container_ref description hsts_include_subdomains hsts_max_age hsts_preload id
insert_headers l7policies loadbalancers name operating_status project_id protocol protocol_port
provisioning_status sni_container_refs tags timeout_client_data timeout_member_connect
timeout_member_data timeout_tcp_inspect tls_ciphers tls_versions updated_at"""
# load-balancer/v2 "Show Pool details" (pool.inc)
POOL = """admin_state_up alpn_protocols ca_tls_container_ref created_at crl_container_ref
description healthmonitor_id id lb_algorithm listeners loadbalancers members name
operating_status project_id protocol provisioning_status session_persistence tags tls_enabled
tls_ciphers tls_container_ref tls_versions updated_at"""
# load-balancer/v2 "Show Member details" (member.inc): no description
MEMBER = """address admin_state_up backup created_at id monitor_address monitor_port name
operating_status project_id protocol_port provisioning_status subnet_id tags updated_at weight
vnic_type"""
# load-balancer/v2 "Show Health Monitor details" (healthmonitor.inc): the table says
# ``pool_id``, but the example (healthmonitor-show-response.json), Octavia's
# HealthMonitorResponse and gophercloud's monitors.Monitor use ``pools: [{"id"}]``.
HEALTHMONITOR = """admin_state_up created_at delay domain_name expected_codes http_method
http_version id max_retries max_retries_down name operating_status pools project_id
provisioning_status tags timeout type updated_at url_path"""

# network/v2 "Show network details" (networks.inc)
NETWORK = """admin_state_up availability_zone_hints availability_zones created_at dns_domain id
ipv4_address_scope ipv6_address_scope l2_adjacency mtu name port_security_enabled project_id
provider:network_type provider:physical_network provider:segmentation_id pvlan qos_policy_id
revision_number router:external segments shared status subnets tenant_id updated_at
vlan_transparent description is_default tags"""
# network/v2 "Show subnet details" (subnets.inc)
SUBNET = """id tenant_id project_id created_at name enable_dhcp network_id dns_nameservers
allocation_pools host_routes ip_version gateway_ip cidr updated_at description ipv6_address_mode
ipv6_ra_mode revision_number segment_id service_types subnetpool_id tags dns_publish_fixed_ip
router:external"""
# network/v2 "Show port details" (ports.inc)
PORT = """admin_state_up allowed_address_pairs binding:host_id binding:profile binding:vif_details
binding:vif_type binding:vnic_type created_at data_plane_status description device_id
device_owner dns_assignment dns_domain dns_name extra_dhcp_opts fixed_ips hints id ip_allocation
mac_address name network_id numa_affinity_policy port_security_enabled project_id
qos_network_policy_id qos_policy_id revision_number resource_request security_groups status tags
tenant_id updated_at propagate_uplink_status mac_learning_enabled port_trusted_vif pvlan_type
pvlan_community"""
# network/v2 "Show floating IP details" (floatingips.inc)
FLOATINGIP = """router_id status description distributed dns_domain dns_name port_details
tenant_id created_at updated_at revision_number project_id floating_network_id fixed_ip_address
floating_ip_address port_id id tags port_forwardings qos_network_policy_id qos_policy_id"""
# network/v2 "Show security group" (security-groups.inc)
SECURITY_GROUP = """id tenant_id project_id created_at updated_at revision_number name
description security_group_rules tags stateful shared"""
# network/v2 "Show security group rule" (security-group-rules.inc): no tags
SECURITY_GROUP_RULE = """remote_group_id remote_address_group_id direction protocol ethertype
port_range_max security_group_id tenant_id project_id port_range_min remote_ip_prefix
created_at updated_at revision_number id description belongs_to_default_sg"""

# Neutron extension attributes in the tables whose extensions the emulator does not advertise.
NOT_EMULATED = {
    "network": {
        "pvlan": "private VLAN",
        "segments": "multi-provider",
        "vlan_transparent": "vlan-transparent",
    },
    "port": {
        "data_plane_status": "data-plane-status",
        "dns_domain": "dns-domain-ports",
        "hints": "port-hints",
        "ip_allocation": "ip-allocation (routed networks)",
        "numa_affinity_policy": "port-numa-affinity-policy",
        "qos_network_policy_id": "qos-port-network-policy",
        "resource_request": "port-resource-request",
        "mac_learning_enabled": "port-mac-learning",
        "port_trusted_vif": "port-trusted-vif",
        "pvlan_type": "private VLAN",
        "pvlan_community": "private VLAN",
    },
    "floatingip": {
        "distributed": "floatingip-distributed",
        "qos_network_policy_id": "qos-fip-network-policy",
    },
}


def keys(table: str, kind: str = "") -> set[str]:
    return set(table.split()) - set(NOT_EMULATED.get(kind, {}))


class Api:
    def __init__(self, emu: EmulatorHandle, token: str) -> None:
        self.url = emu.url
        self.session = requests.Session()
        self.session.headers["X-Auth-Token"] = token

    def call(self, method: str, path: str, body: Any = None, status: int = 200) -> Any:
        response = self.session.request(method, self.url + path, json=body, timeout=10)
        assert response.status_code == status, (method, path, response.status_code, response.text)
        return response.json() if response.content else None

    def lb_active(self, lb_id: str) -> None:
        def probe() -> bool:
            lb = self.call("GET", f"/load-balancer/v2/lbaas/loadbalancers/{lb_id}")
            return bool(lb["loadbalancer"]["provisioning_status"] == "ACTIVE")

        wait_until(probe)


@pytest.fixture
def api(emu: EmulatorHandle, conn: Any) -> Iterator[Api]:
    client = Api(emu, conn.auth_token)
    yield client
    client.session.close()


def test_octavia_resources_have_the_api_ref_keys(api: Api, topo: dict[str, Any]) -> None:
    lbaas = "/load-balancer/v2/lbaas"
    body = {"loadbalancer": {"vip_subnet_id": topo["subnet_id"], "name": "shapes"}}
    lb = api.call("POST", f"{lbaas}/loadbalancers", body, status=201)["loadbalancer"]
    assert set(lb) == keys(LOADBALANCER)
    api.lb_active(lb["id"])
    body = {"listener": {"loadbalancer_id": lb["id"], "protocol": "TCP", "protocol_port": 80}}
    listener = api.call("POST", f"{lbaas}/listeners", body, status=201)["listener"]
    assert set(listener) == keys(LISTENER)
    api.lb_active(lb["id"])
    body = {
        "pool": {"listener_id": listener["id"], "protocol": "TCP", "lb_algorithm": "ROUND_ROBIN"}
    }
    pool = api.call("POST", f"{lbaas}/pools", body, status=201)["pool"]
    assert set(pool) == keys(POOL)
    api.lb_active(lb["id"])
    body = {"member": {"address": "10.0.0.7", "protocol_port": 80}}
    member = api.call("POST", f"{lbaas}/pools/{pool['id']}/members", body, status=201)["member"]
    assert set(member) == keys(MEMBER)
    api.lb_active(lb["id"])
    body = {
        "healthmonitor": {
            "pool_id": pool["id"],
            "type": "TCP",
            "delay": 5,
            "timeout": 3,
            "max_retries": 3,
        }
    }
    hm = api.call("POST", f"{lbaas}/healthmonitors", body, status=201)["healthmonitor"]
    assert set(hm) == keys(HEALTHMONITOR)
    assert hm["pools"] == [{"id": pool["id"]}]
    api.lb_active(lb["id"])

    shown = {
        "loadbalancer": (f"{lbaas}/loadbalancers/{lb['id']}", LOADBALANCER),
        "listener": (f"{lbaas}/listeners/{listener['id']}", LISTENER),
        "pool": (f"{lbaas}/pools/{pool['id']}", POOL),
        "member": (f"{lbaas}/pools/{pool['id']}/members/{member['id']}", MEMBER),
        "healthmonitor": (f"{lbaas}/healthmonitors/{hm['id']}", HEALTHMONITOR),
    }
    for kind, (path, table) in shown.items():
        record = api.call("GET", path)[kind]
        assert set(record) == keys(table), kind
        # Octavia's timestamps have no zone suffix (gophercloud parses them as RFC3339NoZ)
        assert not record["created_at"].endswith("Z"), kind
        # Updates answer 200 with the body: the api-ref says 202, but Octavia's controllers
        # (``status_code=200`` on every ``put``) and gophercloud's pools.Update (OkCodes 200)
        # say 200.
        updated = api.call("PUT", path, {kind: {"name": f"{kind}-renamed"}}, status=200)[kind]
        assert set(updated) == keys(table), kind
        api.lb_active(lb["id"])

    listed = api.call("GET", f"{lbaas}/pools/{pool['id']}/members")
    assert set(listed) == {"members", "members_links"}
    api.call("PUT", f"{lbaas}/pools/{pool['id']}/members", {"members": []}, status=202)
    api.lb_active(lb["id"])
    api.call("DELETE", f"{lbaas}/loadbalancers/{lb['id']}?cascade=true", status=204)


def test_octavia_error_body(api: Api) -> None:
    response = api.session.get(f"{api.url}/load-balancer/v2/lbaas/pools/nope", timeout=10)
    assert response.status_code == 404
    assert set(response.json()) == {"faultcode", "faultstring", "debuginfo"}
    assert response.json()["faultcode"] == "Client"


def test_neutron_resources_have_the_api_ref_keys(api: Api, topo: dict[str, Any]) -> None:
    net = "/networking/v2.0"
    network = api.call("GET", f"{net}/networks/{topo['network_id']}")["network"]
    assert set(network) == keys(NETWORK, "network")
    subnet = api.call("GET", f"{net}/subnets/{topo['subnet_id']}")["subnet"]
    assert set(subnet) == keys(SUBNET, "subnet")
    assert subnet["router:external"] is False
    body = {"port": {"network_id": topo["network_id"]}}
    port = api.call("POST", f"{net}/ports", body, status=201)["port"]
    assert set(port) == keys(PORT, "port")
    body = {"floatingip": {"floating_network_id": topo["external_network_id"]}}
    fip = api.call("POST", f"{net}/floatingips", body, status=201)["floatingip"]
    assert set(fip) == keys(FLOATINGIP, "floatingip")
    body = {"security_group": {"name": "shapes"}}
    sg = api.call("POST", f"{net}/security-groups", body, status=201)["security_group"]
    assert set(sg) == keys(SECURITY_GROUP)
    assert all(set(rule) == keys(SECURITY_GROUP_RULE) for rule in sg["security_group_rules"])
    body = {"security_group_rule": {"security_group_id": sg["id"], "direction": "ingress"}}
    rule = api.call("POST", f"{net}/security-group-rules", body, status=201)
    assert set(rule["security_group_rule"]) == keys(SECURITY_GROUP_RULE)

    body = {"floatingip": {"port_id": port["id"]}}
    associated = api.call("PUT", f"{net}/floatingips/{fip['id']}", body)["floatingip"]
    assert set(associated) == keys(FLOATINGIP, "floatingip")
    assert associated["port_id"] == port["id"]
    api.call("DELETE", f"{net}/floatingips/{fip['id']}", status=204)
    api.call("DELETE", f"{net}/ports/{port['id']}", status=204)
    api.call("DELETE", f"{net}/security-groups/{sg['id']}", status=204)


def test_neutron_error_body(api: Api) -> None:
    response = api.session.get(f"{api.url}/networking/v2.0/ports/nope", timeout=10)
    assert response.status_code == 404
    error = response.json()
    assert set(error) == {"NeutronError"}
    assert set(error["NeutronError"]) == {"type", "message", "detail"}
    assert error["NeutronError"]["type"] == "PortNotFound"

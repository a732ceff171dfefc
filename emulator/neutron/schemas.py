"""The Neutron resources' attributes: what POST may set (and defaults), what PUT may change.

Field lists follow the Networking API v2.0 reference (networks, subnets, ports, floating IPs,
security groups and rules), including the extension attributes clients commonly send.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from emulator.neutron.base import Schema

NETWORK = Schema(
    kind="network",
    plural="networks",
    title="Network",
    not_found="NetworkNotFound",
    create={
        "name": "",
        "admin_state_up": True,
        "shared": False,
        "router:external": False,
        "mtu": 1500,
        "port_security_enabled": True,
        "availability_zone_hints": [],
        "dns_domain": "",
        "qos_policy_id": None,
        "is_default": False,
        "provider:network_type": None,
        "provider:physical_network": None,
        "provider:segmentation_id": None,
    },
    update=frozenset(
        {
            "name",
            "admin_state_up",
            "shared",
            "router:external",
            "mtu",
            "port_security_enabled",
            "dns_domain",
            "qos_policy_id",
            "is_default",
        }
    ),
    output=(
        "status",
        "subnets",
        "availability_zones",
        "l2_adjacency",
        "ipv4_address_scope",
        "ipv6_address_scope",
    ),
)

SUBNET = Schema(
    kind="subnet",
    plural="subnets",
    title="Subnet",
    not_found="SubnetNotFound",
    create={
        "name": "",
        "network_id": None,
        "cidr": None,
        "ip_version": 4,
        "gateway_ip": None,
        "allocation_pools": None,
        "enable_dhcp": True,
        "dns_nameservers": [],
        "host_routes": [],
        "ipv6_address_mode": None,
        "ipv6_ra_mode": None,
        "service_types": [],
        "segment_id": None,
        "subnetpool_id": None,
        "dns_publish_fixed_ip": False,
    },
    update=frozenset(
        {
            "name",
            "gateway_ip",
            "allocation_pools",
            "enable_dhcp",
            "dns_nameservers",
            "host_routes",
            "service_types",
            "dns_publish_fixed_ip",
        }
    ),
    required=frozenset({"network_id", "cidr"}),
)

PORT = Schema(
    kind="port",
    plural="ports",
    title="Port",
    not_found="PortNotFound",
    create={
        "name": "",
        "network_id": None,
        "admin_state_up": True,
        "mac_address": None,
        "fixed_ips": None,
        "device_id": "",
        "device_owner": "",
        "security_groups": None,
        "allowed_address_pairs": [],
        "port_security_enabled": None,
        "extra_dhcp_opts": [],
        "binding:vnic_type": "normal",
        "binding:host_id": "",
        "binding:profile": {},
        "qos_policy_id": None,
        "dns_name": "",
        "propagate_uplink_status": False,
    },
    update=frozenset(
        {
            "name",
            "admin_state_up",
            "fixed_ips",
            "device_id",
            "device_owner",
            "security_groups",
            "allowed_address_pairs",
            "port_security_enabled",
            "extra_dhcp_opts",
            "binding:vnic_type",
            "binding:host_id",
            "binding:profile",
            "qos_policy_id",
            "dns_name",
            "mac_address",
            "propagate_uplink_status",
        }
    ),
    required=frozenset({"network_id"}),
    output=("status", "binding:vif_type", "binding:vif_details", "dns_assignment"),
)

FLOATINGIP = Schema(
    kind="floatingip",
    plural="floatingips",
    title="Floating IP",
    not_found="FloatingIPNotFound",
    create={
        "floating_network_id": None,
        "floating_ip_address": None,
        "subnet_id": None,
        "port_id": None,
        "fixed_ip_address": None,
        "qos_policy_id": None,
        "dns_name": "",
        "dns_domain": "",
    },
    update=frozenset({"port_id", "fixed_ip_address", "qos_policy_id"}),
    required=frozenset({"floating_network_id"}),
    output=("status", "router_id", "port_details", "port_forwardings"),
)

SECURITY_GROUP = Schema(
    kind="security_group",
    plural="security_groups",
    title="Security group",
    not_found="SecurityGroupNotFound",
    create={"name": "", "stateful": True},
    update=frozenset({"name", "stateful"}),
    output=("security_group_rules", "shared"),
)

SECURITY_GROUP_RULE = Schema(
    kind="security_group_rule",
    plural="security_group_rules",
    title="Security group rule",
    not_found="SecurityGroupRuleNotFound",
    create={
        "security_group_id": None,
        "direction": None,
        "ethertype": "IPv4",
        "protocol": None,
        "port_range_min": None,
        "port_range_max": None,
        "remote_ip_prefix": None,
        "remote_group_id": None,
        "remote_address_group_id": None,
    },
    update=frozenset(),
    required=frozenset({"security_group_id", "direction"}),
    output=("belongs_to_default_sg",),
    taggable=False,
)

SCHEMAS: Mapping[str, Schema] = MappingProxyType(
    {s.kind: s for s in (NETWORK, SUBNET, PORT, FLOATINGIP, SECURITY_GROUP, SECURITY_GROUP_RULE)}
)

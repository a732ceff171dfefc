"""Networks, subnets and ports: the L2/L3 core, with real IP allocation from subnet pools.

Rules kept from Neutron: a subnet's CIDR must match its ``ip_version`` and not overlap another
subnet on the network; a network or subnet with ports in use answers 409 ``NetworkInUse`` /
``SubnetInUse``; a requested fixed IP that is taken answers 409 ``IpAddressAlreadyAllocated``; a
port with security groups cannot turn port security off (409).
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from emulator.context import AuthContext
from emulator.errors import BadRequest, Conflict
from emulator.neutron import ipam
from emulator.neutron.base import NeutronBase
from emulator.store import Record

_SYSTEM_OWNERS = ("network:dhcp",)


class Networks(NeutronBase):
    # -- networks -------------------------------------------------------------------------

    def create_network(self, ctx: AuthContext, body: Mapping[str, Any]) -> Record:
        net = self._new("network", ctx, body)
        net.update(
            {
                "status": "ACTIVE",
                "subnets": [],
                "availability_zones": ["nova"],
                "l2_adjacency": True,
                "ipv4_address_scope": None,
                "ipv6_address_scope": None,
            }
        )
        return self.save("network", net)

    def update_network(self, ctx: AuthContext, rid: str, body: Mapping[str, Any]) -> Record:
        net = self.get("network", rid, ctx)
        return self.save("network", self._apply_update("network", net, body))

    def delete_network(self, ctx: AuthContext, rid: str) -> None:
        net = self.get("network", rid, ctx)
        in_use = [
            p
            for p in self.store.all("port")
            if p["network_id"] == rid and p["device_owner"] not in _SYSTEM_OWNERS
        ]
        if in_use:
            raise Conflict(
                f"Unable to complete operation on network {rid}. There are one or more ports "
                "still in use on the network.",
                kind="NetworkInUse",
            )
        for subnet_id in net["subnets"]:
            self.store.delete("subnet", subnet_id)
        self.store.delete("network", rid)

    # -- subnets --------------------------------------------------------------------------

    def create_subnet(self, ctx: AuthContext, body: Mapping[str, Any]) -> Record:
        subnet = self._new("subnet", ctx, body)
        net = self.get("network", str(subnet["network_id"]), ctx)
        cidr = ipam.parse_cidr(subnet["cidr"])
        if cidr.version != int(subnet["ip_version"]):
            raise BadRequest(
                f"Invalid input for operation: Invalid CIDR {subnet['cidr']} for IP version "
                f"{subnet['ip_version']}.",
                kind="InvalidInput",
            )
        for other_id in net["subnets"]:
            other = self.store.get("subnet", other_id)
            if other is not None and ipam.parse_cidr(other["cidr"]).overlaps(cidr):
                raise BadRequest(
                    f"Invalid input for operation: Requested subnet with cidr: {cidr} for network:"
                    f" {net['id']} overlaps with another subnet.",
                    kind="InvalidInput",
                )
        subnet["cidr"] = str(cidr)
        if "gateway_ip" not in body:
            subnet["gateway_ip"] = ipam.default_gateway(cidr)
        elif subnet["gateway_ip"] is not None:
            subnet["gateway_ip"] = ipam.parse_ip(subnet["gateway_ip"], field="gateway_ip")
        if subnet["allocation_pools"] is None:
            subnet["allocation_pools"] = ipam.default_pools(cidr, subnet["gateway_ip"])
        else:
            subnet["allocation_pools"] = ipam.validate_pools(cidr, subnet["allocation_pools"])
        net["subnets"].append(subnet["id"])
        self.touch(net)
        self.save("network", net)
        return self.save("subnet", subnet)

    def update_subnet(self, ctx: AuthContext, rid: str, body: Mapping[str, Any]) -> Record:
        subnet = self.get("subnet", rid, ctx)
        cidr = ipam.parse_cidr(subnet["cidr"])
        self._apply_update("subnet", subnet, body)
        if "allocation_pools" in body:
            subnet["allocation_pools"] = ipam.validate_pools(cidr, body["allocation_pools"])
        return self.save("subnet", subnet)

    def delete_subnet(self, ctx: AuthContext, rid: str) -> None:
        subnet = self.get("subnet", rid, ctx)
        for port in self.store.all("port"):
            if port["device_owner"] in _SYSTEM_OWNERS:
                continue
            if any(ip["subnet_id"] == rid for ip in port["fixed_ips"]):
                raise Conflict(
                    f"Unable to complete operation on subnet {rid}: One or more ports have an IP "
                    "allocation from this subnet.",
                    kind="SubnetInUse",
                )
        net = self.store.get("network", subnet["network_id"])
        if net is not None:
            net["subnets"] = [s for s in net["subnets"] if s != rid]
            self.touch(net)
            self.save("network", net)
        self.store.delete("subnet", rid)

    # -- ports ----------------------------------------------------------------------------

    def used_ips(self, subnet_id: str) -> set[str]:
        used = set()
        subnet = self.store.get("subnet", subnet_id)
        if subnet is not None and subnet.get("gateway_ip"):
            used.add(subnet["gateway_ip"])
        on_subnet = self.store.all(
            "port", lambda p: any(ip["subnet_id"] == subnet_id for ip in p["fixed_ips"])
        )
        for port in on_subnet:
            used |= {ip["ip_address"] for ip in port["fixed_ips"] if ip["subnet_id"] == subnet_id}
        return used

    def _allocate_fixed_ips(
        self, network: Record, requested: Any, *, current: list[dict[str, str]] | None = None
    ) -> list[dict[str, str]]:
        if requested is None:
            subnet_ids = network["subnets"][:1]
            if not subnet_ids:
                return []
            requested = [{"subnet_id": subnet_ids[0]}]
        if not isinstance(requested, list):
            raise BadRequest("Invalid input for fixed_ips: expected a list of objects.")
        keep = {ip["ip_address"] for ip in current or []}
        result: list[dict[str, str]] = []
        for i, item in enumerate(requested):
            if not isinstance(item, dict) or not ({"subnet_id", "ip_address"} & set(item)):
                raise BadRequest(
                    f"Invalid input for fixed_ips[{i}]: give a subnet_id and/or an ip_address."
                )
            subnet = self._subnet_for(network, item)
            address = item.get("ip_address")
            used = self.used_ips(subnet["id"]) - keep
            used |= {r["ip_address"] for r in result}
            chosen = ipam.allocate(subnet, used=used, requested=address, network_id=network["id"])
            result.append({"subnet_id": subnet["id"], "ip_address": chosen})
        return result

    def _subnet_for(self, network: Record, item: Mapping[str, Any]) -> Record:
        if item.get("subnet_id"):
            subnet = self.store.get("subnet", str(item["subnet_id"]))
            if subnet is None or subnet["network_id"] != network["id"]:
                raise BadRequest(
                    f"Invalid input for operation: Failed to create port on network "
                    f"{network['id']}, because fixed_ips included invalid subnet "
                    f"{item['subnet_id']}.",
                    kind="InvalidInput",
                )
            return subnet
        address = ipam.parse_ip(item["ip_address"], field="fixed_ips.ip_address")
        for subnet_id in network["subnets"]:
            subnet = self.store.get("subnet", subnet_id)
            if subnet is not None and ipam.parse_cidr(subnet["cidr"]).overlaps(
                ipam.parse_cidr(f"{address}/{32 if ':' not in address else 128}")
            ):
                return subnet
        raise BadRequest(
            f"IP address {address} is not a valid IP for any subnet on network {network['id']}.",
            kind="InvalidIpForNetwork",
        )

    def create_port(self, ctx: AuthContext, body: Mapping[str, Any]) -> Record:
        port = self._new("port", ctx, body)
        net = self.get("network", str(port["network_id"]), ctx)
        port["fixed_ips"] = self._allocate_fixed_ips(net, body.get("fixed_ips"))
        if port["mac_address"] is None:
            rng = random.Random(port["id"])
            port["mac_address"] = "fa:16:3e:" + ":".join(f"{rng.randrange(256):02x}" for _ in "abc")
        if port["port_security_enabled"] is None:
            port["port_security_enabled"] = bool(net["port_security_enabled"])
        if port["security_groups"] is None:
            port["security_groups"] = (
                [self.default_security_group(port["project_id"])["id"]]
                if port["port_security_enabled"] and not port["device_owner"].startswith("network:")
                else []
            )
        self._check_security_groups(ctx, port)
        port.update(
            {
                "status": "ACTIVE" if port["device_owner"].startswith("compute:") else "DOWN",
                "binding:vif_type": "unbound",
                "binding:vif_details": {},
                "dns_assignment": [],
            }
        )
        return self.save("port", port)

    def _check_security_groups(self, ctx: AuthContext, port: Record) -> None:
        groups = port["security_groups"]
        if not isinstance(groups, list):
            raise BadRequest("Invalid input for security_groups: expected a list of IDs.")
        for sg_id in groups:
            self.get("security_group", str(sg_id), ctx)
        if groups and not port["port_security_enabled"]:
            raise Conflict(
                "Port has security group associated. Cannot disable port security or ip address "
                "until security group is removed.",
                kind="PortSecurityPortHasSecurityGroup",
            )

    def update_port(self, ctx: AuthContext, rid: str, body: Mapping[str, Any]) -> Record:
        port = self.get("port", rid, ctx)
        current = list(port["fixed_ips"])
        self._apply_update("port", port, body)
        if "fixed_ips" in body:
            net = self.get("network", port["network_id"], ctx)
            port["fixed_ips"] = self._allocate_fixed_ips(net, body["fixed_ips"], current=current)
        if "security_groups" in body or "port_security_enabled" in body:
            if port["security_groups"] is None:
                port["security_groups"] = []
            self._check_security_groups(ctx, port)
        return self.save("port", port)

    def delete_port(self, ctx: AuthContext, rid: str) -> None:
        self.get("port", rid, ctx)
        self.store.delete("port", rid)

"""The Neutron model: every resource module combined, plus seeding and Octavia's VIP ports.

:class:`Neutron` is what the HTTP routes and Octavia use. Octavia creates a real port for each
VIP through :meth:`Neutron.create_vip_port` (``device_owner: Octavia``), so a floating IP can be
associated with ``vip_port_id`` exactly as on a real cloud.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from emulator.context import AuthContext
from emulator.keystone.models import Keystone
from emulator.neutron.base import DEFAULT_QUOTAS, Schema
from emulator.neutron.floatingips import FloatingIps
from emulator.neutron.schemas import SCHEMAS
from emulator.neutron.security import Security
from emulator.store import Record
from emulator.topology import Topology, stable_id


class Neutron(Security, FloatingIps):
    schemas: Mapping[str, Schema] = SCHEMAS

    def seed(self, topology: Topology, keystone: Keystone) -> None:
        for net_spec in topology.data["networks"]:
            project = keystone.project_by_name(net_spec.get("project", "admin"))
            ctx = AuthContext(user_id="seed", project_id=project["id"], roles=("admin",))
            body: dict[str, Any] = {
                "name": net_spec["name"],
                "shared": bool(net_spec.get("shared", False)),
                "router:external": bool(net_spec.get("external", False)),
                "mtu": int(net_spec.get("mtu", 1500)),
            }
            net = self.create_network(ctx, body)
            self.store.delete("network", net["id"])
            net["id"] = net_spec.get("id") or stable_id("network", net_spec["name"])
            self.save("network", net)
            for sub_spec in net_spec.get("subnets", []):
                sub_body = {
                    k: v
                    for k, v in sub_spec.items()
                    if k
                    in (
                        "name",
                        "cidr",
                        "ip_version",
                        "gateway_ip",
                        "allocation_pools",
                        "enable_dhcp",
                        "dns_nameservers",
                    )
                }
                sub_body["network_id"] = net["id"]
                if ":" in sub_spec["cidr"]:
                    sub_body.setdefault("ip_version", 6)
                subnet = self.create_subnet(ctx, sub_body)
                new_id = sub_spec.get("id") or stable_id("subnet", sub_spec["name"])
                net = self.get("network", net["id"], ctx)
                net["subnets"] = [new_id if s == subnet["id"] else s for s in net["subnets"]]
                self.save("network", net)
                self.store.delete("subnet", subnet["id"])
                subnet["id"] = new_id
                self.save("subnet", subnet)
        for project in keystone.store.all("project"):
            self.default_security_group(project["id"])

    def delete_port(self, ctx: AuthContext, rid: str) -> None:
        super().delete_port(ctx, rid)
        self.disassociate_port(rid)

    # -- for Octavia ------------------------------------------------------------------------

    def create_vip_port(
        self,
        *,
        project_id: str,
        lb_id: str,
        network_id: str,
        subnet_id: str | None,
        address: str | None,
    ) -> Record:
        """The VIP port of a load balancer, allocated as Octavia does (owned by ``Octavia``)."""
        ctx = AuthContext(user_id="octavia", project_id=project_id, roles=("admin",))
        fixed: dict[str, str] = {}
        if subnet_id:
            fixed["subnet_id"] = subnet_id
        if address:
            fixed["ip_address"] = address
        return self.create_port(
            ctx,
            {
                "network_id": network_id,
                "name": f"octavia-lb-{lb_id}",
                "device_owner": "Octavia",
                "device_id": f"lb-{lb_id}",
                "fixed_ips": [fixed] if fixed else None,
                "security_groups": [],
                "port_security_enabled": True,
            },
        )

    def remove_port(self, port_id: str) -> None:
        """Delete a port on behalf of a service (no visibility check)."""
        self.store.delete("port", port_id)
        self.disassociate_port(port_id)

    def quota_details(self, project_id: str) -> dict[str, dict[str, int]]:
        limits = self.quota(project_id)
        return {
            kind: {"limit": limits[kind], "used": self.usage(project_id, kind), "reserved": 0}
            for kind in DEFAULT_QUOTAS
        }

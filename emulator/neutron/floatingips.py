"""Floating IPs: allocation on an external network or subnet, association with a port.

A floating IP takes an address from the external subnet and, as in Neutron, is backed by a port
on the external network (``device_owner: network:floatingip``). Associating it with a port (at
create or by ``PUT {"floatingip": {"port_id": ...}}``) checks that the port exists, has the
requested fixed IP and has no other floating IP for it (409
``FloatingIPPortAlreadyAssociated``); ``port_id: null`` disassociates. Deleting the port
disassociates its floating IPs. Routers are not emulated, so reachability is not checked and
``router_id`` stays ``null``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from emulator.context import AuthContext
from emulator.errors import BadRequest, Conflict, NotFound
from emulator.neutron.networks import Networks
from emulator.store import Record


class FloatingIps(Networks):
    def create_floatingip(self, ctx: AuthContext, body: Mapping[str, Any]) -> Record:
        fip = self._new("floatingip", ctx, body)
        net = self.store.get("network", str(fip["floating_network_id"]))
        if net is None:
            raise NotFound(
                f"Network {fip['floating_network_id']} could not be found.",
                kind="NetworkNotFound",
            )
        if not net["router:external"]:
            raise BadRequest(
                f"Bad floatingip request: Network {net['id']} is not a valid external network.",
                kind="BadRequest",
            )
        request: dict[str, Any] = {}
        if fip["subnet_id"]:
            request["subnet_id"] = fip["subnet_id"]
        if fip["floating_ip_address"]:
            request["ip_address"] = fip["floating_ip_address"]
        if not net["subnets"]:
            raise BadRequest(
                f"Bad floatingip request: Network {net['id']} has no subnet to allocate from.",
            )
        # Neutron's own port of the floating IP: of no project (``tenant_id: ''``), so it counts
        # in no project's port quota and only an admin sees it
        admin = AuthContext(user_id="neutron", project_id=net["project_id"], roles=("admin",))
        gw_port = self.create_port(
            admin,
            {
                "project_id": "",
                "network_id": net["id"],
                "fixed_ips": [request] if request else None,
                "device_owner": "network:floatingip",
                "device_id": fip["id"],
            },
        )
        fip.update(
            {
                "floating_ip_address": gw_port["fixed_ips"][0]["ip_address"],
                "subnet_id": gw_port["fixed_ips"][0]["subnet_id"],
                "router_id": None,
                "port_details": None,
                "port_forwardings": [],
                "status": "DOWN",
                "_port": gw_port["id"],
            }
        )
        if fip["port_id"]:
            self._associate(ctx, fip, str(fip["port_id"]), fip["fixed_ip_address"])
        else:
            fip["fixed_ip_address"] = None
        fip.pop("subnet_id")
        return self.save("floatingip", fip)

    def _associate(self, ctx: AuthContext, fip: Record, port_id: str, fixed_ip: str | None) -> None:
        port = self.get("port", port_id, ctx)
        addresses = [ip["ip_address"] for ip in port["fixed_ips"] if ":" not in ip["ip_address"]]
        if not addresses:
            raise BadRequest(
                f"Bad floatingip request: Port {port_id} does not have any IPv4 address. "
                "Associate the floating IP with a port that has one.",
            )
        if fixed_ip is None:
            fixed_ip = addresses[0]
        elif fixed_ip not in addresses:
            raise BadRequest(
                f"Bad floatingip request: Port {port_id} does not have fixed ip {fixed_ip}.",
            )
        for other in self.store.all("floatingip", lambda f: f["port_id"] == port_id):
            if other["id"] != fip["id"] and (other["fixed_ip_address"] == fixed_ip):
                raise Conflict(
                    f"Cannot associate floating IP {fip['floating_ip_address']} ({fip['id']}) "
                    f"with port {port_id} using fixed IP {fixed_ip}, as that fixed IP already has "
                    f"a floating IP on external network {other['floating_network_id']}.",
                    kind="FloatingIPPortAlreadyAssociated",
                )
        fip["port_id"] = port_id
        fip["fixed_ip_address"] = fixed_ip
        fip["status"] = "ACTIVE"
        fip["port_details"] = {
            k: port.get(k)
            for k in (
                "name",
                "network_id",
                "mac_address",
                "admin_state_up",
                "status",
                "device_id",
                "device_owner",
            )
        }

    @staticmethod
    def _disassociate(fip: Record) -> None:
        fip.update(
            {"port_id": None, "fixed_ip_address": None, "status": "DOWN", "port_details": None}
        )

    def update_floatingip(self, ctx: AuthContext, rid: str, body: Mapping[str, Any]) -> Record:
        fip = self.get("floatingip", rid, ctx)
        self._apply_update("floatingip", fip, body)
        if "port_id" in body:
            if body["port_id"] is None:
                self._disassociate(fip)
            else:
                self._associate(ctx, fip, str(body["port_id"]), body.get("fixed_ip_address"))
        return self.save("floatingip", fip)

    def delete_floatingip(self, ctx: AuthContext, rid: str) -> None:
        fip = self.get("floatingip", rid, ctx)
        self.store.delete("port", fip["_port"])
        self.store.delete("floatingip", rid)

    def disassociate_port(self, port_id: str) -> None:
        """Called when a port goes away: its floating IPs stay, unassociated."""
        for fip in self.store.all("floatingip", lambda f: f["port_id"] == port_id):
            self._disassociate(fip)
            self.touch(fip)
            self.save("floatingip", fip)

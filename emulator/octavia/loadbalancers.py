"""Load balancers: VIP allocation through Neutron, update, failover, (cascade) delete, status tree.

The VIP is a real Neutron port: given ``vip_port_id`` the LB uses that port; otherwise it creates
``octavia-lb-<id>`` on ``vip_subnet_id`` or ``vip_network_id`` (with ``vip_address`` if given)
and deletes it with the LB. Deleting an LB that still has listeners or pools without
``cascade=true`` answers 400, as Octavia does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from emulator.context import AuthContext
from emulator.errors import BadRequest, NotFound
from emulator.octavia import providers
from emulator.octavia import validation as v
from emulator.octavia.base import OctaviaBase
from emulator.store import Record

LB_FIELDS: Mapping[str, Any] = {
    "name": "",
    "description": "",
    "admin_state_up": True,
    "vip_address": None,
    "vip_port_id": None,
    "vip_subnet_id": None,
    "vip_network_id": None,
    "vip_qos_policy_id": None,
    "vip_sg_ids": None,
    "vip_vnic_type": "normal",
    "provider": None,
    "flavor_id": None,
    "availability_zone": None,
    "additional_vips": [],
}
LB_CREATE = (*LB_FIELDS, "project_id", "tenant_id", "tags", "listeners", "pools")
LB_UPDATE = ("name", "description", "admin_state_up", "vip_qos_policy_id", "vip_sg_ids", "tags")


class LoadBalancers(OctaviaBase):
    def create_loadbalancer(self, ctx: AuthContext, body: Mapping[str, Any]) -> Record:
        v.reject_unknown(body, LB_CREATE, obj="loadbalancer")
        for field in ("name", "description"):
            v.string(body, field)
        v.boolean(body, "admin_state_up")
        v.ip_address(body, "vip_address")
        v.tags(body)
        if body.get("listeners") or body.get("pools"):
            raise BadRequest(
                "Validation failure: single-call graph creation (listeners/pools in the load "
                "balancer body) is not emulated; create listeners and pools separately."
            )
        if not any(body.get(k) for k in ("vip_port_id", "vip_network_id", "vip_subnet_id")):
            raise BadRequest(
                "Validation failure: VIP must contain one of: vip_port_id, vip_network_id, "
                "vip_subnet_id."
            )
        provider = body.get("provider") or self.options["default_provider"]
        if provider not in self.options["providers"]:
            raise BadRequest(f"Provider '{provider}' is not enabled.")
        self._check_option(body, "flavor_id", "flavors", "id", "flavor", "Invalid flavor_id.")
        self._check_option(
            body,
            "availability_zone",
            "availability_zones",
            "name",
            "availability_zone",
            "Invalid availability zone.",
        )
        lb = self.new_record("loadbalancer", ctx, body, LB_FIELDS)
        lb.update({"provider": provider, "listeners": [], "pools": []})
        self._allocate_vip(ctx, lb, body)
        lb["_lb_id"] = lb["id"]
        self.schedule(lb, phase="create", delay=self.timing.lb_create, children=[])
        return lb

    def _check_option(
        self, body: Mapping[str, Any], field: str, option: str, key: str, name: str, unknown: str
    ) -> None:
        """A flavor or availability zone named on create exists and is enabled, with Octavia's
        answers (``_validate_flavor``, ``_validate_availability_zone`` of its load balancer
        controller): 400 ``Validation failure: Invalid availability zone.`` (the name is not
        repeated), 400 ``The selected availability_zone is not allowed in this deployment:
        <name>`` for a disabled one."""
        value = body.get(field)
        if value is None:
            return
        known = {str(o[key]): o for o in self.options.get(option, [])}
        if str(value) not in known:
            raise BadRequest(f"Validation failure: {unknown}")
        if not known[str(value)].get("enabled", True):
            raise BadRequest(f"The selected {name} is not allowed in this deployment: {value}")

    def _allocate_vip(self, ctx: AuthContext, lb: Record, body: Mapping[str, Any]) -> None:
        if body.get("vip_port_id"):
            port = self.store.get("port", str(body["vip_port_id"]))
            if port is None or not self.neutron.visible("port", port, ctx):
                raise BadRequest(f"Validation failure: Port {body['vip_port_id']} not found.")
            if not port["fixed_ips"]:
                raise BadRequest(
                    f"Validation failure: Port {port['id']} has no fixed IP to use as VIP."
                )
            lb["_owns_vip_port"] = False
        else:
            subnet_id = body.get("vip_subnet_id")
            network_id = body.get("vip_network_id")
            if subnet_id:
                subnet = self.store.get("subnet", str(subnet_id))
                if subnet is None or not self.neutron.visible("subnet", subnet, ctx):
                    raise BadRequest(f"Validation failure: Subnet {subnet_id} not found.")
                if network_id and network_id != subnet["network_id"]:
                    raise BadRequest(
                        f"Validation failure: Subnet {subnet_id} is not on network {network_id}."
                    )
                network_id = subnet["network_id"]
            network = self.store.get("network", str(network_id))
            if network is None or not self.neutron.visible("network", network, ctx):
                raise BadRequest(f"Validation failure: Network {network_id} not found.")
            if not network["subnets"]:
                raise BadRequest(
                    f"Validation failure: Supplied network {network_id} does not have any subnets."
                )
            port = self.neutron.create_vip_port(
                project_id=lb["project_id"],
                lb_id=lb["id"],
                network_id=network["id"],
                subnet_id=str(subnet_id) if subnet_id else None,
                address=body.get("vip_address"),
            )
            lb["_owns_vip_port"] = True
        fixed = port["fixed_ips"][0]
        lb.update(
            {
                "vip_port_id": port["id"],
                "vip_address": fixed["ip_address"],
                "vip_subnet_id": fixed["subnet_id"],
                "vip_network_id": port["network_id"],
            }
        )

    def update_loadbalancer(self, ctx: AuthContext, rid: str, body: Mapping[str, Any]) -> Record:
        lb = self.get("loadbalancer", rid, ctx)
        v.reject_unknown(body, LB_UPDATE, obj="loadbalancer")
        v.string(body, "name")
        v.boolean(body, "admin_state_up")
        v.tags(body)
        self.ensure_lb_state(lb)
        lb.update(body)
        self.schedule(lb, phase="update", delay=self.timing.lb_update, children=[])
        return lb

    def failover_loadbalancer(self, ctx: AuthContext, rid: str) -> None:
        lb = self.get("loadbalancer", rid, ctx)
        self.ensure_lb_state(lb, allowed=("ACTIVE", "ERROR"))
        providers.check_failover(lb["provider"])
        self.schedule(lb, phase="update", delay=self.timing.lb_update, children=[])

    def delete_loadbalancer(self, ctx: AuthContext, rid: str, *, cascade: bool) -> None:
        lb = self.get("loadbalancer", rid, ctx)
        self.ensure_lb_state(lb, allowed=("ACTIVE", "ERROR"))
        kids = [
            (kind, r)
            for kind in ("listener", "pool", "member", "healthmonitor")
            for r in self.children(kind, rid)
        ]
        if kids and not cascade:
            raise BadRequest(
                f"Validation failure: Cannot delete Load Balancer {rid} - it has "
                "children. Delete them first or pass cascade=true."
            )
        for kind, record in kids:
            self.mark(kind, record, "PENDING_DELETE")
        self.schedule(lb, phase="delete", delay=self.timing.lb_delete, children=[])

    def status_tree(self, ctx: AuthContext, rid: str) -> dict[str, Any]:
        lb = self.get("loadbalancer", rid, ctx)

        def brief(r: Record) -> dict[str, Any]:
            return {k: r[k] for k in ("id", "name", "operating_status", "provisioning_status")}

        listeners = []
        for ref in lb["listeners"]:
            listener = self.store.get("listener", ref["id"])
            if listener is None:
                continue
            pools = []
            for pool in self.children("pool", rid):
                if not any(x["id"] == listener["id"] for x in pool["listeners"]):
                    continue
                entry = brief(pool)
                entry["members"] = [
                    {**brief(m), "address": m["address"], "protocol_port": m["protocol_port"]}
                    for m in self.children("member", rid)
                    if m["_pool_id"] == pool["id"]
                ]
                if pool["healthmonitor_id"]:
                    hm = self.store.get("healthmonitor", pool["healthmonitor_id"])
                    if hm is not None:
                        entry["health_monitor"] = {**brief(hm), "type": hm["type"]}
                pools.append(entry)
            listeners.append({**brief(listener), "pools": pools})
        return {"loadbalancer": {**brief(lb), "listeners": listeners}}

    def stats(self, ctx: AuthContext, kind: str, rid: str) -> dict[str, int]:
        record = self.get(kind, rid, ctx)
        if record is None:
            raise NotFound(f"{kind} {rid} not found.")
        return {
            "active_connections": 0,
            "bytes_in": 0,
            "bytes_out": 0,
            "request_errors": 0,
            "total_connections": 0,
        }

"""Security groups and rules, with Neutron's defaults, normalisation and duplicate detection.

Each project has a ``default`` group (ingress from itself, egress anywhere, IPv4 and IPv6),
created on first use as Neutron does. A new group gets the two egress rules. A rule equal to an
existing one answers 409 ``SecurityGroupRuleExists``; a group used by a port answers 409
``SecurityGroupInUse`` on delete.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from emulator.context import AuthContext
from emulator.errors import BadRequest, Conflict
from emulator.neutron import ipam
from emulator.neutron.base import NeutronBase
from emulator.store import Record

_PROTOCOLS = {"tcp": 6, "udp": 17, "icmp": 1, "icmpv6": 58, "sctp": 132, "ipv6-icmp": 58}
_RULE_IDENTITY = (
    "direction",
    "ethertype",
    "protocol",
    "port_range_min",
    "port_range_max",
    "remote_ip_prefix",
    "remote_group_id",
    "remote_address_group_id",
)


class Security(NeutronBase):
    def default_security_group(self, project_id: str) -> Record:
        for sg in self.store.all("security_group"):
            if sg["project_id"] == project_id and sg["name"] == "default":
                return sg
        ctx = AuthContext(user_id="neutron", project_id=project_id, roles=("admin",))
        sg = self._create_group(ctx, {"name": "default", "description": "Default security group"})
        for ethertype in ("IPv4", "IPv6"):
            self._store_rule(
                ctx,
                sg,
                {"direction": "ingress", "ethertype": ethertype, "remote_group_id": sg["id"]},
            )
        return sg

    def _create_group(self, ctx: AuthContext, body: Mapping[str, Any]) -> Record:
        sg = self._new("security_group", ctx, body)
        sg["shared"] = False
        self.save("security_group", sg)
        for ethertype in ("IPv4", "IPv6"):
            self._store_rule(ctx, sg, {"direction": "egress", "ethertype": ethertype})
        return sg

    def create_security_group(self, ctx: AuthContext, body: Mapping[str, Any]) -> Record:
        self.default_security_group(str(body.get("project_id") or ctx.project_id))
        if body.get("name") == "default":
            raise Conflict("Default security group already exists.", kind="DuplicateSgName")
        return self._create_group(ctx, body)

    def list_security_groups(
        self, ctx: AuthContext, query: Mapping[str, list[str]]
    ) -> list[Record]:
        self.default_security_group(ctx.project_id)
        return self.list_records("security_group", ctx, query)

    def update_security_group(self, ctx: AuthContext, rid: str, body: Mapping[str, Any]) -> Record:
        sg = self.get("security_group", rid, ctx)
        if sg["name"] == "default" and body.get("name", "default") != "default":
            raise Conflict(
                "Updating default security group not allowed.",
                kind="SecurityGroupCannotUpdateDefault",
            )
        return self.save("security_group", self._apply_update("security_group", sg, body))

    def delete_security_group(self, ctx: AuthContext, rid: str) -> None:
        sg = self.get("security_group", rid, ctx)
        if sg["name"] == "default" and not ctx.is_admin:
            raise Conflict(
                "Insufficient rights for removing default security group.",
                kind="SecurityGroupCannotRemoveDefault",
            )
        if any(rid in (p.get("security_groups") or []) for p in self.store.all("port")):
            raise Conflict(f"Security Group {rid} in use.", kind="SecurityGroupInUse")
        for rule in self.store.all("security_group_rule"):
            if rule["security_group_id"] == rid:
                self.store.delete("security_group_rule", rule["id"])
        self.store.delete("security_group", rid)

    def view_security_group(self, sg: Record) -> Record:
        view = self.view("security_group", sg)
        view["security_group_rules"] = [
            self.view("security_group_rule", r)
            for r in self.store.all("security_group_rule")
            if r["security_group_id"] == sg["id"]
        ]
        return view

    # -- rules ----------------------------------------------------------------------------

    def create_security_group_rule(self, ctx: AuthContext, body: Mapping[str, Any]) -> Record:
        sg = self.get("security_group", str(body.get("security_group_id")), ctx)
        return self._store_rule(ctx, sg, body)

    def _store_rule(self, ctx: AuthContext, sg: Record, body: Mapping[str, Any]) -> Record:
        body = {**body, "security_group_id": sg["id"], "project_id": sg["project_id"]}
        rule = self._new("security_group_rule", ctx, body)
        self._normalise_rule(rule)
        for other in self.store.all("security_group_rule"):
            if other["security_group_id"] == sg["id"] and all(
                other.get(k) == rule.get(k) for k in _RULE_IDENTITY
            ):
                raise Conflict(
                    f"Security group rule already exists. Rule id is {other['id']}.",
                    kind="SecurityGroupRuleExists",
                )
        rule["belongs_to_default_sg"] = sg["name"] == "default"
        return self.save("security_group_rule", rule)

    @staticmethod
    def _normalise_rule(rule: Record) -> None:
        if rule["direction"] not in ("ingress", "egress"):
            raise BadRequest(
                f"Invalid input for direction. Reason: '{rule['direction']}' is not in "
                "['ingress', 'egress'].",
                kind="HTTPBadRequest",
            )
        if rule["ethertype"] not in ("IPv4", "IPv6"):
            raise BadRequest(
                f"Invalid input for ethertype. Reason: '{rule['ethertype']}' is not in "
                "['IPv4', 'IPv6'].",
                kind="HTTPBadRequest",
            )
        protocol = rule["protocol"]
        if protocol is not None:
            protocol = str(protocol).lower()
            if protocol not in _PROTOCOLS and not (protocol.isdigit() and int(protocol) <= 255):
                raise BadRequest(
                    f"Security group rule protocol {protocol} not supported. Only protocol "
                    f"values {sorted(_PROTOCOLS)} and integer representations [0 to 255] are "
                    "supported.",
                    kind="SecurityGroupRuleInvalidProtocol",
                )
            rule["protocol"] = protocol
        pmin, pmax = rule["port_range_min"], rule["port_range_max"]
        if (pmin is not None or pmax is not None) and protocol is None:
            raise BadRequest(
                "Must also specify protocol if port range is given.",
                kind="SecurityGroupProtocolRequiredWithPorts",
            )
        if protocol in ("tcp", "udp", "sctp") and pmin is not None:
            pmax = pmin if pmax is None else pmax
            if not (1 <= int(pmin) <= int(pmax) <= 65535):
                raise BadRequest(
                    "For TCP/UDP protocols, port_range_min must be <= port_range_max and both "
                    "within 1..65535.",
                    kind="SecurityGroupInvalidPortRange",
                )
            rule["port_range_min"], rule["port_range_max"] = int(pmin), int(pmax)
        prefix = rule["remote_ip_prefix"]
        if prefix is not None and rule["remote_group_id"] is not None:
            raise BadRequest(
                "Only remote_ip_prefix or remote_group_id may be provided.",
                kind="SecurityGroupRemoteGroupAndRemoteIpPrefix",
            )
        if prefix is not None:
            net = ipam.parse_cidr(prefix, field="remote_ip_prefix")
            if f"IPv{net.version}" != rule["ethertype"]:
                raise BadRequest(
                    f"Conflicting value ethertype {rule['ethertype']} for CIDR {prefix}",
                    kind="SecurityGroupRuleParameterConflict",
                )
            rule["remote_ip_prefix"] = str(net)

    def delete_security_group_rule(self, ctx: AuthContext, rid: str) -> None:
        self.get("security_group_rule", rid, ctx)
        self.store.delete("security_group_rule", rid)

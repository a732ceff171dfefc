"""Security groups and rules, with Neutron's defaults, normalisation and duplicate detection.

Each project has a ``default`` group (ingress from itself, egress anywhere, IPv4 and IPv6),
created on first use as Neutron does; ``default`` in any case is no other group's name (409
``SecurityGroupDefaultAlreadyExists``). A new group gets the two egress rules. A rule is
converted and checked as Neutron does (:mod:`emulator.neutron.sg_rules`), its
``remote_group_id`` must be a group the project sees (404 ``SecurityGroupNotFound``), and a rule
equal to an existing one answers 409 ``SecurityGroupRuleExists``; a group used by a port
answers 409 ``SecurityGroupInUse`` on delete.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from emulator.context import AuthContext
from emulator.errors import Conflict, NotFound
from emulator.neutron.base import NeutronBase
from emulator.neutron.sg_rules import normalise_rule, rule_key
from emulator.store import Record


def _not_default(body: Mapping[str, Any]) -> None:
    """Neutron's ``name_not_default`` validator: ``default``, in any case, is the project's own
    group's name."""
    name = body.get("name")
    if isinstance(name, str) and name.lower() == "default":
        raise Conflict(
            "Default security group already exists.", kind="SecurityGroupDefaultAlreadyExists"
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
        _not_default(body)
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
        if sg["name"] != "default":
            _not_default(body)
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
        rule = normalise_rule(self._new("security_group_rule", ctx, body))
        remote = rule.get("remote_group_id")
        if remote and remote != sg["id"]:
            found = self.store.get("security_group", str(remote))
            if found is None or (found["project_id"] != sg["project_id"] and not ctx.is_admin):
                raise NotFound(
                    f"Security group {remote} does not exist", kind="SecurityGroupNotFound"
                )
        key = rule_key(rule)
        for other in self.store.all("security_group_rule"):
            if other["security_group_id"] == sg["id"] and rule_key(other) == key:
                raise Conflict(
                    f"Security group rule already exists. Rule id is {other['id']}.",
                    kind="SecurityGroupRuleExists",
                )
        rule["belongs_to_default_sg"] = sg["name"] == "default"
        return self.save("security_group_rule", rule)

    def delete_security_group_rule(self, ctx: AuthContext, rid: str) -> None:
        self.get("security_group_rule", rid, ctx)
        self.store.delete("security_group_rule", rid)

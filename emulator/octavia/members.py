"""Members (one by one and the batch ``PUT /pools/{id}/members``) and health monitors.

A member is unique in its pool by ``(address, protocol_port)`` (409 otherwise). The batch update
takes the complete desired list: members matched by address and port are updated, new ones
created, missing ones deleted (kept with ``additive_only=true``), all in one LB
``PENDING_UPDATE``. A pool has at most one health monitor (409); HTTP-only attributes on a
non-HTTP monitor answer 400.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from emulator.context import AuthContext
from emulator.errors import BadRequest, Conflict
from emulator.octavia import providers
from emulator.octavia import validation as v
from emulator.octavia.listeners import Listeners
from emulator.store import Record

MEMBER_FIELDS: Mapping[str, Any] = {
    "name": "",
    "address": None,
    "protocol_port": None,
    "weight": 1,
    "backup": False,
    "admin_state_up": True,
    "subnet_id": None,
    "monitor_address": None,
    "monitor_port": None,
    "vnic_type": "normal",
}
# POST takes ``request_sriov`` (shown as ``vnic_type``: ``direct`` or ``normal``), not ``vnic_type``
MEMBER_CREATE = (
    *(k for k in MEMBER_FIELDS if k != "vnic_type"),
    "project_id",
    "tenant_id",
    "tags",
    "request_sriov",
)
MEMBER_UPDATE = (
    "name",
    "weight",
    "backup",
    "admin_state_up",
    "monitor_address",
    "monitor_port",
    "tags",
)
HM_FIELDS: Mapping[str, Any] = {
    "name": "",
    "type": None,
    "delay": None,
    "timeout": None,
    "max_retries": None,
    "max_retries_down": 3,
    "http_method": None,
    "url_path": None,
    "expected_codes": None,
    "http_version": None,
    "domain_name": None,
    "admin_state_up": True,
}
HM_CREATE = (*HM_FIELDS, "pool_id", "project_id", "tenant_id", "tags")
HM_UPDATE = (
    "name",
    "delay",
    "timeout",
    "max_retries",
    "max_retries_down",
    "http_method",
    "url_path",
    "expected_codes",
    "http_version",
    "domain_name",
    "admin_state_up",
    "tags",
)
_HTTP_ONLY = ("http_method", "url_path", "expected_codes", "http_version", "domain_name")


class Members(Listeners):
    def _pool_parents(self, pool: Record) -> list[tuple[str, str, str]]:
        self.mark("pool", pool, "PENDING_UPDATE")
        parents = [("pool", pool["id"], "ACTIVE")]
        for ref in pool["listeners"]:
            listener = self.store.get("listener", ref["id"])
            if listener is not None:
                self.mark("listener", listener, "PENDING_UPDATE")
                parents.append(("listener", ref["id"], "ACTIVE"))
        return parents

    def _listener_vips(self, pool: Record) -> list[str]:
        """The VIP addresses of the load balancer of the pool's listeners (none when no
        listener uses the pool): what the amphora driver holds members' IP versions to."""
        if not pool["listeners"]:
            return []
        lb = self.lb_for(pool)
        extra = [
            str(vip["ip_address"])
            for vip in lb.get("additional_vips") or []
            if isinstance(vip, dict) and vip.get("ip_address")
        ]
        return [lb["vip_address"], *extra]

    def _validate_member(self, ctx: AuthContext, body: Mapping[str, Any], *, create: bool) -> None:
        if create:
            for field in ("address", "protocol_port"):
                if body.get(field) is None:
                    raise v.invalid(field, None, "Mandatory field missing.")
        v.ip_address(body, "address")
        v.ip_address(body, "monitor_address")
        v.int_range(body, "protocol_port", 1, 65535)
        v.int_range(body, "monitor_port", 1, 65535)
        v.int_range(body, "weight", 0, 256)
        v.boolean(body, "backup")
        v.boolean(body, "admin_state_up")
        v.string(body, "name")
        v.tags(body)
        if body.get("subnet_id"):
            subnet = self.store.get("subnet", str(body["subnet_id"]))
            if subnet is None or not self.neutron.visible("subnet", subnet, ctx):
                raise BadRequest(f"Validation failure: Subnet {body['subnet_id']} not found.")

    def _new_member(self, ctx: AuthContext, pool: Record, body: Mapping[str, Any]) -> Record:
        member = self.new_record("member", ctx, body, MEMBER_FIELDS)
        # db/prepare.py create_member: NO_MONITOR, or OFFLINE when the pool has a monitor
        member["operating_status"] = "OFFLINE" if pool["healthmonitor_id"] else "NO_MONITOR"
        member["vnic_type"] = "direct" if body.get("request_sriov") else "normal"
        member.update({"_lb_id": pool["_lb_id"], "_pool_id": pool["id"]})
        self.store.put("member", member)
        pool["members"].append({"id": member["id"]})
        return member

    def create_member(self, ctx: AuthContext, pool_id: str, body: Mapping[str, Any]) -> Record:
        v.reject_unknown(body, MEMBER_CREATE, obj="member")
        self._validate_member(ctx, body, create=True)
        pool = self.get("pool", pool_id, ctx)
        lb = self.lb_for(pool)
        self.ensure_mutable(lb, pool=pool)
        for other in self.store.all("member", lambda m: m["_pool_id"] == pool_id):
            if (other["address"], other["protocol_port"]) == (
                body["address"],
                body["protocol_port"],
            ):
                raise Conflict(
                    f"Another member on this pool is already using ip {body['address']} on "
                    f"protocol_port {body['protocol_port']}"
                )
        providers.check_members(
            lb["provider"], pool, [body], vips=self._listener_vips(pool), batch=False
        )
        member = self._new_member(ctx, pool, body)
        children = [("member", member["id"], "ACTIVE"), *self._pool_parents(pool)]
        self.schedule(lb, phase="update", delay=self.timing.child, children=children)
        return self.store.get("member", member["id"]) or member

    def get_member(self, ctx: AuthContext, pool_id: str, rid: str) -> Record:
        self.get("pool", pool_id, ctx)
        member = self.get("member", rid, ctx)
        if member["_pool_id"] != pool_id:
            raise v.invalid("member_id", rid, "Member not found in this pool.")
        return member

    def update_member(
        self, ctx: AuthContext, pool_id: str, rid: str, body: Mapping[str, Any]
    ) -> Record:
        v.reject_unknown(body, MEMBER_UPDATE, obj="member")
        self._validate_member(ctx, body, create=False)
        member = self.get_member(ctx, pool_id, rid)
        pool = self.get("pool", pool_id, ctx)
        lb = self.lb_for(pool)
        self.ensure_mutable(lb, pool=pool)
        member.update(body)
        self.mark("member", member, "PENDING_UPDATE")
        children = [("member", rid, "ACTIVE"), *self._pool_parents(pool)]
        self.schedule(lb, phase="update", delay=self.timing.child, children=children)
        return member

    def delete_member(self, ctx: AuthContext, pool_id: str, rid: str) -> None:
        member = self.get_member(ctx, pool_id, rid)
        pool = self.get("pool", pool_id, ctx)
        lb = self.lb_for(pool)
        self.ensure_mutable(lb, pool=pool)
        self.mark("member", member, "PENDING_DELETE")
        children = [("member", rid, "DELETED"), *self._pool_parents(pool)]
        self.schedule(lb, phase="update", delay=self.timing.child, children=children)

    def batch_update_members(
        self, ctx: AuthContext, pool_id: str, items: Any, *, additive_only: bool
    ) -> None:
        if not isinstance(items, list):
            raise v.invalid("members", items, "Wrong type. Expected '[member]'")
        pool = self.get("pool", pool_id, ctx)
        lb = self.lb_for(pool)
        seen: set[tuple[str, int]] = set()
        for item in items:
            if not isinstance(item, dict):
                raise v.invalid("members", item, "Wrong type. Expected 'member'")
            v.reject_unknown(item, MEMBER_CREATE, obj="member")
            self._validate_member(ctx, item, create=True)
            key = (str(item["address"]), int(item["protocol_port"]))
            if key in seen:
                raise BadRequest(
                    f"Validation failure: Member with address {key[0]} and port {key[1]} is "
                    "listed more than once."
                )
            seen.add(key)
        self.ensure_mutable(lb, pool=pool)
        providers.check_members(
            lb["provider"], pool, items, vips=self._listener_vips(pool), batch=True
        )
        existing = {
            (m["address"], m["protocol_port"]): m
            for m in self.store.all("member", lambda m: m["_pool_id"] == pool_id)
        }
        children: list[tuple[str, str, str]] = []
        for item in items:
            key = (str(item["address"]), int(item["protocol_port"]))
            if key in existing:
                member = existing[key]
                member.update({k: val for k, val in item.items() if k in MEMBER_UPDATE})
                self.mark("member", member, "PENDING_UPDATE")
            else:
                member = self._new_member(ctx, pool, item)
            children.append(("member", member["id"], "ACTIVE"))
        if not additive_only:
            for key, member in existing.items():
                if key not in seen:
                    self.mark("member", member, "PENDING_DELETE")
                    children.append(("member", member["id"], "DELETED"))
        if not children:  # Octavia's MembersController.put: a no-op batch changes no status
            return
        children.extend(self._pool_parents(pool))
        self.schedule(lb, phase="update", delay=self.timing.child, children=children)

    # -- health monitors ------------------------------------------------------------------

    def _validate_monitor(self, body: Mapping[str, Any], hm_type: str, pool: Record) -> None:
        v.enum(body, "type", v.MONITOR_TYPES)
        v.int_range(body, "delay", 0, 2**31 - 1)
        v.int_range(body, "timeout", 0, 2**31 - 1)
        v.int_range(body, "max_retries", 1, 10)
        v.int_range(body, "max_retries_down", 1, 10)
        v.enum(body, "http_method", v.HTTP_METHODS)
        v.url_path(body)
        v.expected_codes(body)
        v.boolean(body, "admin_state_up")
        v.tags(body)
        if hm_type not in ("HTTP", "HTTPS"):
            for field in _HTTP_ONLY:
                if body.get(field) is not None:
                    raise BadRequest(
                        f"Validation failure: {field} is only valid for HTTP and HTTPS health "
                        f"monitors, not {hm_type}."
                    )
        if hm_type == "UDP-CONNECT" and pool["protocol"] != "UDP":
            raise BadRequest("Validation failure: The UDP-CONNECT type is only for UDP pools.")
        if pool["protocol"] == "UDP" and hm_type not in ("UDP-CONNECT", "HTTP", "TCP", "SCTP"):
            raise BadRequest(
                f"Validation failure: The associated pool protocol is UDP, so only a "
                f"UDP-CONNECT, HTTP, TCP or SCTP type health monitor is supported, not {hm_type}."
            )

    def create_healthmonitor(self, ctx: AuthContext, body: Mapping[str, Any]) -> Record:
        v.reject_unknown(body, HM_CREATE, obj="healthmonitor")
        for field in ("pool_id", "type", "delay", "timeout", "max_retries"):
            if body.get(field) is None:
                raise v.invalid(field, None, "Mandatory field missing.")
        pool = self.get("pool", str(body["pool_id"]), ctx)
        self._validate_monitor(body, str(body["type"]), pool)
        lb = self.lb_for(pool)
        self.ensure_mutable(lb, pool=pool)
        if pool["healthmonitor_id"]:
            raise Conflict("This pool already has a health monitor")
        providers.check_monitor(lb["provider"], body)
        hm = self.new_record("healthmonitor", ctx, body, HM_FIELDS)
        if hm["type"] in ("HTTP", "HTTPS"):
            hm["http_method"] = hm["http_method"] or "GET"
            hm["url_path"] = hm["url_path"] or "/"
            hm["expected_codes"] = hm["expected_codes"] or "200"
        hm.update({"pools": [{"id": pool["id"]}], "_lb_id": lb["id"], "_pool_id": pool["id"]})
        self.store.put("healthmonitor", hm)
        pool["healthmonitor_id"] = hm["id"]
        children = [("healthmonitor", hm["id"], "ACTIVE"), *self._pool_parents(pool)]
        self.schedule(lb, phase="update", delay=self.timing.child, children=children)
        return self.store.get("healthmonitor", hm["id"]) or hm

    def update_healthmonitor(self, ctx: AuthContext, rid: str, body: Mapping[str, Any]) -> Record:
        v.reject_unknown(body, HM_UPDATE, obj="healthmonitor")
        hm = self.get("healthmonitor", rid, ctx)
        pool = self.get("pool", hm["_pool_id"], ctx)
        self._validate_monitor(body, hm["type"], pool)
        lb = self.lb_for(hm)
        self.ensure_mutable(lb, pool=pool)
        hm.update(body)
        self.mark("healthmonitor", hm, "PENDING_UPDATE")
        children = [("healthmonitor", rid, "ACTIVE"), *self._pool_parents(pool)]
        self.schedule(lb, phase="update", delay=self.timing.child, children=children)
        return hm

    def delete_healthmonitor(self, ctx: AuthContext, rid: str) -> None:
        hm = self.get("healthmonitor", rid, ctx)
        lb = self.lb_for(hm)
        self.ensure_mutable(lb, pool=self.store.get("pool", hm["_pool_id"]))
        self.mark("healthmonitor", hm, "PENDING_DELETE")
        pool = self.get("pool", hm["_pool_id"], ctx)
        children = [("healthmonitor", rid, "DELETED"), *self._pool_parents(pool)]
        self.schedule(lb, phase="update", delay=self.timing.child, children=children)

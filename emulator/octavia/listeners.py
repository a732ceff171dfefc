"""Listeners and pools: protocol rules, one listener per (LB, port, protocol family), default pools.

A listener on a port that another listener of the same LB already uses (TCP-based and UDP ports
are separate, as in Octavia) answers 409. A pool attaches to a load balancer or, as its default
pool, to a listener that has none (409 otherwise); its protocol must suit the listener's
(``TCP`` listener: ``TCP``/``HTTP``/``HTTPS``/``PROXY``/``PROXYV2`` pools...).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from emulator.context import AuthContext
from emulator.errors import BadRequest, Conflict
from emulator.octavia import providers
from emulator.octavia import validation as v
from emulator.octavia.loadbalancers import LoadBalancers
from emulator.store import Record

LISTENER_FIELDS: Mapping[str, Any] = {
    "name": "",
    "description": "",
    "admin_state_up": True,
    "protocol": None,
    "protocol_port": None,
    "connection_limit": -1,
    "default_tls_container_ref": None,
    "sni_container_refs": [],
    "default_pool_id": None,
    "insert_headers": {},
    "timeout_client_data": 50000,
    "timeout_member_connect": 5000,
    "timeout_member_data": 50000,
    "timeout_tcp_inspect": 0,
    "allowed_cidrs": None,
    "client_ca_tls_container_ref": None,
    "client_authentication": "NONE",
    "client_crl_container_ref": None,
    "tls_ciphers": None,
    "tls_versions": None,
    "alpn_protocols": None,
    "hsts_include_subdomains": False,
    "hsts_max_age": None,
    "hsts_preload": False,
}
LISTENER_CREATE = (
    *LISTENER_FIELDS,
    "loadbalancer_id",
    "project_id",
    "tenant_id",
    "tags",
    "default_pool",
    "l7policies",
)
LISTENER_UPDATE = tuple(
    k for k in (*LISTENER_FIELDS, "tags") if k not in ("protocol", "protocol_port")
)
POOL_FIELDS: Mapping[str, Any] = {
    "name": "",
    "description": "",
    "admin_state_up": True,
    "lb_algorithm": None,
    "protocol": None,
    "session_persistence": None,
    "tls_enabled": False,
    "tls_container_ref": None,
    "ca_tls_container_ref": None,
    "crl_container_ref": None,
    "tls_ciphers": None,
    "tls_versions": None,
    "alpn_protocols": None,
}
POOL_CREATE = (
    *POOL_FIELDS,
    "loadbalancer_id",
    "listener_id",
    "project_id",
    "tenant_id",
    "tags",
    "members",
    "healthmonitor",
)
POOL_UPDATE = tuple(k for k in (*POOL_FIELDS, "tags") if k != "protocol")
_TIMEOUT_MAX = 31536000


def _family(protocol: str) -> str:
    return {"UDP": "udp", "SCTP": "sctp"}.get(protocol, "tcp")


class Listeners(LoadBalancers):
    def _validate_listener(self, body: Mapping[str, Any]) -> None:
        v.string(body, "name")
        v.boolean(body, "admin_state_up")
        v.enum(body, "protocol", v.LISTENER_PROTOCOLS)
        v.int_range(body, "protocol_port", 1, 65535)
        v.int_range(body, "connection_limit", -1, 2**31 - 1)
        for field in (
            "timeout_client_data",
            "timeout_member_connect",
            "timeout_member_data",
            "timeout_tcp_inspect",
        ):
            v.int_range(body, field, 0, _TIMEOUT_MAX)
        v.cidrs(body, "allowed_cidrs")
        v.tags(body)
        headers = body.get("insert_headers")
        if headers is not None and (
            not isinstance(headers, dict) or not all(isinstance(x, str) for x in headers.values())
        ):
            raise v.invalid("insert_headers", headers, "Wrong type. Expected '{str: str}'")

    def _check_listener_rules(self, lb: Record, listener: Record) -> None:
        protocol = listener["protocol"]
        if listener["insert_headers"] and protocol not in ("HTTP", "TERMINATED_HTTPS"):
            raise BadRequest(
                f"Validation failure: insert_headers are only valid for HTTP and "
                f"TERMINATED_HTTPS listeners, not {protocol}."
            )
        if protocol == "TERMINATED_HTTPS" and not (
            listener["default_tls_container_ref"] or listener["sni_container_refs"]
        ):
            raise BadRequest(
                "Validation failure: An SNI or default certificate container reference must be "
                "provided for TERMINATED_HTTPS listeners."
            )
        for cidr in listener["allowed_cidrs"] or []:
            if (":" in cidr) != (":" in lb["vip_address"]):
                raise BadRequest(
                    f"Validation failure: CIDR {cidr} IP version incompatible with all VIPs "
                    f"{lb['vip_address']} IP version."
                )
        pool_id = listener["default_pool_id"]
        if pool_id:
            pool = self.store.get("pool", pool_id)
            if pool is None or pool["_lb_id"] != lb["id"]:
                raise BadRequest(f"Validation failure: Pool {pool_id} not found.")
            v.listener_pool_protocol(protocol, pool["protocol"])

    def create_listener(self, ctx: AuthContext, body: Mapping[str, Any]) -> Record:
        v.reject_unknown(body, LISTENER_CREATE, obj="listener")
        for field in ("loadbalancer_id", "protocol", "protocol_port"):
            if body.get(field) is None:
                raise v.invalid(field, None, "Mandatory field missing.")
        self._validate_listener(body)
        if body.get("default_pool") or body.get("l7policies"):
            raise BadRequest("Validation failure: inline default_pool/l7policies are not emulated.")
        lb = self.get("loadbalancer", str(body["loadbalancer_id"]), ctx)
        self.ensure_mutable(lb)
        for other in self.children("listener", lb["id"]):
            same_family = _family(other["protocol"]) == _family(body["protocol"])
            if other["protocol_port"] == body["protocol_port"] and same_family:
                raise Conflict(
                    f"Another Listener on this Load Balancer is already using protocol "
                    f"{other['protocol']} and protocol_port {body['protocol_port']}"
                )
        listener = self.new_record("listener", ctx, body, LISTENER_FIELDS)
        listener.update({"loadbalancers": [{"id": lb["id"]}], "l7policies": [], "_lb_id": lb["id"]})
        self._check_listener_rules(lb, listener)
        self._check_tls_refs(ctx, listener)
        providers.check_listener(lb["provider"], listener, create=True)
        self.store.put("listener", listener)
        lb["listeners"].append({"id": listener["id"]})
        self._link_default_pool(listener, None)
        self.schedule(
            lb,
            phase="update",
            delay=self.timing.child,
            children=[("listener", listener["id"], "ACTIVE")],
        )
        return self.store.get("listener", listener["id"]) or listener

    def _check_tls_refs(self, ctx: AuthContext, fields: Mapping[str, Any]) -> None:
        """Octavia's ``_validate_tls_refs``: every certificate reference given must name a
        Barbican secret or container the caller's project may read, else 400
        ``CertificateRetrievalException`` listing the ones that do not."""
        if self.barbican is None:
            return
        refs = [fields.get("default_tls_container_ref"), *(fields.get("sni_container_refs") or [])]
        bad = [str(r) for r in refs if r and not self.barbican.readable(str(r), ctx)]
        if bad:
            raise BadRequest(f"Could not retrieve certificate: {bad}")

    def _link_default_pool(self, listener: Record, old_pool_id: str | None) -> None:
        if old_pool_id and old_pool_id != listener["default_pool_id"]:
            old = self.store.get("pool", old_pool_id)
            if old is not None:
                old["listeners"] = [x for x in old["listeners"] if x["id"] != listener["id"]]
                self.store.put("pool", old)
        if listener["default_pool_id"]:
            pool = self.store.get("pool", listener["default_pool_id"])
            if pool is not None and not any(x["id"] == listener["id"] for x in pool["listeners"]):
                pool["listeners"].append({"id": listener["id"]})
                self.store.put("pool", pool)

    def update_listener(self, ctx: AuthContext, rid: str, body: Mapping[str, Any]) -> Record:
        v.reject_unknown(body, LISTENER_UPDATE, obj="listener")
        self._validate_listener(body)
        listener = self.get("listener", rid, ctx)
        lb = self.lb_for(listener)
        self.ensure_mutable(lb)
        old_pool = listener["default_pool_id"]
        listener.update(body)
        self._check_listener_rules(lb, listener)
        self._check_tls_refs(ctx, body)
        providers.check_listener(lb["provider"], body, create=False)
        self.mark("listener", listener, "PENDING_UPDATE")
        self._link_default_pool(listener, old_pool)
        self.schedule(
            lb, phase="update", delay=self.timing.child, children=[("listener", rid, "ACTIVE")]
        )
        return listener

    def delete_listener(self, ctx: AuthContext, rid: str) -> None:
        listener = self.get("listener", rid, ctx)
        lb = self.lb_for(listener)
        self.ensure_mutable(lb)
        self.mark("listener", listener, "PENDING_DELETE")
        self.schedule(
            lb, phase="update", delay=self.timing.child, children=[("listener", rid, "DELETED")]
        )

    # -- pools ----------------------------------------------------------------------------

    def _validate_pool(self, body: Mapping[str, Any], protocol: str) -> None:
        v.string(body, "name")
        v.boolean(body, "admin_state_up")
        v.enum(body, "lb_algorithm", v.LB_ALGORITHMS)
        v.tags(body)
        v.session_persistence(body.get("session_persistence"), protocol)

    def create_pool(self, ctx: AuthContext, body: Mapping[str, Any]) -> Record:
        v.reject_unknown(body, POOL_CREATE, obj="pool")
        for field in ("protocol", "lb_algorithm"):
            if body.get(field) is None:
                raise v.invalid(field, None, "Mandatory field missing.")
        v.enum(body, "protocol", v.POOL_PROTOCOLS)
        self._validate_pool(body, body["protocol"])
        if body.get("members") or body.get("healthmonitor"):
            raise BadRequest("Validation failure: inline members/healthmonitor are not emulated.")
        listener: Record | None = None
        if body.get("listener_id"):
            listener = self.get("listener", str(body["listener_id"]), ctx)
            lb = self.lb_for(listener)
            if body.get("loadbalancer_id") and body["loadbalancer_id"] != lb["id"]:
                raise BadRequest("Validation failure: The listener is not on that load balancer.")
        elif body.get("loadbalancer_id"):
            lb = self.get("loadbalancer", str(body["loadbalancer_id"]), ctx)
        else:
            raise BadRequest(
                "Validation failure: loadbalancer_id or listener_id must be specified."
            )
        self.ensure_mutable(lb)
        if listener is not None:
            if listener["default_pool_id"]:
                raise Conflict("This listener already has a default pool")
            v.listener_pool_protocol(listener["protocol"], body["protocol"])
        pool = self.new_record("pool", ctx, body, POOL_FIELDS)
        providers.check_pool(lb["provider"], pool, create=True)
        pool.update(
            {
                "loadbalancers": [{"id": lb["id"]}],
                "listeners": [{"id": listener["id"]}] if listener else [],
                "members": [],
                "healthmonitor_id": None,
                "_lb_id": lb["id"],
            }
        )
        self.store.put("pool", pool)
        lb["pools"].append({"id": pool["id"]})
        children = [("pool", pool["id"], "ACTIVE")]
        if listener is not None:
            listener["default_pool_id"] = pool["id"]
            self.mark("listener", listener, "PENDING_UPDATE")
            children.append(("listener", listener["id"], "ACTIVE"))
        self.schedule(lb, phase="update", delay=self.timing.child, children=children)
        return self.store.get("pool", pool["id"]) or pool

    def update_pool(self, ctx: AuthContext, rid: str, body: Mapping[str, Any]) -> Record:
        v.reject_unknown(body, POOL_UPDATE, obj="pool")
        pool = self.get("pool", rid, ctx)
        self._validate_pool(body, pool["protocol"])
        lb = self.lb_for(pool)
        self.ensure_mutable(lb)
        providers.check_pool(lb["provider"], body, create=False)
        pool.update(body)
        self.mark("pool", pool, "PENDING_UPDATE")
        self.schedule(
            lb, phase="update", delay=self.timing.child, children=[("pool", rid, "ACTIVE")]
        )
        return pool

    def delete_pool(self, ctx: AuthContext, rid: str) -> None:
        pool = self.get("pool", rid, ctx)
        lb = self.lb_for(pool)
        self.ensure_mutable(lb)
        self.mark("pool", pool, "PENDING_DELETE")
        self.schedule(
            lb, phase="update", delay=self.timing.child, children=[("pool", rid, "DELETED")]
        )

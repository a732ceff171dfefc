"""The pure part of :mod:`bench.clone`: which cloud objects are the template's, what a copy's
create request carries, and the :class:`Rewrite` of the template's values into a clone's."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

__all__ = ["WRITABLE", "Rewrite", "TemplateObjects", "body", "restamp", "template_objects"]

# What a create may carry, per kind (Octavia v2 and Neutron API references); the parent's ID is
# added by the cloner.
WRITABLE: Mapping[str, tuple[str, ...]] = {
    "loadbalancers": (
        "name",
        "description",
        "admin_state_up",
        "vip_subnet_id",
        "provider",
        "flavor_id",
        "availability_zone",
        "tags",
    ),
    "listeners": (
        "name",
        "description",
        "admin_state_up",
        "protocol",
        "protocol_port",
        "connection_limit",
        "default_tls_container_ref",
        "sni_container_refs",
        "insert_headers",
        "timeout_client_data",
        "timeout_member_connect",
        "timeout_member_data",
        "timeout_tcp_inspect",
        "allowed_cidrs",
        "tags",
    ),
    "pools": (
        "name",
        "description",
        "admin_state_up",
        "lb_algorithm",
        "protocol",
        "session_persistence",
        "tags",
    ),
    "members": (
        "name",
        "address",
        "protocol_port",
        "weight",
        "backup",
        "admin_state_up",
        "subnet_id",
        "monitor_address",
        "monitor_port",
        "tags",
    ),
    "healthmonitors": (
        "name",
        "type",
        "delay",
        "timeout",
        "max_retries",
        "max_retries_down",
        "http_method",
        "url_path",
        "expected_codes",
        "admin_state_up",
        "tags",
    ),
    "floatingips": ("floating_network_id", "description"),
}

# an ID or address is replaced only as a whole token, so 10.0.0.2 never touches 10.0.0.20
_WHOLE = r"(?<![0-9A-Za-z.]){}(?![0-9A-Za-z.])"


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


@dataclass(frozen=True)
class Rewrite:
    """The template's values to the clone's, applied through any JSON-like value.

    ``tokens``: IDs and addresses, replaced as whole tokens inside any string; ``names``: the
    Service's name, replaced anywhere inside a string (it is part of URNs and object names);
    ``ints``: the node port, replaced as a whole integer. A string holding canonical JSON (the
    ``spec`` output) is rewritten inside and written back canonically."""

    tokens: Mapping[str, str] = field(default_factory=dict)
    names: Mapping[str, str] = field(default_factory=dict)
    ints: Mapping[int, int] = field(default_factory=dict)

    def with_tokens(self, more: Mapping[str, str]) -> Rewrite:
        return Rewrite(tokens={**self.tokens, **more}, names=self.names, ints=self.ints)

    def apply(self, value: Any) -> Any:
        if isinstance(value, str):
            return self._text(value)
        if isinstance(value, bool):
            return value
        if isinstance(value, int):
            return self.ints.get(value, value)
        if isinstance(value, list):
            return [self.apply(v) for v in value]
        if isinstance(value, dict):
            return {k: self.apply(v) for k, v in value.items()}
        return value

    def _text(self, text: str) -> str:
        if text.startswith("{"):
            try:
                inner = json.loads(text)
            except ValueError:
                inner = None
            if isinstance(inner, dict) and _canonical(inner) == text:
                return _canonical(self.apply(inner))
        for old, new in self.names.items():
            text = text.replace(old, new)
        if self._pattern is not None:
            text = self._pattern.sub(lambda m: self.tokens[m.group(0)], text)
        return text

    @cached_property
    def _pattern(self) -> re.Pattern[str] | None:
        """Every token, longest first, as one pattern (made once, not once per string)."""
        if not self.tokens:
            return None
        ordered = sorted(self.tokens, key=len, reverse=True)
        return re.compile("|".join(_WHOLE.format(re.escape(t)) for t in ordered))


def restamp(checkpoint: dict[str, Any]) -> str:
    """Set the stack's ``spec_hash`` output to the hash of its ``spec`` output (as the program
    outputs them), in place; the hash. ValueError when the checkpoint has no such outputs."""
    for resource in checkpoint["checkpoint"]["latest"]["resources"]:
        if resource.get("type") == "pulumi:pulumi:Stack":
            outputs = resource.get("outputs") or {}
            if not isinstance(outputs.get("spec"), str):
                break
            digest = hashlib.sha256(outputs["spec"].encode("ascii")).hexdigest()
            outputs["spec_hash"] = digest
            return digest
    raise ValueError("the checkpoint has no stack outputs spec and spec_hash")


@dataclass(frozen=True)
class TemplateObjects:
    """The template Service's cloud objects, by kind, as the cloud lists them."""

    by_kind: Mapping[str, list[dict[str, Any]]]

    def one(self, kind: str) -> dict[str, Any]:
        return self.by_kind[kind][0]


def template_objects(
    inventory: Mapping[str, list[dict[str, Any]]], lb_name: str
) -> TemplateObjects:
    """The objects of the load balancer named ``lb_name`` and its floating IP."""
    (lb,) = [o for o in inventory.get("loadbalancers", []) if o["name"] == lb_name]

    def of_lb(kind: str) -> list[dict[str, Any]]:
        return [
            o for o in inventory.get(kind, []) if lb["id"] in {x["id"] for x in o["loadbalancers"]}
        ]

    pools = of_lb("pools")
    pool_ids = {p["id"] for p in pools}
    member_ids = {m["id"] for p in pools for m in p["members"]}
    return TemplateObjects(
        {
            "loadbalancers": [lb],
            "listeners": of_lb("listeners"),
            "pools": pools,
            "members": [m for m in inventory.get("members", []) if m["id"] in member_ids],
            "healthmonitors": [
                h
                for h in inventory.get("healthmonitors", [])
                if {x["id"] for x in h["pools"]} & pool_ids
            ],
            "floatingips": [
                f for f in inventory.get("floatingips", []) if f["port_id"] == lb["vip_port_id"]
            ],
        }
    )


def body(kind: str, obj: Mapping[str, Any], rewrite: Rewrite) -> dict[str, Any]:
    """A create request's body for a copy of ``obj``: its writable fields that are set."""
    out = {k: obj[k] for k in WRITABLE[kind] if obj.get(k) not in (None, [], {})}
    result: dict[str, Any] = rewrite.apply(out)
    return result

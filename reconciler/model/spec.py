"""The desired load balancer of one Service: frozen, JSON-serialisable, with a content hash.

A :class:`LoadBalancerSpec` is everything the Pulumi program needs and nothing it must look up in
Kubernetes. Two things are left to the program because they need the cloud: ``None`` for
``vip_subnet_id`` *and* ``vip_network_id`` *and* ``vip_port_id`` means "the subnet of
``vip_autodetect_address``" (OCCM looks at the first Node's Neutron port), and ``None`` for
``floating_ip.network_id`` means "the cloud's only external network" (OCCM's autodetection; no
floating IP when there is none). A security-group rule whose ``remote_ip_prefix`` is ``None``
opens to the member subnet's CIDR.

``to_dict()`` gives plain JSON types with a ``version``; ``from_dict()`` reverses it exactly, and
ignores keys the spec does not have, so a spec stored before a field was removed still reads
(``serial_api_calls`` and ``cascade_delete`` were removed: cloud.conf refuses every value but
the one they always had, and nothing read them).
``spec_hash()`` is the sha256 of the canonical JSON (sorted keys, no spaces, ASCII), so equal
specs hash equally in any process, on any machine, under any ``PYTHONHASHSEED``. The engine stores
the hash with the stack and skips ``up`` when it has not changed. A field added later is left out
of the JSON while empty (``_OMIT_EMPTY``), so existing specs keep their hash; a field removed
changes the hash of every spec: one ``up`` per stack after the upgrade (docs/engine.md,
"Upgrades").
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import types
import typing
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any, TypeVar

__all__ = [
    "SPEC_VERSION",
    "FloatingIpSpec",
    "ListenerSpec",
    "LoadBalancerSpec",
    "MemberSpec",
    "MonitorSpec",
    "PoolSpec",
    "SecurityGroupRuleSpec",
    "SecurityGroupSpec",
    "ServiceRef",
    "StatusSpec",
]

SPEC_VERSION = 1
_AS_DICT = {"as_dict": True}  # field metadata: a tuple of (key, value) pairs shown as a JSON object
# field metadata: left out of the JSON while empty, so that a field added later changes neither
# the hash of a spec that does not use it (no `up` for every Service after an upgrade) nor the
# reading of a spec written before it existed
_OMIT_EMPTY = {"omit_empty": True}


@dataclass(frozen=True)
class ServiceRef:
    namespace: str
    name: str
    uid: str


@dataclass(frozen=True)
class MemberSpec:
    name: str
    address: str
    protocol_port: int
    subnet_id: str | None
    monitor_port: int | None


@dataclass(frozen=True)
class MonitorSpec:
    name: str
    type: str  # TCP, UDP-CONNECT, SCTP or HTTP
    delay: int
    timeout: int
    max_retries: int
    max_retries_down: int
    http_method: str | None = None
    url_path: str | None = None
    expected_codes: str | None = None


@dataclass(frozen=True)
class PoolSpec:
    name: str
    protocol: str  # TCP, UDP, SCTP, HTTP, PROXY or PROXYV2
    lb_algorithm: str
    session_persistence: str | None  # "SOURCE_IP" or None
    members: tuple[MemberSpec, ...]
    monitor: MonitorSpec | None
    tags: tuple[str, ...] = field(default=(), metadata=_OMIT_EMPTY)  # the pool-tags annotation


@dataclass(frozen=True)
class ListenerSpec:
    index: int
    name: str
    protocol: str  # TCP, UDP, SCTP, HTTP or TERMINATED_HTTPS
    protocol_port: int
    service_protocol: str  # the Service port's own protocol: TCP, UDP or SCTP
    node_port: int  # 0 when allocateLoadBalancerNodePorts is false
    connection_limit: int
    timeout_client_data: int | None
    timeout_member_connect: int | None
    timeout_member_data: int | None
    timeout_tcp_inspect: int | None
    allowed_cidrs: tuple[str, ...]
    insert_headers: tuple[tuple[str, str], ...] = field(metadata=_AS_DICT)
    default_tls_container_ref: str | None
    tags: tuple[str, ...]
    pool: PoolSpec


@dataclass(frozen=True)
class FloatingIpSpec:
    network_id: str | None
    subnet_id: str | None
    subnet_name_pattern: str | None  # glob, "~regexp", "!" negates
    subnet_tags: str | None  # "a,b", "&a,b" (all), "!a" (none)
    address: str | None  # spec.loadBalancerIP: reuse this floating IP
    keep: bool  # keep-floatingip: do not delete it with the Service
    description: str


@dataclass(frozen=True)
class SecurityGroupRuleSpec:
    protocol: str  # tcp, udp or sctp
    ethertype: str  # IPv4 or IPv6
    port_range_min: int
    port_range_max: int
    remote_ip_prefix: str | None


@dataclass(frozen=True)
class SecurityGroupSpec:
    name: str
    description: str
    rules: tuple[SecurityGroupRuleSpec, ...]


@dataclass(frozen=True)
class StatusSpec:
    """What ``status.loadBalancer.ingress`` should say once the address is known."""

    hostname: str | None  # the hostname annotation: report this instead of the address
    hostname_suffix: str | None  # enable-ingress-hostname with PROXY: report "<ip>.<suffix>"
    ip_mode: str  # "VIP", or "Proxy" with the PROXY protocol


@dataclass(frozen=True)
class LoadBalancerSpec:
    service: ServiceRef
    cluster_name: str
    name: str
    description: str
    tags: tuple[str, ...]
    existing_lb_id: str | None  # load-balancer-id: attach to (or adopt) this load balancer
    provider: str
    flavor_id: str | None
    availability_zone: str | None
    ip_family: str | None  # IPv4 or IPv6, from spec.ipFamilies[0]
    internal: bool
    vip_subnet_id: str | None
    vip_network_id: str | None
    vip_port_id: str | None
    vip_address: str | None
    vip_autodetect_address: str | None
    member_subnet_id: str | None
    floating_ip: FloatingIpSpec | None
    listeners: tuple[ListenerSpec, ...]
    security_group: SecurityGroupSpec | None
    status: StatusSpec
    max_shared_lb: int
    # the load-balancer-tags annotation: added to the load balancer's tags (which it may share
    # with other Services), never removed from them, as OCCM does
    extra_tags: tuple[str, ...] = field(default=(), metadata=_OMIT_EMPTY)

    def lb_tags(self) -> tuple[str, ...]:
        """The tags this Service wants on its load balancer: its name (how OCCM counts the
        Services on one) and the load-balancer-tags annotation's."""
        return (*self.tags, *self.extra_tags)

    def to_dict(self) -> dict[str, Any]:
        out = _encode(self)
        assert isinstance(out, dict)
        return {"version": SPEC_VERSION, **out}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LoadBalancerSpec:
        body = dict(data)
        version = body.pop("version", None)
        if version != SPEC_VERSION:
            raise ValueError(f"spec version {version!r} is not {SPEC_VERSION}")
        return _decode(cls, body)

    def canonical_json(self) -> str:
        """The spec as JSON, keys sorted; made once per spec (it is immutable) and kept."""
        cached = self.__dict__.get("_canonical_json")
        if cached is None:
            cached = json.dumps(
                self.to_dict(), sort_keys=True, separators=(",", ":"), ensure_ascii=True
            )
            object.__setattr__(self, "_canonical_json", cached)  # frozen: not a field
        return str(cached)

    def spec_hash(self) -> str:
        return hashlib.sha256(self.canonical_json().encode("ascii")).hexdigest()

    def owning(self, lb_id: str | None) -> LoadBalancerSpec:
        """This spec with ``existing_lb_id`` cleared when it names ``lb_id``, the load balancer
        the Service's own stack created. The controller writes the ``load-balancer-id``
        annotation back after an ``up`` (as OCCM does), so the next spec names its own load
        balancer: that is not a request to share it, and must change neither the spec hash nor
        the program (which would otherwise look its own load balancer up as a shared one)."""
        if lb_id and self.existing_lb_id == lb_id:
            return dataclasses.replace(self, existing_lb_id=None)
        return self


def _encode(value: Any) -> Any:
    if is_dataclass(value) and not isinstance(value, type):
        out: dict[str, Any] = {}
        for f in fields(value):
            item = getattr(value, f.name)
            if f.metadata.get("omit_empty") and not item:
                continue
            out[f.name] = {k: v for k, v in item} if f.metadata.get("as_dict") else _encode(item)
        return out
    if isinstance(value, tuple):
        return [_encode(v) for v in value]
    return value


_T = TypeVar("_T")


_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    """The field types of a spec class, evaluated once (they are strings here)."""
    hints = _HINTS.get(cls)
    if hints is None:
        hints = _HINTS[cls] = typing.get_type_hints(cls)
    return hints


def _decode(cls: type[_T], data: Any) -> _T:
    if not isinstance(data, dict):
        raise ValueError(f"{cls.__name__}: expected an object, got {type(data).__name__}")
    hints = _hints(cls)
    kwargs: dict[str, Any] = {}
    for f in fields(cls):  # type: ignore[arg-type]
        if f.name not in data and f.metadata.get("omit_empty"):
            continue  # its default
        if f.name not in data:
            raise ValueError(f"{cls.__name__}: missing {f.name!r}")
        raw = data[f.name]
        if f.metadata.get("as_dict"):
            kwargs[f.name] = tuple((str(k), str(v)) for k, v in sorted(raw.items()))
        else:
            kwargs[f.name] = _decode_value(hints[f.name], raw)
    return cls(**kwargs)


def _decode_value(tp: Any, raw: Any) -> Any:
    origin = typing.get_origin(tp)
    if origin in (types.UnionType, typing.Union):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return None if raw is None else _decode_value(args[0], raw)
    if origin is tuple:
        (item_tp, _ellipsis) = typing.get_args(tp)
        return tuple(_decode_value(item_tp, r) for r in raw)
    if isinstance(tp, type) and is_dataclass(tp):
        return _decode(tp, raw)
    if tp in (str, int, bool) and type(raw) is not tp:
        raise ValueError(f"expected {tp.__name__}, got {raw!r}")
    return raw

"""Fleet drift: what a stack recorded against the cloud's lists of a whole project. Pure.

A drift check of one Service (``pulumi refresh``) costs a ``pulumi`` process and its provider
plugin, about 0.7 CPU seconds, whether or not anything changed. The cloud can say far more
cheaply whether anything did: Octavia and Neutron list every load balancer, listener, pool,
health monitor and floating IP of the project in a few calls (a pool's members in one call per
pool). :func:`compare_stack` compares one stack's checkpoint with those lists, and only a stack
that differs gets its ``pulumi refresh`` (:mod:`reconciler.engine.fleet` lists and reads;
:mod:`reconciler.controller.housekeeping` decides when).

What is compared, per resource of the stack, is what the program declares (the Service's spec,
:mod:`stacks.resources`) and whether the object is there at all:

* the load balancer: name, description, VIP (address, subnet, network, port), provider, flavor,
  availability zone, ``admin_state_up`` (not its tags: the engine adds Services' names to a
  shared load balancer's tags itself);
* each listener: name, protocol and port, its load balancer, connection limit, the four
  timeouts, allowed CIDRs, inserted headers, TLS container, tags, ``admin_state_up``;
* each pool: name, protocol, algorithm, session persistence type, its listener, tags,
  ``admin_state_up``;
* each pool's members: the same set of members (by id), and each one's name, address, port,
  subnet, weight, backup, monitor address and port, ``admin_state_up``;
* each health monitor: name, type, delay, timeout, retries (both), HTTP method, URL path,
  expected codes, its pool, ``admin_state_up``;
* the floating IP: its address and description, and its association: the port and fixed IP.

What the stack records of other fields (e.g. a listener's ``default_pool_id``, which Octavia sets
when the pool is made) is not compared: the program does not declare them, so an ``up`` would not
put them back. A stack with resources of other types (a managed security group, its rules and
port associations) is *uncovered*: it keeps the per-Service ``pulumi refresh``. Values are
compared after :func:`_norm`: unset, ``""``, ``[]`` and ``{}`` are alike (the provider writes
``""`` where the API answers ``null``), lists of CIDRs and tags in any order.

:class:`Verdict` ``fingerprint`` digests the cloud's values that were compared: the same
fingerprint means the cloud did not change in anything compared here.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from reconciler.engine.deployment import is_bookkeeping
from stacks.vocabulary import (
    FIP_ASSOCIATION_TYPE,
    FIP_TYPE,
    LB_TYPE,
    LISTENER_TYPE,
    MEMBERS_TYPE,
    MONITOR_TYPE,
    POOL_TYPE,
)

__all__ = [
    "CloudLists",
    "FleetReport",
    "Verdict",
    "compare_stack",
    "member_pools",
]


@dataclass(frozen=True)
class CloudLists:
    """The project's objects by id, as listed; ``members``: pool id -> member id -> member,
    for the pools whose members were listed."""

    loadbalancers: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    listeners: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    pools: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    healthmonitors: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    floatingips: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    members: Mapping[str, Mapping[str, Mapping[str, Any]]] = field(default_factory=dict)


@dataclass(frozen=True)
class Verdict:
    """One stack against the lists. ``differs``: what differs, one line each (e.g. ``listener
    L: connection_limit is 5 in the cloud, -1 in the stack``); ``uncovered``: resource types
    this comparison does not read; ``fingerprint``: a digest of the cloud's compared values."""

    differs: tuple[str, ...] = ()
    uncovered: tuple[str, ...] = ()
    fingerprint: str = ""

    @property
    def same(self) -> bool:
        """Nothing compared differs, and everything was compared."""
        return not self.differs and not self.uncovered


@dataclass(frozen=True)
class FleetReport:
    """A fleet comparison: ``verdicts`` by stack name; ``unread``: the stacks whose checkpoint
    could not be read (no verdict); ``pools``: the member listings made (one call each)."""

    verdicts: Mapping[str, Verdict] = field(default_factory=dict)
    unread: tuple[str, ...] = ()
    pools: int = 0


def _norm(value: Any) -> Any:
    if value is None or value == "" or value == [] or value == {}:
        return None
    return value


def _as_set(value: Any) -> Any:
    value = _norm(value)
    return None if value is None else sorted(str(v) for v in value)


def _first_id(value: Any) -> Any:
    """The id of the first of ``[{"id": ...}]`` (a listener's load balancers, a pool's
    listeners, a monitor's pools)."""
    if isinstance(value, list) and value and isinstance(value[0], Mapping):
        return value[0].get("id")
    return None


def _persistence(value: Any) -> Any:
    return _norm(value.get("type")) if isinstance(value, Mapping) else None


def _port_or_unset(value: Any) -> Any:
    return None if value in (None, 0, "") else value


# (key in the stack's outputs, key in the API's object, how both are read)
Field = tuple[str, str, Callable[[Any], Any]]
_SAME: Callable[[Any], Any] = _norm

_LB_FIELDS: tuple[Field, ...] = (
    ("name", "name", _SAME),
    ("description", "description", _SAME),
    ("vipAddress", "vip_address", _SAME),
    ("vipSubnetId", "vip_subnet_id", _SAME),
    ("vipNetworkId", "vip_network_id", _SAME),
    ("vipPortId", "vip_port_id", _SAME),
    ("loadbalancerProvider", "provider", _SAME),
    ("flavorId", "flavor_id", _SAME),
    ("availabilityZone", "availability_zone", _SAME),
    ("adminStateUp", "admin_state_up", _SAME),
)
_LISTENER_FIELDS: tuple[Field, ...] = (
    ("name", "name", _SAME),
    ("protocol", "protocol", _SAME),
    ("protocolPort", "protocol_port", _SAME),
    ("connectionLimit", "connection_limit", _SAME),
    ("timeoutClientData", "timeout_client_data", _SAME),
    ("timeoutMemberConnect", "timeout_member_connect", _SAME),
    ("timeoutMemberData", "timeout_member_data", _SAME),
    ("timeoutTcpInspect", "timeout_tcp_inspect", _SAME),
    ("allowedCidrs", "allowed_cidrs", _as_set),
    ("insertHeaders", "insert_headers", _SAME),
    ("defaultTlsContainerRef", "default_tls_container_ref", _SAME),
    ("tags", "tags", _as_set),
    ("adminStateUp", "admin_state_up", _SAME),
)
_POOL_FIELDS: tuple[Field, ...] = (
    ("name", "name", _SAME),
    ("protocol", "protocol", _SAME),
    ("lbMethod", "lb_algorithm", _SAME),
    ("persistence", "session_persistence", _persistence),
    ("tags", "tags", _as_set),
    ("adminStateUp", "admin_state_up", _SAME),
)
_MEMBER_FIELDS: tuple[Field, ...] = (
    ("name", "name", _SAME),
    ("address", "address", _SAME),
    ("protocolPort", "protocol_port", _SAME),
    ("subnetId", "subnet_id", _SAME),
    ("weight", "weight", _SAME),
    ("backup", "backup", _SAME),
    ("monitorAddress", "monitor_address", _SAME),
    ("monitorPort", "monitor_port", _port_or_unset),
    ("adminStateUp", "admin_state_up", _SAME),
)
_MONITOR_FIELDS: tuple[Field, ...] = (
    ("name", "name", _SAME),
    ("type", "type", _SAME),
    ("delay", "delay", _SAME),
    ("timeout", "timeout", _SAME),
    ("maxRetries", "max_retries", _SAME),
    ("maxRetriesDown", "max_retries_down", _SAME),
    ("httpMethod", "http_method", _SAME),
    ("urlPath", "url_path", _SAME),
    ("expectedCodes", "expected_codes", _SAME),
    ("adminStateUp", "admin_state_up", _SAME),
)
_FIP_FIELDS: tuple[Field, ...] = (
    ("address", "floating_ip_address", _SAME),
    ("description", "description", _SAME),
)
_FIP_ASSOCIATE_FIELDS: tuple[Field, ...] = (
    ("floatingIp", "floating_ip_address", _SAME),
    ("portId", "port_id", _SAME),
    ("fixedIp", "fixed_ip_address", _SAME),
)

# a parent as the stack records it (outputs key) and as the API shows it (a list of ids)
_PARENTS: dict[str, tuple[str, str]] = {
    LISTENER_TYPE: ("loadbalancerId", "loadbalancers"),
    POOL_TYPE: ("listenerId", "listeners"),
    MONITOR_TYPE: ("poolId", "pools"),
}

# type -> (what a person calls it, the list it is in, its fields)
_KINDS: dict[str, tuple[str, str, tuple[Field, ...]]] = {
    LB_TYPE: ("load balancer", "loadbalancers", _LB_FIELDS),
    LISTENER_TYPE: ("listener", "listeners", _LISTENER_FIELDS),
    POOL_TYPE: ("pool", "pools", _POOL_FIELDS),
    MONITOR_TYPE: ("health monitor", "healthmonitors", _MONITOR_FIELDS),
    FIP_TYPE: ("floating IP", "floatingips", _FIP_FIELDS),
    FIP_ASSOCIATION_TYPE: ("floating IP association", "floatingips", _FIP_ASSOCIATE_FIELDS),
}


def _shown(value: Any) -> str:
    return "unset" if value is None else json.dumps(value, sort_keys=True, default=str)


def _fields(
    what: str, fields: Sequence[Field], outputs: Mapping[str, Any], cloud: Mapping[str, Any]
) -> tuple[list[str], list[Any]]:
    """What differs between the stack's ``outputs`` and the cloud's object, and the cloud's
    compared values. A field the stack does not record (an older provider) is not compared."""
    differs: list[str] = []
    seen: list[Any] = []
    for ours, theirs, read in fields:
        now = read(cloud.get(theirs))
        seen.append(now)
        if ours not in outputs:
            continue
        was = read(outputs.get(ours))
        if was != now:
            differs.append(
                f"{what}: {theirs} is {_shown(now)} in the cloud, {_shown(was)} in the stack"
            )
    return differs, seen


def _members(
    pool_id: str, outputs: Mapping[str, Any], cloud: CloudLists
) -> tuple[list[str], list[Any]]:
    listed = cloud.members.get(pool_id)
    if listed is None:
        return [f"pool {pool_id}: its members were not listed (the pool is gone)"], [None]
    recorded = {str(m.get("id")): m for m in outputs.get("members") or () if m.get("id")}
    differs: list[str] = []
    seen: list[Any] = [sorted(listed)]
    for member_id in sorted(set(recorded) - set(listed)):
        differs.append(f"member {member_id} of pool {pool_id} is gone from the cloud")
    for member_id in sorted(set(listed) - set(recorded)):
        differs.append(f"member {member_id} of pool {pool_id} is only in the cloud")
    for member_id in sorted(set(recorded) & set(listed)):
        what = f"member {member_id} of pool {pool_id}"
        found, values = _fields(what, _MEMBER_FIELDS, recorded[member_id], listed[member_id])
        differs += found
        seen.append(values)
    return differs, seen


def member_pools(resources: Sequence[Mapping[str, Any]]) -> list[str]:
    """The pools whose members ``resources`` (a checkpoint's) record: the pools to list the
    members of."""
    return [str(r["id"]) for r in resources if r.get("type") == MEMBERS_TYPE and r.get("id")]


def compare_stack(resources: Sequence[Mapping[str, Any]], cloud: CloudLists) -> Verdict:
    """``resources`` (the ``resources`` of the stack's latest deployment) against ``cloud``."""
    differs: list[str] = []
    uncovered: set[str] = set()
    seen: list[Any] = []
    for resource in resources:
        kind = str(resource.get("type") or "")
        if is_bookkeeping(kind):
            continue
        ident = str(resource.get("id") or "")
        outputs: Mapping[str, Any] = resource.get("outputs") or {}
        if kind == MEMBERS_TYPE:
            found, values = _members(ident, outputs, cloud)
            differs += found
            seen.append([kind, ident, values])
            continue
        if kind not in _KINDS:
            uncovered.add(kind)
            continue
        name, listing, fields = _KINDS[kind]
        what = f"{name} {ident}"
        obj = getattr(cloud, listing).get(ident)
        if obj is None:
            differs.append(f"{what} is gone from the cloud")
            seen.append([kind, ident, None])
            continue
        found, values = _fields(what, fields, outputs, obj)
        if kind in _PARENTS:
            ours, theirs = _PARENTS[kind]
            parent = _first_id(obj.get(theirs))
            values.append(parent)
            if ours in outputs and _norm(outputs.get(ours)) != _norm(parent):
                found.append(
                    f"{what}: its {theirs[:-1]} is {_shown(parent)} in the cloud, "
                    f"{_shown(_norm(outputs.get(ours)))} in the stack"
                )
        differs += found
        seen.append([kind, ident, values])
    digest = hashlib.sha256(json.dumps(seen, sort_keys=True, default=str).encode()).hexdigest()
    return Verdict(tuple(differs), tuple(sorted(uncovered)), digest[:16])

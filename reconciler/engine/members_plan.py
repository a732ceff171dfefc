"""Whether a Service's change is to its pools' members only, and the stack's state after such a
change made directly, as OCCM makes it: one batch ``PUT /v2/lbaas/pools/{id}/members`` per pool.
Pure: it reads the stack's deployment (the ``pulumi stack export`` format) handed to it.

A Node added or removed changes every Service's members and nothing else. Through ``pulumi up``
each costs a CLI start, the secrets manager and the provider plugin's start (docs/performance.md,
"Profile"), for one provider call: the provider's update of an ``openstack_lb_members_v2`` is the
same batch ``PUT`` of the whole list, followed by a read of the pool's members. The direct path
(:mod:`reconciler.engine.members_direct`) does that ``PUT`` and that read itself and writes what
the provider would have written into the state, so the state stays the record: ``preview`` then
shows no change and a ``refresh`` finds nothing.

It is taken only when the deployment proves the state is exactly what this module would write
for the spec the last ``up`` applied (:func:`members_update`): nothing pending, each changed
pool's ``Members`` resource present, made (not read), its inputs those of the applied members and
its outputs in the layout of the provider version the program uses. Anything else (a pool gaining
its first member or losing its last, so its ``Members`` resource comes or goes; another field;
a state written by another provider version) goes through ``up``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from reconciler.engine.deployment import PROVIDER_PREFIX, STACK_TYPE, stack_resource
from reconciler.engine.plan import applied_spec_from
from reconciler.model.spec import LoadBalancerSpec, MemberSpec
from stacks.vocabulary import MEMBERS_TYPE, logical_name, logical_suffix, members_name

__all__ = [
    "MembersUpdate",
    "PoolMembers",
    "applied_spec_in",
    "members_changes",
    "members_update",
    "pending_deployment",
    "request_members",
    "update_record",
    "updated_deployment",
]

# the provider's defaults of a member's inputs (openstack 5.x), and the keys of a member as its
# read of the pool writes them into the outputs
_INPUT_DEFAULTS = ["adminStateUp", "weight"]
_OUTPUT_KEYS = frozenset(
    {
        "address",
        "adminStateUp",
        "backup",
        "id",
        "monitorAddress",
        "monitorPort",
        "name",
        "protocolPort",
        "subnetId",
        "weight",
    }
)


@dataclass(frozen=True)
class PoolMembers:
    """One pool whose members change: its ``Members`` resource (URN; its ID is the pool's) and
    the members wanted."""

    urn: str
    pool_id: str
    members: tuple[MemberSpec, ...]


@dataclass(frozen=True)
class MembersUpdate:
    """The pools to update directly, and the stack outputs the program would export for the
    new spec (its ``spec`` and ``spec_hash``)."""

    pools: tuple[PoolMembers, ...]
    outputs: Mapping[str, Any]


def _without_members(spec: LoadBalancerSpec) -> LoadBalancerSpec:
    listeners = tuple(replace(li, pool=replace(li.pool, members=())) for li in spec.listeners)
    return replace(spec, listeners=listeners)


def members_changes(
    applied: LoadBalancerSpec, wanted: LoadBalancerSpec
) -> dict[str, tuple[MemberSpec, ...]] | None:
    """{``Members`` logical name: the members wanted} of each pool whose members differ, when
    nothing else differs between the two specs and every such pool has members before and after
    (its ``Members`` resource neither comes nor goes); None otherwise. Both are specs as the
    stack applies them (:func:`reconciler.engine.stack_spec.stack_spec`)."""
    if _without_members(applied) != _without_members(wanted):
        return None
    changes: dict[str, tuple[MemberSpec, ...]] = {}
    for before, after in zip(applied.listeners, wanted.listeners, strict=True):
        old, new = before.pool.members, after.pool.members
        if old == new:
            continue
        if not old or not new:
            return None
        changes[members_name(logical_suffix(after))] = new
    return changes or None


def member_inputs(member: MemberSpec) -> dict[str, Any]:
    """A member as the program's ``MembersMemberArgs`` puts it into the resource's inputs."""
    out: dict[str, Any] = {
        "__defaults": list(_INPUT_DEFAULTS),
        "address": member.address,
        "adminStateUp": True,
        "name": member.name,
        "protocolPort": member.protocol_port,
    }
    if member.monitor_port is not None:
        out["monitorPort"] = member.monitor_port
    if member.subnet_id is not None:
        out["subnetId"] = member.subnet_id
    out["weight"] = 1
    return out


def member_outputs(cloud: Mapping[str, Any]) -> dict[str, Any]:
    """A member as Octavia shows it, as the provider's read writes it into the outputs
    (absent values as the provider's zero values)."""
    return {
        "address": str(cloud.get("address") or ""),
        "adminStateUp": bool(cloud.get("admin_state_up", True)),
        "backup": bool(cloud.get("backup") or False),
        "id": str(cloud.get("id") or ""),
        "monitorAddress": str(cloud.get("monitor_address") or ""),
        "monitorPort": int(cloud.get("monitor_port") or 0),
        "name": str(cloud.get("name") or ""),
        "protocolPort": int(cloud.get("protocol_port") or 0),
        "subnetId": str(cloud.get("subnet_id") or ""),
        "weight": int(cloud.get("weight") or 0) if cloud.get("weight") is not None else 1,
    }


def request_members(members: Sequence[MemberSpec]) -> list[dict[str, Any]]:
    """The body's ``members`` of the batch ``PUT``: what the provider sends for these inputs."""
    out = []
    for m in members:
        item: dict[str, Any] = {
            "name": m.name,
            "address": m.address,
            "protocol_port": m.protocol_port,
            "weight": 1,
            "admin_state_up": True,
        }
        if m.subnet_id is not None:
            item["subnet_id"] = m.subnet_id
        if m.monitor_port is not None:
            item["monitor_port"] = m.monitor_port
        out.append(item)
    return out


def _output_order(members: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The members of the outputs in the order the provider writes them (a Terraform set): by
    address as text, then port, whatever the order of the inputs or of Octavia's list
    (``10.0.0.11`` before ``10.0.0.5``; checked against ``up`` in
    tests/integration/engine/test_engine_members_direct.py)."""
    return sorted(members, key=lambda m: (str(m["address"]), int(m["protocolPort"])))


def _raw_state_delta(count: int) -> dict[str, Any]:
    """The provider's record of how its raw state maps onto the outputs (``members`` is the
    Terraform ``member`` set, one entry per member)."""
    elements: dict[str, Any] = {str(i): {"obj": {}} for i in range(count)}
    return {"obj": {"ps": {"members": {"arr": {"el": elements}}}, "renamed": {"members": "member"}}}


def applied_spec_in(deployment: Mapping[str, Any] | None) -> LoadBalancerSpec | None:
    """The spec of the last ``up`` (the stack's ``spec`` output) in a deployment; None."""
    stack = stack_resource(deployment or {})
    return applied_spec_from((stack or {}).get("outputs") or {})


def _members_resource_as_written(res: Mapping[str, Any], applied: Sequence[MemberSpec]) -> bool:
    """Whether a ``Members`` resource of the state is what the provider writes for ``applied``:
    made by the program (not read, not pending), its inputs exactly those members, its outputs
    the same members (in any order) in the layout :func:`member_outputs` writes."""
    if res.get("type") != MEMBERS_TYPE or not res.get("custom") or res.get("external"):
        return False
    pool_id = str(res.get("id") or "")
    inputs, outputs = res.get("inputs") or {}, res.get("outputs") or {}
    # the top-level `__defaults` is [] after an `up`, absent after a `refresh`
    wanted_inputs = {"members": [member_inputs(m) for m in applied], "poolId": pool_id}
    if not pool_id or inputs.get("__defaults", []) != []:
        return False
    if {k: v for k, v in inputs.items() if k != "__defaults"} != wanted_inputs:
        return False
    members = outputs.get("members")
    if not isinstance(members, list) or len(members) != len(applied):
        return False
    if any(not isinstance(m, dict) or set(m) != _OUTPUT_KEYS for m in members):
        return False
    # in any order: a set, which `preview` and `refresh` compare as one
    if sorted((m["address"], m["protocolPort"]) for m in members) != sorted(
        (m.address, m.protocol_port) for m in applied
    ):
        return False
    return bool(
        outputs.get("id") == pool_id
        and outputs.get("poolId") == pool_id
        and outputs.get("__pulumi_raw_state_delta") == _raw_state_delta(len(applied))
    )


def members_update(
    deployment: Mapping[str, Any] | None,
    *,
    applied: LoadBalancerSpec,
    wanted: LoadBalancerSpec,
    applied_as_stack: LoadBalancerSpec,
) -> MembersUpdate | None:
    """The direct update that takes the stack from ``applied`` (the ``spec`` output of its last
    ``up``; ``applied_as_stack`` is the same as the stack applies it today) to ``wanted`` (as
    the stack applies it); None when only ``up`` may (see the module)."""
    if deployment is None or deployment.get("pending_operations"):
        return None
    stack = stack_resource(deployment)
    if stack is None or (stack.get("outputs") or {}).get("spec") != applied.canonical_json():
        return None
    changes = members_changes(applied_as_stack, wanted)
    if changes is None:
        return None
    old = {members_name(logical_suffix(li)): li.pool.members for li in applied_as_stack.listeners}
    pools: list[PoolMembers] = []
    for res in deployment.get("resources") or []:
        name = logical_name(str(res.get("urn") or ""))
        if name not in changes:
            continue
        if not _members_resource_as_written(res, old[name]):
            return None
        pools.append(PoolMembers(str(res["urn"]), str(res["id"]), changes[name]))
    if len(pools) != len(changes):
        return None
    outputs = {"spec": wanted.canonical_json(), "spec_hash": wanted.spec_hash()}
    return MembersUpdate(tuple(pools), outputs)


def _with_members(res: Mapping[str, Any], pool: PoolMembers) -> dict[str, Any]:
    """``res`` with the wanted members as inputs; what it does not change is shared, not
    copied (a deep copy of the deployment was an eighth of a members change's CPU time)."""
    return {**res, "inputs": {**res["inputs"], "members": [member_inputs(m) for m in pool.members]}}


def pending_deployment(deployment: Mapping[str, Any], update: MembersUpdate) -> dict[str, Any]:
    """The deployment with an ``updating`` pending operation per pool, as Pulumi writes one
    before it calls the provider: a crash after it makes the next ``up`` refresh first."""
    by_urn = {p.urn: p for p in update.pools}
    pending = [
        {"resource": _with_members(res, by_urn[res["urn"]]), "type": "updating"}
        for res in deployment.get("resources") or []
        if res.get("urn") in by_urn
    ]
    return {**deployment, "pending_operations": pending}


def updated_deployment(
    deployment: Mapping[str, Any],
    update: MembersUpdate,
    read: Mapping[str, Sequence[Mapping[str, Any]]],
    *,
    now: str,
) -> dict[str, Any] | None:
    """The deployment after the update, no operation pending: each pool's ``Members`` resource
    with the wanted members as inputs and ``read`` (pool ID: Octavia's members of that pool) as
    outputs, in the provider's order (:func:`_output_order`), and the stack's outputs of the new
    spec. ``now``: the RFC 3339 time of the change (``modified``). None when a pool's members as
    read are not the ones wanted (somebody else changed them meanwhile): the next ``up`` reads
    the cloud."""
    out = {k: v for k, v in deployment.items() if k != "pending_operations"}
    by_urn = {p.urn: p for p in update.pools}
    resources: list[Mapping[str, Any]] = []
    out["resources"] = resources  # a new list; the resources it changes are new dicts
    for res in deployment.get("resources") or []:
        pool = by_urn.get(str(res.get("urn") or ""))
        if res.get("type") == STACK_TYPE:
            res = {**res, "outputs": {**(res.get("outputs") or {}), **update.outputs}}
        elif pool is not None:
            res = _with_read_members(res, pool, read[pool.pool_id], now=now)
            if res is None:
                return None
        resources.append(res)
    return out


def _with_read_members(
    res: Mapping[str, Any], pool: PoolMembers, read: Sequence[Mapping[str, Any]], *, now: str
) -> dict[str, Any] | None:
    """A pool's ``Members`` resource after the update (see :func:`updated_deployment`); None
    when ``read`` (Octavia's members of the pool) are not the members wanted."""
    cloud = {(str(m.get("address")), int(m.get("protocol_port") or 0)): m for m in read}
    ordered = [cloud.get((m.address, m.protocol_port)) for m in pool.members]
    if len(cloud) != len(pool.members) or any(m is None for m in ordered):
        return None
    members = _output_order([member_outputs(m) for m in ordered if m is not None])
    return {
        **res,
        "inputs": {**res["inputs"], "members": [member_inputs(m) for m in pool.members]},
        "outputs": {
            **res["outputs"],
            "members": members,
            "__pulumi_raw_state_delta": _raw_state_delta(len(members)),
        },
        "modified": now,
    }


# what a direct update records as its environment in the stack's history, where the CLI records
# how it was run (``exec.kind``: ``auto.inline`` for the engine's own ``up``)
DIRECT_ENVIRONMENT = {"exec.kind": "lb-reconciler.direct", "lb-reconciler.direct": "members"}


def update_record(
    *,
    deployment: Mapping[str, Any],
    update: MembersUpdate,
    config: Mapping[str, Any],
    message: str,
    started: int,
    ended: int,
) -> dict[str, Any]:
    """The history record of a direct members update, as the CLI records an ``up`` (pulumi's
    ``backend.UpdateInfo``): ``config`` is the stack's config as the ``up`` of the same change
    would have been given it; each changed pool's ``Members`` resource is an update, every other
    resource but the default provider the same. ``started``/``ended``: Unix seconds."""
    counted = [
        r
        for r in deployment.get("resources") or []
        if not str(r.get("type")).startswith(PROVIDER_PREFIX)
    ]
    updated = len(update.pools)
    return {
        "kind": "update",
        "startTime": started,
        "message": message,
        "environment": dict(DIRECT_ENVIRONMENT),
        "config": dict(config),
        "version": 0,
        "result": "succeeded",
        "endTime": ended,
        "resourceChanges": {"same": max(0, len(counted) - updated), "update": updated},
    }

"""What an interrupted or failed operation left in the cloud without telling the state: what to
look for. Pure; :mod:`reconciler.engine.recovery` looks and acts.

**Pending creates** (:func:`pending_creates`). A ``pulumi`` killed during ``up`` leaves
``pending_operations`` in the state: resources it asked the cloud to create whose IDs it never
recorded. Each is listed with the name (or description) to find it by in the cloud; batch and
association resources (members, floating-IP association, port security groups) are idempotent
and are just cleared, the next ``up`` applies them again.

**Lost answers.** A create the cloud carried out can still fail for Pulumi: the answer was lost
(an API process that died mid-answer, a dropped connection, an emulator restart in the chaos run)
or the wait for the new object hit an error before the provider had its ID. Pulumi then records
neither the object nor a pending operation. The load balancer and the floating IP are found and
adopted (:func:`lost_lookups`); a lost *listener* blocks the Service for ever (every later ``up``
creates it again and Octavia answers 409, the port being in use), and a lost pool or monitor
does the same on its listener or pool.

So after an ``up`` that did not finish, each listener, pool and monitor the spec wants and the
state lacks is looked for on our own load balancer by what identifies it (name, port, parent)
(:func:`lost_children`; and those of the spec that ``up`` was given, read back from the
stack's configuration: a port changed again before the retry left the old port's lost pool in
the cloud for ever, found by the CI chaos run, seed 7), and a found one is deleted, not
adopted: the next ``up`` creates it as the spec says now. An import would fail for ever if the
spec changed meanwhile (Pulumi refuses an import whose inputs differ), and a child the state
never had carries no traffic the Service relies on.

A lookup's ``find_by`` may refer to its parent as ``@<logical name>``: the parent's ID from the
state, or from what an earlier lookup found (a lost listener's lost pool); :func:`resolve`
fills it in. A reference nothing resolves drops the lookup. Only the stack's own load balancer
(``lb``) is searched: on a shared or user's load balancer nothing is deleted here.

**Carried imports** (:func:`carried_imports`): imports an earlier ``up`` was given and did not
finish, read back from the stack's configuration.

**A delete after an ``up`` that did not finish** looks for the same objects, with the spec that
``up`` was given (:func:`configured_spec`, read back from the stack's configuration; the last
applied spec when there is none): found by the CI chaos run (seed 7), a floating IP whose create
answer was lost, then its Service deleted. The state never had it, ``destroy`` did not see it,
and it stayed in the cloud (with its port on the external network) for ever.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from reconciler.model.spec import LoadBalancerSpec
from stacks.vocabulary import (
    FIP,
    FIP_ASSOCIATION_TYPE,
    FIP_TYPE,
    LB,
    LB_TYPE,
    LISTENER_TYPE,
    MEMBERS_TYPE,
    MONITOR_TYPE,
    POOL_TYPE,
    PORT_SG_TYPE,
    listener_name,
    logical_name,
    logical_suffix,
    monitor_name,
    pool_name,
)

__all__ = [
    "UNSETTLED",
    "PendingCreate",
    "carried_imports",
    "configured_spec",
    "lost_children",
    "lost_lookups",
    "pending_creates",
    "resolve",
    "unsettled",
]


@dataclass(frozen=True)
class PendingCreate:
    """An object to look for in the cloud: one a pending create (or a create that reported
    failure) may have made. ``urn`` is the resource's URN, or just its logical name."""

    urn: str
    type: str  # e.g. openstack:loadbalancer/loadBalancer:LoadBalancer
    find_by: dict[str, str]  # what identifies it in the cloud: name, or description
    idempotent: bool  # clear it; the next up applies it again

    @property
    def name(self) -> str:
        """The logical name (``lb``, ``listener-tcp-80``), what the program imports it as."""
        return logical_name(self.urn)


_IDEMPOTENT = (MEMBERS_TYPE, FIP_ASSOCIATION_TYPE, PORT_SG_TYPE)


# Pending operations only a refresh can settle: the request may have reached the cloud, and the
# state still holds the resource as it was before it (Pulumi's `refresh` and `up --refresh`
# clear them; a plain `up` leaves them and compares with the old values).
UNSETTLED = ("updating", "deleting")


def unsettled(deployment: Mapping[str, Any]) -> list[str]:
    """The URNs of the pending updates and deletes in an exported deployment."""
    return [
        str((op.get("resource") or {}).get("urn", ""))
        for op in deployment.get("pending_operations") or []
        if op.get("type") in UNSETTLED
    ]


def pending_creates(deployment: Mapping[str, Any]) -> list[PendingCreate]:
    """The pending creates in an exported deployment (``pulumi stack export``)."""
    out = []
    for op in deployment.get("pending_operations") or []:
        if op.get("type") != "creating":
            continue
        resource = op.get("resource") or {}
        inputs = resource.get("inputs") or {}
        find_by = {
            k: str(inputs[k])
            for k in (
                "name",
                "description",
                "loadbalancerId",
                "poolId",
                "listenerId",
                "protocol",
                "protocolPort",
            )
            if inputs.get(k)
        }
        rtype = str(resource.get("type", ""))
        out.append(
            PendingCreate(str(resource.get("urn", "")), rtype, find_by, rtype in _IDEMPOTENT)
        )
    return out


def lost_lookups(spec: LoadBalancerSpec) -> list[PendingCreate]:
    """The top-level objects of ``spec`` to look for in the cloud when the state lacks them
    after an ``up`` that did not finish: a create the cloud carried out can still fail (the
    provider's wait for the new object hit an error) and return no ID, so no pending
    operation is left either. The load balancer by its name, the floating IP by its
    description (only one on no port is taken, :meth:`OpenStackRest.find_ids`)."""
    if spec.existing_lb_id:
        return []
    out = [PendingCreate(LB, LB_TYPE, {"name": spec.name}, False)]
    fip = spec.floating_ip
    if fip is not None and not spec.internal and fip.description:
        out.append(PendingCreate(FIP, FIP_TYPE, {"description": fip.description}, False))
    return out


def lost_children(spec: LoadBalancerSpec, *earlier: LoadBalancerSpec | None) -> list[PendingCreate]:
    """The listeners, pools and monitors of ``spec`` to look for, parents first; then those of
    each ``earlier`` spec (the one the ``up`` that did not finish was given) that ``spec`` does
    not name: a port changed again before the retry must not leave the old port's lost object
    behind (found by the CI chaos run, seed 7: "2 pools for 1 listeners")."""
    out = _children(spec)
    for other in earlier:
        if other is not None:
            named = {lookup.name for lookup in out}
            out += [lookup for lookup in _children(other) if lookup.name not in named]
    return out


def _children(spec: LoadBalancerSpec) -> list[PendingCreate]:
    if spec.existing_lb_id:
        return []
    out = []
    for listener in sorted(spec.listeners, key=lambda li: li.index):
        key = logical_suffix(listener)
        out.append(
            PendingCreate(
                listener_name(key),
                LISTENER_TYPE,
                {
                    "name": listener.name,
                    "loadbalancerId": f"@{LB}",
                    "protocol": listener.protocol,
                    "protocolPort": str(listener.protocol_port),
                },
                False,
            )
        )
        pool = listener.pool
        find_pool = {"name": pool.name, "listenerId": f"@{listener_name(key)}"}
        out.append(PendingCreate(pool_name(key), POOL_TYPE, find_pool, False))
        if pool.monitor is not None:
            find_monitor = {"name": pool.monitor.name, "poolId": f"@{pool_name(key)}"}
            out.append(PendingCreate(monitor_name(key), MONITOR_TYPE, find_monitor, False))
    return out


def resolve(find_by: Mapping[str, str], ids: Mapping[str, str]) -> dict[str, str] | None:
    """``find_by`` with each ``@<name>`` replaced by ``ids[name]``; None if one is unknown."""
    out = {}
    for key, value in find_by.items():
        if value.startswith("@"):
            ident = ids.get(value[1:])
            if not ident:
                return None
            value = ident
        out[key] = value
    return out


def carried_imports(config_text: str, *, key: str) -> dict[str, str]:
    """The imports an earlier ``up`` was given and did not finish (``key`` in a stack's
    ``Pulumi.<stack>.yaml``; the engine empties it after a successful ``up``); {} for anything
    unreadable."""
    try:
        config = yaml.safe_load(config_text) or {}
        raw = json.loads(str((config.get("config") or {}).get(key) or "{}"))
    except (ValueError, yaml.YAMLError, AttributeError):
        return {}
    if not isinstance(raw, dict):
        return {}
    return {str(k): str(v) for k, v in raw.items() if k and v}


def configured_spec(config_text: str, *, key: str) -> LoadBalancerSpec | None:
    """The spec the last ``up`` was given (``key`` in a stack's ``Pulumi.<stack>.yaml``, written
    before every ``up``); None for anything absent or unreadable."""
    try:
        config = yaml.safe_load(config_text) or {}
        raw = (config.get("config") or {}).get(key)
        if not isinstance(raw, str) or not raw:
            return None
        return LoadBalancerSpec.from_dict(json.loads(raw))
    except (ValueError, TypeError, KeyError, yaml.YAMLError, AttributeError):
        return None

"""A preview without the cloud: the lookups to replay, and what could not be checked.

A preview in CI reads the backend and nothing else (no cloud credentials). The program's cloud
lookups (networks, subnets, ports) are then replayed from what the stack's last ``up`` recorded
(:mod:`stacks.recorded`, the output ``lookups``): :func:`recorded_lookups` reads them from the
stack's outputs and state, :func:`replay_lookups` hands them to the program, and
:func:`not_checked` picks the program's "not checked" warnings out of the engine events.

A stack last applied before the program recorded its lookups has no ``lookups`` output; the
answers that decide a replacement are then taken from what the stack does record: the VIP
subnet and the floating network (outputs ``vip_subnet_id``, ``fip_network_id``), the floating
network's name (the floating IP's ``pool`` in the state), and that a VIP subnet-id or
network-id of the applied spec passed its family check. Its next ``up`` records them
all.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pulumi import automation as auto

from reconciler.engine.plan import applied_spec_from
from reconciler.engine.stack_meta import set_plain_config
from stacks.recorded import (
    EXTERNAL_NETWORK_KEY,
    network_name_key,
    vip_family_key,
    vip_subnet_key,
)
from stacks.vocabulary import (
    CONFIG_NAMESPACE,
    FIP_TYPE,
    LOOKUPS_KEY,
    LOOKUPS_OUTPUT,
    NOT_CHECKED_MARKER,
)

__all__ = ["PENDING_NOT_CHECKED", "not_checked", "recorded_lookups", "replay_lookups"]

PENDING_NOT_CHECKED = (
    "what an interrupted operation left pending in the stack (the controller's next operation "
    "looks it up in the cloud and imports it)"
)


def recorded_lookups(
    outputs: Mapping[str, Any] | None, deployment: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The lookups to replay for a stack with these outputs and state (none: a new stack)."""
    outputs = outputs or {}
    recorded = outputs.get(LOOKUPS_OUTPUT)
    if isinstance(recorded, Mapping):
        return dict(recorded)
    spec = applied_spec_from(dict(outputs))
    if spec is None:
        return {}
    found: dict[str, Any] = {}
    vip_subnet = outputs.get("vip_subnet_id")
    placed = spec.vip_port_id or spec.vip_subnet_id or spec.vip_network_id
    if vip_subnet and not placed and not spec.existing_lb_id:
        found[vip_subnet_key(spec)] = vip_subnet
    if (spec.vip_subnet_id or spec.vip_network_id) and not spec.vip_port_id:
        # the last `up` passed the family check of these (stacks.lookups.check_vip_family)
        found[vip_family_key(spec)] = True
    network = outputs.get("fip_network_id")
    fip = spec.floating_ip
    if network and fip is not None and not fip.network_id:
        found[EXTERNAL_NETWORK_KEY] = network
    pool = _floating_ip_pool(deployment)
    if network and pool:
        found[network_name_key(network)] = pool
    return found


def _floating_ip_pool(deployment: Mapping[str, Any] | None) -> str | None:
    for resource in (deployment or {}).get("resources") or []:
        if resource.get("type") == FIP_TYPE:
            pool = (resource.get("inputs") or {}).get("pool")
            return pool if isinstance(pool, str) else None
    return None


def replay_lookups(config_file: Path, recorded: Mapping[str, Any]) -> None:
    """Have the program of the stack whose settings file is ``config_file`` replay
    ``recorded`` instead of asking the cloud (its config key ``lookups-recorded``)."""
    key = f"{CONFIG_NAMESPACE}:{LOOKUPS_KEY}"
    if set_plain_config(config_file, key, json.dumps(dict(recorded), sort_keys=True)) is None:
        raise RuntimeError(f"{config_file}: no stack settings file to give the program {key}")


def not_checked(event: auto.EngineEvent) -> str | None:
    """What a "not checked" warning of the program says (None for any other event)."""
    diagnostic = event.diagnostic_event
    if diagnostic is None or NOT_CHECKED_MARKER not in diagnostic.message:
        return None
    return diagnostic.message.split(NOT_CHECKED_MARKER, 1)[1].strip()

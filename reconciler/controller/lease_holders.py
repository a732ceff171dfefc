"""Who held the leader Lease, recorded in it: pure, no API calls (:mod:`.lease` writes it).

Each replica, as it takes (or first renews) the Lease, adds itself to the annotation
``lb-reconciler.io/holders`` (:data:`HOLDERS`): its identity (the Lease's ``holderIdentity``, a
pod's name) and the hostname its ``pulumi`` children write into their stack locks (the pod's
name too, unless the pod sets another; outside a pod, the machine's), the newest last, at most
:data:`MAX_HOLDERS`. Only the replica holding the Lease writes stacks (every write is fenced by
it), so while one leads, every lock written under another holder's hostname is a dead or
deposed replica's, and stale; a lock under any other name is a person's, CI's or another
cluster's, and never removed (:mod:`reconciler.engine.state.lock_plan`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["HOLDERS", "MAX_HOLDERS", "Holder", "holders_json", "holders_of", "with_holder"]

HOLDERS = "lb-reconciler.io/holders"  # the Lease annotation naming its holders
MAX_HOLDERS = 16


@dataclass(frozen=True)
class Holder:
    """A replica that took the Lease: its identity and the hostname its ``pulumi`` children
    write into stack locks."""

    identity: str
    hostname: str


def holders_of(lease: Mapping[str, Any] | None) -> tuple[Holder, ...]:
    """The holders the Lease's :data:`HOLDERS` annotation names, oldest first; () without one
    or when it cannot be read (an entry without both names is left out)."""
    annotations = ((lease or {}).get("metadata") or {}).get("annotations") or {}
    try:
        raw = json.loads(str(annotations.get(HOLDERS) or "[]"))
    except ValueError:
        return ()
    if not isinstance(raw, list):
        return ()
    return tuple(
        Holder(str(item["identity"]), str(item["hostname"]))
        for item in raw
        if isinstance(item, Mapping) and item.get("identity") and item.get("hostname")
    )


def with_holder(holders: tuple[Holder, ...], me: Holder) -> tuple[Holder, ...]:
    """``holders`` with ``me`` last (an older entry of the same identity dropped), the newest
    :data:`MAX_HOLDERS` kept."""
    kept = tuple(h for h in holders if h.identity != me.identity)
    return (*kept, me)[-MAX_HOLDERS:]


def holders_json(holders: tuple[Holder, ...]) -> str:
    return json.dumps([{"identity": h.identity, "hostname": h.hostname} for h in holders])

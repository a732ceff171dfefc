"""Whether what a load balancer is made from changed since the last sync: pure functions.

* :func:`classify_change`: the spec of a sync against the last one this process applied for the
  same Service: nothing, only the pool members (``HOSTS``: upstream's "Updated load balancer
  with new hosts"), or anything else. It shapes the Events of a sync
  (:mod:`reconciler.controller.sync_plan`), never whether the engine runs: the engine's spec
  hash decides that;
* :func:`node_fingerprint`: what of the Nodes can change a load balancer, so the controller
  resyncs every Service only when that changed (:mod:`reconciler.controller.loop`).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from reconciler.model import LoadBalancerSpec
from reconciler.model import nodes as node_rules
from reconciler.model.predicates import part

__all__ = ["Change", "classify_change", "node_fingerprint"]


class Change(enum.Enum):
    """The spec compared with the last one this process applied for the same Service."""

    NONE = "none"
    HOSTS = "hosts"  # only pool members differ
    FULL = "full"  # anything else, or nothing known


def _without_members(spec: LoadBalancerSpec) -> LoadBalancerSpec:
    """``spec`` without what Node changes touch: members, and the autodetect address (the first
    Node's; the engine keeps the VIP subnet it detected once, see ``spec_for_stack``)."""
    listeners = tuple(replace(lst, pool=replace(lst.pool, members=())) for lst in spec.listeners)
    return replace(spec, listeners=listeners, vip_autodetect_address=None)


def classify_change(
    previous: LoadBalancerSpec | None, new: LoadBalancerSpec, *, previous_lb_id: str | None
) -> Change:
    """``previous_lb_id``: the id the engine returned last time. Our own ``load-balancer-id``
    annotation coming back in the next spec is not a change the user made."""
    if previous is None or previous.service.uid != new.service.uid:
        return Change.FULL
    if previous.existing_lb_id is None:
        new = new.owning(previous_lb_id)
    if new == previous:
        return Change.NONE
    if _without_members(new) == _without_members(previous):
        return Change.HOSTS
    return Change.FULL


def node_fingerprint(nodes: Sequence[Mapping[str, Any]]) -> frozenset[tuple[Any, ...]]:
    """What of the Nodes can change a load balancer (KEP-3458): the eligible Nodes, their labels
    (``node-selector`` reads them) and their addresses. Readiness is left out on purpose: a Ready
    flap must not rewrite every pool."""
    out = set()
    for node in nodes:
        if not node_rules.is_eligible(node):
            continue
        labels = tuple(sorted(part(part(node, "metadata"), "labels").items()))
        raw = part(node, "status").get("addresses")
        addresses = tuple(
            sorted(
                (str(a.get("type")), str(a.get("address")))
                for a in (raw if isinstance(raw, list) else [])
                if isinstance(a, Mapping) and a.get("type") in ("InternalIP", "ExternalIP")
            )
        )
        out.add((node_rules.node_name(node), labels, addresses))
    return frozenset(out)

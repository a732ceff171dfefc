"""Whether a Service's stack can be deleted the way OCCM deletes: one cascade ``DELETE`` of its
load balancer, then its floating IP; and what that deletes. Pure: it reads the stack's deployment
(the ``pulumi stack export`` format, ``apitype.DeploymentV3``) handed to it.

``pulumi destroy`` deletes members, monitor, pool, listener and load balancer one at a time and
waits for the load balancer to be ``ACTIVE`` after each; Octavia deletes the whole tree with one
cascade ``DELETE`` (what OCCM does). The direct path is taken only when the deployment proves that
nothing else is at stake (:func:`direct_deletion`): nothing pending, only the load-balancer tree
of the stack's own load balancer and a floating IP (with its association), nothing read from the
cloud rather than made (``external``). Everything else (a security group, a shared or released
load balancer, what a crash left) goes through ``destroy``
(:mod:`reconciler.engine.delete.stack`). The state stays the record: the stack is removed only after
everything it lists is gone from the cloud (:mod:`reconciler.engine.delete.direct`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
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

__all__ = ["DirectDeletion", "direct_deletion"]

# what a cascade DELETE of the load balancer takes with it
CASCADED = frozenset({LB_TYPE, LISTENER_TYPE, POOL_TYPE, MEMBERS_TYPE, MONITOR_TYPE})
# the association goes with the VIP port (Neutron disassociates a floating IP from a port it
# deletes), the floating IP itself is deleted unless kept
ALLOWED = CASCADED | {FIP_TYPE, FIP_ASSOCIATION_TYPE}


@dataclass(frozen=True)
class DirectDeletion:
    """What the direct path deletes: the load balancer (with cascade), then the floating IPs
    the stack made that are not kept. ``kept_floating_ips`` stay in the cloud."""

    lb_id: str
    floating_ips: tuple[str, ...]
    kept_floating_ips: tuple[str, ...]


def direct_deletion(
    deployment: Mapping[str, Any] | None, *, lb_id: str, keep_floating_ip: bool | None
) -> DirectDeletion | None:
    """The direct deletion of the stack whose deployment this is, or None when only
    ``destroy`` may delete it: the deployment is unknown, has a pending operation, holds
    anything but the tree of load balancer ``lb_id`` and floating IPs, or a resource that was
    read rather than made. ``keep_floating_ip`` is the Service's ``keep-floatingip`` now (None:
    as the state records it, ``retainOnDelete``)."""
    if deployment is None or deployment.get("pending_operations"):
        return None
    lbs: list[str] = []
    delete: list[str] = []
    kept: list[str] = []
    for res in deployment.get("resources") or []:
        kind = str(res.get("type") or "")
        if is_bookkeeping(kind):
            continue
        if kind not in ALLOWED or res.get("external") or not res.get("id"):
            return None
        if kind == LB_TYPE:
            lbs.append(str(res["id"]))
        elif kind == FIP_TYPE:
            keep = bool(res.get("retainOnDelete")) if keep_floating_ip is None else keep_floating_ip
            (kept if keep else delete).append(str(res["id"]))
    if lbs != [lb_id]:
        return None
    return DirectDeletion(lb_id=lb_id, floating_ips=tuple(delete), kept_floating_ips=tuple(kept))

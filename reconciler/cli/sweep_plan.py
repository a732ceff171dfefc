"""``lb-reconciler sweep``: what is orphaned, both ways. Pure.

**Stacks without a Service**: the housekeeper's own rule
(:func:`reconciler.controller.housekeeping_plan. is_orphan`): no Service of that namespace and name,
or one that wants none of our load balancers and holds none of our finalizers. Deleting one runs
``destroy`` (the stack's cloud objects go with it) and removes the stack.

**Cloud load balancers without a stack**: named ``kube_service_<cluster>_<namespace>_<name>``
for this cluster (namespace and name are DNS labels, so the rest of the name must be exactly two
``_``-free parts; a longer cluster name sharing the prefix does not match), referenced by no stack
(neither as its own nor as the shared one it uses). They are left alone, and said why, when:

* it is not proven this cluster's (:func:`reconciler.engine.adopt.ownership.not_this_clusters` says
  why): the name alone is no proof, since two clusters with the same ``--cluster-name`` in one
  project name theirs alike (OCCM #3102). Its description must be OCCM's for this cluster and, when
  it carries cluster identity tags (``kube_cluster_id_<uid>``), this cluster's (``cluster_id``, the
  kube-system namespace's UID) must be among them; without a known ``cluster_id`` no tagged one is
  swept. Checked first: "adopt it" would be wrong advice for another cluster's;

* a stack of that Service exists but has recorded no load balancer: an ``up`` of it may be
  running or have been interrupted (its next ``up`` imports the load balancer); a stack that has
  recorded *another* load balancer makes this one a leaked duplicate, which is deleted;
* the Service exists without a stack: one we serve had its load balancer made by OCCM
  (``lb-reconciler adopt`` takes it over); one we do not serve (another ``loadBalancerClass``,
  OCCM beside us) or that no longer wants one is never ours to delete;
* it is younger than ``min_age`` (a create racing with the listing);
* it is ``PENDING_*`` (Octavia refuses to delete it now; the next sweep will see it again).

Deleting one deletes it with cascade and its floating IPs that OCCM or we made.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from reconciler.controller.housekeeping_plan import is_orphan
from reconciler.controller.sync_plan import Action, ControllerSettings, decide
from reconciler.engine.adopt.ownership import not_this_clusters
from reconciler.engine.plan import StackInfo, parse_time
from reconciler.model.naming import SERVICE_PREFIX

__all__ = ["CloudOrphan", "Kept", "SweepPlan", "plan_sweep", "service_of_lb_name"]


@dataclass(frozen=True)
class CloudOrphan:
    lb_id: str
    name: str
    service: str  # namespace/name, from the load balancer's name
    vip_address: str | None
    vip_port_id: str | None


@dataclass(frozen=True)
class Kept:
    """Something that looks orphaned but is left alone, and why."""

    kind: str  # "stack" or "loadbalancer"
    what: str  # the stack's or the load balancer's name
    service: str
    reason: str
    ident: str = ""  # the load balancer's ID


@dataclass(frozen=True)
class SweepPlan:
    stacks: tuple[StackInfo, ...]
    load_balancers: tuple[CloudOrphan, ...]
    kept: tuple[Kept, ...]

    @property
    def empty(self) -> bool:
        return not self.stacks and not self.load_balancers


def service_of_lb_name(name: str, *, cluster_name: str) -> tuple[str, str] | None:
    """``(namespace, name)`` of a load balancer named for a Service of ``cluster_name``."""
    prefix = f"{SERVICE_PREFIX}{cluster_name}_"
    if not name.startswith(prefix):
        return None
    parts = name[len(prefix) :].split("_")
    if len(parts) != 2 or not all(parts):
        return None
    return parts[0], parts[1]


def plan_sweep(
    *,
    stacks: Sequence[StackInfo],
    services: Mapping[str, Mapping[str, Any]],
    load_balancers: Sequence[Mapping[str, Any]],
    settings: ControllerSettings,
    now: datetime,
    min_age: float,
    cluster_id: str = "",
) -> SweepPlan:
    """Orphans both ways (see the module's text); ``services`` is keyed ``namespace/name``;
    ``cluster_id`` is this cluster's identity (the kube-system UID), "" when unknown."""
    orphan_stacks: list[StackInfo] = []
    kept: list[Kept] = []
    for info in stacks:
        if not is_orphan(info, services.get(info.key), settings=settings):
            continue
        if info.busy:
            kept.append(Kept("stack", info.stack, info.key, "an operation is running on it"))
        else:
            orphan_stacks.append(info)
    referenced = {i for info in stacks for i in (info.lb_id, info.owns_lb) if i}
    recorded = {info.key: bool(info.lb_id) for info in stacks}
    orphan_lbs: list[CloudOrphan] = []
    for lb in load_balancers:
        lb_id, name = str(lb.get("id")), str(lb.get("name") or "")
        parsed = service_of_lb_name(name, cluster_name=settings.cluster_name)
        if parsed is None or lb_id in referenced:
            continue
        key = f"{parsed[0]}/{parsed[1]}"
        service = services.get(key)
        foreign = not_this_clusters(lb, cluster_name=settings.cluster_name, cluster_id=cluster_id)
        reason = (
            f"not made by this cluster: {foreign}"
            if foreign is not None
            else _keep_reason(lb, key, service, recorded, settings, now=now, min_age=min_age)
        )
        if reason is not None:
            kept.append(Kept("loadbalancer", name, key, reason, lb_id))
            continue
        vip, port = lb.get("vip_address"), lb.get("vip_port_id")
        orphan_lbs.append(
            CloudOrphan(lb_id, name, key, str(vip) if vip else None, str(port) if port else None)
        )
    return SweepPlan(tuple(orphan_stacks), tuple(orphan_lbs), tuple(kept))


def _keep_reason(
    lb: Mapping[str, Any],
    key: str,
    service: Mapping[str, Any] | None,
    recorded: Mapping[str, bool],
    settings: ControllerSettings,
    *,
    now: datetime,
    min_age: float,
) -> str | None:
    """Why an unreferenced load balancer named for this cluster is not deleted; None: delete."""
    if key in recorded and not recorded[key]:
        return "its Service's stack has recorded no load balancer yet; its next up imports it"
    if service is not None and key not in recorded:
        if decide(service, settings) is Action.ENSURE:
            return "its Service exists and has no stack: adopt it with `lb-reconciler adopt`"
        # OCCM beside us (other classes), or a Service on its way out: never ours to delete
        return "its Service exists and is not served by this controller"
    created = parse_time(lb.get("created_at"))
    if created is not None and (now - created).total_seconds() < min_age:
        return f"created less than {min_age:.0f}s ago"
    status = str(lb.get("provisioning_status") or "")
    if status.startswith("PENDING"):
        return f"{status}: Octavia refuses changes until it settles"
    return None

"""Fleet drift, the effects: the project's objects listed once, each stack's checkpoint read, and
the two compared by :func:`.fleet_plan.compare_stack`.

One comparison costs a listing per kind (load balancers, listeners, pools, health monitors,
floating IPs: every page of each) and one member listing per pool a stack records, plus a read of
each stack's checkpoint from the backend, one at a time (memory does not grow with the fleet's
checkpoints); no ``pulumi`` process. It needs a backend whose
checkpoints this code reads (a DIY bucket: ``file://``, ``s3://``, ``postgres://``); for another
(Pulumi Cloud, ``gs://``, ``azblob://``) :func:`compare_fleet` returns None and every stack keeps
its per-Service ``pulumi refresh``. A stack whose checkpoint cannot be read is left out of the
verdicts (so it keeps its per-Service check too).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from reconciler.engine.context import EngineContext
from reconciler.engine.fleet_plan import (
    CloudLists,
    FleetReport,
    Verdict,
    compare_stack,
    member_pools,
)
from reconciler.engine.openstack.client import OpenStackRest, OpenStackRestError
from stacks.vocabulary import FLOATINGIPS, HEALTHMONITORS, LISTENERS, LOADBALANCERS, POOLS

__all__ = ["compare_fleet"]


def _by_id(objects: Sequence[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    return {str(o["id"]): o for o in objects if o.get("id")}


def _members(rest: OpenStackRest, pool_id: str) -> dict[str, Mapping[str, Any]] | None:
    """The pool's members by id; None when the pool went since the pools were listed."""
    try:
        return _by_id(rest.pool_members(pool_id))
    except OpenStackRestError as exc:
        if exc.not_found:
            return None
        raise


def compare_fleet(engine: EngineContext, stacks: Sequence[str]) -> FleetReport | None:
    """Compare each of ``stacks`` with the cloud; None when the backend is not one whose
    checkpoints this code reads. Raises what the backend or the cloud raised (a listing that
    failed): the caller falls back to per-Service checks."""
    store = engine.store
    if store is None:
        return None
    rest = engine.rest()
    pools = _by_id(rest.every(POOLS))
    lists = CloudLists(
        loadbalancers=_by_id(rest.every(LOADBALANCERS)),
        listeners=_by_id(rest.every(LISTENERS)),
        pools=pools,
        healthmonitors=_by_id(rest.every(HEALTHMONITORS)),
        floatingips=_by_id(rest.every(FLOATINGIPS)),
    )
    # one checkpoint at a time: all of them held at once took the controller's peak memory from
    # 160 to 375 MiB at 2,000 stacks
    verdicts: dict[str, Verdict] = {}
    unread: list[str] = []
    listed = 0
    keys = store.checkpoint_keys()
    for name in stacks:
        key = keys.get(name)
        deployment = store.deployment(name, key=key) if key is not None else None
        resources = (deployment or {}).get("resources")
        if not isinstance(resources, list):
            unread.append(name)
            continue
        wanted = [p for p in member_pools(resources) if p in pools]
        listed += len(wanted)
        members = {p: m for p in wanted if (m := _members(rest, p)) is not None}
        verdicts[name] = compare_stack(resources, replace(lists, members=members))
    return FleetReport(verdicts, tuple(unread), listed)

"""Children a failed create left in the cloud without telling the state: what to look for. Pure.

A create the cloud carried out can still fail for Pulumi: the answer was lost (an API process
that died mid-answer, a dropped connection, an emulator restart in the chaos run) or the wait
for the new object hit an error before the provider had its ID. Pulumi then records neither the
object nor a pending operation. The load balancer and the floating IP are found and adopted
(:func:`reconciler.engine.plan.lost_lookups`); a lost *listener* blocks the Service for ever
(every later ``up`` creates it again and Octavia answers 409, the port being in use), and a lost
pool or monitor does the same on its listener or pool.

So after an ``up`` that did not finish, each listener, pool and monitor the spec wants and the
state lacks is looked for on our own load balancer by what identifies it (name, port, parent),
and a found one is deleted, not adopted: the next ``up`` creates it as the spec says now. An
import would fail for ever if the spec changed meanwhile (Pulumi refuses an import whose
inputs differ), and a child the state never had carries no traffic the Service relies on.

A lookup's ``find_by`` may refer to its parent as ``@<logical name>``: the parent's ID from the
state, or from what an earlier lookup found (a lost listener's lost pool). A reference nothing
resolves drops the lookup. Only the stack's own load balancer (``lb``) is searched: on a shared
or user's load balancer nothing is deleted here.
"""

from __future__ import annotations

from collections.abc import Mapping

from reconciler.engine.plan import PendingCreate
from reconciler.model.spec import LoadBalancerSpec
from stacks.vocabulary import (
    LB,
    LISTENER_TYPE,
    MONITOR_TYPE,
    POOL_TYPE,
    listener_name,
    logical_suffix,
    monitor_name,
    pool_name,
)

__all__ = ["lost_children", "resolve"]


def lost_children(spec: LoadBalancerSpec) -> list[PendingCreate]:
    """The listeners, pools and monitors of ``spec`` to look for, parents first."""
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

"""Reading what OCCM made for one Service, for :mod:`reconciler.engine.adopt.plan` (GETs only, no
decisions besides the one named there: which load balancer).

The load balancer by its OCCM name (and the one the ``load-balancer-id`` annotation names);
its listeners and each listener's default pool, with the pool's members and health monitor, from
the ids the load balancer and pool records list (no list filters, which clouds implement
unevenly); the floating IPs on its VIP port; the security group named as OCCM names the
Service's, when the Service manages one.
"""

from __future__ import annotations

from reconciler.engine.adopt.ownership import choose_load_balancer
from reconciler.engine.adopt.plan import Chain, Found, Obj
from reconciler.engine.openstack.client import OpenStackRest
from reconciler.model.spec import LoadBalancerSpec

__all__ = ["find_occm_objects"]


def _chains(rest: OpenStackRest, lb: Obj) -> tuple[Chain, ...]:
    chains = []
    for ref in lb.get("listeners") or ():
        listener = rest.listener(str(ref["id"]))
        if listener is None:
            continue
        pool_id = listener.get("default_pool_id")
        pool = rest.pool(str(pool_id)) if pool_id else None
        if pool is None:
            chains.append(Chain(listener))
            continue
        members = tuple(rest.pool_members(str(pool["id"])))
        monitor_id = pool.get("healthmonitor_id")
        monitor = rest.health_monitor(str(monitor_id)) if monitor_id else None
        chains.append(Chain(listener, pool, members, monitor))
    return tuple(chains)


def find_occm_objects(rest: OpenStackRest, spec: LoadBalancerSpec) -> tuple[Found, list[str]]:
    """What the cloud holds for ``spec``'s Service, and the problems choosing its load
    balancer (several with its name, an annotation naming one that does not exist)."""
    named = rest.load_balancers_named(spec.name)
    annotated = None
    if spec.existing_lb_id and not any(lb.get("id") == spec.existing_lb_id for lb in named):
        annotated = rest.load_balancer(spec.existing_lb_id)
    lb, shared, problems = choose_load_balancer(spec, named=named, annotated=annotated)
    groups: tuple[Obj, ...] = ()
    if spec.security_group is not None:
        groups = tuple(rest.security_groups_named(spec.security_group.name))
    if lb is None:
        return Found(None, security_groups=groups), problems
    fips: tuple[Obj, ...] = ()
    detached: tuple[Obj, ...] = ()
    if not shared and lb.get("vip_port_id"):
        fips = tuple(rest.floating_ips_on_port(str(lb["vip_port_id"])))
        if not fips and spec.floating_ip is not None and not spec.internal:
            # never a new address for a Service that had one: its floating IP may have been
            # detached from the VIP (OCCM's description names the Service)
            detached = tuple(rest.unattached_floating_ips(spec.floating_ip.description))
    return Found(
        lb, shared, _chains(rest, lb), fips, groups, detached_floating_ips=detached
    ), problems

"""Adopting OCCM's load balancers into Service stacks: which cloud object becomes which resource.
Pure.

A cluster moving from openstack-cloud-controller-manager (OCCM) already has, for each Service of
type LoadBalancer, an Octavia load balancer named ``kube_service_<cluster>_<ns>_<name>`` with
its listeners, pools, members and monitors, and a floating IP on its VIP port. ``lb-reconciler
adopt`` imports those objects into the Service's stack (Pulumi ``import``), so that the
controller takes them over without recreating anything: a new load balancer would mean a new
IP address.

The adoption's decisions, over plain dicts shaped like the Octavia and Neutron API's JSON (the
reading is :mod:`reconciler.engine.adopt.cloud`, the stack work
:mod:`reconciler.engine.adopt.stack`):

* which load balancer, and whether it is this cluster's: :mod:`reconciler.engine.adopt.ownership`;
* :func:`plan_adoption` (here): which cloud object becomes which logical resource of the program
  (:mod:`stacks.vocabulary`: ``lb``, ``listener-<proto>-<port>``, ``pool-...``, ``members-...``,
  ``monitor-...``, ``fip``, ``fip-association``, ``sg``, ``sg-rule-...``). Listeners are matched
  by port and protocol family, not by OCCM's index in the name, so a reordered port list still
  matches (the name is then an update). What the Service asks for and OCCM never made is
  created; what OCCM made and the Service no longer asks for is left alone and reported;
  anything ambiguous is a problem that stops the adoption of that Service;
* whether the import's preview may be applied: :mod:`reconciler.engine.adopt.preview`.

The Service's own load balancer id in ``loadbalancer.openstack.org/load-balancer-id`` (OCCM
writes it, as the controller does) is not a request to share: the plan's spec drops it, and the
stack's ``lbr:owns-lb`` tag makes the controller's later specs agree
(:func:`reconciler.engine.stack_spec.spec_for_stack`). An annotation naming a load balancer that
is not named for the Service means the Service shares it: then only its listener chains (the
listeners tagged with the Service's name) are adopted, never the load balancer or its floating
IP.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from reconciler.model.naming import SERVICE_PREFIX
from reconciler.model.spec import ListenerSpec, LoadBalancerSpec, SecurityGroupRuleSpec
from stacks.shared import port_family
from stacks.vocabulary import (
    FIP,
    FIP_ASSOCIATION,
    LB,
    SECURITY_GROUP,
    SG_RULE_PREFIX,
    listener_name,
    logical_suffix,
    members_name,
    monitor_name,
    pool_name,
    sg_rule_name,
)

__all__ = ["AdoptionPlan", "Chain", "Found", "Obj", "plan_adoption"]


Obj = Mapping[str, Any]


@dataclass(frozen=True)
class Chain:
    """One listener of the load balancer with its default pool, the pool's members and monitor."""

    listener: Obj
    pool: Obj | None = None
    members: tuple[Obj, ...] = ()
    monitor: Obj | None = None


@dataclass(frozen=True)
class Found:
    """What the cloud holds for one Service (as its API returned it)."""

    load_balancer: Obj | None
    shared: bool = False  # the Service's annotation names another Service's load balancer
    chains: tuple[Chain, ...] = ()
    floating_ips: tuple[Obj, ...] = ()  # on the load balancer's VIP port
    security_groups: tuple[Obj, ...] = ()  # named as OCCM names the Service's group (with rules)
    # on no port, with OCCM's description for this Service (detached from its VIP by hand)
    detached_floating_ips: tuple[Obj, ...] = ()


@dataclass(frozen=True)
class AdoptionPlan:
    """``imports`` {logical name: cloud ID} for ``spec`` (the spec as the stack must declare it).
    ``notes`` say what will be created and what is left alone; ``problems`` stop the adoption."""

    spec: LoadBalancerSpec
    lb_id: str | None
    shared: bool = False
    imports: dict[str, str] = field(default_factory=dict)
    described: dict[str, str] = field(default_factory=dict)  # logical name -> what it is
    notes: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()

    @property
    def found(self) -> bool:
        """There is something to adopt."""
        return self.lb_id is not None


def _ours(listener: Obj, lb_name: str, *, shared: bool) -> bool:
    """A listener of this Service: tagged with its name; on its own load balancer also one
    without any Service's tag (OCCM before tags)."""
    tags = [str(t) for t in listener.get("tags") or ()]
    if lb_name in tags:
        return True
    return not shared and not any(t.startswith(SERVICE_PREFIX) for t in tags)


def _describe(kind: str, obj: Obj, extra: str = "") -> str:
    name = str(obj.get("name") or "")
    return f"{kind} {name or '(no name)'}{' ' + extra if extra else ''}"


def _port_of(listener: Obj) -> str:
    return f"{listener.get('protocol')}/{listener.get('protocol_port')}"


class _Builder:
    """Collects the plan while walking the spec and the found objects."""

    def __init__(self) -> None:
        self.imports: dict[str, str] = {}
        self.described: dict[str, str] = {}
        self.notes: list[str] = []
        self.problems: list[str] = []

    def take(self, name: str, obj: Obj, what: str) -> None:
        self.imports[name] = str(obj["id"])
        self.described[name] = what


def _chain(
    b: _Builder, listener: ListenerSpec, chains: list[Chain], lb_name: str, *, shared: bool
) -> None:
    key = logical_suffix(listener)
    family = port_family(listener.service_protocol)
    candidates = [
        c
        for c in chains
        if c.listener.get("protocol_port") == listener.protocol_port
        and port_family(str(c.listener.get("protocol"))) == family
    ]
    mine = [c for c in candidates if _ours(c.listener, lb_name, shared=shared)]
    port = f"{listener.service_protocol}/{listener.protocol_port}"
    if not mine:
        if candidates:
            owner = ", ".join(str(t) for t in candidates[0].listener.get("tags") or ())
            b.problems.append(
                f"port {port}: the load balancer's listener on it belongs to another Service "
                f"({owner or 'no tag'}); free the port or change the Service's port"
            )
        else:
            b.notes.append(f"port {port}: no listener on it; its listener and pool are created")
        return
    chain = mine[0]
    chains.remove(chain)
    b.take(listener_name(key), chain.listener, _describe("listener", chain.listener, port))
    pool = chain.pool
    if pool is None:
        b.notes.append(f"port {port}: the listener has no pool; its pool is created")
        return
    b.take(pool_name(key), pool, _describe("pool", pool))
    if listener.pool.members:
        what = f"{len(chain.members)} members of {pool.get('name') or pool.get('id')}"
        b.take(members_name(key), pool, what)
    elif chain.members:
        b.notes.append(
            f"port {port}: the pool's {len(chain.members)} members are left as they are (the "
            "Service has no eligible Node or node port for it)"
        )
    monitor = chain.monitor
    if listener.pool.monitor is not None:
        if monitor is None:
            b.notes.append(f"port {port}: the pool has no health monitor; one is created")
        else:
            b.take(monitor_name(key), monitor, _describe("health monitor", monitor))
    elif monitor is not None:
        b.notes.append(
            f"port {port}: health monitor {monitor.get('name') or monitor.get('id')} is left "
            "as it is (the Service asks for none; delete it by hand if it should go)"
        )


def _addresses(fips: Sequence[Obj]) -> str:
    return ", ".join(str(f.get("floating_ip_address")) for f in fips)


def _floating_ip(
    b: _Builder, spec: LoadBalancerSpec, fips: Sequence[Obj], detached: Sequence[Obj] = ()
) -> None:
    wanted = spec.floating_ip
    addresses = _addresses(fips)
    if wanted is None or spec.internal:
        if fips:
            b.notes.append(
                f"floating IP {addresses} on the VIP port is left as it is (the Service is "
                "internal or asks for none)"
            )
        return
    if wanted.address:
        match = [f for f in fips if f.get("floating_ip_address") == wanted.address]
        if not match:
            if fips:
                b.problems.append(
                    f"spec.loadBalancerIP is {wanted.address} but the VIP port has floating IP "
                    f"{addresses}; set spec.loadBalancerIP to it"
                )
            else:
                b.notes.append(f"no floating IP on the VIP port; {wanted.address} is associated")
            return
        fip = match[0]
        what = f"floating IP {wanted.address}"
        if fip.get("description") == wanted.description:
            b.take(FIP, fip, what)
        b.take(FIP_ASSOCIATION, fip, f"association of {what} with the VIP port")
        return
    ours = [f for f in fips if f.get("description") == wanted.description]
    if len(ours) > 1:
        b.problems.append(f"the VIP port has {len(ours)} floating IPs of this Service: {addresses}")
    elif ours:
        what = f"floating IP {ours[0].get('floating_ip_address')}"
        b.take(FIP, ours[0], what)
        b.take(FIP_ASSOCIATION, ours[0], f"association of {what} with the VIP port")
    elif fips:
        b.problems.append(
            f"floating IP {addresses} on the VIP port was not made for this Service (its "
            "description differs); set spec.loadBalancerIP to it to keep that address"
        )
    elif len(detached) == 1:
        # the Service's address, detached from the VIP: kept, associated again
        what = f"floating IP {detached[0].get('floating_ip_address')}"
        b.take(FIP, detached[0], what + " (on no port)")
        b.notes.append(f"{what} of this Service is on no port; it is associated with the VIP port")
    elif detached:
        b.problems.append(
            f"no floating IP on the VIP port, and {len(detached)} of this Service on no port: "
            f"{_addresses(detached)}; delete the ones it should not keep, or set "
            "spec.loadBalancerIP"
        )
    else:
        b.notes.append("no floating IP on the VIP port; one is created (a new address)")


def _rule_name(rule: Obj) -> str:
    """The program's logical name of a security-group rule (stacks.resources.security_group)."""
    return sg_rule_name(
        protocol=rule.get("protocol"),
        port_range_min=rule.get("port_range_min"),
        port_range_max=rule.get("port_range_max"),
        ethertype=str(rule.get("ethertype")),
        remote_ip_prefix=rule.get("remote_ip_prefix"),
    )


def _rule_matches(rule: Obj, wanted: SecurityGroupRuleSpec) -> bool:
    """Same protocol, family and ports; the same source unless the spec leaves it to the member
    subnet's CIDR (then any: the program's name for it says which)."""
    same = (rule.get("protocol"), rule.get("ethertype"), rule.get("port_range_min")) == (
        wanted.protocol,
        wanted.ethertype,
        wanted.port_range_min,
    )
    prefix = wanted.remote_ip_prefix
    return (
        same
        and rule.get("port_range_max") == wanted.port_range_max
        and (prefix is None or rule.get("remote_ip_prefix") == prefix)
    )


def _security_group(b: _Builder, spec: LoadBalancerSpec, groups: Sequence[Obj]) -> None:
    sg = spec.security_group
    if sg is None:
        return
    if len(groups) > 1:
        b.problems.append(f"{len(groups)} security groups are named {sg.name}; delete the extra")
        return
    if not groups:
        b.notes.append(f"no security group {sg.name}; it is created with its rules")
        return
    group = groups[0]
    b.take(SECURITY_GROUP, group, f"security group {sg.name}")
    found = [r for r in group.get("security_group_rules") or () if r.get("direction") == "ingress"]
    for wanted in sg.rules:
        match = [r for r in found if _rule_matches(r, wanted)]
        if match:
            found.remove(match[0])
            b.take(
                _rule_name(match[0]),
                match[0],
                f"rule {_rule_name(match[0])[len(SG_RULE_PREFIX) :]}",
            )
        else:
            b.notes.append(
                f"security group rule {wanted.protocol} {wanted.port_range_min}: created"
            )
    for rule in found:
        b.notes.append(
            f"security group rule {_rule_name(rule)[len(SG_RULE_PREFIX) :]} is left as it is"
        )


def plan_adoption(spec: LoadBalancerSpec, found: Found) -> AdoptionPlan:
    """Which found object becomes which logical resource of ``spec``'s stack."""
    lb = found.load_balancer
    if lb is None:
        return AdoptionPlan(spec, None)
    b = _Builder()
    lb_id = str(lb["id"])
    status = lb.get("provisioning_status")
    if status != "ACTIVE":
        b.problems.append(
            f"load balancer {lb.get('name')} ({lb_id}) is {status}; wait until it is ACTIVE or "
            "repair it, then adopt"
        )
    if found.shared:
        b.notes.append(
            f"the Service shares load balancer {lb.get('name')} ({lb_id}); only its listeners "
            "are adopted"
        )
    else:
        b.take(LB, lb, f"load balancer {lb.get('name')}")
        if spec.existing_lb_id == lb_id:
            spec = replace(spec, existing_lb_id=None)
        placed = spec.vip_subnet_id or spec.vip_network_id or spec.vip_port_id
        if spec.vip_autodetect_address and not placed and lb.get("vip_subnet_id"):
            # the subnet OCCM detected when it made the load balancer (stack_spec keeps it)
            spec = replace(
                spec, vip_subnet_id=str(lb["vip_subnet_id"]), vip_autodetect_address=None
            )
    chains = list(found.chains)
    for listener in sorted(spec.listeners, key=lambda li: li.index):
        _chain(b, listener, chains, spec.name, shared=found.shared)
    for chain in chains:
        if _ours(chain.listener, spec.name, shared=found.shared):
            b.notes.append(
                f"{_describe('listener', chain.listener, _port_of(chain.listener))} is left as "
                "it is: the Service has no such port; delete it by hand (while it is there, the "
                "load balancer cannot be deleted with the Service)"
            )
        elif not found.shared:
            tags = ", ".join(str(t) for t in chain.listener.get("tags") or ())
            b.notes.append(
                f"{_describe('listener', chain.listener, _port_of(chain.listener))} belongs to "
                f"another Service sharing the load balancer ({tags}); left as it is"
            )
    if not found.shared:
        _floating_ip(b, spec, found.floating_ips, found.detached_floating_ips)
    _security_group(b, spec, found.security_groups)
    return AdoptionPlan(
        spec=spec,
        lb_id=lb_id,
        shared=found.shared,
        imports=b.imports,
        described=b.described,
        notes=tuple(b.notes),
        problems=tuple(b.problems),
    )

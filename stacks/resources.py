"""The program's resources, one builder per kind; :mod:`stacks.program` composes them.

* :func:`own_load_balancer` (placed by :func:`vip_placement`) or, for a Service that shares one
  (``load-balancer-id``), :func:`existing_load_balancer`: the :class:`Target` the listeners go on;
* :func:`listener_chain`: one Service port's listener -> pool -> members -> monitor;
* :func:`floating_ip`: the floating IP and its association with the VIP port;
* :func:`security_group`: the group, its rules and its association with the Nodes' ports.

Each resource is declared under its logical name (:mod:`stacks.vocabulary`) and, when the
engine found the object in the cloud (``imports``: logical name -> cloud ID, after a crash or
for ``lb-reconciler adopt``), with ``import_`` (:func:`adopting`). Ordering, protection and
delete-before-replace are explained in :mod:`stacks.program`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pulumi
import pulumi_openstack as openstack

from reconciler.model.annotations import LOAD_BALANCER_ID
from reconciler.model.spec import ListenerSpec, LoadBalancerSpec
from stacks.lookups import InvalidSpecError
from stacks.recorded import Lookups
from stacks.shared import shared_problems
from stacks.vocabulary import (
    FIP,
    FIP_ASSOCIATION,
    LB,
    SECURITY_GROUP,
    listener_name,
    logical_suffix,
    members_name,
    monitor_name,
    pool_name,
    sg_port_name,
    sg_rule_name,
)

__all__ = [
    "FloatingIp",
    "Target",
    "Vip",
    "adopting",
    "existing_load_balancer",
    "floating_ip",
    "listener_chain",
    "own_load_balancer",
    "security_group",
    "vip_placement",
]


@dataclass(frozen=True)
class Target:
    """The load balancer the listeners go on."""

    id: pulumi.Input[str]
    vip_address: pulumi.Input[str]
    vip_port_id: pulumi.Input[str]
    resource: pulumi.Resource | None  # None when it belongs to another stack
    floating_ip: str | None = None  # of a shared load balancer


def adopting(
    imports: Mapping[str, str], name: str, opts: pulumi.ResourceOptions | None = None
) -> pulumi.ResourceOptions:
    """``opts`` plus ``import_`` when the engine found this object in the cloud (after a crash,
    or OCCM's, for ``lb-reconciler adopt``)."""
    ident = imports.get(name)
    extra = pulumi.ResourceOptions(import_=ident) if ident else pulumi.ResourceOptions()
    return (opts or pulumi.ResourceOptions()).merge(extra)


@dataclass(frozen=True)
class Vip:
    subnet_id: str | None = None
    network_id: str | None = None
    port_id: str | None = None


def vip_placement(spec: LoadBalancerSpec, look: Lookups) -> Vip:
    """The spec's VIP port, or subnet and/or network; else the autodetected subnet."""
    if spec.vip_port_id:
        return Vip(port_id=spec.vip_port_id)
    if spec.vip_subnet_id or spec.vip_network_id:
        look.check_vip_family(spec)  # a subnet or network of the other family is an error
        return Vip(subnet_id=spec.vip_subnet_id, network_id=spec.vip_network_id)
    return Vip(subnet_id=look.vip_subnet_id(spec))


def own_load_balancer(
    spec: LoadBalancerSpec, vip: Vip, *, release: bool, imports: Mapping[str, str]
) -> Target:
    lb = openstack.loadbalancer.LoadBalancer(
        LB,
        name=spec.name,
        description=spec.description,
        tags=list(spec.lb_tags()),
        loadbalancer_provider=spec.provider,
        flavor_id=spec.flavor_id,
        availability_zone=spec.availability_zone,
        vip_address=spec.vip_address,
        vip_subnet_id=vip.subnet_id,
        vip_network_id=vip.network_id,
        vip_port_id=vip.port_id,
        # the tags are set when it is made; then the engine adds to them (every Service on it
        # adds its name, as OCCM does), and an `up` of its owner must not take them away
        opts=adopting(
            imports,
            LB,
            pulumi.ResourceOptions(
                retain_on_delete=release, protect=not release, ignore_changes=["tags"]
            ),
        ),
    )
    return Target(lb.id, lb.vip_address, lb.vip_port_id, lb)


def existing_load_balancer(spec: LoadBalancerSpec, lb_id: str, look: Lookups) -> Target:
    """The load balancer a shared Service goes on, once it may (:mod:`stacks.shared`)."""
    if spec.internal:
        raise InvalidSpecError(
            "an internal Service cannot share a load balancer (its floating IP would expose it); "
            f"remove {LOAD_BALANCER_ID} or the internal annotation"
        )
    shared = look.shared_load_balancer(spec, lb_id)
    if spec.name not in shared.other_services and len(shared.other_services) >= (
        spec.max_shared_lb
    ):
        raise InvalidSpecError(
            f"load balancer {lb_id} already serves {len(shared.other_services)} Services "
            f"({', '.join(shared.other_services)}), the most max-shared-lb={spec.max_shared_lb} "
            "allows; raise max-shared-lb in cloud.conf or use another load balancer"
        )
    fip = spec.floating_ip
    wants_fip = fip is not None and bool(fip.network_id or look.external_network_id())
    problems = shared_problems(spec, shared, wants_floating_ip=wants_fip)
    if problems:
        raise InvalidSpecError(f"cannot share load balancer {lb_id}: " + "; ".join(problems))
    return Target(shared.id, shared.vip_address, shared.vip_port_id, None, shared.floating_ip)


def listener_chain(
    listener: ListenerSpec,
    lb: Target,
    after: pulumi.Resource | None,
    *,
    delete_timeout: str,
    imports: Mapping[str, str],
) -> pulumi.Resource:
    """One port: listener -> pool -> members -> monitor, after ``after``; returns the last
    resource."""
    key = logical_suffix(listener)
    child = pulumi.ResourceOptions(
        delete_before_replace=True, custom_timeouts=pulumi.CustomTimeouts(delete=delete_timeout)
    )
    first = child.merge(pulumi.ResourceOptions(depends_on=[after] if after is not None else []))
    pool_spec = listener.pool
    created = openstack.loadbalancer.Listener(
        listener_name(key),
        name=listener.name,
        loadbalancer_id=lb.id,
        protocol=listener.protocol,
        protocol_port=listener.protocol_port,
        connection_limit=listener.connection_limit,
        timeout_client_data=listener.timeout_client_data,
        timeout_member_connect=listener.timeout_member_connect,
        timeout_member_data=listener.timeout_member_data,
        timeout_tcp_inspect=listener.timeout_tcp_inspect,
        allowed_cidrs=list(listener.allowed_cidrs) or None,
        insert_headers=dict(listener.insert_headers) or None,
        default_tls_container_ref=listener.default_tls_container_ref,
        tags=list(listener.tags),
        opts=adopting(imports, listener_name(key), first),
    )
    pool = openstack.loadbalancer.Pool(
        pool_name(key),
        name=pool_spec.name,
        listener_id=created.id,
        protocol=pool_spec.protocol,
        lb_method=pool_spec.lb_algorithm,
        persistence=(
            openstack.loadbalancer.PoolPersistenceArgs(type=pool_spec.session_persistence)
            if pool_spec.session_persistence
            else None
        ),
        tags=list(pool_spec.tags) or None,
        opts=adopting(imports, pool_name(key), child),
    )
    last: pulumi.Resource = pool
    if pool_spec.members:
        last = openstack.loadbalancer.Members(
            members_name(key),
            pool_id=pool.id,
            members=[
                openstack.loadbalancer.MembersMemberArgs(
                    name=m.name,
                    address=m.address,
                    protocol_port=m.protocol_port,
                    subnet_id=m.subnet_id,
                    monitor_port=m.monitor_port,
                )
                for m in pool_spec.members
            ],
            opts=adopting(
                imports, members_name(key), child.merge(pulumi.ResourceOptions(depends_on=[pool]))
            ),
        )
    mon = pool_spec.monitor
    if mon is not None:
        last = openstack.loadbalancer.Monitor(
            monitor_name(key),
            name=mon.name,
            pool_id=pool.id,
            type=mon.type,
            delay=mon.delay,
            timeout=mon.timeout,
            max_retries=mon.max_retries,
            max_retries_down=mon.max_retries_down,
            http_method=mon.http_method,
            url_path=mon.url_path,
            expected_codes=mon.expected_codes,
            opts=adopting(
                imports, monitor_name(key), child.merge(pulumi.ResourceOptions(depends_on=[last]))
            ),
        )
    return last


@dataclass(frozen=True)
class FloatingIp:
    address: pulumi.Input[str]
    network_id: str  # as resolved (the engine keeps it: stack_spec)
    subnet_id: str | None
    created: bool  # False: the user's own floating IP, only associated


def floating_ip(
    spec: LoadBalancerSpec,
    lb: Target,
    look: Lookups,
    *,
    release: bool,
    imports: Mapping[str, str],
) -> FloatingIp | None:
    """Declare the floating IP and its association (None: no FIP)."""
    fip = spec.floating_ip
    if fip is None or spec.internal:
        return None
    network_id = fip.network_id or look.external_network_id()
    if network_id is None:
        return None
    address: pulumi.Input[str]
    subnet_id: str | None = None
    existing = look.existing_floating_ip(fip.address) if fip.address else None
    users_own = existing is not None and existing.description != fip.description
    if existing is not None and users_own:
        address = existing.address  # the user's floating IP: only associate it
    else:
        pool = look.network_name(network_id)
        subnet_id = look.floating_subnet_id(fip, network_id)
        created = openstack.networking.FloatingIp(
            FIP,
            pool=pool,
            address=fip.address,
            subnet_id=subnet_id,
            description=fip.description,
            opts=adopting(
                imports,
                FIP,
                pulumi.ResourceOptions(
                    retain_on_delete=fip.keep or release,
                    delete_before_replace=True,
                    protect=not release,
                ),
            ),
        )
        address = created.address
    openstack.networking.FloatingIpAssociate(
        FIP_ASSOCIATION,
        floating_ip=address,
        port_id=lb.vip_port_id,
        opts=adopting(imports, FIP_ASSOCIATION, pulumi.ResourceOptions(retain_on_delete=release)),
    )
    return FloatingIp(address, network_id, subnet_id, created=not users_own)


def security_group(
    spec: LoadBalancerSpec, vip_subnet: str | None, look: Lookups, *, imports: Mapping[str, str]
) -> None:
    """The security group (``manage-security-groups``), its rules, and its association with the
    port of each member Node; nothing when the spec has none."""
    sg_spec = spec.security_group
    if sg_spec is None:
        return
    group = openstack.networking.SecGroup(
        SECURITY_GROUP,
        name=sg_spec.name,
        description=sg_spec.description,
        tags=list(spec.tags),
        opts=adopting(imports, SECURITY_GROUP),
    )
    member_subnet = spec.member_subnet_id or vip_subnet
    cidr: str | None = None
    for rule in sg_spec.rules:
        prefix = rule.remote_ip_prefix
        if prefix is None:
            if member_subnet is None:
                raise InvalidSpecError(
                    "manage-security-groups needs the member subnet; set member-subnet-id or "
                    "subnet-id in cloud.conf"
                )
            cidr = cidr or look.subnet_cidr(member_subnet)
            prefix = cidr
        openstack.networking.SecGroupRule(
            sg_rule_name(
                protocol=rule.protocol,
                port_range_min=rule.port_range_min,
                port_range_max=rule.port_range_max,
                ethertype=rule.ethertype,
                remote_ip_prefix=prefix,
            ),
            direction="ingress",
            ethertype=rule.ethertype,
            protocol=rule.protocol,
            port_range_min=rule.port_range_min,
            port_range_max=rule.port_range_max,
            remote_ip_prefix=prefix,
            security_group_id=group.id,
        )
    addresses = sorted({m.address for li in spec.listeners for m in li.pool.members})
    for address in addresses:
        port = look.node_port(address)
        if port is None:
            continue  # a Node without a Neutron port here: nothing to attach the group to
        openstack.networking.PortSecGroupAssociate(
            sg_port_name(address),
            port_id=port,
            security_group_ids=[group.id],
            enforce=False,
        )

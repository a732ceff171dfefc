"""The Pulumi program: one :class:`LoadBalancerSpec` -> ``pulumi_openstack`` resources.

One function, :func:`main`, serves both ways of running it: the controller's Automation API stack
(an inline program) and the plain CLI (``Pulumi.yaml`` has ``main: stacks/``). Both read the spec
from the stack's configuration, key ``lb-reconciler:spec`` (the spec's canonical JSON; the keys
and the logical names are spelt in :mod:`stacks.vocabulary`), so what the CLI previews is exactly
what the controller applies. OpenStack credentials are the default
provider's configuration (``openstack:authUrl``, secret ``openstack:password`` ...), set by the
engine; nothing here knows about Kubernetes or does I/O other than through Pulumi.

What is declared (OCCM's names and tags, from the spec):

* the Octavia load balancer (unless the Service shares an existing one, ``existing_lb_id``);
* per Service port: listener -> pool -> members (the batch ``Members`` resource) -> monitor;
* a Neutron floating IP and its association with the VIP port, unless the Service is internal
  (a ``loadBalancerIP`` that is already a floating IP not made by us is only associated);
* a security group with its rules, attached to the member Nodes' ports, when
  ``manage-security-groups`` is on.

**Ordering.** Octavia answers 409 to any change under a load balancer that is ``PENDING_*``, and
every change to a child makes it so. Children of one load balancer are therefore one chain:
listener -> pool -> members -> monitor for a port, and each port's chain after the previous
port's (``depends_on``); Pulumi deletes in the reverse order. Neutron objects (floating IP,
security group) have no such lock and run in parallel with the chain. Logical names of the
children are keyed by protocol and port (``listener-tcp-80``), not by the port's index, so that
removing one port renames the others in place instead of replacing them onto a port that is
still taken; children are replaced delete-before-create, since Octavia allows one listener per
port, one default pool per listener and one monitor per pool.

**Shared load balancers** (``load-balancer-id``): only the listener chains are declared, on the
existing load balancer; the Services already on it are the other ``kube_service_`` names among
its tags and its listeners' (:func:`stacks.lookups.shared_load_balancer`), and ``max-shared-lb``
counts them. An internal Service cannot share (OCCM: floating IPs belong to the load balancer,
not to a listener). The load balancer's tags are given when it is made and ``ignore_changes``
after: every Service on it adds its name there (reconciler/engine/lb_tags.py).

**Protection.** The load balancer and the floating IP are declared ``protect``: an ``up`` whose
plan would delete or replace either (a create-only field the engine failed to freeze, a
property that becomes replace-on-change in a provider upgrade) fails before it changes anything,
and the cloud stays as it was. The engine lifts the protection only where deleting is what the
Service asked for: ``destroy`` of a Service going away, the floating IP of a Service made
internal, and the release of a shared load balancer (``release`` declares them unprotected).

Exports: ``spec`` (JSON), ``spec_hash``, ``lb_id``, ``vip_address``, ``vip_port_id``,
``floating_ip`` (None when there is none), ``shared`` (whether the LB is someone else's),
``vip_subnet_id`` and the floating IP's ``fip_network_id`` and ``fip_subnet_id`` as resolved.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass

import pulumi
import pulumi_openstack as openstack

from reconciler.model.spec import ListenerSpec, LoadBalancerSpec
from stacks import lookups
from stacks.lookups import InvalidSpecError
from stacks.shared import shared_problems
from stacks.vocabulary import (
    CHILD_DELETE_TIMEOUT_KEY,
    CONFIG_NAMESPACE,
    DEFAULT_CHILD_DELETE_TIMEOUT,
    FIP,
    FIP_ASSOCIATION,
    IMPORTS_KEY,
    LB,
    RELEASE_KEY,
    SECURITY_GROUP,
    SPEC_KEY,
    listener_name,
    logical_suffix,
    members_name,
    monitor_name,
    pool_name,
    sg_port_name,
    sg_rule_name,
)

__all__ = ["adoptable_names", "declare", "main"]


_IMPORTS: ContextVar[dict[str, str]] = ContextVar("lbr_imports", default={})  # noqa: B039


def main() -> None:
    """The program as Pulumi runs it: the spec (and options) from the stack's configuration."""
    config = pulumi.Config(CONFIG_NAMESPACE)
    spec = LoadBalancerSpec.from_dict(json.loads(config.require(SPEC_KEY)))
    imports = json.loads(config.get(IMPORTS_KEY) or "{}")
    declare(
        spec,
        release=config.get_bool(RELEASE_KEY) or False,
        imports=imports,
        child_delete_timeout=config.get(CHILD_DELETE_TIMEOUT_KEY) or DEFAULT_CHILD_DELETE_TIMEOUT,
    )


@dataclass(frozen=True)
class _Target:
    """The load balancer the listeners go on."""

    id: pulumi.Input[str]
    vip_address: pulumi.Input[str]
    vip_port_id: pulumi.Input[str]
    resource: pulumi.Resource | None  # None when it belongs to another stack
    floating_ip: str | None = None  # of a shared load balancer


def adoptable_names(spec: LoadBalancerSpec) -> frozenset[str]:
    """The logical names under which :func:`declare` can adopt an object of ``spec`` (the
    names ``import_`` may be given for, see ``IMPORTS_KEY``). An object the engine found in the
    cloud under any other name (a port the spec no longer has) would be neither adopted nor
    deleted by the next ``up``; the engine deletes it. ``fip`` counts whenever the spec wants a
    floating IP (the program may then only associate the user's own, which is never found as
    ours: its description is not ours)."""
    names: set[str] = set()
    if not spec.existing_lb_id:
        names.add(LB)
        if spec.floating_ip is not None and not spec.internal:
            names |= {FIP, FIP_ASSOCIATION}
    for listener in spec.listeners:
        key = logical_suffix(listener)
        names |= {listener_name(key), pool_name(key)}
        if listener.pool.members:
            names.add(members_name(key))
        if listener.pool.monitor is not None:
            names.add(monitor_name(key))
    if spec.security_group is not None:
        names.add(SECURITY_GROUP)
    return frozenset(names)


@dataclass(frozen=True)
class _Vip:
    subnet_id: str | None = None
    network_id: str | None = None
    port_id: str | None = None


def _vip_placement(spec: LoadBalancerSpec) -> _Vip:
    """The spec's VIP port, or subnet and/or network; else the autodetected subnet."""
    if spec.vip_port_id:
        return _Vip(port_id=spec.vip_port_id)
    if spec.vip_subnet_id or spec.vip_network_id:
        lookups.check_vip_family(spec)  # a subnet or network of the other family is an error
        return _Vip(subnet_id=spec.vip_subnet_id, network_id=spec.vip_network_id)
    return _Vip(subnet_id=lookups.vip_subnet_id(spec))


def _own_load_balancer(spec: LoadBalancerSpec, vip: _Vip, *, release: bool) -> _Target:
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
        opts=_adopt(
            LB,
            pulumi.ResourceOptions(
                retain_on_delete=release, protect=not release, ignore_changes=["tags"]
            ),
        ),
    )
    return _Target(lb.id, lb.vip_address, lb.vip_port_id, lb)


def _shared_load_balancer(spec: LoadBalancerSpec, lb_id: str) -> _Target:
    if spec.internal:
        raise InvalidSpecError(
            "an internal Service cannot share a load balancer (its floating IP would expose it); "
            "remove loadbalancer.openstack.org/load-balancer-id or the internal annotation"
        )
    shared = lookups.shared_load_balancer(spec, lb_id)
    if spec.name not in shared.other_services and len(shared.other_services) >= (
        spec.max_shared_lb
    ):
        raise InvalidSpecError(
            f"load balancer {lb_id} already serves {len(shared.other_services)} Services "
            f"({', '.join(shared.other_services)}), the most max-shared-lb={spec.max_shared_lb} "
            "allows; raise max-shared-lb in cloud.conf or use another load balancer"
        )
    fip = spec.floating_ip
    wants_fip = fip is not None and bool(fip.network_id or lookups.external_network_id())
    problems = shared_problems(spec, shared, wants_floating_ip=wants_fip)
    if problems:
        raise InvalidSpecError(f"cannot share load balancer {lb_id}: " + "; ".join(problems))
    return _Target(shared.id, shared.vip_address, shared.vip_port_id, None, shared.floating_ip)


def _chain(
    spec: LoadBalancerSpec,
    listener: ListenerSpec,
    lb: _Target,
    after: pulumi.Resource | None,
    *,
    delete_timeout: str,
) -> pulumi.Resource:
    """One port: listener -> pool -> members -> monitor; returns the last resource."""
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
        opts=_adopt(listener_name(key), first),
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
        opts=_adopt(pool_name(key), child),
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
            opts=_adopt(members_name(key), child.merge(pulumi.ResourceOptions(depends_on=[pool]))),
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
            opts=_adopt(monitor_name(key), child.merge(pulumi.ResourceOptions(depends_on=[last]))),
        )
    return last


@dataclass(frozen=True)
class _FloatingIp:
    address: pulumi.Input[str]
    network_id: str  # as resolved (the engine keeps it: stack_spec)
    subnet_id: str | None
    created: bool  # False: the user's own floating IP, only associated


def _floating_ip(spec: LoadBalancerSpec, lb: _Target, *, release: bool) -> _FloatingIp | None:
    """Declare the floating IP and its association (None: no FIP)."""
    fip = spec.floating_ip
    if fip is None or spec.internal:
        return None
    network_id = fip.network_id or lookups.external_network_id()
    if network_id is None:
        return None
    address: pulumi.Input[str]
    subnet_id: str | None = None
    existing = lookups.existing_floating_ip(fip.address) if fip.address else None
    users_own = existing is not None and existing.description != fip.description
    if existing is not None and users_own:
        address = existing.address  # the user's floating IP: only associate it
    else:
        pool = openstack.networking.get_network(network_id=network_id).name
        subnet_id = lookups.floating_subnet_id(fip, network_id)
        created = openstack.networking.FloatingIp(
            FIP,
            pool=pool,
            address=fip.address,
            subnet_id=subnet_id,
            description=fip.description,
            opts=_adopt(
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
        opts=_adopt(FIP_ASSOCIATION, pulumi.ResourceOptions(retain_on_delete=release)),
    )
    return _FloatingIp(address, network_id, subnet_id, created=not users_own)


def _security_group(spec: LoadBalancerSpec, vip_subnet: str | None) -> None:
    sg_spec = spec.security_group
    if sg_spec is None:
        return
    group = openstack.networking.SecGroup(
        SECURITY_GROUP,
        name=sg_spec.name,
        description=sg_spec.description,
        tags=list(spec.tags),
        opts=_adopt(SECURITY_GROUP),
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
            cidr = cidr or lookups.subnet_cidr(member_subnet)
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
        port = lookups.node_port(address)
        if port is None:
            continue  # a Node without a Neutron port here: nothing to attach the group to
        openstack.networking.PortSecGroupAssociate(
            sg_port_name(address),
            port_id=port,
            security_group_ids=[group.id],
            enforce=False,
        )


def declare(
    spec: LoadBalancerSpec,
    *,
    release: bool = False,
    imports: Mapping[str, str] | None = None,
    child_delete_timeout: str = DEFAULT_CHILD_DELETE_TIMEOUT,
) -> None:
    """Declare every resource of ``spec`` and export the stack outputs.

    ``imports`` maps logical names to IDs of objects to adopt (see ``IMPORTS_KEY``);
    ``child_delete_timeout`` see ``CHILD_DELETE_TIMEOUT_KEY``.
    """
    token = _IMPORTS.set(dict(imports or {}))
    try:
        _declare(spec, release=release, child_delete_timeout=child_delete_timeout)
    finally:
        _IMPORTS.reset(token)


def _adopt(name: str, opts: pulumi.ResourceOptions | None = None) -> pulumi.ResourceOptions:
    """``opts`` plus ``import_`` when the engine found this object in the cloud (after a crash,
    or OCCM's, for ``lb-reconciler adopt``)."""
    ident = _IMPORTS.get().get(name)
    extra = pulumi.ResourceOptions(import_=ident) if ident else pulumi.ResourceOptions()
    return (opts or pulumi.ResourceOptions()).merge(extra)


def _declare(spec: LoadBalancerSpec, *, release: bool, child_delete_timeout: str) -> None:
    if spec.existing_lb_id:
        lb = _shared_load_balancer(spec, spec.existing_lb_id)
        vip_subnet: str | None = None
    else:
        vip = _vip_placement(spec)
        vip_subnet = vip.subnet_id
        lb = _own_load_balancer(spec, vip, release=release)
    previous = lb.resource
    for listener in sorted(spec.listeners, key=lambda li: li.index):
        previous = _chain(spec, listener, lb, previous, delete_timeout=child_delete_timeout)
    fip = None if lb.resource is None else _floating_ip(spec, lb, release=release)
    floating_ip = lb.floating_ip if lb.resource is None else (fip.address if fip else None)
    _security_group(spec, vip_subnet)
    pulumi.export("spec", spec.canonical_json())
    pulumi.export("spec_hash", spec.spec_hash())
    pulumi.export("lb_id", lb.id)
    pulumi.export("vip_address", lb.vip_address)
    pulumi.export("vip_port_id", lb.vip_port_id)
    pulumi.export("floating_ip", floating_ip)
    pulumi.export("shared", lb.resource is None)
    pulumi.export("vip_subnet_id", vip_subnet)
    pulumi.export("fip_network_id", fip.network_id if fip else None)
    pulumi.export("fip_subnet_id", fip.subnet_id if fip else None)
    # whether destroy leaves the floating IP (keep-floatingip); False for a user's own, which
    # is never ours to delete anyway (only associated)
    keep = (
        fip is not None and fip.created and spec.floating_ip is not None and spec.floating_ip.keep
    )
    pulumi.export("fip_keep", keep)

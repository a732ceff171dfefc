"""The Pulumi program: one :class:`LoadBalancerSpec` -> ``pulumi_openstack`` resources.

One function, :func:`main`, serves both ways of running it: the controller's Automation API stack
(an inline program) and the plain CLI (``Pulumi.yaml`` has ``main: stacks/``). Both read the spec
from the stack's configuration, key ``lb-reconciler:spec`` (the spec's canonical JSON; the keys
and the logical names are spelt in :mod:`stacks.vocabulary`), so what the CLI previews is exactly
what the controller applies. The default provider's configuration (``openstack:authUrl``,
``openstack:userName`` ...) is set by the engine, the secret credentials only in the provider's
environment (``OS_PASSWORD`` ...: docs/engine.md); nothing here knows about Kubernetes or does I/O
other than through Pulumi.

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
counts them (:func:`stacks.resources.existing_load_balancer`). An internal Service cannot share
(OCCM: floating IPs belong to the load balancer, not to a listener). The load balancer's tags
are given when it is made and ``ignore_changes`` after: every Service on it adds its name there
(reconciler/engine/lb_tags.py).

**Protection.** The load balancer and the floating IP are declared ``protect``: an ``up`` whose
plan would delete or replace either (a create-only field the engine failed to freeze, a
property that becomes replace-on-change in a provider upgrade) fails before it changes anything,
and the cloud stays as it was. The engine lifts the protection only where deleting is what the
Service asked for: ``destroy`` of a Service going away, the floating IP of a Service made
internal, and the release of a shared load balancer (``release`` declares them unprotected).

The resources are built in :mod:`stacks.resources`; this module composes them, in order.

Exports: ``spec`` (JSON), ``spec_hash``, ``lb_id``, ``vip_address``, ``vip_port_id``,
``floating_ip`` (None when there is none), ``shared`` (whether the LB is someone else's),
``vip_subnet_id`` and the floating IP's ``fip_network_id`` and ``fip_subnet_id`` as resolved,
``fip_keep``, and ``lookups``: every answer the cloud gave the program's lookups (networks,
subnets, ports), keyed by the lookup and its inputs, which a preview without cloud credentials
replays (:mod:`stacks.recorded`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping

import pulumi

from reconciler.model.spec import LoadBalancerSpec
from stacks import resources
from stacks.recorded import Lookups
from stacks.vocabulary import (
    CHILD_DELETE_TIMEOUT_KEY,
    CONFIG_NAMESPACE,
    DEFAULT_CHILD_DELETE_TIMEOUT,
    FIP,
    FIP_ASSOCIATION,
    IMPORTS_KEY,
    LB,
    LOOKUPS_KEY,
    LOOKUPS_OUTPUT,
    RELEASE_KEY,
    SECURITY_GROUP,
    SPEC_KEY,
    listener_name,
    logical_suffix,
    members_name,
    monitor_name,
    pool_name,
)

__all__ = ["adoptable_names", "declare", "main"]


def main() -> None:
    """The program as Pulumi runs it: the spec (and options) from the stack's configuration."""
    config = pulumi.Config(CONFIG_NAMESPACE)
    spec = LoadBalancerSpec.from_dict(json.loads(config.require(SPEC_KEY)))
    imports = json.loads(config.get(IMPORTS_KEY) or "{}")
    recorded = config.get(LOOKUPS_KEY)
    declare(
        spec,
        release=config.get_bool(RELEASE_KEY) or False,
        imports=imports,
        child_delete_timeout=config.get(CHILD_DELETE_TIMEOUT_KEY) or DEFAULT_CHILD_DELETE_TIMEOUT,
        look=Lookups(json.loads(recorded) if recorded is not None else None),
    )


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


def declare(
    spec: LoadBalancerSpec,
    *,
    release: bool = False,
    imports: Mapping[str, str] | None = None,
    child_delete_timeout: str = DEFAULT_CHILD_DELETE_TIMEOUT,
    look: Lookups | None = None,
) -> None:
    """Declare every resource of ``spec`` and export the stack outputs.

    ``imports`` maps logical names to IDs of objects to adopt (see ``IMPORTS_KEY``);
    ``child_delete_timeout`` see ``CHILD_DELETE_TIMEOUT_KEY``; ``look`` makes the cloud
    lookups (:mod:`stacks.recorded`; default: asking the cloud).
    """
    found = dict(imports or {})
    look = look or Lookups()
    if spec.existing_lb_id:
        lb = resources.existing_load_balancer(spec, spec.existing_lb_id, look)
        vip_subnet: str | None = None
    else:
        vip = resources.vip_placement(spec, look)
        vip_subnet = vip.subnet_id
        lb = resources.own_load_balancer(spec, vip, release=release, imports=found)
    previous = lb.resource
    for listener in sorted(spec.listeners, key=lambda li: li.index):
        previous = resources.listener_chain(
            listener, lb, previous, delete_timeout=child_delete_timeout, imports=found
        )
    fip = (
        None
        if lb.resource is None
        else resources.floating_ip(spec, lb, look, release=release, imports=found)
    )
    floating_ip = lb.floating_ip if lb.resource is None else (fip.address if fip else None)
    resources.security_group(spec, vip_subnet, look, imports=found)
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
    # what was looked up in the cloud, for a preview without it (stacks.recorded)
    pulumi.export(LOOKUPS_OUTPUT, look.found)

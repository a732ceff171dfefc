"""The cloud lookups a :class:`LoadBalancerSpec` leaves to the program, as Pulumi data sources.

The model is pure, so it cannot know IDs that only the cloud knows. Three such holes are filled
here, each by one function over ``pulumi_openstack`` data sources (invokes through the same
provider and credentials as the resources, so the plain CLI and the Automation API see the same):

* **VIP subnet autodetection** (all of ``vip_subnet_id``, ``vip_network_id`` and ``vip_port_id``
  are ``None``): the Neutron port holding ``vip_autodetect_address`` (a Node's address, as OCCM
  looks at the first Node's port) gives the network; its subnet of the load balancer's IP family
  is the VIP subnet.
* **The external network** (``floating_ip.network_id`` is ``None``): the cloud's only network
  with ``router:external``; none means no floating IP (OCCM's autodetection), more than one is a
  configuration error.
* **The member subnet's CIDR**, for security-group rules without ``remote_ip_prefix``.
* **The floating IP's subnet** from ``floating-subnet`` / ``floating-subnet-tags``: the subnets
  of the floating network (the network's ``subnets``, then each subnet) matched as OCCM matches
  them (:mod:`reconciler.config.subnet_match`); the first IPv4 match by name is taken.

And one check: a VIP ``subnet-id`` / ``network-id`` must give an address of the Service's first
IP family (:func:`check_vip_family`).

Plus two that concern existing objects: a floating IP given as ``spec.loadBalancerIP`` and the
load balancer of a shared Service (``load-balancer-id``), with the Services already on it.

Invokes raise on "no result" and on "more than one result" (Terraform's data-source rule); the
two cases are told apart by the message. Errors that the user must fix raise
:class:`InvalidSpecError`, whose message starts with a marker the engine recognises.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pulumi_openstack as openstack

from reconciler.config.subnet_match import SubnetCandidate, SubnetPatternError, matching_subnets
from reconciler.model.annotations import FLOATING_NETWORK_ID, LOAD_BALANCER_ID, PREFIX, SUBNET_ID
from reconciler.model.naming import services_tagged
from reconciler.model.spec import FloatingIpSpec, LoadBalancerSpec
from stacks.shared import SharedLoadBalancer
from stacks.vocabulary import INVALID_SPEC_MARKER

# pulumi_openstack's subpackages are lazy modules (importlib.util.LazyLoader): the first use
# loads one, and before Python 3.13 that is not thread-safe (cpython gh-114763). Several `up`s
# starting at once in one process (a new leader's first syncs) failed with "module
# 'pulumi_openstack.networking' has no attribute 'get_subnet'". So both are loaded here, once,
# while Python's import lock serialises the import of this module.
_LOADED = (openstack.networking.get_subnet, openstack.loadbalancer.LoadBalancer)

__all__ = [
    "ExistingFloatingIp",
    "InvalidSpecError",
    "check_vip_family",
    "existing_floating_ip",
    "external_network_id",
    "floating_subnet_id",
    "network_name",
    "node_port",
    "shared_load_balancer",
    "subnet_cidr",
    "vip_subnet_id",
]


class InvalidSpecError(Exception):
    """The spec cannot be realised in this cloud; the message names what and how to fix it."""

    def __init__(self, message: str) -> None:
        super().__init__(f"{INVALID_SPEC_MARKER} {message}")


def _no_result(exc: Exception) -> bool:
    """The provider's "nothing matched": "Your query returned no results", "... not found",
    "No openstack_networking_floatingip_v2 found" (getFloatingIp) and "Your query returned no
    openstack_networking_subnet_v2" (getSubnet by id)."""
    text = str(exc).lower()
    return (
        "no results" in text
        or "not found" in text
        or "no networking" in text
        or re.search(r"\bno openstack_\w+ found", text) is not None
        or re.search(r"returned no openstack_\w+", text) is not None
    )


def _many_results(exc: Exception) -> bool:
    return "more than one" in str(exc).lower()


def _ip_version(spec: LoadBalancerSpec) -> int:
    return 6 if spec.ip_family == "IPv6" else 4


def vip_subnet_id(spec: LoadBalancerSpec) -> str:
    """The subnet of the Node port that holds ``vip_autodetect_address``."""
    address = spec.vip_autodetect_address
    if not address:
        raise InvalidSpecError("no VIP subnet, network or port, and no Node address to find one")
    try:
        port = openstack.networking.get_port(fixed_ip=address)
    except Exception as exc:
        if _no_result(exc) or _many_results(exc):
            raise InvalidSpecError(
                f"cannot find the VIP subnet: no single Neutron port has the Node address "
                f"{address}; set subnet-id in cloud.conf or the {SUBNET_ID} annotation"
            ) from exc
        raise
    try:
        subnet = openstack.networking.get_subnet(
            network_id=port.network_id, ip_version=_ip_version(spec)
        )
    except Exception as exc:
        if _no_result(exc) or _many_results(exc):
            raise InvalidSpecError(
                f"network {port.network_id} of Node address {address} has no single "
                f"IPv{_ip_version(spec)} subnet; set subnet-id in cloud.conf or the "
                f"{SUBNET_ID} annotation"
            ) from exc
        raise
    return str(subnet.id)


_WHERE = (
    "the " + PREFIX + "{key} annotation, or {key} in the Service's "
    "[LoadBalancerClass] or in [LoadBalancer] of cloud.conf"
)


def _subnet_version(subnet_id: str, *, what: str) -> int:
    try:
        return int(openstack.networking.get_subnet(subnet_id=subnet_id).ip_version)
    except Exception as exc:
        if _no_result(exc):
            raise InvalidSpecError(
                f"{what} {subnet_id} does not exist (or is not visible to this project); "
                f"give an existing subnet in {_WHERE.format(key='subnet-id')}"
            ) from exc
        raise


def check_vip_family(spec: LoadBalancerSpec) -> None:
    """The VIP subnet-id / network-id must give an address of the Service's first IP family.

    With a subnet: that subnet's version. With only a network: it needs a subnet of the family,
    and an IPv6 Service needs its subnet named when the network has IPv4 subnets too (Octavia
    takes an IPv4 subnet when only a network is given). A VIP port (port-id) is the user's
    choice and is not checked; neither is autodetection, which looks for the family itself.
    """
    if spec.vip_port_id:
        return
    family = _ip_version(spec)
    first = f"the Service's first IP family (spec.ipFamilies[0]) is IPv{family}"
    if spec.vip_subnet_id:
        version = _subnet_version(spec.vip_subnet_id, what="subnet-id")
        if version != family:
            raise InvalidSpecError(
                f"subnet-id {spec.vip_subnet_id} is an IPv{version} subnet but {first}; give "
                f"an IPv{family} subnet in {_WHERE.format(key='subnet-id')}, or change "
                "spec.ipFamilies (delete and re-create the Service)"
            )
        return
    if not spec.vip_network_id:
        return
    try:
        subnet_ids = openstack.networking.get_network(network_id=spec.vip_network_id).subnets
    except Exception as exc:
        if _no_result(exc):
            raise InvalidSpecError(
                f"network-id {spec.vip_network_id} does not exist (or is not visible to this "
                f"project); give an existing network in {_WHERE.format(key='network-id')}"
            ) from exc
        raise
    what = f"a subnet of network-id {spec.vip_network_id}:"
    versions = sorted({_subnet_version(i, what=what) for i in subnet_ids or []})
    if family not in versions:
        has = ", ".join(f"IPv{v}" for v in versions) or "none"
        raise InvalidSpecError(
            f"network-id {spec.vip_network_id} has no IPv{family} subnet (it has: {has}) but "
            f"{first}; give a network with an IPv{family} subnet in "
            f"{_WHERE.format(key='network-id')}, or set subnet-id"
        )
    if family == 6 and 4 in versions:
        raise InvalidSpecError(
            f"network-id {spec.vip_network_id} has IPv4 subnets too, and Octavia takes an IPv4 "
            f"one when only a network is given, but {first}; set subnet-id to the network's "
            f"IPv6 subnet ({_WHERE.format(key='subnet-id')})"
        )


def external_network_id() -> str | None:
    """The only external network, or None when there is none."""
    try:
        network = openstack.networking.get_network(external=True)
    except Exception as exc:
        if _many_results(exc):
            raise InvalidSpecError(
                "the cloud has several external networks; set floating-network-id in "
                f"cloud.conf or the {FLOATING_NETWORK_ID} annotation"
            ) from exc
        if _no_result(exc):
            return None
        raise
    return str(network.id)


def _describe(pattern: str | None, tags: str | None) -> str:
    parts = [f"floating-subnet {pattern!r}"] if pattern else []
    parts += [f"floating-subnet-tags {tags!r}"] if tags else []
    return " and ".join(parts)


def _floating_candidates(network_id: str) -> list[SubnetCandidate]:
    """Every subnet of the floating network with its name, tags and IP version."""
    ids = openstack.networking.get_network(network_id=network_id).subnets or []
    out = []
    for subnet_id in ids:
        subnet = openstack.networking.get_subnet(subnet_id=subnet_id)
        tags = tuple(sorted(str(t) for t in (subnet.all_tags or [])))
        out.append(SubnetCandidate(str(subnet_id), str(subnet.name or ""), tags, subnet.ip_version))
    return sorted(out, key=lambda s: (s.name, s.id))


def floating_subnet_id(fip: FloatingIpSpec, network_id: str) -> str | None:
    """The floating subnet: the given id, else the first subnet (by name, then id) of the
    floating network that OCCM's matching selects (:mod:`reconciler.config.subnet_match`).

    Only IPv4 subnets count: a floating IP is IPv4, so OCCM's attempt on an IPv6 match fails
    and it goes on to the next. Unlike OCCM, a full subnet is not skipped for the next match (a
    program cannot try a create and fall back): the create fails with Neutron's message, and a
    narrower pattern or ``floating-subnet-id`` chooses another.
    """
    if fip.subnet_id:
        return fip.subnet_id
    pattern, tags = fip.subnet_name_pattern, fip.subnet_tags
    if not pattern and not tags:
        return None
    wanted = _describe(pattern, tags)
    candidates = _floating_candidates(network_id)
    try:
        found = matching_subnets(candidates, pattern=pattern, tags=tags)
    except SubnetPatternError as exc:
        raise InvalidSpecError(f"{wanted}: {exc}; fix it or use floating-subnet-id") from None
    usable = [s for s in found if s.ip_version == 4]
    if usable:
        return usable[0].id
    listed = "; ".join(
        f"{s.name or '(no name)'} [{', '.join(s.tags) or 'no tags'}] IPv{s.ip_version}"
        for s in candidates
    )
    raise InvalidSpecError(
        f"{wanted}: no IPv4 subnet of floating network {network_id} matches (its subnets: "
        f"{listed or 'none'}); change the pattern or tags, or set floating-subnet-id"
    )


def network_name(network_id: str) -> str:
    """A network's name (a floating IP's ``pool``)."""
    return str(openstack.networking.get_network(network_id=network_id).name)


def subnet_cidr(subnet_id: str) -> str:
    return str(openstack.networking.get_subnet(subnet_id=subnet_id).cidr)


@dataclass(frozen=True)
class ExistingFloatingIp:
    id: str
    address: str
    description: str


def existing_floating_ip(address: str) -> ExistingFloatingIp | None:
    """The floating IP with this address, if one exists (``spec.loadBalancerIP``)."""
    try:
        found = openstack.networking.get_floating_ip(address=address)
    except Exception as exc:
        if _no_result(exc):
            return None
        raise
    return ExistingFloatingIp(str(found.id), address, str(found.description or ""))


def shared_load_balancer(spec: LoadBalancerSpec, lb_id: str) -> SharedLoadBalancer:
    """The existing load balancer of a shared Service, and who else uses it.

    Each Service has its name (OCCM's load balancer name, the spec's ``name``) among the load
    balancer's tags and on each of its listeners, so the other Services on a load balancer are
    the other ``kube_service_`` names on either (OCCM counts the load balancer's; a Service
    that joined before names were kept there is found by its listeners).
    """
    try:
        lb = openstack.loadbalancer.get_loadbalancer_v2(loadbalancer_id=lb_id)
    except Exception as exc:
        if _no_result(exc):
            raise InvalidSpecError(
                f"load balancer {lb_id} ({LOAD_BALANCER_ID}) does not "
                "exist; remove the annotation or give an existing load balancer"
            ) from exc
        raise
    others = services_tagged(lb.tags or [], but=spec.name)
    in_use: list[tuple[str, int, str]] = []
    for item in lb.listeners:
        listener = openstack.loadbalancer.get_listener_v2(listener_id=item.id)
        tags = list(listener.tags or [])
        others.update(services_tagged(tags, but=spec.name))
        if spec.name not in tags:
            who = ", ".join(tags) or str(listener.name or listener.id)
            in_use.append((str(listener.protocol), int(listener.protocol_port), who))
    fip: str | None = None
    try:
        found = openstack.networking.get_floating_ip(port_id=lb.vip_port_id)
        fip = str(found.address)
    except Exception as exc:
        if not _no_result(exc):
            raise
    return SharedLoadBalancer(
        id=lb_id,
        vip_address=str(lb.vip_address),
        vip_port_id=str(lb.vip_port_id),
        other_services=tuple(sorted(others)),
        floating_ip=fip,
        ports_in_use=tuple(sorted(in_use)),
        name=str(lb.name or ""),
    )


def node_port(address: str) -> str | None:
    """The Neutron port holding a Node's address, if there is exactly one."""
    try:
        port = openstack.networking.get_port(fixed_ip=address)
    except Exception as exc:
        if _no_result(exc) or _many_results(exc):
            return None
        raise
    return str(port.id)

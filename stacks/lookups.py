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

from reconciler.model.spec import FloatingIpSpec, LoadBalancerSpec

__all__ = [
    "INVALID_MARKER",
    "ExistingFloatingIp",
    "InvalidSpecError",
    "SharedLoadBalancer",
    "existing_floating_ip",
    "external_network_id",
    "floating_subnet_id",
    "node_port",
    "shared_load_balancer",
    "subnet_cidr",
    "vip_subnet_id",
]

INVALID_MARKER = "lb-reconciler invalid spec:"


class InvalidSpecError(Exception):
    """The spec cannot be realised in this cloud; the message names what and how to fix it."""

    def __init__(self, message: str) -> None:
        super().__init__(f"{INVALID_MARKER} {message}")


def _no_result(exc: Exception) -> bool:
    """The provider's "nothing matched": "Your query returned no results", "... not found", and
    "No openstack_networking_floatingip_v2 found" (getFloatingIp)."""
    text = str(exc).lower()
    return (
        "no results" in text
        or "not found" in text
        or "no networking" in text
        or re.search(r"\bno openstack_\w+ found", text) is not None
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
                f"{address}; set subnet-id in cloud.conf or the "
                "loadbalancer.openstack.org/subnet-id annotation"
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
                "loadbalancer.openstack.org/subnet-id annotation"
            ) from exc
        raise
    return str(subnet.id)


def external_network_id() -> str | None:
    """The only external network, or None when there is none."""
    try:
        network = openstack.networking.get_network(external=True)
    except Exception as exc:
        if _many_results(exc):
            raise InvalidSpecError(
                "the cloud has several external networks; set floating-network-id in "
                "cloud.conf or the loadbalancer.openstack.org/floating-network-id annotation"
            ) from exc
        if _no_result(exc):
            return None
        raise
    return str(network.id)


def floating_subnet_id(fip: FloatingIpSpec, network_id: str) -> str | None:
    """The floating subnet: the given id, or the one subnet matching an exact name or tags.

    Glob and regular-expression patterns and negated or any-of tag lists need a list of subnets,
    which no data source of this provider gives; they are refused with a fix rather than guessed.
    """
    if fip.subnet_id:
        return fip.subnet_id
    pattern, tags = fip.subnet_name_pattern, fip.subnet_tags
    if not pattern and not tags:
        return None
    if pattern and (pattern[:1] in ("~", "!") or any(c in pattern for c in "*?[")):
        raise InvalidSpecError(
            f"floating-subnet {pattern!r}: only exact subnet names are supported; use the "
            "subnet's name or floating-subnet-id"
        )
    tag_list: list[str] | None = None
    if tags:
        if tags.startswith("!"):
            raise InvalidSpecError(
                f"floating-subnet-tags {tags!r}: negated tags are not supported; use "
                "floating-subnet-id"
            )
        tag_list = [t.strip() for t in tags.removeprefix("&").split(",") if t.strip()]
    try:
        subnet = openstack.networking.get_subnet(
            network_id=network_id, name=pattern or None, tags=tag_list
        )
    except Exception as exc:
        if _no_result(exc) or _many_results(exc):
            raise InvalidSpecError(
                f"no single subnet of floating network {network_id} matches "
                f"name={pattern!r} tags={tags!r}; use floating-subnet-id"
            ) from exc
        raise
    return str(subnet.id)


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


@dataclass(frozen=True)
class SharedLoadBalancer:
    id: str
    vip_address: str
    vip_port_id: str
    other_services: tuple[str, ...]  # LB names of the other Services with listeners on it
    floating_ip: str | None


def shared_load_balancer(spec: LoadBalancerSpec, lb_id: str) -> SharedLoadBalancer:
    """The existing load balancer of a shared Service, and who else uses it.

    Each Service tags its listeners with its own load balancer name (OCCM's name, the spec's
    ``name``), so the Services on a load balancer are the distinct tags of its listeners.
    """
    try:
        lb = openstack.loadbalancer.get_loadbalancer_v2(loadbalancer_id=lb_id)
    except Exception as exc:
        if _no_result(exc):
            raise InvalidSpecError(
                f"load balancer {lb_id} (loadbalancer.openstack.org/load-balancer-id) does not "
                "exist; remove the annotation or give an existing load balancer"
            ) from exc
        raise
    others: set[str] = set()
    for item in lb.listeners:
        listener = openstack.loadbalancer.get_listener_v2(listener_id=item.id)
        others.update(t for t in (listener.tags or []) if t != spec.name)
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

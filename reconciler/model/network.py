"""Where the load balancer lives: IP family, internal or not, VIP placement, floating IP, ACLs.

Each decision is one function. Precedence, stated once: a ``[LoadBalancerClass]`` chosen by the
``class`` annotation wins over the per-Service annotations, which win over ``[LoadBalancer]``
(as OCCM documents for floating-network-id, floating-subnet*, network-id, subnet-id and
member-subnet-id; OCCM's code applies the class inconsistently between internal and external
Services and for member-subnet-id, here it is one rule). Members go to member-subnet-id, else to
``[LoadBalancer] subnet-id`` (the Nodes' subnet, as OCCM), else to the VIP subnet.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from typing import Any

from reconciler.config import CloudConfig, LoadBalancerClass, LoadBalancerConfig
from reconciler.config.subnet_match import check_pattern, check_tags
from reconciler.model import annotations as a
from reconciler.model.annotations import AnnotationReader
from reconciler.model.errors import ValidationError, annotation_field, config_field
from reconciler.model.spec import FloatingIpSpec
from reconciler.model.view import ServiceView

__all__ = [
    "Placement",
    "allowed_cidrs",
    "choose_class",
    "floating_ip",
    "is_internal",
    "placement",
    "preferred_family",
]

_EMPTY_CLASS = LoadBalancerClass()


def preferred_family(view: ServiceView) -> str | None:
    """``spec.ipFamilies[0]``: OCCM builds one load balancer, of the first family."""
    first = view.ip_families[0] if view.ip_families else None
    return first if first in ("IPv4", "IPv6") else None


def is_internal(reader: AnnotationReader, lb: LoadBalancerConfig) -> bool:
    """``internal-lb=true`` in cloud.conf forces every Service internal; else the annotation."""
    wanted = reader.boolean(a.INTERNAL, default=False)
    return True if lb.internal_lb else wanted


def choose_class(
    reader: AnnotationReader, config: CloudConfig
) -> tuple[LoadBalancerClass, list[ValidationError]]:
    name = reader.string(a.CLASS)
    if not name:
        return _EMPTY_CLASS, []
    if name in config.classes:
        return config.classes[name], []
    known = ", ".join(sorted(config.classes)) or "none are defined"
    fix = f'use a class defined in cloud.conf ({known}) or add [LoadBalancerClass "{name}"]'
    return _EMPTY_CLASS, [ValidationError(annotation_field(a.CLASS), name, "is not a class", fix)]


def _first(*values: str | None) -> str | None:
    return next((v for v in values if v), None)


@dataclass(frozen=True)
class Placement:
    vip_subnet_id: str | None
    vip_network_id: str | None
    vip_port_id: str | None
    member_subnet_id: str | None


def placement(
    reader: AnnotationReader, lb: LoadBalancerConfig, cls: LoadBalancerClass
) -> Placement:
    port_id = reader.uuid(a.PORT_ID) or None
    subnet = _first(cls.subnet_id, reader.uuid(a.SUBNET_ID), lb.subnet_id)
    network = _first(cls.network_id, reader.uuid(a.NETWORK_ID), lb.network_id)
    explicit_member = _first(cls.member_subnet_id, reader.uuid(a.MEMBER_SUBNET_ID))
    member = _first(explicit_member, lb.member_subnet_id, lb.subnet_id, subnet)
    if port_id:  # a given VIP port already fixes the network and subnet
        return Placement(None, None, port_id, member)
    return Placement(subnet, network, None, member)


def _check_subnet_matchers(
    pattern: str | None, tags: str | None, where: tuple[str, str]
) -> list[ValidationError]:
    """OCCM's syntax (:mod:`reconciler.config.subnet_match`), checked before the cloud is."""
    errors = []
    if pattern and (problem := check_pattern(pattern)):
        fix = (
            "write a glob such as public-* or a Go regular expression after '~' "
            "(a leading '!' negates)"
        )
        errors.append(ValidationError(where[0], pattern, problem, fix))
    if tags and (problem := check_tags(tags)):
        fix = 'write tags as "a,b" (any of them); prefix "&" for all of them, "!" to negate'
        errors.append(ValidationError(where[1], tags, problem, fix))
    return errors


def floating_ip(
    *,
    reader: AnnotationReader,
    view: ServiceView,
    lb: LoadBalancerConfig,
    cls: LoadBalancerClass,
    internal: bool,
    family: str | None,
    description: str,
) -> tuple[FloatingIpSpec | None, list[ValidationError]]:
    """None for internal and IPv6 load balancers (Neutron floating IPs are IPv4 only)."""
    keep = reader.boolean(a.KEEP_FLOATING_IP, default=False)
    if internal or family == "IPv6":
        return None, []
    annotated = reader.string(a.FLOATING_NETWORK_ID)
    if annotated:
        annotated = reader.uuid(a.FLOATING_NETWORK_ID)
    network = cls.floating_network_id or (annotated if annotated is not None else None)
    if network is None:
        network = lb.floating_network_id
    where = (annotation_field(a.FLOATING_SUBNET), annotation_field(a.FLOATING_SUBNET_TAGS))
    if cls.floating_subnet_id or cls.floating_subnet or cls.floating_subnet_tags:
        sub_id, pattern, tags = (
            cls.floating_subnet_id,
            cls.floating_subnet,
            cls.floating_subnet_tags,
        )
        section = f'LoadBalancerClass "{reader.string(a.CLASS)}"'
        where = (
            config_field(section, "floating-subnet"),
            config_field(section, "floating-subnet-tags"),
        )
    elif _first(reader.string(a.FLOATING_SUBNET_ID), reader.string(a.FLOATING_SUBNET)) or (
        reader.string(a.FLOATING_SUBNET_TAGS)
    ):
        sub_id = reader.uuid(a.FLOATING_SUBNET_ID) or ""
        pattern = reader.string(a.FLOATING_SUBNET) or ""
        tags = reader.string(a.FLOATING_SUBNET_TAGS) or ""
    else:
        sub_id, pattern, tags = lb.floating_subnet_id, lb.floating_subnet, lb.floating_subnet_tags
        where = (
            config_field("LoadBalancer", "floating-subnet"),
            config_field("LoadBalancer", "floating-subnet-tags"),
        )
    if sub_id:  # an id wins over name patterns and tags
        pattern, tags = "", ""
    address = view.load_balancer_ip or None
    if address:  # OCCM matches subnets only when it picks the address itself
        pattern, tags = "", ""
    spec = FloatingIpSpec(
        network_id=network or None,
        subnet_id=sub_id or None,
        subnet_name_pattern=pattern or None,
        subnet_tags=tags or None,
        address=address,
        keep=keep,
        description=description,
    )
    return spec, _check_subnet_matchers(pattern, tags, where)


def load_balancer_ip(view: ServiceView, family: str | None) -> list[ValidationError]:
    if not view.load_balancer_ip:
        return []
    try:
        ip = ipaddress.ip_address(view.load_balancer_ip.strip())
    except ValueError:
        fix = "give an IP address such as 203.0.113.10, or remove it"
        return [ValidationError("spec.loadBalancerIP", view.load_balancer_ip, "is not an IP", fix)]
    if family and f"IPv{ip.version}" != family:
        reason = f"is IPv{ip.version} but the Service's first IP family is {family}"
        fix = "use an address of the Service's first family"
        return [ValidationError("spec.loadBalancerIP", view.load_balancer_ip, reason, fix)]
    return []


def allowed_cidrs(
    view: ServiceView, family: str | None
) -> tuple[tuple[str, ...], bool, list[ValidationError]]:
    """Source ranges as canonical CIDRs of the load balancer's family, sorted.

    The field wins over the annotation; neither means everyone (``0.0.0.0/0`` or ``::/0``). Ranges
    of the other family are dropped (Octavia rejects them); if that leaves none of a non-empty
    list, it is an error rather than an open door. Returns (cidrs, given explicitly, errors).
    """
    if view.source_ranges:
        items = [
            (f"spec.loadBalancerSourceRanges[{i}]", r) for i, r in enumerate(view.source_ranges)
        ]
    else:
        text = str(view.annotations.get(a.SOURCE_RANGES) or "").strip()
        where = annotation_field(a.SOURCE_RANGES)
        items = [(where, r) for r in re.split(r"[\s,]+", text) if r]
    if not items:
        return (("::/0",) if family == "IPv6" else ("0.0.0.0/0",)), False, []
    errors, nets = [], set()
    for where, raw in items:
        try:
            nets.add(ipaddress.ip_network(raw.strip(), strict=False))
        except ValueError:
            fix = "write CIDRs such as 10.0.0.0/24"
            errors.append(ValidationError(where, raw, "is not a CIDR", fix))
    if errors:
        return (), True, errors
    version = {"IPv4": 4, "IPv6": 6}.get(family or "")
    kept = sorted((n for n in nets if version is None or n.version == version), key=str)
    if not kept:
        reason = f"has no range of the load balancer's family ({family})"
        fix = f"add a {family} range"
        return (), True, [ValidationError(items[0][0], items[0][1], reason, fix)]
    return tuple(str(n) for n in kept), True, []


def keep_floating_ip_now(annotations: Any) -> bool:
    """``keep-floatingip`` as a Service being deleted says it now (not at its last ``up``). A
    value that is not ``"true"``/``"false"`` keeps the floating IP: a deletion cannot be undone."""
    reader = AnnotationReader(annotations)
    keep = reader.boolean(a.KEEP_FLOATING_IP, default=False)
    return keep or bool(reader.errors)

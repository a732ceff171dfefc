"""Create-only fields: what a load balancer was made with stays, whatever the Service says later.

OCCM reads some settings only when it creates a load balancer (``createOctaviaLoadBalancer``) or
its floating IP (``ensureFloatingIP``), and never again: the VIP's subnet, network, port and
address, the flavor, the availability zone, the provider, the load balancer a Service shares
(``load-balancer-id``), and the floating IP's network, subnet and address. In Octavia and
Neutron most of these cannot be updated at all, so a declarative program that followed an edit
would *replace* the load balancer or the floating IP: a new address and downtime, or, when the
new value is impossible (a zone the cloud does not have), the old one deleted and no new one.

So they are frozen here, exactly where OCCM freezes them. :func:`made_with` records a spec's
create-only values (:class:`CreateOnly`, stored with the stack as a tag after each successful
``up``); :func:`freeze` puts the recorded values back into a new spec and lists each field the
Service asked to change (:class:`FrozenChange`), which the controller reports as a Warning Event
and ``lb-reconciler preview`` prints. The frozen spec hashes like the applied one, so an edit of
a create-only field alone runs no ``up``.

What is *not* frozen, because OCCM follows it: the internal annotation (an external Service made
internal loses its floating IP, unless ``keep-floatingip``; an internal one made external gets
one), ``keep-floatingip``, and everything about listeners, pools, members and monitors. A floating
IP that a Service did not have is created with the Service's values of the day.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any

from reconciler.model import annotations as a
from reconciler.model.spec import LoadBalancerSpec

__all__ = ["CreateOnly", "FrozenChange", "freeze", "made_with", "wants_floating_ip"]

_CONF = "[LoadBalancer] {} in cloud.conf"


@dataclass(frozen=True)
class _Field:
    attr: str  # the LoadBalancerSpec (or FloatingIpSpec, for fip_*) attribute
    key: str  # its short key in the recorded JSON
    source: str  # where a user sets it
    # not set is no request: the API server fills spec.ipFamilies in, a manifest in git may not
    unset_asks_nothing: bool = False


_LB_FIELDS = (
    _Field("provider", "p", _CONF.format("lb-provider")),
    _Field("flavor_id", "f", f"annotation {a.FLAVOR_ID} or " + _CONF.format("flavor-id")),
    _Field(
        "availability_zone",
        "z",
        f"annotation {a.AVAILABILITY_ZONE} or " + _CONF.format("availability-zone"),
    ),
    _Field("ip_family", "v", "spec.ipFamilies[0]", unset_asks_nothing=True),
    _Field("vip_subnet_id", "s", f"annotation {a.SUBNET_ID} or " + _CONF.format("subnet-id")),
    _Field("vip_network_id", "n", f"annotation {a.NETWORK_ID} or " + _CONF.format("network-id")),
    _Field("vip_port_id", "o", f"annotation {a.PORT_ID}"),
    _Field("vip_address", "a", "spec.loadBalancerIP"),
    _Field("existing_lb_id", "l", f"annotation {a.LOAD_BALANCER_ID}"),
)
_FIP_FIELDS = (
    _Field(
        "network_id",
        "F",
        f"annotation {a.FLOATING_NETWORK_ID} or " + _CONF.format("floating-network-id"),
    ),
    _Field(
        "subnet_id",
        "S",
        f"annotation {a.FLOATING_SUBNET_ID} or " + _CONF.format("floating-subnet-id"),
    ),
    _Field(
        "subnet_name_pattern",
        "P",
        f"annotation {a.FLOATING_SUBNET} or " + _CONF.format("floating-subnet"),
    ),
    _Field(
        "subnet_tags",
        "T",
        f"annotation {a.FLOATING_SUBNET_TAGS} or " + _CONF.format("floating-subnet-tags"),
    ),
    _Field("address", "A", "spec.loadBalancerIP"),
)
_HAS_FIP = "fip"  # key in the JSON: the load balancer was given a floating IP of its own


@dataclass(frozen=True)
class CreateOnly:
    """The create-only values a stack's load balancer (and floating IP) were made with.

    ``lb``: attribute -> value of the load balancer's fields; ``fip``: the floating IP's, or None
    when the stack made no floating IP (internal, shared, or no external network)."""

    lb: tuple[tuple[str, str | None], ...]
    fip: tuple[tuple[str, str | None], ...] | None

    def to_text(self) -> str:
        """Compact JSON (short keys, ``None`` values left out), for a stack tag."""
        keys = {f.attr: f.key for f in (*_LB_FIELDS, *_FIP_FIELDS)}
        out: dict[str, Any] = {keys[k]: v for k, v in self.lb if v is not None}
        if self.fip is not None:
            out[_HAS_FIP] = 1
            out.update({keys[k]: v for k, v in self.fip if v is not None})
        return json.dumps(out, sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_text(cls, text: str) -> CreateOnly | None:
        """The record :meth:`to_text` wrote; None for anything else."""
        try:
            raw = json.loads(text)
        except ValueError:
            return None
        if not isinstance(raw, dict) or any(
            not isinstance(v, str) for k, v in raw.items() if k != _HAS_FIP
        ):
            return None
        lb = tuple((f.attr, raw.get(f.key)) for f in _LB_FIELDS)
        fip = tuple((f.attr, raw.get(f.key)) for f in _FIP_FIELDS) if raw.get(_HAS_FIP) else None
        return cls(lb, fip)


def wants_floating_ip(spec: LoadBalancerSpec) -> bool:
    """Whether the program gives ``spec`` a floating IP of its own stack (not internal, not on
    a shared load balancer, whose floating IP is its owner's)."""
    return spec.floating_ip is not None and not spec.internal and not spec.existing_lb_id


def made_with(spec: LoadBalancerSpec) -> CreateOnly:
    """The create-only values of ``spec`` (as applied), to record with its stack."""
    lb = tuple((f.attr, getattr(spec, f.attr)) for f in _LB_FIELDS)
    fip = None
    if wants_floating_ip(spec):
        assert spec.floating_ip is not None
        fip = tuple((f.attr, getattr(spec.floating_ip, f.attr)) for f in _FIP_FIELDS)
    return CreateOnly(lb, fip)


@dataclass(frozen=True)
class FrozenChange:
    """A create-only field the Service asks to change; the load balancer keeps ``in_use``."""

    field: str  # the spec attribute, ``floating_ip.<attr>`` for the floating IP's
    source: str  # where a user sets it (annotation, cloud.conf key)
    in_use: str | None
    asked: str | None

    def message(self) -> str:
        what = "floating IP" if self.field.startswith("floating_ip.") else "load balancer"
        return (
            f"{self.field} ({self.source}) is create-only: the {what} keeps "
            f"{_shown(self.in_use)}, not {_shown(self.asked)} as asked; nothing was changed. "
            "To use the new value, delete and re-create the Service (it gets a new "
            f"{what} and a new address), or put the value in use back"
        )


def _shown(value: str | None) -> str:
    return "the cloud's choice" if value is None else repr(value)


def freeze(
    spec: LoadBalancerSpec, made: CreateOnly | None
) -> tuple[LoadBalancerSpec, tuple[FrozenChange, ...]]:
    """``spec`` with the create-only values of ``made`` (None: nothing made yet, ``spec`` as
    it is), and the fields whose asked value differs from the one in use."""
    if made is None:
        return spec, ()
    changes: list[FrozenChange] = []
    lb_values = dict(made.lb)
    # On a shared load balancer only which one counts: the rest describes no LB of ours.
    shared = lb_values.get("existing_lb_id") is not None
    for f in _LB_FIELDS:
        asked, in_use = getattr(spec, f.attr), lb_values.get(f.attr)
        if asked is None and f.unset_asks_nothing:
            continue
        if asked != in_use and (f.attr == "existing_lb_id" or not shared):
            changes.append(FrozenChange(f.attr, f.source, in_use, asked))
    kept: dict[str, Any] = {f.attr: lb_values.get(f.attr) for f in _LB_FIELDS}
    kept["provider"] = kept["provider"] or spec.provider  # never None in a record we wrote
    spec = dataclasses.replace(spec, **kept)
    if made.fip is not None and wants_floating_ip(spec):
        assert spec.floating_ip is not None
        fip_values = dict(made.fip)
        for f in _FIP_FIELDS:
            asked, in_use = getattr(spec.floating_ip, f.attr), fip_values.get(f.attr)
            if asked != in_use:
                changes.append(FrozenChange(f"floating_ip.{f.attr}", f.source, in_use, asked))
        fip_kept: dict[str, Any] = {f.attr: fip_values.get(f.attr) for f in _FIP_FIELDS}
        spec = dataclasses.replace(
            spec, floating_ip=dataclasses.replace(spec.floating_ip, **fip_kept)
        )
    return spec, tuple(changes)

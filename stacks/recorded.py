"""The program's cloud lookups, recorded by ``up`` and replayed by a preview without the cloud.

Every lookup of :mod:`stacks.lookups` the program makes goes through one :class:`Lookups`,
under a key that names the lookup and its inputs (``vip-subnet 10.0.0.5 IPv4``):

* **Asking the cloud** (``recorded`` None: every ``up``, and a preview with credentials): each
  lookup is an invoke, as before, and its answer is kept; the program exports them all as the
  stack output ``lookups``, so a stack says what its last ``up`` found in the cloud.
* **Replaying** (a preview in CI, with read access to the backend and no cloud credentials:
  ``recorded`` is the stack's ``lookups`` output, config key ``lookups-recorded``): a lookup
  whose key was recorded gets the recorded answer, so a change that does not touch what was
  looked up previews exactly as against the cloud. Any other lookup (a new Service, a new
  subnet annotation) gets a placeholder, and the program says so: a warning that starts with
  :data:`~stacks.vocabulary.NOT_CHECKED_MARKER` and names what was not checked, which the
  engine lists with the preview.

A lookup that fails (:class:`~stacks.lookups.InvalidSpecError`) is not recorded: the ``up``
fails with it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import pulumi

from reconciler.model.spec import FloatingIpSpec, LoadBalancerSpec
from stacks import lookups
from stacks.lookups import ExistingFloatingIp
from stacks.shared import SharedLoadBalancer
from stacks.vocabulary import NOT_CHECKED_MARKER

__all__ = [
    "EXTERNAL_NETWORK_KEY",
    "UNKNOWN",
    "Lookups",
    "network_name_key",
    "vip_family_key",
    "vip_subnet_key",
]

T = TypeVar("T")

# what a lookup that could not be replayed gives in its place (an ID, a name, an address)
UNKNOWN = "(looked up on apply)"
_UNKNOWN_OR_NONE: str | None = UNKNOWN  # the same, for a lookup that may find nothing


# the keys that the engine also writes (reconciler.engine.preview_offline: an older stack's)
EXTERNAL_NETWORK_KEY = "external-network"


def vip_subnet_key(spec: LoadBalancerSpec) -> str:
    return f"vip-subnet {spec.vip_autodetect_address} {spec.ip_family}"


def vip_family_key(spec: LoadBalancerSpec) -> str:
    return f"vip-family {spec.vip_subnet_id} {spec.vip_network_id} {spec.ip_family}"


def network_name_key(network_id: str) -> str:
    return f"network-name {network_id}"


def _same(value: Any) -> Any:
    return value


class Lookups:
    """The lookups of one program run (not shared between runs or threads)."""

    def __init__(self, recorded: Mapping[str, Any] | None = None) -> None:
        self.replaying = recorded is not None
        self._recorded = dict(recorded or {})
        self.found: dict[str, Any] = {}  # key -> answer (JSON), the output ``lookups``
        self.unchecked: list[str] = []

    def _get(
        self,
        key: str,
        ask: Callable[[], T],
        *,
        what: str,
        placeholder: T,
        encode: Callable[[T], Any] = _same,
        decode: Callable[[Any], T] = _same,
    ) -> T:
        if not self.replaying:
            value = ask()
            self.found[key] = encode(value)
            return value
        if key in self._recorded:
            self.found[key] = self._recorded[key]
            return decode(self._recorded[key])
        if what not in self.unchecked:
            self.unchecked.append(what)
            pulumi.log.warn(f"{NOT_CHECKED_MARKER} {what}")
        return placeholder

    # --- one method per lookup of stacks.lookups ----------------------------------------------

    def vip_subnet_id(self, spec: LoadBalancerSpec) -> str:
        address = spec.vip_autodetect_address
        return self._get(
            vip_subnet_key(spec),
            lambda: lookups.vip_subnet_id(spec),
            what=f"the VIP subnet (the subnet of the Neutron port of Node address {address})",
            placeholder=UNKNOWN,
        )

    def check_vip_family(self, spec: LoadBalancerSpec) -> None:
        def ask() -> bool:
            lookups.check_vip_family(spec)
            return True

        self._get(
            vip_family_key(spec),
            ask,
            what=(
                f"that the VIP subnet-id/network-id ({spec.vip_subnet_id or spec.vip_network_id}) "
                f"exists and is IPv{6 if spec.ip_family == 'IPv6' else 4}"
            ),
            placeholder=True,
        )

    def external_network_id(self) -> str | None:
        return self._get(
            EXTERNAL_NETWORK_KEY,
            lookups.external_network_id,
            what="the external network (the cloud's only network with router:external)",
            placeholder=_UNKNOWN_OR_NONE,
        )

    def network_name(self, network_id: str) -> str:
        if network_id == UNKNOWN:  # the network itself was not checked, and said so
            return UNKNOWN
        return self._get(
            network_name_key(network_id),
            lambda: str(lookups.network_name(network_id)),
            what=f"the name of floating network {network_id}",
            placeholder=UNKNOWN,
        )

    def floating_subnet_id(self, fip: FloatingIpSpec, network_id: str) -> str | None:
        if fip.subnet_id or not (fip.subnet_name_pattern or fip.subnet_tags):
            return lookups.floating_subnet_id(fip, network_id)  # no lookup
        return self._get(
            f"floating-subnet {network_id} {fip.subnet_name_pattern!r} {fip.subnet_tags!r}",
            lambda: lookups.floating_subnet_id(fip, network_id),
            what=f"the floating subnet matching {fip.subnet_name_pattern or fip.subnet_tags!r}",
            placeholder=_UNKNOWN_OR_NONE,
        )

    def subnet_cidr(self, subnet_id: str) -> str:
        return self._get(
            f"subnet-cidr {subnet_id}",
            lambda: lookups.subnet_cidr(subnet_id),
            what=f"the CIDR of member subnet {subnet_id}",
            placeholder=UNKNOWN,
        )

    def existing_floating_ip(self, address: str) -> ExistingFloatingIp | None:
        return self._get(
            f"floating-ip {address}",
            lambda: lookups.existing_floating_ip(address),
            what=f"whether {address} is an existing floating IP (then it is only associated)",
            placeholder=None,
            encode=lambda v: dataclasses.asdict(v) if v is not None else None,
            decode=lambda v: ExistingFloatingIp(**v) if v is not None else None,
        )

    def shared_load_balancer(self, spec: LoadBalancerSpec, lb_id: str) -> SharedLoadBalancer:
        def decode(value: Any) -> SharedLoadBalancer:
            return SharedLoadBalancer(
                **{
                    **value,
                    "other_services": tuple(value["other_services"]),
                    "ports_in_use": tuple(tuple(p) for p in value["ports_in_use"]),
                }
            )

        return self._get(
            f"shared-lb {lb_id} {spec.name}",
            lambda: lookups.shared_load_balancer(spec, lb_id),
            what=f"load balancer {lb_id}: that it exists, its ports in use and the Services on it",
            placeholder=SharedLoadBalancer(
                id=lb_id,
                vip_address=UNKNOWN,
                vip_port_id=UNKNOWN,
                other_services=(),
                floating_ip=None,
            ),
            encode=dataclasses.asdict,
            decode=decode,
        )

    def node_port(self, address: str) -> str | None:
        return self._get(
            f"node-port {address}",
            lambda: lookups.node_port(address),
            what=f"the Neutron port of Node address {address} (for the security group)",
            placeholder=_UNKNOWN_OR_NONE,
        )

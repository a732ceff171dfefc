"""What ``ensure`` and ``check_drift`` of one Service's stack return, for the engine's callers and
the controller.

:class:`EnsureResult`, one frozen record: whether an ``up`` ran, the spec hash the stack now
records, the stack's outputs (``stacks/program.py`` exports them: ``lb_id``, ``vip_address``,
``floating_ip``, ``spec``, ..., as plain values), Pulumi's resource change counts, and the
create-only fields that were asked to change and kept as made. The properties read the outputs
the way the Service's status and annotations need them.

:class:`DriftReport`: what a preview-only refresh found different between the cloud and the
stack's state, resource by resource (:class:`DriftedResource`) and property by property
(:class:`PropertyDrift`: the value in the state and the value in the cloud), secrets masked.

Imports no Pulumi (nor anything that does), so the controller and its test doubles may use it
without loading the engine.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from reconciler.model.frozen import FrozenChange

__all__ = ["DriftReport", "DriftedResource", "EnsureResult", "PropertyDrift"]


@dataclass(frozen=True, kw_only=True)
class EnsureResult:
    changed: bool  # an `up` ran; False: skipped, the spec was already applied
    spec_hash: str  # the hash the stack records as applied (reconciler.model.spec)
    outputs: Mapping[str, Any]  # the stack's outputs, plain values
    resource_changes: Mapping[str, int] = field(default_factory=dict)  # "create": 3, ...
    frozen: tuple[FrozenChange, ...] = ()  # create-only fields asked to change, kept as made
    direct: bool = (
        False  # changed without `up`: pool members only (reconciler.engine.members_direct)
    )

    @property
    def lb_id(self) -> str:
        """The load balancer's id ("" when the outputs hold none)."""
        return str(self.outputs.get("lb_id") or "")

    @property
    def vip_address(self) -> str:
        return str(self.outputs.get("vip_address") or "")

    @property
    def floating_ip(self) -> str | None:
        fip = self.outputs.get("floating_ip")
        return str(fip) if fip else None

    @property
    def address(self) -> str:
        """The address users reach: the floating IP if there is one, else the VIP (OCCM)."""
        return self.floating_ip or self.vip_address


@dataclass(frozen=True)
class PropertyDrift:
    """One property that differs: its Pulumi property name (``connectionLimit``, ``members``),
    the value the stack's state holds and the value the cloud has now (plain JSON values; a
    secret is ``"[secret]"``)."""

    name: str
    state: Any
    cloud: Any


@dataclass(frozen=True)
class DriftedResource:
    """One resource of the stack that the cloud no longer matches. ``name``: its logical name in
    the stack (``listener-tcp-80``); ``type``: its Pulumi type token; ``cloud_id``: its ID in the
    cloud; ``deleted``: it is gone from the cloud (then ``properties`` is empty)."""

    name: str
    type: str
    cloud_id: str | None = None
    deleted: bool = False
    properties: tuple[PropertyDrift, ...] = ()

    @property
    def kind(self) -> str:
        """The type token's last part: ``Listener``, ``LoadBalancer``, ``FloatingIp``."""
        return self.type.rpartition(":")[2] or self.type


@dataclass(frozen=True)
class DriftReport:
    """What a drift check found; no resources: the cloud matches the stack."""

    resources: tuple[DriftedResource, ...] = ()

    @property
    def drifted(self) -> bool:
        return bool(self.resources)

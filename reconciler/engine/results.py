"""What ``ensure`` of one Service's stack returns, for the engine's callers and the controller.

One frozen record: whether an ``up`` ran, the spec hash the stack now records, the stack's outputs
(``stacks/program.py`` exports them: ``lb_id``, ``vip_address``, ``floating_ip``, ``spec``, ...,
as plain values), Pulumi's resource change counts, and the create-only fields that were asked to
change and kept as made. The properties read the outputs the way the Service's status and
annotations need them.

Imports no Pulumi (nor anything that does), so the controller and its test doubles may use it
without loading the engine.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from reconciler.model.frozen import FrozenChange

__all__ = ["EnsureResult"]


@dataclass(frozen=True, kw_only=True)
class EnsureResult:
    changed: bool  # an `up` ran; False: skipped, the spec was already applied
    spec_hash: str  # the hash the stack records as applied (reconciler.model.spec)
    outputs: Mapping[str, Any]  # the stack's outputs, plain values
    resource_changes: Mapping[str, int] = field(default_factory=dict)  # "create": 3, ...
    frozen: tuple[FrozenChange, ...] = ()  # create-only fields asked to change, kept as made

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

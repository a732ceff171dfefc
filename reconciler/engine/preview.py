"""What a preview says, as data: one :class:`ResourceStep` per resource the stack would touch.

The engine listens to Pulumi's engine events during ``preview`` and turns each
``ResourcePreEvent`` into a :class:`ResourceStep` (:mod:`reconciler.engine.preview_events`).
These types are plain data without Pulumi, so the pure decisions over a preview (the adoption's
judgement, the ``lb-reconciler preview`` report) do not load it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["REPLACING_OPS", "PreviewOutcome", "PropertyChange", "ResourceStep"]

# The ops that stand for a replacement: "replace" is the summary step; with delete-before-replace
# the engine also emits "create-replacement" and "delete-replaced" for the same resource.
REPLACING_OPS = frozenset({"replace", "create-replacement", "delete-replaced"})


@dataclass(frozen=True)
class PropertyChange:
    """One input that differs: ``kind`` is Pulumi's diff kind (``update``, ``add-replace`` ...)."""

    path: str
    kind: str
    old: Any = None
    new: Any = None

    @property
    def replaces(self) -> bool:
        return self.kind.endswith("-replace")


@dataclass(frozen=True)
class ResourceStep:
    """What the preview would do to one resource (``name`` is its logical name)."""

    name: str
    type: str
    op: str
    changes: tuple[PropertyChange, ...] = ()
    replace_keys: tuple[str, ...] = ()
    old_id: str | None = None  # the cloud ID today (None for a create)


@dataclass(frozen=True)
class PreviewOutcome:
    """The whole preview: Pulumi's counts by op and the steps that are not ``same``."""

    changes: dict[str, int]
    steps: tuple[ResourceStep, ...] = field(default_factory=tuple)
    # create-only fields the Service asks to change, which the load balancer keeps
    # (reconciler.model.frozen): one message each
    frozen: tuple[str, ...] = ()
    # what a preview without the cloud could not check (stacks.recorded): one phrase each
    unchecked: tuple[str, ...] = ()

    @property
    def changed(self) -> bool:
        return any(op != "same" and n for op, n in self.changes.items())

"""What a preview says, as data: one :class:`ResourceStep` per resource the stack would touch.

The engine listens to Pulumi's engine events during ``preview`` and turns each
``ResourcePreEvent`` into a :class:`ResourceStep` (pure: :func:`step_from_event`). Property values
are taken from the step's old and new *inputs*; an old input that was not set (the cloud chose
the value, as a floating IP's address) is taken from the old *outputs*, the value in the cloud
now. Secret values (Pulumi's secret envelope) are never copied, only marked ``"[secret]"``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pulumi.automation import events

from stacks.vocabulary import logical_name

__all__ = [
    "REPLACING_OPS",
    "PreviewOutcome",
    "PropertyChange",
    "ResourceStep",
    "step_from_event",
]

# Pulumi's special-value envelope: {SIG_KEY: SECRET_SIG, "value": ...} is a secret
SIG_KEY, SECRET_SIG = "4dabf18193072939515e22adb298388d", "1b47061264138c4ac30d75fd1eb44270"
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

    @property
    def changed(self) -> bool:
        return any(op != "same" and n for op, n in self.changes.items())


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        if value.get(SIG_KEY) == SECRET_SIG:
            return "[secret]"
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _lookup(inputs: Mapping[str, Any] | None, path: str) -> Any:
    """The value at a Pulumi property path (``name``, ``tags[0]``, ``persistence.type``)."""
    value: Any = inputs or {}
    for part in path.replace("]", "").replace("[", ".").split("."):
        if isinstance(value, Mapping):
            value = value.get(part)
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return None
    return _plain(value)


def step_from_event(meta: events.StepEventMetadata) -> ResourceStep:
    """One engine step as data (no secret value is copied)."""
    old_inputs = meta.old.inputs if meta.old is not None else None
    old_outputs = meta.old.outputs if meta.old is not None else None
    new_inputs = meta.new.inputs if meta.new is not None else None

    def old(path: str) -> Any:
        """The old input; when it was not set (the cloud chose it, such as a floating IP's
        address), the value the cloud has now, from the old outputs."""
        value = _lookup(old_inputs, path)
        return _lookup(old_outputs, path) if value is None else value

    changes: list[PropertyChange] = []
    if meta.detailed_diff:
        for path, diff in sorted(meta.detailed_diff.items()):
            changes.append(
                PropertyChange(path, diff.diff_kind.value, old(path), _lookup(new_inputs, path))
            )
    elif meta.diffs:
        replace = set(meta.keys or ())
        for path in sorted(meta.diffs):
            kind = "update-replace" if path in replace else "update"
            changes.append(PropertyChange(path, kind, old(path), _lookup(new_inputs, path)))
    old_id = meta.old.id if meta.old is not None else None
    return ResourceStep(
        name=logical_name(meta.urn),
        type=meta.type,
        op=meta.op.value,
        changes=tuple(changes),
        replace_keys=tuple(sorted(meta.keys or ())),
        old_id=str(old_id) if old_id else None,
    )

"""A preview's engine events as data: each ``ResourcePreEvent`` -> a
:class:`~reconciler.engine.preview.ResourceStep`; each ``ResOutputsEvent`` of a preview-only
refresh -> a :class:`~reconciler.engine.results.DriftedResource`. Pure, over Pulumi's event types.

Property values are taken from the step's old and new *inputs*; an old input that was not set
(the cloud chose the value, as a floating IP's address) is taken from the old *outputs*, the
value in the cloud now. Secret values (Pulumi's secret envelope) are never copied, only marked
``"[secret]"``.

A refresh step compares the state (the step's *old* side) with the cloud as the provider read it
(the *new* side); ``diffs``/``detailedDiff`` name the properties that differ, and the values are
taken from the outputs (what the provider reads back), falling back to the inputs. A resource
gone from the cloud is a ``delete`` step without a new side. Pulumi's bookkeeping keys
(``__defaults``, ``__meta``, ...) are left out of the values.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pulumi.automation import events

from reconciler.engine.deployment import is_secret
from reconciler.engine.preview import PropertyChange, ResourceStep
from reconciler.engine.results import DriftedResource, PropertyDrift
from stacks.vocabulary import logical_name

__all__ = ["drift_from_event", "step_from_event"]


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        if is_secret(value):
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


def _clean(value: Any) -> Any:
    """:func:`_plain` without Pulumi's bookkeeping keys (``__defaults``, ``__meta``, ...)."""
    value = _plain(value)
    if isinstance(value, Mapping):
        return {k: _clean(v) for k, v in value.items() if not str(k).startswith("__")}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def _read(state: events.StepEventStateMetadata | None, path: str) -> Any:
    """A property of one side of a refresh step: its output (read from the cloud), else its
    input."""
    if state is None:
        return None
    value = _lookup(state.outputs, path)
    return _clean(_lookup(state.inputs, path) if value is None else value)


def drift_from_event(meta: events.StepEventMetadata) -> DriftedResource | None:
    """The drift one step of a preview-only refresh shows (its ``ResOutputsEvent``'s metadata):
    a resource changed (``update``) or gone (``delete``) in the cloud; None for the other steps
    (``same``, the stack itself, providers)."""
    op = meta.op.value
    if op not in ("update", "delete") or meta.type.startswith("pulumi:"):
        return None
    old_id = meta.old.id if meta.old is not None else None
    cloud_id = str(old_id) if old_id else None
    if op == "delete" or meta.new is None:
        return DriftedResource(logical_name(meta.urn), meta.type, cloud_id, deleted=True)
    paths = sorted(meta.detailed_diff or ()) or sorted(meta.diffs or ())
    properties = tuple(PropertyDrift(p, _read(meta.old, p), _read(meta.new, p)) for p in paths)
    return DriftedResource(logical_name(meta.urn), meta.type, cloud_id, properties=properties)

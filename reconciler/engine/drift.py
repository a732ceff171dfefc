"""A drift check that writes nothing: ``pulumi refresh --preview-only`` of one Service's stack.

``--drift=report`` (:mod:`reconciler.controller.drift`) asks this instead of a refresh: the
provider reads every resource of the stack back from the cloud, and the engine's events say
which resources and properties differ from the state (:func:`.preview_events.drift_from_event`),
but neither the state nor the cloud is changed: no checkpoint, no history entry, no lock left,
no call but reads. Nothing else runs first: crash leftovers are not recovered here (that writes
the state); the housekeeper asks only for stacks whose last ``up`` finished.
"""

from __future__ import annotations

from pulumi import automation as auto

from reconciler.engine.handle import StackHandle, quiet
from reconciler.engine.preview_events import drift_from_event
from reconciler.engine.results import DriftedResource, DriftReport

__all__ = ["check_drift"]


def check_drift(ss: StackHandle) -> DriftReport:
    """What differs between the cloud and the stack's state; an empty report without a stack."""
    stack = ss.open_stack(create=False, writes=False)
    if stack is None:
        return DriftReport()
    found: list[DriftedResource] = []

    def on_event(event: auto.EngineEvent) -> None:
        done = event.res_outputs_event
        if done is not None:
            resource = drift_from_event(done.metadata)
            if resource is not None:
                found.append(resource)

    ss.deadline(
        lambda: stack.preview_refresh(on_output=quiet, on_event=on_event, show_secrets=False),
        stack=stack,
        doing="drift check",
    )
    return DriftReport(tuple(sorted(found, key=lambda r: (r.name, r.type))))

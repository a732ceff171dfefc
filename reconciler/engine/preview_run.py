"""One stack's preview: what ``ensure(spec)`` would do, resource by resource, changing nothing.

:meth:`reconciler.engine.stack.ServiceStack.preview` runs :func:`run_preview`. The stack is left
as it was: its state is not written (what a crash left pending is looked up, as ``ensure`` would,
but not repaired), its config file is put back byte for byte, and a stack that did not exist (a
new Service) is removed again with its work folder. ``lb-reconciler preview`` runs it on a
throw-away copy of the stack (:mod:`.sandbox`), so that the backend the stack lives on is only
read.

Without the cloud (``recorded``: the stack's recorded lookups,
:func:`.preview_offline.recorded_lookups`) the program replays them instead of asking
(:mod:`stacks.recorded`), what it could not replay comes back as not checked, and a crash's
leftovers are not looked up (said as not checked when there are any).
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any

from pulumi import automation as auto

from reconciler.engine.handle import StackHandle, quiet
from reconciler.engine.lost import lost_lookups
from reconciler.engine.preview import PreviewOutcome, ResourceStep
from reconciler.engine.preview_events import step_from_event
from reconciler.engine.preview_offline import PENDING_NOT_CHECKED, not_checked, replay_lookups
from reconciler.engine.recovery import recover_pending
from reconciler.engine.stack_spec import stack_spec
from reconciler.engine.state.store import BucketError
from reconciler.model.spec import LoadBalancerSpec
from stacks.vocabulary import (
    CHILD_DELETE_TIMEOUT_KEY,
    CONFIG_NAMESPACE,
    IMPORTS_KEY,
    LOOKUPS_KEY,
    RELEASE_KEY,
    SPEC_KEY,
)

__all__ = ["run_preview"]


def run_preview(
    handle: StackHandle,
    spec: LoadBalancerSpec,
    *,
    imports: Mapping[str, str] | None = None,
    recorded: Mapping[str, Any] | None = None,
    refresh: bool = False,
) -> PreviewOutcome:
    """The preview of ``spec`` on ``handle``'s stack (``imports``: {logical name: cloud ID}
    to preview adopting existing objects; ``refresh``: read the cloud first, writing nothing)."""
    stack = handle.open_stack(create=False, writes=False)
    existed = stack is not None
    config_file = handle.work_dir / f"Pulumi.{handle.name}.yaml"
    saved_config = config_file.read_bytes() if existed and config_file.exists() else None
    stack = stack or handle.open_stack(create=True, writes=False)
    assert stack is not None
    steps: list[ResourceStep] = []
    unchecked: list[str] = []

    def on_event(event: auto.EngineEvent) -> None:
        pre = event.resource_pre_event
        # a refresh step (--refresh) reads the cloud: what differs shows in the step after it
        if pre is not None and pre.metadata.op.value not in ("same", "refresh"):
            steps.append(step_from_event(pre.metadata))
        said = not_checked(event)
        if said is not None and said not in unchecked:
            unchecked.append(said)

    try:
        tags = handle.tags_of(stack).read() if existed else handle.wanted_tags()
        wanted = stack_spec(spec, tags=tags)
        spec = wanted.spec
        saved, handle.imports = handle.imports, {**handle.imports}
        if recorded is None:
            handle.imports.update(_pending_imports(handle, stack, spec, existed=existed))
        elif existed and _has_pending(handle):
            unchecked.append(PENDING_NOT_CHECKED)
        handle.imports.update(imports or {})
        try:
            handle.configure_stack(stack, spec)
        finally:
            handle.imports = saved
        if recorded is not None:
            replay_lookups(config_file, recorded)
        result = handle.deadline(
            lambda: stack.preview(on_output=quiet, on_event=on_event, refresh=refresh),
            stack=stack,
            doing="preview",
        )
    finally:
        _restore(handle, stack, existed=existed, config=saved_config)
    counts = {str(k): int(v) for k, v in result.change_summary.items()}
    return PreviewOutcome(
        counts,
        tuple(steps),
        tuple(f.message() for f in wanted.frozen),
        unchecked=tuple(unchecked),
    )


def _pending_imports(
    handle: StackHandle, stack: auto.Stack, spec: LoadBalancerSpec, *, existed: bool
) -> dict[str, str]:
    """What a crash left pending, looked up in the cloud as ``ensure`` would (not repaired):
    the imports the next ``up`` would do."""
    return recover_pending(
        stack=stack,
        stack_name=handle.name,
        rest=handle.engine.rest(),
        carried=handle.carried_imports_of() if existed else None,
        lost=lost_lookups(spec) if existed else (),
        repair=False,
        store=handle.engine.store_or_none(),
    ).imports


def _has_pending(handle: StackHandle) -> bool:
    """Whether the stack's state holds operations a crash left pending."""
    store = handle.engine.store_or_none()
    try:
        deployment = store.deployment(handle.name) if store is not None else None
    except BucketError:
        return False
    return bool((deployment or {}).get("pending_operations"))


def _restore(
    handle: StackHandle, stack: auto.Stack, *, existed: bool, config: bytes | None
) -> None:
    if not existed:
        with contextlib.suppress(auto.CommandError):
            stack.workspace.remove_stack(handle.name)
        handle.forget()
        return
    config_file = handle.work_dir / f"Pulumi.{handle.name}.yaml"
    if config is not None:  # as it was, byte for byte
        config_file.write_bytes(config)
        return
    # No config file here before (another machine's state dir, same backend): drop what the
    # preview set apart from the provider's settings, which any operation sets.
    names = (SPEC_KEY, IMPORTS_KEY, RELEASE_KEY, CHILD_DELETE_TIMEOUT_KEY, LOOKUPS_KEY)
    keys = [f"{CONFIG_NAMESPACE}:{k}" for k in names]
    with contextlib.suppress(auto.CommandError):
        stack.remove_all_config(keys)

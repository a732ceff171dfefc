"""Edits of a stack's state made in its checkpoint through the store instead of a ``pulumi``
start each: lifting protection (``pulumi state unprotect``) and removing a stack that
``destroy`` emptied (``pulumi stack rm``). Each is made under a lock of this process's own
with the backend's compare-and-swap, as the members' direct path writes
(:mod:`.members_direct`): another writer's lock refuses it (:class:`StackLockedError`, as the
CLI refuses a locked stack), a write since the read too (:class:`ConflictError`); both are
retried. Where the store cannot edit (a backend it does not write, a checkpoint format or
journal the direct paths refuse, a stack that still holds resources), each returns False and
the caller asks the CLI, which also says what is wrong.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Any

from reconciler.engine.context import EngineContext
from reconciler.engine.deployment import is_bookkeeping
from reconciler.engine.direct_gate import state_refusal
from reconciler.engine.errors import ConflictError, StackLockedError
from reconciler.engine.state.stacks import has_journal, locked, remove_stack
from reconciler.engine.state.store import (
    BucketError,
    Checkpoint,
    StateStore,
    WriteConflictError,
)

__all__ = [
    "editable_checkpoint",
    "remove_emptied_stack",
    "replace_deployment",
    "unprotect_in_state",
]


def editable_checkpoint(store: StateStore, stack: str) -> Checkpoint | None:
    """The stack's checkpoint when the direct paths may write it
    (:func:`~reconciler.engine.direct_gate.state_refusal`: its format, no journal); None."""
    read = store.read_checkpoint(stack)
    if read is None:
        return None
    if state_refusal(checkpoint_format=read.format, journal=has_journal(store, stack)):
        return None
    return read


def replace_deployment(
    store: StateStore,
    stack: str,
    deployment: Mapping[str, Any],
    *,
    expect: Checkpoint,
    doing: str,
    backup: bool = True,
    first: Callable[[], object] | None = None,
) -> None:
    """Write ``deployment`` over the checkpoint ``expect`` under a lock of this process, with
    the backend's compare-and-swap: :class:`StackLockedError` while another's lock holds the
    stack, :class:`ConflictError` when another wrote it since ``expect`` was read (``doing``
    says what was being done, for the message); nothing is written either way. ``first``: what
    else to write under that lock before the checkpoint; ``backup``: the replaced checkpoint
    copied to ``.bak`` first, as the CLI does."""
    with locked(store, stack) as held:
        if held:
            raise StackLockedError.of(stack, held, backend=store.url)
        try:
            if first is not None:
                first()
            store.write_deployment(stack, deployment, expect=expect, backup=backup)
        except WriteConflictError as exc:
            raise ConflictError(
                f"stack {stack} was written by another while {doing} ({exc}); the next attempt "
                "reads it again",
                stack=stack,
            ) from None


def _editable(engine: EngineContext, stack: str) -> tuple[StateStore, Checkpoint] | None:
    store = engine.store_or_none()
    read = editable_checkpoint(store, stack) if store is not None else None
    return (store, read) if store is not None and read is not None else None


def unprotect_in_state(
    engine: EngineContext, stack: str, urns: Collection[str] | None = None
) -> bool:
    """Lift the protection of the resources ``urns`` (None: all) in the stack's state, as
    ``pulumi state unprotect`` does (a URN the state lacks is no error); nothing is written
    when none of them is protected. False: the CLI must."""
    doing = "lifting protection"
    try:
        found = _editable(engine, stack)
        if found is None:
            return False
        store, read = found
        deployment: dict[str, Any] = dict(read.deployment or {})
        resources = list(deployment.get("resources") or [])

        def lifted(r: Any) -> bool:
            return bool(r.get("protect")) and (urns is None or r.get("urn") in urns)

        if not any(lifted(r) for r in resources):
            return True
        deployment["resources"] = [  # the CLI leaves `protect` out when false
            {k: v for k, v in r.items() if k != "protect"} if lifted(r) else r for r in resources
        ]
        engine.fence(doing, stack=stack)
        replace_deployment(store, stack, deployment, expect=read, doing=doing)
    except BucketError as exc:
        raise engine.error(exc, stack=stack, doing=doing) from None
    return True


def remove_emptied_stack(engine: EngineContext, stack: str) -> bool:
    """Remove the stack after ``destroy`` emptied it, as ``pulumi stack rm --remove-backups``
    (:func:`~.state.stacks.remove_stack`). False, nothing removed, when its state still holds a
    resource other than the stack's own and its providers (the CLI refuses those, and says
    which) or the store cannot: the CLI must."""
    doing = "removing the stack"
    try:
        found = _editable(engine, stack)
        if found is None:
            return False
        store, read = found
        resources = (read.deployment or {}).get("resources") or []
        if any(not is_bookkeeping(str(r.get("type", ""))) for r in resources):
            return False
        engine.fence(doing, stack=stack)
        held = remove_stack(store, stack)
    except BucketError as exc:
        raise engine.error(exc, stack=stack, doing=doing) from None
    if held:
        raise StackLockedError.of(stack, held, backend=store.url)
    return True

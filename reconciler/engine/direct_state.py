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

from collections.abc import Collection
from typing import Any

from reconciler.engine.context import EngineContext
from reconciler.engine.direct_gate import state_refusal
from reconciler.engine.errors import ConflictError, StackLockedError
from reconciler.engine.run import STACK_TYPE
from reconciler.engine.state.stacks import has_journal, locked, remove_stack
from reconciler.engine.state.store import (
    BucketError,
    Checkpoint,
    StateStore,
    WriteConflictError,
)

__all__ = ["remove_emptied_stack", "unprotect_in_state"]

PROVIDERS = "pulumi:providers:"


def _editable(engine: EngineContext, stack: str) -> tuple[StateStore, Checkpoint] | None:
    store = engine.store_or_none()
    if store is None:
        return None
    read = store.read_checkpoint(stack)
    if read is None:
        return None
    if state_refusal(checkpoint_format=read.format, journal=has_journal(store, stack)):
        return None
    return store, read


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
        with locked(store, stack) as held:
            if held:
                raise StackLockedError.of(stack, held, backend=store.url)
            store.write_deployment(stack, deployment, expect=read)
    except WriteConflictError as exc:
        raise ConflictError(
            f"stack {stack} was written by another while its protection was lifted ({exc}); "
            "the next attempt reads it again",
            stack=stack,
        ) from None
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
        if any(
            r.get("type") != STACK_TYPE and not str(r.get("type", "")).startswith(PROVIDERS)
            for r in resources
        ):
            return False
        engine.fence(doing, stack=stack)
        held = remove_stack(store, stack)
    except BucketError as exc:
        raise engine.error(exc, stack=stack, doing=doing) from None
    if held:
        raise StackLockedError.of(stack, held, backend=store.url)
    return True

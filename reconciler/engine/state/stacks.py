"""A stack's whole life in the backend beside the CLI: made as ``pulumi stack init`` makes it,
removed as ``pulumi stack rm --force --remove-backups`` removes it, what the CLI leaves after a
removal, and the history and backups kept to ``--keep-history`` (what pulumi's
``pkg/backend/diy/state.go`` does). Each takes the stack's lock as the CLI takes one
(:meth:`~reconciler.engine.state.store.StateStore.locked`) unless its caller holds it.
:mod:`reconciler.engine.state.retention` decides what is pruned.
"""

from __future__ import annotations

import json

from reconciler.engine.state.lock_plan import LockRecord
from reconciler.engine.state.retention import backups_to_prune, history_to_prune
from reconciler.engine.state.store import (
    CHECKPOINT_SUFFIXES,
    ORGANIZATION,
    TAGS_SUFFIX,
    StateStore,
)

__all__ = [
    "create_stack",
    "prune",
    "remove_leftovers",
    "remove_stack",
    "remove_stack_objects",
]


def prune(store: StateStore, stack: str, *, keep: int) -> int:
    """Remove ``stack``'s history entries and checkpoint backups beyond the newest ``keep`` of
    each; how many objects went. Two listings when there is nothing to do."""
    bucket = store.bucket
    history = [o.key for o in bucket.list(store.history_prefix(stack))]
    backups = [o.key for o in bucket.list(store.backups_prefix(stack))]
    doomed = history_to_prune(history, stack=stack, keep=keep)
    doomed += backups_to_prune(backups, stack=stack, keep=keep)
    for key in doomed:
        bucket.delete(key)
    return len(doomed)


def remove_leftovers(store: StateStore, stack: str) -> int:
    """After ``pulumi stack rm``: remove what the CLI leaves of the stack (its checkpoint
    backups, the ``.json.bak`` beside its checkpoint, any history); nothing while the stack
    exists again (made anew meanwhile). How many objects went."""
    if store.stack_exists(stack):
        return 0
    base = f"{store.stacks_prefix()}{stack}"
    leftovers = [
        o.key
        for o in store.bucket.list(f"{base}.")
        if o.key[len(base) :] in (".json.bak", ".json.gz.bak", ".json.zst.bak")
    ]
    leftovers += _history_and_backups(store, stack)
    for key in leftovers:
        store.bucket.delete(key)
    return len(leftovers)


def _history_and_backups(store: StateStore, stack: str) -> list[str]:
    return [
        o.key
        for prefix in (store.history_prefix(stack), store.backups_prefix(stack))
        for o in store.bucket.list(prefix)
    ]


def remove_stack(store: StateStore, stack: str) -> list[LockRecord]:
    """Remove ``stack`` as ``pulumi stack rm --force --remove-backups`` does, without a
    ``pulumi``, under a lock of this process's own, taken as the CLI takes one (refused while
    another is held, checked again after writing it): :func:`remove_stack_objects`. Returns the
    locks that refused it ([]: removed)."""
    with store.locked(stack) as held:
        if held:
            return held
        remove_stack_objects(store, stack)
        return []


def remove_stack_objects(store: StateStore, stack: str) -> None:
    """Remove ``stack``'s objects, the caller holding its lock: its tags, history and backups,
    then the checkpoint's ``.bak``, the checkpoint last, so that one interrupted midway still
    lists and is removed by the next attempt."""
    base = f"{store.stacks_prefix()}{stack}"
    beside = {o.key[len(base) :] for o in store.bucket.list(f"{base}.")}
    doomed = [base + TAGS_SUFFIX] if TAGS_SUFFIX in beside else []
    doomed += _history_and_backups(store, stack)
    doomed += [base + s + ".bak" for s in CHECKPOINT_SUFFIXES if s + ".bak" in beside]
    doomed += [base + s for s in CHECKPOINT_SUFFIXES if s in beside]
    for key in doomed:
        store.bucket.delete(key)


def create_stack(store: StateStore, stack: str) -> bool:
    """Make ``stack`` as ``pulumi stack init`` does, without a ``pulumi``, under a lock of this
    process's own: a checkpoint with no deployment (the CLI reads a stack never updated; the
    first ``up`` adds the secrets provider's salt from the settings file, as after ``stack
    init``). False, nothing written, when another's lock refused it, the stack exists
    meanwhile, or the CLI has not set the backend up yet (no ``meta.yaml``; stacks written
    before it would sit where the CLI looks for the old layout)."""
    if not store.opened():
        return False
    with store.locked(stack) as held:
        if held or store.stack_exists(stack):
            return False
        fqn = f"{ORGANIZATION}/{store.project}/{stack}"
        checkpoint = json.dumps({"version": 3, "checkpoint": {"stack": fqn}})
        store.bucket.write(f"{store.stacks_prefix()}{stack}.json", checkpoint.encode())
        return True

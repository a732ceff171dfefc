"""Stack locks on the backend: listing them, and removing the stale ones.

Which locks are stale is :mod:`reconciler.engine.state.lock_plan`'s decision (the leader's rule, or
a bystander's); this module reads what it decides over (the lock records through
:mod:`reconciler.engine.state.store`, the one module that knows where they are, on every DIY
backend: ``file://``, ``s3://``, ``postgres://``; this process's live ``pulumi`` children; the
stacks' tags) and removes what it names, with a warning each, as ``pulumi cancel`` would. A backend
the store does not read (Pulumi Cloud, ``gs://``) lists nothing here: None.

* :func:`clear_stale_locks` with ``stack_name``: before each operation of that stack
  (:meth:`reconciler.engine.handle.StackHandle.open_stack`); without: at takeover, every lock of
  this cluster's stacks in one listing (:meth:`reconciler.engine.stack.Engine.take_over`).
* :func:`locked`: whether a lock that is not stale by the same rule holds a stack (the
  listing's ``locked``; the housekeeper leaves such a stack alone).
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Sequence

from reconciler.engine.processes import alive, pulumi_children
from reconciler.engine.state.lock_plan import (
    LockRecord,
    of_cluster,
    stale_for_bystander,
    stale_for_leader,
)
from reconciler.engine.state.store import StateStore

__all__ = ["clear_stale_locks", "list_locks", "locked"]

log = logging.getLogger("reconciler.engine.stack")


def list_locks(
    store: StateStore | None, *, stack_name: str | None = None
) -> list[LockRecord] | None:
    """The locks of one stack, or (``stack_name`` None) of every stack of the project, in one
    listing; None for a backend whose locks cannot be listed."""
    if store is None:
        return None
    if stack_name is not None:
        return store.list_locks(stack_name)
    return [lock for locks in store.all_locks().values() for lock in locks]


def _stale(locks: Sequence[LockRecord], *, leader: bool) -> list[LockRecord]:
    if not locks:
        return []  # no need to read /proc
    host = socket.gethostname()  # what the `pulumi` children write: they share our UTS namespace
    if leader:
        return stale_for_leader(locks, hostname=host, children=pulumi_children())
    here = {lock.pid for lock in locks if lock.hostname == host and alive(lock.pid)}
    return stale_for_bystander(locks, hostname=host, alive=here)


def clear_stale_locks(
    *,
    store: StateStore | None,
    leader: bool,
    stack_name: str | None = None,
    cluster_name: str = "",
) -> list[LockRecord]:
    """Remove the stale locks (:mod:`reconciler.engine.state.lock_plan`) of stack ``stack_name``, or
    of every stack of cluster ``cluster_name``; returns them. ``leader``: this process holds the
    Lease (the leader's rule), else a bystander's."""
    locks = list_locks(store, stack_name=stack_name)
    if not locks or store is None:
        return []
    if stack_name is None:
        locks = [
            lock
            for lock in locks
            # no tags object (a stack just made) tells nothing: the name decides
            if of_cluster(
                lock.stack, cluster_name=cluster_name, tags=store.tags(lock.stack) or None
            )
        ]
    stale = _stale(locks, leader=leader)
    why = (
        "no operation of this leader holds it (the Lease makes it the only writer)"
        if leader
        else "its process on this host is gone"
    )
    for lock in stale:
        log.warning(
            "removing the stale lock of stack %s held by %s: %s", lock.stack, lock.describe(), why
        )
        store.delete_lock(lock.key)
    return stale


def locked(locks: Sequence[LockRecord] | None, *, leader: bool) -> bool | None:
    """Whether a lock that is not stale (by the same rule) is among a stack's ``locks``: an
    operation runs on it, or may. None when the locks could not be listed."""
    if locks is None:
        return None
    return len(_stale(locks, leader=leader)) < len(locks)

"""Stack locks on the backend: listing them, judging them, and removing the stale ones.

Whose a lock is and which are stale is :mod:`reconciler.engine.state.lock_plan`'s decision (the
leader's rule, or a bystander's); this module reads what it decides over (the lock records through
:mod:`reconciler.engine.state.store`, the one module that knows where they are, on every DIY
backend: ``file://``, ``s3://``, ``postgres://``; this process and its live ``pulumi`` children,
and the processes of this host the records name, from ``/proc``; the stacks' tags) and removes
what it names, with a warning each, as ``pulumi cancel`` would. A backend the store does not read
(Pulumi Cloud, ``gs://``) lists nothing here.

* :func:`clear_stale_locks` with ``stack_name``: before each operation of that stack
  (:meth:`reconciler.engine.handle.StackHandle.check_stack`, which reports the locks it leaves:
  a person's, CI's); without: at takeover, every lock of this cluster's stacks in one listing
  (:meth:`reconciler.engine.stack.Engine.take_over`).
* :func:`locked`: whether a lock that is not stale by the same rule holds a stack (the
  listing's ``locked``; the housekeeper leaves such a stack alone).

``rule``: a :class:`LeaderRule` when this process leads (the leader's rule, with what it knows
of its cluster's other replicas), None for anyone else (a bystander's).
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from reconciler.engine.processes import alive, pulumi_children, started_at
from reconciler.engine.state.lock_plan import (
    LeaderView,
    LockRecord,
    Whose,
    judge,
    of_cluster,
    stale_for_bystander,
)
from reconciler.engine.state.store import StateStore

__all__ = ["Cleared", "LeaderRule", "clear_stale_locks", "leader_view", "list_locks", "locked"]

log = logging.getLogger("reconciler.engine.stack")


@dataclass(frozen=True)
class LeaderRule:
    """What a leader knows besides this host: the hostnames of its cluster's other replicas
    (past holders of the Lease), and how old anyone else's lock must be for it to be removed
    (``--foreign-lock-timeout``; None: never)."""

    replicas: Collection[str] = ()
    foreign_timeout: timedelta | None = None


@dataclass(frozen=True)
class Cleared:
    """What :func:`clear_stale_locks` did: the locks it removed, and the ones it left to their
    holders because they are not this controller's (a person's, CI's, unreadable)."""

    removed: list[LockRecord] = field(default_factory=list)
    foreign: list[LockRecord] = field(default_factory=list)


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


def leader_view(
    locks: Sequence[LockRecord], rule: LeaderRule, *, holding: Collection[str] = ()
) -> LeaderView:
    """What the leader's rule decides over, read from this host for ``locks``; ``holding``: the
    keys of the locks this process holds now (:attr:`StateStore.holding`)."""
    host = socket.gethostname()  # what the `pulumi` children write: they share our UTS namespace
    running = {
        lock.pid: started
        for lock in locks
        if lock.hostname == host and (started := started_at(lock.pid)) is not None
    }
    return LeaderView(
        hostname=host,
        now=datetime.now(UTC),
        pid=os.getpid(),
        holding=frozenset(holding),
        ours=pulumi_children(),
        running=running,
        replicas=frozenset(rule.replicas) - {host},
        foreign_timeout=rule.foreign_timeout,
    )


def _judged(
    locks: Sequence[LockRecord], rule: LeaderRule | None, *, holding: Collection[str] = ()
) -> list[Whose]:
    """Each lock's :class:`Whose` by the leader's rule; for a bystander, ``DEAD_HERE`` for the
    provably stale ones and ``FOREIGN`` for the rest."""
    if not locks:
        return []  # no need to read /proc
    if rule is not None:
        view = leader_view(locks, rule, holding=holding)
        return [judge(lock, view) for lock in locks]
    host = socket.gethostname()
    here = {lock.pid for lock in locks if lock.hostname == host and alive(lock.pid)}
    stale = stale_for_bystander(locks, hostname=host, alive=here)
    return [Whose.DEAD_HERE if lock in stale else Whose.FOREIGN for lock in locks]


_WHY = {
    Whose.DEAD_HERE: "its process on this host is gone",
    Whose.REPLICA: "a replica of this controller wrote it, and holds nothing now (this one "
    "holds the Lease)",
    Whose.EXPIRED: "it is older than --foreign-lock-timeout",
}


def clear_stale_locks(
    *,
    store: StateStore | None,
    rule: LeaderRule | None,
    stack_name: str | None = None,
    cluster_name: str = "",
) -> Cleared:
    """Remove the stale locks (:mod:`reconciler.engine.state.lock_plan`) of stack
    ``stack_name``, or of every stack of cluster ``cluster_name``; the ones removed and the
    ones left to their holders."""
    locks = list_locks(store, stack_name=stack_name)
    if not locks or store is None:
        return Cleared()
    if stack_name is None:
        locks = [
            lock
            for lock in locks
            # no tags object (a stack just made) tells nothing: the name decides
            if of_cluster(
                lock.stack, cluster_name=cluster_name, tags=store.tags(lock.stack) or None
            )
        ]
    cleared = Cleared()
    for lock, whose in zip(locks, _judged(locks, rule, holding=store.holding), strict=True):
        if whose.stale:
            log.warning(
                "removing the stale lock of stack %s held by %s: %s",
                lock.stack,
                lock.describe(),
                _WHY[whose],
            )
            store.delete_lock(lock.key)
            cleared.removed.append(lock)
        elif whose is Whose.FOREIGN:
            cleared.foreign.append(lock)
    return cleared


def locked(
    locks: Sequence[LockRecord] | None,
    *,
    rule: LeaderRule | None,
    holding: Collection[str] = (),
) -> bool | None:
    """Whether a lock that is not stale (by the same rule) is among a stack's ``locks``: an
    operation runs on it, or may. None when the locks could not be listed. ``holding``: the
    keys of the locks this process holds now."""
    if locks is None:
        return None
    return not all(whose.stale for whose in _judged(locks, rule, holding=holding))

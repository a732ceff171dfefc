"""Stack locks on the backend: listing them, and removing the stale ones.

Which locks are stale is :mod:`.lock_plan`'s decision (the leader's rule, or a bystander's);
this module reads what it decides over (the lock records, this process's live ``pulumi``
children, the stacks' tags) and removes what it names, with a warning each.

Two small functions know where the locks are, :func:`list_locks` and :func:`remove_lock`:
Pulumi's DIY layout on a ``file://`` backend,
``<backend>/.pulumi/locks/organization/<project>/<stack>/<lock id>.json`` (and the blob
library's ``.attrs`` sidecar beside it), the paths ``pulumi cancel`` deletes. For other backends
they list nothing yet (None), and nothing is removed.

* :func:`clear_stale_locks` with ``stack_name``: before each operation of that stack
  (:meth:`reconciler.engine.handle.StackHandle.open_stack`); without: at takeover, every lock of
  this cluster's stacks in one listing (:meth:`reconciler.engine.stack.Engine.take_over`).
* :func:`locked`: whether a lock that is not stale by the same rule holds a stack (the
  listing's ``locked``; the housekeeper leaves such a stack alone).
"""

from __future__ import annotations

import logging
import socket
from pathlib import Path
from urllib.parse import unquote, urlsplit

from reconciler.engine.lock_plan import (
    LockRecord,
    of_cluster,
    parse_lock,
    stale_for_bystander,
    stale_for_leader,
)
from reconciler.engine.processes import alive, pulumi_children
from reconciler.engine.tags import file_tags
from stacks.vocabulary import PROJECT

__all__ = ["clear_stale_locks", "list_locks", "lock_dir", "locked", "remove_lock"]

log = logging.getLogger("reconciler.engine.stack")


def _locks_root(backend: str) -> Path | None:
    if not backend.startswith("file://"):
        return None
    return Path(unquote(urlsplit(backend).path)) / ".pulumi" / "locks" / "organization" / PROJECT


def lock_dir(*, backend: str, stack_name: str) -> Path | None:
    """Where a ``file://`` backend keeps the locks of a stack; None for other backends."""
    root = _locks_root(backend)
    return None if root is None else root / stack_name


def list_locks(backend: str, *, stack_name: str | None = None) -> list[LockRecord] | None:
    """The locks of one stack, or (``stack_name`` None) of every stack of the project, in one
    listing; None for a backend whose locks this module cannot list."""
    root = _locks_root(backend)
    if root is None:
        return None
    try:
        folders = [root / stack_name] if stack_name else [d for d in root.iterdir() if d.is_dir()]
    except OSError:
        return []  # no lock was ever taken
    out = []
    for folder in folders:
        try:
            paths = sorted(folder.glob("*.json"))
        except OSError:
            continue
        for path in paths:
            try:
                text = path.read_text()
            except FileNotFoundError:
                continue  # released meanwhile
            except OSError:
                text = ""
            out.append(parse_lock(text, stack=folder.name, key=str(path)))
    return out


def remove_lock(backend: str, lock: LockRecord) -> None:
    """Remove one lock, as ``pulumi cancel`` does (with its sidecar)."""
    if _locks_root(backend) is None:
        return
    path = Path(lock.key)
    path.unlink(missing_ok=True)
    path.with_name(path.name + ".attrs").unlink(missing_ok=True)


def _stale(locks: list[LockRecord], *, leader: bool) -> list[LockRecord]:
    if not locks:
        return []  # no need to read /proc
    host = socket.gethostname()  # what the `pulumi` children write: they share our UTS namespace
    if leader:
        return stale_for_leader(locks, hostname=host, children=pulumi_children())
    here = {lock.pid for lock in locks if lock.hostname == host and alive(lock.pid)}
    return stale_for_bystander(locks, hostname=host, alive=here)


def clear_stale_locks(
    *, backend: str, leader: bool, stack_name: str | None = None, cluster_name: str = ""
) -> list[LockRecord]:
    """Remove the stale locks (:mod:`.lock_plan`) of stack ``stack_name``, or of every stack of
    cluster ``cluster_name``; returns them. ``leader``: this process holds the Lease (the
    leader's rule), else a bystander's."""
    locks = list_locks(backend, stack_name=stack_name)
    if not locks:
        return []
    if stack_name is None:
        locks = [
            lock
            for lock in locks
            if of_cluster(
                lock.stack, cluster_name=cluster_name, tags=file_tags(backend, lock.stack)
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
        remove_lock(backend, lock)
    return stale


def locked(backend: str, stack_name: str, *, leader: bool) -> bool | None:
    """Whether a lock that is not stale (by the same rule) holds the stack: an operation runs
    on it, or may. None for a backend whose locks cannot be listed here."""
    locks = list_locks(backend, stack_name=stack_name)
    if locks is None:
        return None
    return len(_stale(locks, leader=leader)) < len(locks)

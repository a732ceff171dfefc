"""A stack's whole life in the backend beside the CLI: made as ``pulumi stack init`` makes it,
removed as ``pulumi stack rm --force --remove-backups`` removes it, what the CLI leaves after a
removal, and the history and backups kept to ``--keep-history`` (what pulumi's
``pkg/backend/diy/state.go`` does). Each takes the stack's lock as the CLI takes one
(:func:`locked`) unless its caller holds it. :mod:`reconciler.engine.state.retention` decides what
is pruned.
"""

from __future__ import annotations

import contextlib
import getpass
import gzip
import json
import os
import re
import socket
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

from reconciler.engine.state.lock_plan import LockRecord
from reconciler.engine.state.retention import backups_to_prune, history_to_prune
from reconciler.engine.state.store import (
    CHECKPOINT_SUFFIXES,
    ORGANIZATION,
    TAGS_SUFFIX,
    Checkpoint,
    StateStore,
)

__all__ = [
    "copy_stack",
    "create_stack",
    "has_journal",
    "history_records",
    "history_time",
    "last_update",
    "locked",
    "prune",
    "record_update",
    "remove_leftovers",
    "remove_stack",
    "remove_stack_objects",
    "rewrite_records",
    "write_stack",
]

# the end of a history object's name: <stack>-<time>.history.json[.gz|.zst] (or .checkpoint...)
_STAMPED = re.compile(r"-(?P<time>\d+)\.(?:history|checkpoint)\.json(?:\.gz|\.zst)?$")


def _lock_content() -> dict[str, Any]:
    """A lock record as the CLI writes one (``pkg/backend/diy/lock.go``): this process."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # a container's UID with no name (OpenShift's random UIDs)
        user = str(os.getuid())
    return {
        "pid": os.getpid(),
        "username": user,
        "hostname": socket.gethostname(),
        "timestamp": datetime.now(UTC).isoformat(),
    }


@contextlib.contextmanager
def locked(store: StateStore, stack: str) -> Iterator[list[LockRecord]]:
    """A lock of this process on ``stack``, taken as the CLI takes one (``pkg/backend/diy/
    lock.go``): yields the locks of others that refuse it (none held: it is written, and checked
    again after writing), and removes it after."""
    held = store.list_locks(stack)
    if held:
        yield held
        return
    key = f"{store.locks_prefix(stack)}{uuid.uuid4()}.json"
    store.holding.add(key)
    try:
        # not synced: a lock means something only while this process lives
        store.bucket.write(key, json.dumps(_lock_content()).encode(), durable=False)
        yield [lock for lock in store.list_locks(stack) if lock.key != key]
    finally:
        store.holding.discard(key)  # held no more, even when it cannot be removed now
        store.bucket.delete(key)


def has_journal(store: StateStore, stack: str) -> bool:
    """Whether ``stack`` has journal objects (:meth:`StateStore.journal_prefix`): an update of a
    newer CLI, not consolidated yet, that a direct write would contradict."""
    return bool(store.bucket.list(store.journal_prefix(stack)))


def last_update(store: StateStore, stack: str) -> dict[str, Any] | None:
    """The record of ``stack``'s newest update in its history (``pulumi stack history``'s
    first entry), None without one (or in a format this code does not read)."""
    newest = history_records(store, stack, limit=1)
    return newest[0] if newest else None


def history_records(store: StateStore, stack: str, *, limit: int) -> list[dict[str, Any]]:
    """``stack``'s newest ``limit`` history records, newest first (``pulumi stack history``'s
    entries; one in a format this code does not read is left out)."""
    prefix = store.history_prefix(stack)
    keys = [o.key for o in store.bucket.list(prefix) if ".history.json" in o.key]
    found = []
    for key in sorted(keys, key=history_time, reverse=True)[:limit]:
        data = store.bucket.read(key) or b""
        try:
            record = json.loads(gzip.decompress(data) if key.endswith(".gz") else data)
        except (OSError, ValueError):
            continue
        if isinstance(record, dict):
            found.append(record)
    return found


def history_time(key: str) -> int:
    """The time (Unix nanoseconds) in a history object's name ``<stack>-<time>.history...``
    (or ``.checkpoint...``); 0 when it has none. Stack names have dots and dashes."""
    found = _STAMPED.search(key)
    return int(found["time"]) if found else 0


def record_update(
    store: StateStore, stack: str, checkpoint: Checkpoint, record: Mapping[str, Any]
) -> None:
    """What the CLI writes once an update has ended (pulumi's ``addToHistory``, then
    ``backupStack``): the update's ``record`` and a copy of ``checkpoint`` (the state it left)
    in the stack's history, and a copy in its backups, compressed as the checkpoint is. The
    caller holds the stack's lock, and prunes after (:func:`prune`)."""
    packed = checkpoint.key.endswith(".gz")
    ext = ".json.gz" if packed else ".json"
    prefix = f"{store.history_prefix(stack)}{stack}-{time.time_ns()}"
    text = json.dumps(dict(record), separators=(",", ":")).encode()
    # records beside the checkpoint (the record itself): not synced, as the CLI syncs none
    history = gzip.compress(text) if packed else text
    store.bucket.write(f"{prefix}.history{ext}", history, durable=False)
    store.bucket.write(f"{prefix}.checkpoint{ext}", checkpoint.raw, durable=False)
    backup = f"{store.backups_prefix(stack)}{stack}.{time.time_ns()}{ext}"
    store.bucket.write(backup, checkpoint.raw, durable=False)


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


def rewrite_records(
    store: StateStore, stack: str, edit: Callable[[dict[str, Any]], dict[str, Any] | None]
) -> int:
    """Pass each of ``stack``'s stored records besides its checkpoint (history entries and
    their checkpoints, checkpoint backups, the checkpoint's ``.bak``) through ``edit``, and
    write back those it changes (``edit`` returns None for one it leaves), compressed as
    found; one this code does not read (``.zst``, not a JSON object) is left. The caller holds
    the stack's lock. How many were written."""
    base = f"{store.stacks_prefix()}{stack}"
    baks = (".json.bak", ".json.gz.bak")
    keys = [o.key for o in store.bucket.list(f"{base}.") if o.key[len(base) :] in baks]
    keys += _history_and_backups(store, stack)
    written = 0
    for key in keys:
        packed = key.endswith((".gz", ".gz.bak"))
        data = store.bucket.read(key)
        try:
            document = json.loads(gzip.decompress(data) if packed else data) if data else None
        except (OSError, ValueError):
            continue
        changed = edit(document) if isinstance(document, dict) else None
        if changed is not None:
            text = json.dumps(changed, separators=(",", ":")).encode()
            store.bucket.write(key, gzip.compress(text) if packed else text)
            written += 1
    return written


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
    with locked(store, stack) as held:
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
    meanwhile, or the backend is new and the CLI would give it the old layout
    (:meth:`StateStore.set_up`; a new backend is otherwise set up here, as the CLI would)."""
    if not store.set_up():
        return False
    with locked(store, stack) as held:
        if held or store.stack_exists(stack):
            return False
        fqn = f"{ORGANIZATION}/{store.project}/{stack}"
        _write_checkpoint(store, stack, {"version": 3, "checkpoint": {"stack": fqn}})
        return True


def _write_checkpoint(store: StateStore, stack: str, document: Mapping[str, Any]) -> None:
    """``document`` as the stack's plain checkpoint (``<stack>.json``), as the CLI writes one."""
    data = json.dumps(document, separators=(",", ":")).encode()
    store.bucket.write(f"{store.stacks_prefix()}{stack}.json", data)


def write_stack(
    store: StateStore, stack: str, document: Mapping[str, Any], tags: Mapping[str, str]
) -> None:
    """Write ``stack`` whole, its checkpoint (plain, as the CLI writes one) and its tags, with
    no lock: only for a stack no one else writes yet (bench/clone.py makes thousands so)."""
    store.set_up()
    _write_checkpoint(store, stack, document)
    store.write_tags(stack, tags)


def copy_stack(
    source: StateStore,
    target: StateStore,
    stack: str,
    edit: Callable[[dict[str, Any]], dict[str, Any]],
) -> bool:
    """Copy ``stack`` from ``source`` into ``target`` (a throw-away backend: no lock taken, set
    up as the CLI would): its checkpoint, passed through ``edit``, written plain, and its tags
    object. ``source`` is only read. False, nothing written, when ``source`` has no checkpoint
    of it this code reads."""
    read = source.read_checkpoint(stack)
    if read is None:
        return False
    tags = source.bucket.read(source.tags_key(stack))
    document = edit(read.document)
    target.set_up()
    _write_checkpoint(target, stack, document)
    if tags is not None:
        target.bucket.write(target.tags_key(stack), tags)
    return True

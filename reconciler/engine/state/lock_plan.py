"""Whose a stack lock is, and which locks are stale: the decision, pure.
:mod:`reconciler.engine.state.locks` lists and removes them.

Pulumi's DIY backends (``file://``, ``s3://``, ``postgres://``...) lock a stack for every
operation that writes its state (``up``, ``refresh``, ``destroy``, ``import``, ``stack rm``) by
writing a lock record (``pulumi/pkg/backend/diy/lock.go``: the ``pid``, ``username``,
``hostname`` and ``timestamp`` of the ``pulumi`` process) beside the stack, and remove it when the
operation ends. A ``pulumi`` that is killed (OOM, its pod gone) leaves the record, and every
later operation on the stack fails with ``the stack is currently locked by 1 lock(s)`` until it
is removed. The same backend is written by people and CI too (``pulumi refresh``, ``pulumi
cancel``, ``lb-reconciler adopt --apply``): a lock the controller cannot prove is its own is
never its to take.

**The leader** (:func:`judge`, :func:`stale_for_leader`) sorts each lock of its cluster's stacks
into one of :class:`Whose`:

* ``OWN``: held by one of this process's live ``pulumi`` children (written under this host's
  name, by that PID, and not before that child started: a PID reused by a later process does not
  inherit an older record), or by this process itself while it holds it (a direct path's lock;
  one of its own it no longer holds, left by a write that failed, is stale): an operation of its
  own runs;
* ``DEAD_HERE``: written on this host by a process that is gone (no process has the PID, or the
  one that has it started after the record was written): provably stale, whoever wrote it;
* ``REPLICA``: written on the host of another replica of this controller (a past holder of the
  Lease, each recorded in it with the hostname its ``pulumi`` children write:
  :mod:`reconciler.controller.lease`), which holds nothing now since this one does: a dead or
  deposed leader's. Every write of a replica is fenced by the Lease, so that replica writes no
  more;
* ``EXPIRED``: anyone else's, older than the ``--foreign-lock-timeout`` a team opted in to;
* ``FOREIGN``: anyone else's: a person's or CI's ``pulumi``, another cluster's controller, a live
  process on this host that is no child of this one, a record that cannot be read. Never removed
  by the controller: the Service says who holds it, and how to free a dead one.

**Anyone else** (:func:`stale_for_bystander`): ``lb-reconciler preview``, ``stacks``, ``adopt``
and ``sweep``, run by a person or by CI, may share the backend with a live controller. They remove
only a record of this very host whose process is gone.

**Which stacks**: a lock belongs to this cluster when its stack does (:func:`of_cluster`): named
for the cluster, and, when its tags can be read, tagged so. Other clusters sharing the backend
have leaders of their own.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from reconciler.engine.plan import CLUSTER_TAG, cluster_prefix
from reconciler.engine.state.bucket import StoredObject

__all__ = [
    "CHILD_START_SLACK",
    "LeaderView",
    "LockRecord",
    "Whose",
    "foreign",
    "held_message",
    "judge",
    "lock_in",
    "of_cluster",
    "parse_lock",
    "stale_for_bystander",
    "stale_for_leader",
]

# A process's start time is known to the second (the kernel's boot time is whole seconds), and
# the lock's timestamp is the wall clock of the same machine: a record written before its PID's
# process started, by more than this, was written by an earlier process with the same PID.
CHILD_START_SLACK = timedelta(seconds=2)


@dataclass(frozen=True)
class LockRecord:
    """One lock of one stack: where it is (``key``, what removing it takes) and who wrote it.
    ``pid`` 0 and ``hostname`` "" when the record cannot be read (torn or foreign);
    ``modified``: when the object was last written (the backend's clock), when known."""

    stack: str
    key: str
    pid: int = 0
    hostname: str = ""
    username: str = ""
    timestamp: datetime | None = None
    modified: datetime | None = None

    @property
    def readable(self) -> bool:
        return self.pid > 0 and bool(self.hostname)

    @property
    def since(self) -> datetime | None:
        """When the lock was taken: its record's timestamp, else its object's time."""
        return self.timestamp or self.modified

    def describe(self) -> str:
        when = self.since.isoformat(timespec="seconds") if self.since else "an unknown time"
        if not self.readable:
            return f"an unreadable lock record (written {when})"
        return f"{self.username or '?'}@{self.hostname} (pid {self.pid}) since {when}"


def lock_in(obj: StoredObject, stack: str, data: bytes | None) -> LockRecord | None:
    """The record of a lock object's bytes (:func:`parse_lock`); None when the object went
    between the listing and the read (its operation ended)."""
    if data is None:
        return None
    text = data.decode(errors="replace")
    return parse_lock(text, stack=stack, key=obj.key, modified=obj.modified)


def parse_lock(text: str, *, stack: str, key: str, modified: datetime | None = None) -> LockRecord:
    """The record Pulumi wrote (``{"pid", "username", "hostname", "timestamp"}``); one that
    cannot be read is kept as unreadable (it still locks the stack)."""
    try:
        raw = json.loads(text)
    except ValueError:
        raw = None
    if not isinstance(raw, Mapping):
        return LockRecord(stack=stack, key=key, modified=modified)
    try:
        pid = int(raw.get("pid") or 0)
    except (TypeError, ValueError):
        pid = 0
    try:
        timestamp: datetime | None = datetime.fromisoformat(str(raw.get("timestamp")))
    except ValueError:
        timestamp = None
    if timestamp is not None and timestamp.tzinfo is None:
        timestamp = None  # Go always writes the offset; without one it is not Pulumi's
    return LockRecord(
        stack=stack,
        key=key,
        pid=pid,
        hostname=str(raw.get("hostname") or ""),
        username=str(raw.get("username") or ""),
        timestamp=timestamp,
        modified=modified,
    )


class Whose(enum.Enum):
    """Whose a lock is, as the leader sees it (see the module docstring)."""

    OWN = "own"
    DEAD_HERE = "dead"
    REPLICA = "replica"
    EXPIRED = "expired"
    FOREIGN = "foreign"

    @property
    def stale(self) -> bool:
        return self in (Whose.DEAD_HERE, Whose.REPLICA, Whose.EXPIRED)


@dataclass(frozen=True)
class LeaderView:
    """What the leader knows when it judges locks: this host's name; ``pid``: this process's,
    and ``holding``: the keys of the locks it holds now; ``ours``: its live ``pulumi`` children
    (PID -> when it started); ``running``: the live processes of this host among the locks'
    PIDs (PID -> when it started); ``replicas``: the hostnames of this controller's other
    replicas (past Lease holders, none holding it now); ``foreign_timeout``: how old anyone
    else's lock must be to be removed (None: never); ``now``."""

    hostname: str
    now: datetime
    pid: int = 0
    holding: Collection[str] = ()
    ours: Mapping[int, datetime] = field(default_factory=dict)
    running: Mapping[int, datetime] = field(default_factory=dict)
    replicas: Collection[str] = ()
    foreign_timeout: timedelta | None = None


def _written_by(lock: LockRecord, started: datetime | None) -> bool:
    """Whether the process that started at ``started`` (None: no such process) can have
    written ``lock``: it runs, and did not start after the record was written."""
    if started is None:
        return False
    return lock.timestamp is None or lock.timestamp >= started - CHILD_START_SLACK


def judge(lock: LockRecord, view: LeaderView) -> Whose:
    """Whose ``lock`` is (:class:`Whose`), as the leader described by ``view`` sees it."""
    if lock.readable and lock.hostname == view.hostname:
        if view.pid and lock.pid == view.pid:
            return Whose.OWN if lock.key in view.holding else Whose.DEAD_HERE
        if _written_by(lock, view.ours.get(lock.pid)):
            return Whose.OWN
        if _written_by(lock, view.running.get(lock.pid)):
            return Whose.FOREIGN  # a live process of this host that is not ours
        return Whose.DEAD_HERE
    if lock.readable and lock.hostname in view.replicas:
        return Whose.REPLICA
    since = lock.since
    timeout = view.foreign_timeout
    if timeout is not None and since is not None and view.now - since > timeout:
        return Whose.EXPIRED
    return Whose.FOREIGN


def stale_for_leader(locks: Sequence[LockRecord], view: LeaderView) -> list[LockRecord]:
    """The leader's rule: the locks it removes (``DEAD_HERE``, ``REPLICA``, ``EXPIRED``)."""
    return [lock for lock in locks if judge(lock, view).stale]


def foreign(locks: Sequence[LockRecord], view: LeaderView) -> list[LockRecord]:
    """The locks the leader leaves to their holders and reports (``FOREIGN``)."""
    return [lock for lock in locks if judge(lock, view) is Whose.FOREIGN]


def held_message(stack: str, locks: Sequence[LockRecord], *, backend: str) -> str:
    """What a Service's Warning says when its stack is held by ``locks`` that are not this
    controller's: who holds it since when, that the controller waits, and the command that frees
    a dead holder's lock (``backend``: the backend URL without its password)."""
    holders = "; ".join(lock.describe() for lock in locks)
    return (
        f"stack {stack} is locked by {holders}, not by this controller, which waits for it and "
        "never removes another's lock; if that operation is gone, free the stack with "
        f"`PULUMI_BACKEND_URL={backend} pulumi cancel --stack {stack} --yes`"
    )


def stale_for_bystander(
    locks: Sequence[LockRecord], *, hostname: str, alive: Collection[int]
) -> list[LockRecord]:
    """Anyone else's rule: only a readable lock of this host whose process is not ``alive``
    (the PIDs of this host's records that are)."""
    return [
        lock
        for lock in locks
        if lock.readable and lock.hostname == hostname and lock.pid not in alive
    ]


def of_cluster(stack: str, *, cluster_name: str, tags: Mapping[str, str] | None) -> bool:
    """Whether ``stack`` is one of cluster ``cluster_name``'s: named for it
    (:func:`reconciler.engine.plan.stack_name`) and, when its ``tags`` are known, tagged so.
    The name alone cannot tell clusters whose names differ only in characters a stack name
    replaces (``a.b`` and ``a_b``); the tag can."""
    if not stack.startswith(cluster_prefix(cluster_name)):
        return False
    return tags is None or tags.get(CLUSTER_TAG) == cluster_name

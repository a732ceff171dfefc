"""Which stack locks are stale: the decision, pure. :mod:`reconciler.engine.state.locks` lists and
removes them.

Pulumi's DIY backends (``file://``, ``s3://``, ``postgres://``...) lock a stack for every
operation that writes its state (``up``, ``refresh``, ``destroy``, ``import``, ``stack rm``) by
writing a lock record (``pulumi/pkg/backend/diy/lock.go``: the ``pid``, ``username``,
``hostname`` and ``timestamp`` of the ``pulumi`` process) beside the stack, and remove it when the
operation ends. A ``pulumi`` that is killed (OOM, its pod gone) leaves the record, and every
later operation on the stack fails with ``the stack is currently locked by 1 lock(s)`` until it
is removed. Nothing on the backend says whether its writer is still alive: a pod's hostname is
its own name, and its PIDs mean nothing elsewhere.

Who may decide, and how:

* **The leader** (:func:`stale_for_leader`): the controller that holds the Lease is the only writer
  of its cluster's stacks (the Lease guarantees one; every write is fenced by it, see
  :mod:`reconciler.engine.context`). So every lock of its stacks that is not held by one of its own
  live ``pulumi`` children is stale: a dead leader's, a crashed ``pulumi``'s, a person's killed
  command. Held by a child means: written under this host's name, by a live child's PID, and not
  before that child started (a PID reused by a later process does not inherit an older record).
* **Anyone else** (:func:`stale_for_bystander`): ``lb-reconciler preview``, ``stacks``,
  ``adopt`` and ``sweep``, run by a person or by CI, may share the backend with a live
  controller. They remove only what is provably stale: a record of this very host whose process
  is gone. A controller's locks (another host's, or a live process's) are never theirs to take.
* **Which stacks**: a lock belongs to this cluster when its stack does
  (:func:`of_cluster`): named for the cluster, and, when its tags can be read, tagged so. Other
  clusters sharing the backend have leaders of their own.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from reconciler.engine.plan import CLUSTER_TAG, cluster_prefix

__all__ = [
    "CHILD_START_SLACK",
    "LockRecord",
    "held_by_children",
    "of_cluster",
    "parse_lock",
    "stale_for_bystander",
    "stale_for_leader",
]

# A child's start time is known to the second (the kernel's boot time is whole seconds), and the
# lock's timestamp is the wall clock of the same machine: a record written before its PID's
# child started, by more than this, was written by an earlier process with the same PID.
CHILD_START_SLACK = timedelta(seconds=2)


@dataclass(frozen=True)
class LockRecord:
    """One lock of one stack: where it is (``key``, what removing it takes) and who wrote it.
    ``pid`` 0 and ``hostname`` "" when the record cannot be read (torn or foreign)."""

    stack: str
    key: str
    pid: int = 0
    hostname: str = ""
    username: str = ""
    timestamp: datetime | None = None

    @property
    def readable(self) -> bool:
        return self.pid > 0 and bool(self.hostname)

    def describe(self) -> str:
        when = self.timestamp.isoformat(timespec="seconds") if self.timestamp else "unknown"
        if not self.readable:
            return "an unreadable lock record"
        return f"{self.username or '?'}@{self.hostname} (pid {self.pid}) since {when}"


def parse_lock(text: str, *, stack: str, key: str) -> LockRecord:
    """The record Pulumi wrote (``{"pid", "username", "hostname", "timestamp"}``); one that
    cannot be read is kept as unreadable (it still locks the stack)."""
    try:
        raw = json.loads(text)
    except ValueError:
        raw = None
    if not isinstance(raw, Mapping):
        return LockRecord(stack=stack, key=key)
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
    )


def held_by_children(lock: LockRecord, *, hostname: str, children: Mapping[int, datetime]) -> bool:
    """Whether ``lock`` is held by one of ``children`` (PID -> when it started), this host's
    live ``pulumi`` processes."""
    started = children.get(lock.pid)
    if not lock.readable or lock.hostname != hostname or started is None:
        return False
    return lock.timestamp is None or lock.timestamp >= started - CHILD_START_SLACK


def stale_for_leader(
    locks: Sequence[LockRecord], *, hostname: str, children: Mapping[int, datetime]
) -> list[LockRecord]:
    """The leader's rule: every lock not held by one of its own live ``pulumi`` children."""
    return [
        lock for lock in locks if not held_by_children(lock, hostname=hostname, children=children)
    ]


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

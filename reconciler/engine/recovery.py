"""Crash recovery for the stack engine: stale locks, pending creates, hanging ``pulumi`` children.

:mod:`reconciler.engine.stack` runs the operations; before each one it calls in here to repair what
an earlier, interrupted operation may have left, and it runs each operation under
:func:`run_with_deadline`. The decisions (which pending operations to import, which are
idempotent) are pure functions in :mod:`reconciler.engine.lost`; this module does the effects.

* **Stale locks** (:func:`clear_stale_locks`, every DIY backend: ``file://``, ``s3://``,
  ``postgres://``): a lock whose process no longer exists *on this host* is removed
  (:func:`lock_is_stale`). Locks of other hosts are left alone. The locks are listed and removed
  through :mod:`reconciler.engine.state_store`, the one module that knows where they are.
* **Pending creates** (:func:`recover_pending`): a ``pulumi`` killed during ``up`` leaves
  ``pending_operations`` in the state. Each pending create of a named object (load balancer,
  listener, pool, monitor, floating IP, security group) is looked up in the cloud; found objects
  are returned as imports for the next ``up`` (the program declares them with ``import_``), so
  they are adopted, not created twice. The pending operations are then dropped from the state.
  Objects a failed create made without telling the state are looked for too: the load balancer
  and floating IP (adopted), and listeners, pools and monitors (deleted, then made again by the
  ``up``: :mod:`reconciler.engine.lost`).
* **Hanging operations** (:func:`run_with_deadline`): an operation past its timeout gets SIGINT
  (``pulumi`` then cancels, stops its plugins and releases its lock), SIGKILL after the grace
  period; :class:`~reconciler.engine.errors.UpTimeoutError` is raised, and the next operation
  recovers as above. Only this process's own ``pulumi`` children working on the stack are
  signalled (:func:`children_running`, read from ``/proc``). A ``pulumi`` waiting on a create
  the cloud never finishes does not stop on SIGINT; once it is killed, its plugins (found
  before, :func:`descendants`) are killed too, or they would run on, re-parented, for ever.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

from pulumi import automation as auto

from reconciler.engine.errors import InterruptedOperationError, UpTimeoutError
from reconciler.engine.lost import PendingCreate, pending_creates, resolve
from reconciler.engine.openstack import OpenStackRest
from reconciler.engine.state_store import LockRecord, StateStore
from stacks.vocabulary import logical_name, object_kind

__all__ = [
    "Recovered",
    "alive",
    "children_running",
    "clear_stale_locks",
    "descendants",
    "lock_is_stale",
    "recover_pending",
    "repair_torn_sidecars",
    "run_with_deadline",
]

log = logging.getLogger("reconciler.engine.stack")
T = TypeVar("T")


# --- stale locks ------------------------------------------------------------------------------


def lock_is_stale(lock: LockRecord, *, hostname: str) -> bool:
    """Whether a lock is provably stale: this host's, and its process is gone. A lock of another
    host, or one that cannot be read (being written), is not."""
    return lock.readable and lock.hostname == hostname and not alive(lock.pid or 0)


def clear_stale_locks(*, store: StateStore | None, stack_name: str) -> list[LockRecord]:
    """Remove the stack's stale locks (:func:`lock_is_stale`) on any DIY backend; return them.
    Nothing to do without a store (a backend the CLI alone reads)."""
    if store is None:
        return []
    removed = []
    host = socket.gethostname()
    for lock in store.list_locks(stack_name):
        if lock_is_stale(lock, hostname=host):
            log.warning("removing stale lock of stack %s (pid %s)", stack_name, lock.pid)
            store.delete_lock(lock.key)
            removed.append(lock)
    return removed


def repair_torn_sidecars(*, store: StateStore | None, stack_name: str) -> list[str]:
    """Remove a ``file://`` backend's torn ``.attrs`` sidecars of a stack; return their names
    (:meth:`~reconciler.engine.state_store.StateStore.repair_torn_sidecars`)."""
    return store.repair_torn_sidecars(stack_name) if store is not None else []


# --- pending operations -----------------------------------------------------------------------


def _logical_name(resource: Mapping[str, Any]) -> str:
    return logical_name(str(resource.get("urn", "")))


class Recovered(NamedTuple):
    """What :func:`recover_pending` found: objects to adopt, children to delete."""

    imports: dict[str, str]
    orphans: dict[str, str]


def recover_pending(
    *,
    stack: auto.Stack,
    stack_name: str,
    rest: OpenStackRest,
    carried: Mapping[str, str] | None = None,
    lost: Sequence[PendingCreate] = (),
    orphans: Sequence[PendingCreate] = (),
    repair: bool = True,
) -> Recovered:
    """Resolve what an interrupted or failed operation left: the imports for the next ``up``
    and the orphans to delete before it (each logical name -> cloud ID).

    * each pending create of the state, looked up in the cloud (a crash);
    * ``carried``: imports an earlier ``up`` was given but did not finish, which the state
      still lacks (that ``up`` failed before adopting them);
    * ``lost``: objects the state lacks, looked up in the cloud (a create that reported failure
      after the cloud made the object);
    * ``orphans``: children the state lacks, looked up the same way, to be deleted rather than
      adopted (:mod:`reconciler.engine.lost`).

    An object already in the state is never imported again. With ``repair`` the pending
    operations are then dropped from the state; ``repair=False`` (a preview) only looks.
    """
    deployment = stack.export_stack()
    state: dict[str, Any] = dict(deployment.deployment or {})
    ops = state.get("pending_operations") or []
    resources = state.get("resources") or []
    known = {str(r.get("id")) for r in resources if r.get("id")}
    ids = {_logical_name(r): str(r["id"]) for r in resources if r.get("id")}
    present = set(ids)
    found: dict[str, str] = {}

    def take(name: str, ids: Sequence[str]) -> None:
        fresh = [i for i in ids if i not in known]
        if fresh and name not in found:
            found[name] = fresh[0]
            known.add(fresh[0])

    for name, ident in (carried or {}).items():  # gone meanwhile: its import would fail
        kind = object_kind(name)
        if name not in present and kind is not None and rest.show(kind, ident) is not None:
            take(name, [ident])
    for pending in pending_creates(state):
        if not pending.idempotent and pending.name not in found:
            take(
                pending.name, rest.find_ids(type_token=pending.type, find_by=pending.find_by) or []
            )
    for lookup in lost:
        if lookup.name not in present and lookup.name not in found:
            take(lookup.name, rest.find_ids(type_token=lookup.type, find_by=lookup.find_by) or [])
    orphaned: dict[str, str] = {}
    for lookup in orphans:
        find_by = resolve(lookup.find_by, {**ids, **found, **orphaned})
        if lookup.name in present or lookup.name in found or find_by is None:
            continue
        ids_found = rest.find_ids(type_token=lookup.type, find_by=find_by) or []
        fresh = [i for i in ids_found if i not in known]
        if fresh:
            orphaned[lookup.name] = fresh[0]
            known.add(fresh[0])
    if not repair:
        return Recovered(found, orphaned)
    if ops:
        log.warning(
            "stack %s: %d pending operations after a crash; importing %d",
            stack_name,
            len(ops),
            len(found),
        )
        # Drop every pending operation from the state (the rest is as the crash left it), then
        # have the next `up` import the found objects under their logical names (the program
        # declares them with `import_`), so they are adopted, not created a second time.
        state["pending_operations"] = []
        stack.import_stack(auto.Deployment(version=deployment.version, deployment=state))
    elif found:
        log.warning("stack %s: adopting %s, not in the state", stack_name, sorted(found))
    return Recovered(found, orphaned)


# --- hanging operations -----------------------------------------------------------------------


def run_with_deadline(
    run: Callable[[], T],
    *,
    stack_name: str,
    doing: str,
    timeout: float,
    grace: float,
    on_error: Callable[[Exception], BaseException],
    cancel: threading.Event | None = None,
) -> T:
    """Run a stack operation; interrupt it if it outlives ``timeout`` or ``cancel`` is set
    (the process is shutting down).

    An exception of ``run`` is passed through ``on_error`` (the engine's classification) and
    the result raised; a timeout raises :class:`UpTimeoutError`, a cancel
    :class:`InterruptedOperationError`. Either way the ``pulumi`` child gets SIGINT (it
    cancels cleanly), then SIGKILL after ``grace``, and its provider plugins are reaped.
    """
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = run()
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=target, name=f"pulumi-{doing}-{stack_name}", daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout
    while thread.is_alive():
        remaining = deadline - time.monotonic()
        if remaining <= 0 or (cancel is not None and cancel.is_set()):
            break
        thread.join(min(remaining, 0.2))  # slices, so a cancel is seen within 0.2 s
    if thread.is_alive():
        # pulumi's plugins (the OpenStack provider) are its children: they outlive a killed
        # pulumi (re-parented, polling the cloud) unless they are stopped too.
        plugins: set[tuple[int, str]] = set()
        for pid in children_running(stack_name=stack_name):
            plugins |= descendants(pid)
            send_signal(pid, signal.SIGINT)
        thread.join(grace)
        if thread.is_alive():
            for pid in children_running(stack_name=stack_name):
                plugins |= descendants(pid)
                send_signal(pid, signal.SIGKILL)
            thread.join(grace)
        for pid, started in plugins:
            if start_time(pid) == started:  # still the same process, not a reused PID
                send_signal(pid, signal.SIGKILL)
        if cancel is not None and cancel.is_set():
            raise InterruptedOperationError(
                f"{doing} of stack {stack_name} was interrupted by the controller's shutdown; "
                "the next operation recovers the stack",
                stack=stack_name,
            )
        raise UpTimeoutError(
            f"{doing} of stack {stack_name} ran past {timeout}s and was "
            "interrupted; the next operation recovers the stack",
            stack=stack_name,
        )
    if "error" in box:
        error = box["error"]
        if isinstance(error, Exception):
            raise on_error(error) from None
        raise error
    value: T = box["value"]
    return value


def alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def send_signal(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


def _stat(pid: int) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name (state is the first)."""
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def start_time(pid: int) -> str | None:
    fields = _stat(pid)
    return fields[19] if fields and fields[0] != "Z" else None


def descendants(pid: int) -> set[tuple[int, str]]:
    """(PID, start time) of every live descendant of ``pid``, read from ``/proc``."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (fields := _stat(int(entry.name))) is not None:
            parents.setdefault(int(fields[1]), []).append(int(entry.name))
    found: set[tuple[int, str]] = set()
    todo = list(parents.get(pid, []))
    while todo:
        child = todo.pop()
        started = start_time(child)
        if started is not None:
            found.add((child, started))
        todo.extend(parents.get(child, []))
    return found


def kill_tree(pid: int) -> set[tuple[int, str]]:
    """SIGKILL the process group led by ``pid`` and every descendant of ``pid``, as a
    container's end kills every process in it; return the descendants (PID, start time).

    ``pulumi`` starts each plugin in a process group of its own, so signalling the group alone
    would leave the plugins running, re-parented. A descendant is signalled only while its start
    time still matches (the same process, not a reused PID)."""
    tree = descendants(pid)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)
    for child, started in tree:
        if start_time(child) == started:
            send_signal(child, signal.SIGKILL)
    return tree


def children_running(*, stack_name: str) -> list[int]:
    """PIDs of this process's ``pulumi`` children working on ``stack_name``."""
    me = os.getpid()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        args = [a.decode(errors="replace") for a in cmdline if a]
        if ppid == me and args and Path(args[0]).name == "pulumi" and stack_name in args:
            found.append(int(entry.name))
    return found

"""Crash recovery for the stack engine: stale locks, pending creates, hanging ``pulumi`` children.

:mod:`reconciler.engine.stack` runs the operations; before each one it calls in here to repair what
an earlier, interrupted operation may have left, and it runs each operation under
:func:`run_with_deadline`. The decisions (which pending operations to import, which are
idempotent) are pure functions in :mod:`reconciler.engine.lost`; this module does the effects.

* **Stale locks** are :mod:`.state.locks`' (which, by
  :mod:`.state.lock_plan`'s rule, on every DIY backend through
  :mod:`.state.store`); a torn ``.attrs`` sidecar of the state
  (:func:`repair_torn_sidecars`) is removed here.
* **Pending creates** (:func:`recover_pending`): a ``pulumi`` killed during ``up`` leaves
  ``pending_operations`` in the state. Each pending create of a named object (load balancer,
  listener, pool, monitor, floating IP, security group) is looked up in the cloud; found objects
  are returned as imports for the next ``up`` (the program declares them with ``import_``), so
  they are adopted, not created twice. The pending creates are then dropped from the state;
  pending updates and deletes stay, and the next ``up`` is ``up --refresh``, which reads those
  resources back from the cloud and clears them.
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
* **A lost Lease** (``leading`` turns false): the ``pulumi`` child is SIGKILLed at once, not
  asked to stop: a new leader may start on the stack ``lease duration - renew deadline`` later,
  and a cancelling ``pulumi`` can take longer than that;
  :class:`~reconciler.engine.errors.NotLeaderError` is raised.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple, TypeVar

from pulumi import automation as auto

from reconciler.engine.deployment import holds_secret
from reconciler.engine.direct_gate import CHECKPOINT_FORMAT
from reconciler.engine.direct_state import editable_checkpoint, replace_deployment
from reconciler.engine.errors import (
    InterruptedOperationError,
    NotLeaderError,
    UpTimeoutError,
)
from reconciler.engine.lost import UNSETTLED, PendingCreate, pending_creates, resolve, unsettled
from reconciler.engine.openstack.client import OpenStackRest
from reconciler.engine.processes import (
    alive,
    children_running,
    descendants,
    kill_all,
    kill_tree,
    send_signal,
    start_time,
)
from reconciler.engine.state.store import (
    BucketError,
    Checkpoint,
    StateStore,
)
from stacks.vocabulary import logical_name, object_kind

__all__ = [  # the process helpers are reconciler.engine.processes', named here for old callers
    "Recovered",
    "alive",
    "children_running",
    "descendants",
    "kill_tree",
    "recover_pending",
    "repair_torn_sidecars",
    "run_with_deadline",
    "start_time",
]

log = logging.getLogger("reconciler.engine.stack")
T = TypeVar("T")


# --- torn sidecars ------------------------------------------------------------------------------


def repair_torn_sidecars(*, store: StateStore | None, stack_name: str) -> list[str]:
    """Remove a ``file://`` backend's torn ``.attrs`` sidecars of a stack; return their names
    (:meth:`~.state.store.StateStore.repair_torn_sidecars`)."""
    return store.repair_torn_sidecars(stack_name) if store is not None else []


# --- pending operations -----------------------------------------------------------------------


def _logical_name(resource: Mapping[str, Any]) -> str:
    return logical_name(str(resource.get("urn", "")))


class Recovered(NamedTuple):
    """What :func:`recover_pending` found: objects to adopt, children to delete, and the
    resources whose update or delete was cut off (URNs; the next ``up`` must refresh first)."""

    imports: dict[str, str]
    orphans: dict[str, str]
    unsettled: tuple[str, ...] = ()


def recover_pending(
    *,
    stack: auto.Stack,
    stack_name: str,
    rest: OpenStackRest,
    carried: Mapping[str, str] | None = None,
    lost: Sequence[PendingCreate] = (),
    orphans: Sequence[PendingCreate] = (),
    repair: bool = True,
    store: StateStore | None = None,
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
    ``store``: the state is read and written by it (no ``pulumi stack export`` and ``import``)
    where it can (:func:`_read_state`).
    """
    state, read, version = _read_state(stack, store, stack_name)
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
    unsure = tuple(unsettled(state))
    if not repair:
        return Recovered(found, orphaned, unsure)
    if ops:
        log.warning(
            "stack %s: %d pending operations after a crash; importing %d%s",
            stack_name,
            len(ops),
            len(found),
            f"; refreshing first for {len(unsure)} cut-off updates and deletes" if unsure else "",
        )
    kept = [op for op in ops if op.get("type") in UNSETTLED]
    if len(kept) < len(ops):
        # Drop the other pending operations from the state (the rest is as the crash left it),
        # then have the next `up` import the found objects under their logical names (the
        # program declares them with `import_`), so they are adopted, not created a second
        # time. Pending updates and deletes stay until the `up --refresh` that settles them
        # clears them: a crash before it leaves them for the next recovery to see again.
        state["pending_operations"] = kept
        _write_state(stack, store, stack_name, state, read=read, version=version)
    if found and not ops:
        log.warning("stack %s: adopting %s, not in the state", stack_name, sorted(found))
    return Recovered(found, orphaned, unsure)


def _read_state(
    stack: auto.Stack, store: StateStore | None, stack_name: str
) -> tuple[dict[str, Any], Checkpoint | None, int | None]:
    """The stack's latest deployment, the checkpoint it was read from (None: from the CLI) and
    its format. Read by the store where the direct paths may write the checkpoint
    (:func:`~reconciler.engine.direct_state.editable_checkpoint`) and no pending operation
    holds a secret (only its ciphertext is there); else by ``pulumi stack export``."""
    try:
        read = editable_checkpoint(store, stack_name) if store is not None else None
    except BucketError:
        read = None
    if read is not None:
        state = dict(read.deployment or {})
        if not holds_secret(state.get("pending_operations")):
            return state, read, CHECKPOINT_FORMAT
    exported = stack.export_stack()
    return dict(exported.deployment or {}), None, exported.version


def _write_state(
    stack: auto.Stack,
    store: StateStore | None,
    stack_name: str,
    state: Mapping[str, Any],
    *,
    read: Checkpoint | None,
    version: int | None,
) -> None:
    """Save the repaired ``state`` where it was read from: over the checkpoint ``read``
    (:func:`~reconciler.engine.direct_state.replace_deployment`: under a lock of this process,
    with compare-and-swap; another's lock or write refuses it, retried, and its state is not
    overwritten), or with ``pulumi stack import``."""
    if store is None or read is None:
        stack.import_stack(auto.Deployment(version=version, deployment=dict(state)))
        return
    replace_deployment(
        store, stack_name, state, expect=read, doing="what a crash left was repaired"
    )


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
    leading: Callable[[], bool] | None = None,
) -> T:
    """Run a stack operation; interrupt it if it outlives ``timeout``, ``cancel`` is set
    (the process is shutting down) or ``leading`` turns false (the Lease is lost).

    An exception of ``run`` is passed through ``on_error`` (the engine's classification) and
    the result raised; a timeout raises :class:`UpTimeoutError`, a cancel
    :class:`InterruptedOperationError`: the ``pulumi`` child gets SIGINT (it cancels cleanly),
    then SIGKILL after ``grace``. A lost Lease raises :class:`NotLeaderError`: SIGKILL at once.
    Either way its provider plugins are reaped.
    """
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = run()
        except BaseException as exc:
            box["error"] = exc

    def lost() -> bool:
        return leading is not None and not leading()

    thread = threading.Thread(target=target, name=f"pulumi-{doing}-{stack_name}", daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout
    while thread.is_alive():
        remaining = deadline - time.monotonic()
        if remaining <= 0 or (cancel is not None and cancel.is_set()) or lost():
            break
        thread.join(min(remaining, 0.2))  # slices, so a cancel is seen within 0.2 s
    if thread.is_alive():
        fenced = lost()
        # pulumi's plugins (the OpenStack provider) are its children: they outlive a killed
        # pulumi (re-parented, polling the cloud) unless they are stopped too.
        plugins: set[tuple[int, str]] = set()
        for pid in children_running(stack_name=stack_name):
            plugins |= descendants(pid)
            send_signal(pid, signal.SIGKILL if fenced else signal.SIGINT)
        thread.join(grace)
        if thread.is_alive():
            for pid in children_running(stack_name=stack_name):
                plugins |= descendants(pid)
                send_signal(pid, signal.SIGKILL)
            thread.join(grace)
        # once they are gone, not while the kernel still tears them down (the fencing test
        # found a plugin running right after NotLeaderError, once in a loaded run)
        kill_all(plugins)
        if fenced:
            raise NotLeaderError(
                f"{doing} of stack {stack_name} was killed: this process no longer holds the "
                "Lease; the new leader recovers the stack",
                stack=stack_name,
            )
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

"""A change of a Service's pool members made as OCCM makes it, without a ``pulumi`` start: one
batch ``PUT`` of each changed pool's members, a wait for the load balancer, a read of the
members, and the stack's state written as the provider would have written it
(:mod:`.members_plan` decides and makes the state; this module runs it).

Taken by :meth:`reconciler.engine.stack.ServiceStack.ensure` when the backend is one the engine
reads (:mod:`.state.store`), the ``pulumi`` CLI and the provider are the versions this path was
tested with and the stack's state their format (:mod:`.direct_gate`), the stack's last
operation finished (its tags hold the spec hash) and only members differ from the applied spec;
otherwise ``ensure`` runs ``up`` as before.

The plan is made from the checkpoint and tags as read; then, under a lock on the stack taken
as the CLI takes one, each step safe to be cut off:

0. the checkpoint and the tags are read again: when either is not what the plan was made from
   (another writer, a person's ``pulumi refresh``, wrote meanwhile), nothing is written and
   ``ensure`` runs ``up --refresh`` instead;
1. the spec hash comes off the stack's tags: from here on the next ``ensure`` opens the stack
   with the CLI and recovers, whatever happens next;
2. the state gets an ``updating`` pending operation per pool, as Pulumi writes one before it
   calls the provider: a crash after it makes the next ``up`` an ``up --refresh``, which reads
   the members the cloud has (even when the next spec puts the old ones back); on ``file://``
   it is not synced to disk (a power cut that loses it leaves the tags of step 1, which make
   the next ``ensure`` refresh all the same); the tags of steps 1 and 5 and the state of step 4
   are;
3. per pool, the batch ``PUT`` (when the load balancer is not ``PENDING_*``), then a wait until
   it is ``ACTIVE`` again, then the pool's members read back;
4. the state with the new members (inputs and outputs) and the new ``spec`` output, nothing
   pending; the stack's settings file with the new spec, and a history entry, a checkpoint
   copy and a backup as the CLI leaves after an update (``pulumi stack history`` lists it, a
   restore from it keeps the members);
5. the tags with the new spec hash.

Every write of steps 1, 2, 4 and 5 is conditional on the version the previous one left (the
backend's own compare-and-swap: :meth:`.state.store.StateStore.write_deployment`): a writer that
took the stack regardless of the lock (its lock removed by hand) makes it fail, and the next
attempt reads the cloud. A crash after 4 leaves a state that matches the cloud and the spec: the
next ``up`` changes nothing. Nothing but the changed pools' members is written to the cloud.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from reconciler.engine.delete.cloud import attempts
from reconciler.engine.direct_gate import state_refusal
from reconciler.engine.errors import ConflictError, InternalError, UpTimeoutError
from reconciler.engine.handle import StackHandle
from reconciler.engine.members_plan import (
    MembersUpdate,
    applied_spec_in,
    members_update,
    pending_deployment,
    request_members,
    update_record,
    updated_deployment,
)
from reconciler.engine.openstack.client import OpenStackRest, OpenStackRestError
from reconciler.engine.plan import HASH_TAG, outputs_from_tags
from reconciler.engine.results import EnsureResult
from reconciler.engine.stack_meta import record_spec
from reconciler.engine.stack_spec import spec_for_stack, stack_spec
from reconciler.engine.state.stacks import has_journal, locked, record_update
from reconciler.engine.state.store import (
    BucketError,
    Checkpoint,
    StateStore,
    WriteConflictError,
)
from reconciler.model.spec import LoadBalancerSpec

__all__ = ["update_members_without_cli"]

log = logging.getLogger("reconciler.engine.stack")

# how often the load balancer is looked at around the PUT: soon (an update takes Octavia well
# under a second), then less often
FIRST_WAIT = 0.05
BACKOFF = 1.5


def update_members_without_cli(
    ss: StackHandle, desired: LoadBalancerSpec, tags: Mapping[str, str]
) -> EnsureResult | None:
    """Apply ``desired`` directly when it differs from the applied spec in pool members only
    (see the module); None, nothing changed, when it cannot: the caller runs ``up`` (with
    ``--refresh`` when another writer wrote meanwhile: ``ss.refresh_next``). ``tags``: the
    stack's tags as the backend holds them, this Service's, with the create-only values
    recorded (:meth:`reconciler.engine.stack.ServiceStack.ensure` read them for its skip)."""
    store = ss.engine.store
    if store is None or ss.imports or not ss.engine.settings.direct_members:
        return None
    if HASH_TAG not in tags:  # the last operation did not finish: the CLI's recovery first
        return None
    outputs = outputs_from_tags(tags)
    lb_id = str((outputs or {}).get("lb_id") or "")
    if outputs is None or not lb_id or ss.engine.direct_refusal() is not None:
        return None
    wanted = stack_spec(desired, tags=tags)
    try:
        read = store.read_checkpoint(ss.name)
        refused = _refusal(store, ss.name, read)
    except BucketError:
        return None
    if read is None or refused is not None:
        return None
    deployment = read.deployment
    applied = applied_spec_in(deployment)
    if applied is None or deployment is None:
        return None
    update = members_update(
        deployment,
        applied=applied,
        wanted=wanted.spec,
        applied_as_stack=spec_for_stack(applied, tags=tags),
    )
    if update is None:
        return None
    started = int(time.time())
    with locked(store, ss.name) as held:
        if held:  # another writer (a user's `pulumi`): the CLI path says who, and waits
            return None
        tags_version = _unchanged(ss, store, read, tags)
        if tags_version is None:
            ss.refresh_next = True
            return None
        without = {k: v for k, v in tags.items() if k != HASH_TAG}
        tags_version = _write_tags(ss, store, without, tags_version)  # 1
        pending = pending_deployment(deployment, update)
        # 2, not synced: a power cut that loses it finds the hash off the tags (1), which makes
        # the next ensure an `up --refresh` all the same; no .bak: step 4 makes it of this state
        read = _write(ss, store, pending, expect=read, doing="marking the update", durable=False)
        members = _put_members(ss, ss.engine.rest(), lb_id, update)  # 3
        done = updated_deployment(deployment, update, members, now=_now())
        if done is None:
            raise ConflictError(
                f"the members of a pool of stack {ss.name} changed while they were updated; "
                "the next attempt reads them from the cloud",
                stack=ss.name,
            )
        read = _write(ss, store, done, expect=read, doing="recording the members")  # 4
        _record(ss, store, read, update, wanted.spec, started=started)
        digest = wanted.spec.spec_hash()
        _write_tags(ss, store, {**tags, HASH_TAG: digest}, tags_version)  # 5
    ss.prune()
    log.info(
        "stack %s: members of %d pool(s) updated directly (%s)",
        ss.name,
        len(update.pools),
        ", ".join(f"{len(p.members)} in {p.pool_id}" for p in update.pools),
    )
    return EnsureResult(
        changed=True,
        spec_hash=digest,
        outputs=outputs,
        resource_changes={"update": len(update.pools)},
        frozen=wanted.frozen,
        direct=True,
    )


def _refusal(store: StateStore, stack: str, read: Checkpoint | None) -> str | None:
    """Why the stack's state is not this path's to write (:mod:`.direct_gate`), logged."""
    if read is None:
        return "no checkpoint this code reads"
    why = state_refusal(checkpoint_format=read.format, journal=has_journal(store, stack))
    if why is not None:
        log.info("stack %s: members changed through pulumi: %s", stack, why)
    return why


def _unchanged(
    ss: StackHandle, store: StateStore, read: Checkpoint, tags: Mapping[str, str]
) -> str | None:
    """Step 0, under the lock: the tags' version when neither the checkpoint nor the tags
    changed since the plan was made from them; None (logged) when another writer wrote."""
    try:
        now_tags, tags_version = store.tags_versioned(ss.name)
        again = store.checkpoint_version(ss.name)
    except BucketError as exc:
        raise ss.engine.error(exc, stack=ss.name, doing="reading the backend") from None
    if again == (read.key, read.version) and now_tags == dict(tags) and tags_version is not None:
        return tags_version
    log.info(
        "stack %s: written by another since the members change was planned; it is made by "
        "`up --refresh` instead",
        ss.name,
    )
    return None


def _record(
    ss: StackHandle,
    store: StateStore,
    read: Checkpoint,
    update: MembersUpdate,
    spec: LoadBalancerSpec,
    *,
    started: int,
) -> None:
    """Step 4's rest: the spec in the stack's settings file, and the update in its history
    and backups as the CLI leaves them."""
    config = record_spec(ss.work_dir / f"Pulumi.{ss.name}.yaml", spec)
    writer = ss.engine.settings.writer
    record = update_record(
        deployment=read.deployment or {},
        update=update,
        config=config if config is not None else {},
        message=f"{writer}: pool members updated directly" if writer else "",
        started=started,
        ended=int(time.time()),
    )
    try:
        record_update(store, ss.name, read, record)
    except BucketError as exc:
        raise ss.engine.error(exc, stack=ss.name, doing="recording the update") from None


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _write_tags(ss: StackHandle, store: StateStore, tags: Mapping[str, str], version: str) -> str:
    """Steps 1 and 5: the stack's tags, over the version read (or written) before."""
    ss.engine.fence("writing tags", stack=ss.name)
    try:
        return store.write_tags(ss.name, tags, if_version=version)
    except WriteConflictError as exc:
        raise _conflict(ss, exc) from None
    except BucketError as exc:
        raise ss.engine.error(exc, stack=ss.name, doing="writing tags") from None


def _write(
    ss: StackHandle,
    store: StateStore,
    deployment: Mapping[str, Any],
    *,
    expect: Checkpoint,
    doing: str,
    durable: bool = True,
) -> Checkpoint:
    """Steps 2 and 4: the stack's state, over the checkpoint read (or written) before; the
    ``.bak`` (a copy of the state replaced) and the ``fsync`` only where it is the record."""
    ss.engine.fence(doing, stack=ss.name)
    try:
        return store.write_deployment(
            ss.name, deployment, expect=expect, backup=durable, durable=durable
        )
    except WriteConflictError as exc:
        raise _conflict(ss, exc) from None
    except BucketError as exc:
        raise ss.engine.error(exc, stack=ss.name, doing=doing) from None


def _conflict(ss: StackHandle, exc: WriteConflictError) -> ConflictError:
    """Another writer wrote the stack while this one held its lock (the lock removed by hand):
    nothing more is written; the next attempt goes through ``up --refresh``."""
    return ConflictError(
        f"stack {ss.name} was written by another while its members were changed ({exc}); the "
        "next attempt reads the cloud",
        stack=ss.name,
    )


def _put_members(
    ss: StackHandle, rest: OpenStackRest, lb_id: str, update: MembersUpdate
) -> dict[str, Sequence[Mapping[str, Any]]]:
    """Step 3: each pool's batch ``PUT``, the wait for the load balancer, the members read.
    The ``PUT`` is sent at once: Octavia refuses it (409) unless the load balancer is
    ``ACTIVE``, and only then is the load balancer looked at and waited for (a look before each
    ``PUT`` was a sixth of a members change's cloud calls)."""
    try:
        for pool in update.pools:
            put = functools.partial(_put, ss, rest, pool.pool_id, request_members(pool.members))
            if not put():
                _when_active(ss, rest, lb_id, put)
            _when_active(ss, rest, lb_id, lambda: True)
        return {pool.pool_id: rest.pool_members(pool.pool_id) for pool in update.pools}
    except OpenStackRestError as exc:  # the cloud's own words, classed by its answer
        raise ss.engine.error(exc, stack=ss.name, doing="updating members") from None


def _put(ss: StackHandle, rest: OpenStackRest, pool_id: str, body: list[dict[str, Any]]) -> bool:
    """The batch ``PUT``; False when Octavia refused it for a load balancer not ``ACTIVE``
    (409): :func:`_when_active` then waits, or says it is in ``ERROR``."""
    ss.engine.fence("updating members", stack=ss.name)
    try:
        rest.replace_members(pool_id, body)
    except OpenStackRestError as exc:
        if exc.conflict:  # PENDING_*: wait and try again; ERROR: say so
            return False
        raise
    return True


def _when_active(
    ss: StackHandle, rest: OpenStackRest, lb_id: str, step: Callable[[], bool]
) -> None:
    """Wait until load balancer ``lb_id`` is ``ACTIVE``, then run ``step`` until it returns
    True (again after a wait when it returns False)."""
    settings = ss.engine.settings
    late = UpTimeoutError(
        f"load balancer {lb_id} of stack {ss.name} stayed PENDING_* for "
        f"{settings.operation_timeout:.0f}s while its members were updated; the next sync retries",
        stack=ss.name,
    )
    for _ in attempts(
        timeout=settings.operation_timeout,
        cancelled=ss.engine.cancelled,
        late=late,
        first=FIRST_WAIT,
        factor=BACKOFF,
    ):
        lb = rest.load_balancer(lb_id)
        status = str((lb or {}).get("provisioning_status") or "")
        if lb is None or status == "ERROR":
            raise InternalError(
                f"load balancer {lb_id} of stack {ss.name} is "
                f"{'gone' if lb is None else 'in ERROR'}; its members were not updated",
                stack=ss.name,
            )
        if status.startswith("PENDING_"):
            continue
        if step():
            return

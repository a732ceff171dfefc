"""A change of a Service's pool members made as OCCM makes it, without a ``pulumi`` start: one
batch ``PUT`` of each changed pool's members, a wait for the load balancer, a read of the
members, and the stack's state written as the provider would have written it
(:mod:`.members_plan` decides and makes the state; this module runs it).

Taken by :meth:`reconciler.engine.stack.ServiceStack.ensure` when the backend is one the engine
reads (:mod:`.state.store`), the stack's last operation finished (its tags hold the
spec hash) and only members differ from the applied spec; otherwise ``ensure`` runs ``up`` as
before.

The steps, under a lock on the stack taken as the CLI takes one, each safe to be cut off:

1. the spec hash comes off the stack's tags: from here on the next ``ensure`` opens the stack
   with the CLI and recovers, whatever happens next;
2. the state gets an ``updating`` pending operation per pool, as Pulumi writes one before it
   calls the provider: a crash after it makes the next ``up`` an ``up --refresh``, which reads
   the members the cloud has (even when the next spec puts the old ones back);
3. per pool, the batch ``PUT`` (when the load balancer is not ``PENDING_*``), then a wait until
   it is ``ACTIVE`` again, then the pool's members read back;
4. the state with the new members (inputs and outputs) and the new ``spec`` output, nothing
   pending;
5. the tags with the new spec hash.

A crash after 4 leaves a state that matches the cloud and the spec: the next ``up`` changes
nothing. Nothing but the changed pools' members is written to the cloud.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from reconciler.engine.delete.cloud import attempts
from reconciler.engine.errors import ConflictError, InternalError, UpTimeoutError
from reconciler.engine.handle import StackHandle
from reconciler.engine.members_plan import (
    MembersUpdate,
    applied_spec_in,
    members_update,
    pending_deployment,
    request_members,
    updated_deployment,
)
from reconciler.engine.openstack.client import OpenStackRest, OpenStackRestError
from reconciler.engine.plan import HASH_TAG, outputs_from_tags
from reconciler.engine.results import EnsureResult
from reconciler.engine.stack_spec import spec_for_stack, stack_spec
from reconciler.engine.state.store import BucketError, StateStore
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
    (see the module); None, nothing changed, when it cannot: the caller runs ``up``. ``tags``:
    the stack's tags as the backend holds them, this Service's, with the create-only values
    recorded (:meth:`reconciler.engine.stack.ServiceStack.ensure` read them for its skip)."""
    store = ss.engine.store
    if store is None or ss.imports or not ss.engine.settings.direct_members:
        return None
    if HASH_TAG not in tags:  # the last operation did not finish: the CLI's recovery first
        return None
    outputs = outputs_from_tags(tags)
    lb_id = str((outputs or {}).get("lb_id") or "")
    if outputs is None or not lb_id:
        return None
    wanted = stack_spec(desired, tags=tags)
    try:
        deployment = store.deployment(ss.name)
    except BucketError:
        return None
    applied = applied_spec_in(deployment)
    if applied is None:
        return None
    update = members_update(
        deployment,
        applied=applied,
        wanted=wanted.spec,
        applied_as_stack=spec_for_stack(applied, tags=tags),
    )
    if update is None or deployment is None:
        return None
    with store.locked(ss.name) as held:
        if held:  # another writer (a user's `pulumi`): the CLI path waits for it or reports it
            return None
        _drop_hash(ss, store, tags)
        _write(ss, store, pending_deployment(deployment, update), doing="marking the update")
        read = _put_members(ss, ss.engine.rest(), lb_id, update)
        done = updated_deployment(deployment, update, read, now=_now())
        if done is None:
            raise ConflictError(
                f"the members of a pool of stack {ss.name} changed while they were updated; "
                "the next attempt reads them from the cloud",
                stack=ss.name,
            )
        _write(ss, store, done, doing="recording the members")
    digest = wanted.spec.spec_hash()
    _write_tags(ss, store, {**tags, HASH_TAG: digest})
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


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _drop_hash(ss: StackHandle, store: StateStore, tags: Mapping[str, str]) -> None:
    """Step 1: the stack no longer looks applied."""
    _write_tags(ss, store, {k: v for k, v in tags.items() if k != HASH_TAG})


def _write_tags(ss: StackHandle, store: StateStore, tags: Mapping[str, str]) -> None:
    ss.engine.fence("writing tags", stack=ss.name)
    try:
        store.write_tags(ss.name, tags)
    except BucketError as exc:
        raise ss.engine.error(exc, stack=ss.name, doing="writing tags") from None


def _write(
    ss: StackHandle, store: StateStore, deployment: Mapping[str, Any], *, doing: str
) -> None:
    """Steps 2 and 4: the stack's state."""
    ss.engine.fence(doing, stack=ss.name)
    try:
        store.write_deployment(ss.name, deployment)
    except BucketError as exc:
        raise ss.engine.error(exc, stack=ss.name, doing=doing) from None


def _put_members(
    ss: StackHandle, rest: OpenStackRest, lb_id: str, update: MembersUpdate
) -> dict[str, Sequence[Mapping[str, Any]]]:
    """Step 3: each pool's batch ``PUT``, the wait for the load balancer, the members read."""
    try:
        for pool in update.pools:
            put = functools.partial(_put, ss, rest, pool.pool_id, request_members(pool.members))
            _when_active(ss, rest, lb_id, put)
            _when_active(ss, rest, lb_id, lambda: True)
        return {pool.pool_id: rest.pool_members(pool.pool_id) for pool in update.pools}
    except OpenStackRestError as exc:  # the cloud's own words, classed by its answer
        raise ss.engine.error(exc, stack=ss.name, doing="updating members") from None


def _put(ss: StackHandle, rest: OpenStackRest, pool_id: str, body: list[dict[str, Any]]) -> bool:
    """The batch ``PUT``; False when Octavia refused it for a ``PENDING_*`` load balancer."""
    ss.engine.fence("updating members", stack=ss.name)
    try:
        rest.replace_members(pool_id, body)
    except OpenStackRestError as exc:
        if exc.conflict:  # 409: it went PENDING_* meanwhile; wait and try again
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

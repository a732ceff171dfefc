"""Deleting a Service's stack as OCCM deletes a load balancer: one cascade ``DELETE`` of the
stack's own load balancer, its floating IPs unless kept, then the stack; no ``destroy``.

:mod:`reconciler.engine.delete.direct_plan` decides from the stack's deployment whether that is
safe (the state holds only that load balancer's tree and floating IPs, nothing pending), when the
CLI, the provider and the state are what this path was tested with
(:mod:`reconciler.engine.direct_gate`). This module runs it:

* :func:`delete_without_cli`: when the backend is one the engine reads
  (:mod:`reconciler.engine.state.store`) and the stack's last operation finished (its tags hold
  the spec hash and the IDs), without one ``pulumi`` start: the deployment and tags are read
  from the backend and the stack is removed there as ``pulumi stack rm`` removes it;
* :func:`delete_directly`: the deletion itself, which :mod:`reconciler.engine.delete.stack`
  also runs for a stack opened with the CLI (its last operation did not finish: recovered
  first). It holds the stack's lock, taken as the CLI takes one, from before its first cloud
  call to the end, and deletes only while the checkpoint is the one the plan was made from.

Whether another Service is on the load balancer is asked under the stack's lock, and again right
before the ``DELETE`` under the load balancer's lock, which a Service joining it holds for its
``up`` (:meth:`reconciler.engine.stack.ServiceStack.ensure`). A crash at any step converges: the
spec hash is taken off the tags first, so the next attempt opens the stack with the CLI and
takes the same path (a load balancer or floating IP already gone is no error).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from reconciler.engine.delete.cloud import cascade_delete
from reconciler.engine.delete.direct_plan import DirectDeletion, direct_deletion
from reconciler.engine.direct_gate import state_refusal
from reconciler.engine.errors import ConflictError, StackLockedError
from reconciler.engine.handle import StackHandle
from reconciler.engine.lb_tags import others_on
from reconciler.engine.openstack.client import OpenStackRest, OpenStackRestError
from reconciler.engine.plan import HASH_TAG, outputs_from_tags
from reconciler.engine.state.stacks import has_journal, locked, remove_stack_objects
from reconciler.engine.state.store import BucketError, Checkpoint, StateStore, WriteConflictError
from stacks.vocabulary import FLOATINGIPS

__all__ = [
    "cascade_own",
    "delete_directly",
    "delete_without_cli",
    "direct_plan",
    "refuse_cascade_if_shared",
]

log = logging.getLogger("reconciler.engine.stack")


def direct_plan(
    ss: StackHandle, lb_id: str, keep_floating_ip: bool | None
) -> tuple[DirectDeletion, Checkpoint] | None:
    """The direct deletion of the stack (:mod:`.direct_plan`) and the checkpoint it was made
    from, as the backend holds it; None also for a backend the engine reads only through the
    CLI, when the engine is set to always ``destroy``, or when the CLI, the provider or the
    stack's state is not what this path was tested with (:mod:`reconciler.engine.direct_gate`)."""
    store = ss.engine.store
    if store is None or not ss.engine.settings.direct_delete:
        return None
    if ss.engine.direct_refusal() is not None:
        return None
    try:
        read = store.read_checkpoint(ss.name)
        journal = has_journal(store, ss.name)
    except BucketError as exc:
        raise ss.engine.error(exc, stack=ss.name, doing="reading the backend") from None
    if read is None or state_refusal(checkpoint_format=read.format, journal=journal):
        return None
    plan = direct_deletion(read.deployment, lb_id=lb_id, keep_floating_ip=keep_floating_ip)
    return (plan, read) if plan is not None else None


def delete_without_cli(ss: StackHandle, rest: OpenStackRest, keep_floating_ip: bool | None) -> bool:
    """Delete the stack directly with no ``pulumi`` start, when it can be (see the module);
    False when it cannot, nothing changed: the caller opens the stack with the CLI."""
    store = ss.engine.store
    if store is None or ss.imports:  # imports: objects a recovery found, destroy's case
        return False
    try:
        tags, version = store.tags_versioned(ss.name)
    except BucketError as exc:
        raise ss.engine.error(exc, stack=ss.name, doing="reading the backend") from None
    # no spec hash: the last operation did not finish, the CLI's recovery first
    outputs = outputs_from_tags(tags) if tags and HASH_TAG in tags else None
    if tags is None or outputs is None or version is None:
        return False
    lb_id = str(outputs.get("lb_id") or "")
    if not lb_id or outputs.get("shared"):
        return False
    planned = direct_plan(ss, lb_id, keep_floating_ip)
    if planned is None:
        return False
    return delete_directly(ss, rest, *planned, tags=(tags, version))


def delete_directly(
    ss: StackHandle,
    rest: OpenStackRest,
    plan: DirectDeletion,
    read: Checkpoint,
    *,
    tags: tuple[Mapping[str, str], str] | None = None,
) -> bool:
    """Delete the stack's own load balancer with one cascade ``DELETE`` and its floating IPs
    not kept, as OCCM does, then the stack in the backend, all under the stack's lock taken as
    the CLI takes one before the first cloud call (a holder's lock refuses it:
    :class:`~reconciler.engine.errors.StackLockedError`), and only while the checkpoint is still
    ``read``, what the plan was made from (another writer meanwhile: a
    :class:`~reconciler.engine.errors.ConflictError`, the next attempt plans again). False,
    nothing done, when another Service is on the load balancer (the caller releases it instead).
    ``tags`` (the stack's tags and their version): the spec hash comes off them first, so an
    interrupted delete does not look applied (the caller did that already when not given).
    Whether another Service is on the load balancer is checked again right before the
    ``DELETE``, under its lock: one that joined meanwhile makes this fail, and the next attempt
    releases the load balancer instead."""
    store = ss.engine.store
    assert store is not None  # a plan is made only from the store's deployment
    try:
        with locked(store, ss.name) as held:
            if held:
                raise StackLockedError.of(ss.name, held, backend=store.url)
            again = store.read_checkpoint(ss.name)
            if again is None or (again.key, again.version) != (read.key, read.version):
                raise ConflictError(
                    f"stack {ss.name} was written by another since its deletion was planned; "
                    "the next attempt plans it again",
                    stack=ss.name,
                )
            if others_on(rest, plan.lb_id, ours=ss.occm_name):
                return False
            if tags is not None:
                _drop_hash(ss, store, *tags)
            _delete_in_cloud(ss, rest, plan)
            ss.engine.fence("removing the stack", stack=ss.name)
            remove_stack_objects(store, ss.name)
    except BucketError as exc:
        raise ss.engine.error(exc, stack=ss.name, doing="removing the stack") from None
    ss.forget(removed=True)
    return True


def _drop_hash(ss: StackHandle, store: StateStore, tags: Mapping[str, str], version: str) -> None:
    """An interrupted delete must not look applied: the spec hash off the tags, over the
    version read (another writer meanwhile: a conflict, nothing deleted)."""
    rest_of_tags = {k: v for k, v in tags.items() if k != HASH_TAG}
    if not rest_of_tags:
        return
    ss.engine.fence("writing tags", stack=ss.name)
    try:
        store.write_tags(ss.name, rest_of_tags, if_version=version)
    except WriteConflictError as exc:
        raise ConflictError(
            f"the tags of stack {ss.name} changed since its deletion was planned ({exc}); the "
            "next attempt plans it again",
            stack=ss.name,
        ) from None


def cascade_own(ss: StackHandle, rest: OpenStackRest, lb_id: str, *, level: int) -> None:
    """Delete the stack's own load balancer ``lb_id`` with cascade and wait until it is gone
    (:func:`~reconciler.engine.delete.cloud.cascade_delete`), refused by
    :func:`refuse_cascade_if_shared` checked right before the ``DELETE`` under the load
    balancer's lock, which a Service joining it holds for its ``up``: its listener is either
    seen by the check or made after the load balancer is ``PENDING_DELETE``. The one way
    this engine cascades a Service's own load balancer (the direct delete, and the
    ``destroy`` that cannot go one child at a time)."""
    cascade_delete(
        rest,
        lb_id,
        stack_name=ss.name,
        timeout=ss.engine.settings.operation_timeout,
        cancelled=ss.engine.cancelled,
        lock=ss.engine.lb_locks(lb_id),
        check=lambda: refuse_cascade_if_shared(ss, rest, lb_id),
        level=level,
    )


def refuse_cascade_if_shared(ss: StackHandle, rest: OpenStackRest, lb_id: str) -> None:
    """Right before a cascade ``DELETE`` of the stack's own load balancer: fail when another
    Service got on it meanwhile (its listener would go with the cascade; the next attempt
    releases the load balancer instead), and refuse once the Lease is lost."""
    if others_on(rest, lb_id, ours=ss.occm_name):
        raise ConflictError(
            f"load balancer {lb_id} of stack {ss.name} got a listener of another Service "
            "while it was being deleted; it is released instead on the next attempt",
            stack=ss.name,
        )
    ss.engine.fence("deleting the load balancer with cascade", stack=ss.name)


def _delete_in_cloud(ss: StackHandle, rest: OpenStackRest, plan: DirectDeletion) -> None:
    try:
        cascade_own(ss, rest, plan.lb_id, level=logging.INFO)
        for fip in plan.floating_ips:
            ss.engine.fence("deleting the floating IP", stack=ss.name)
            rest.delete(FLOATINGIPS, fip, missing_ok=True)
    except OpenStackRestError as exc:  # the cloud's own words, classed by its answer
        raise ss.engine.error(exc, stack=ss.name, doing="delete") from None
    log.info(
        "stack %s: load balancer %s deleted with cascade, %d floating IP(s) deleted, %d kept",
        ss.name,
        plan.lb_id,
        len(plan.floating_ips),
        len(plan.kept_floating_ips),
    )

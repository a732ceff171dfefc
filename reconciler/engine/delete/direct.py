"""Deleting a Service's stack as OCCM deletes a load balancer: one cascade ``DELETE`` of the
stack's own load balancer, its floating IPs unless kept, then the stack; no ``destroy``.

:mod:`reconciler.engine.delete.direct_plan` decides from the stack's deployment whether that is safe
(the state holds only that load balancer's tree and floating IPs, nothing pending). This module runs
it:

* :func:`delete_without_cli`: when the backend is one the engine reads
  (:mod:`reconciler.engine.state.store`) and the stack's last operation finished (its tags hold the
  spec hash and the IDs), without one ``pulumi`` start: the deployment and tags are read from the
  backend and the stack is removed there
  (:func:`~reconciler.engine.state.stacks.remove_stack`, under a lock as ``pulumi stack
  rm`` takes one).
* :func:`delete_directly`: the deletion itself, which :mod:`reconciler.engine.delete.stack` also
  runs for a stack opened with the CLI (its last operation did not finish: recovered first).

Whether another Service is on the load balancer is asked before, and again right before the
``DELETE`` under the load balancer's lock, which a Service joining it holds for its ``up``
(:meth:`reconciler.engine.stack.ServiceStack.ensure`). A crash at any step converges: the spec
hash is taken off the tags first, so the next attempt opens the stack with the CLI and takes
the same path (a load balancer or floating IP already gone is no error).
"""

from __future__ import annotations

import logging

from reconciler.engine.delete.cloud import cascade_delete
from reconciler.engine.delete.direct_plan import DirectDeletion, direct_deletion
from reconciler.engine.errors import ConflictError
from reconciler.engine.handle import StackHandle
from reconciler.engine.lb_tags import others_on
from reconciler.engine.openstack.client import OpenStackRest, OpenStackRestError
from reconciler.engine.plan import HASH_TAG, outputs_from_tags
from reconciler.engine.state.stacks import remove_stack
from reconciler.engine.state.store import BucketError
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
) -> DirectDeletion | None:
    """The direct deletion of the stack (:mod:`reconciler.engine.delete.direct_plan`), from its
    deployment as the backend holds it; None also for a backend the engine reads only through the
    CLI, or when the engine is set to always ``destroy``."""
    store = ss.engine.store
    if store is None or not ss.engine.settings.direct_delete:
        return None
    try:
        deployment = store.deployment(ss.name)
    except BucketError as exc:
        raise ss.engine.error(exc, stack=ss.name, doing="reading the backend") from None
    return direct_deletion(deployment, lb_id=lb_id, keep_floating_ip=keep_floating_ip)


def delete_without_cli(ss: StackHandle, rest: OpenStackRest, keep_floating_ip: bool | None) -> bool:
    """Delete the stack directly with no ``pulumi`` start, when it can be (see the module);
    False when it cannot, nothing changed: the caller opens the stack with the CLI."""
    store = ss.engine.store
    if store is None or ss.imports:  # imports: objects a recovery found, destroy's case
        return False
    try:
        tags = store.tags(ss.name)
    except BucketError as exc:
        raise ss.engine.error(exc, stack=ss.name, doing="reading the backend") from None
    # no spec hash: the last operation did not finish, the CLI's recovery first
    outputs = outputs_from_tags(tags) if tags and HASH_TAG in tags else None
    if tags is None or outputs is None:
        return False
    lb_id = str(outputs.get("lb_id") or "")
    if not lb_id or outputs.get("shared"):
        return False
    plan = direct_plan(ss, lb_id, keep_floating_ip)
    if plan is None or others_on(rest, lb_id, ours=ss.occm_name):
        return False
    rest_of_tags = {k: v for k, v in tags.items() if k != HASH_TAG}
    if rest_of_tags:  # an interrupted delete must not look applied
        ss.engine.fence("writing tags", stack=ss.name)
        try:
            store.write_tags(ss.name, rest_of_tags)
        except BucketError as exc:
            raise ss.engine.error(exc, stack=ss.name, doing="writing tags") from None
    delete_directly(ss, rest, plan)
    return True


def delete_directly(ss: StackHandle, rest: OpenStackRest, plan: DirectDeletion) -> None:
    """Delete the stack's own load balancer with one cascade ``DELETE`` and its floating IPs
    not kept, as OCCM does, then the stack in the backend (the caller took the spec hash off
    its tags). Whether another Service is on the load balancer is checked again right before
    the ``DELETE``, under its lock: one that joined meanwhile makes this fail, and the next
    attempt releases the load balancer instead."""
    _delete_in_cloud(ss, rest, plan)
    store = ss.engine.store
    assert store is not None  # a plan is made only from the store's deployment
    ss.engine.fence("removing the stack", stack=ss.name)
    try:
        held = remove_stack(store, ss.name)
    except BucketError as exc:
        raise ss.engine.error(exc, stack=ss.name, doing="removing the stack") from None
    if held:
        raise ConflictError(
            f"stack {ss.name} is locked by {', '.join(lock.describe() for lock in held)}; its "
            "cloud objects are deleted, the stack is removed on the next attempt",
            stack=ss.name,
        )
    ss.forget(removed=True)


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

"""A Service's Octavia objects left in ``ERROR``, updated back to ``ACTIVE`` for the next ``up``.

When Octavia fails a listener's, pool's, member's or monitor's flow, that object ends in
``ERROR`` and its load balancer ``ACTIVE`` again (Octavia's revert tasks). Octavia itself takes a
new update of the object (only the load balancer must be ``ACTIVE``), but the OpenStack
provider waits for the object to be ``ACTIVE`` before it sends one (terraform-provider-openstack
``resourceListenerV2Update`` and its siblings), so every later ``up`` of the Service failed with
``unexpected state 'ERROR'`` and the Service could never be changed again. The engine therefore
sends each such object an update that changes nothing, the way an operator does by hand
(``openstack loadbalancer listener set``), and runs the ``up`` again: nothing is deleted or
replaced, and an object whose flow fails again stays ``ERROR`` with the cloud's message in the
next Warning. A load balancer that is itself in ``ERROR`` is not touched here (Octavia refuses
updates of its children; an operator's ``failover`` is the repair).
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any

from reconciler.engine.delete.cloud import attempts
from reconciler.engine.deployment import resources_of
from reconciler.engine.errors import UpTimeoutError
from reconciler.engine.openstack.client import OpenStackRest, OpenStackRestError
from reconciler.engine.state.store import BucketError
from stacks.vocabulary import HEALTHMONITORS, LISTENERS, POOLS

if TYPE_CHECKING:
    from pulumi import automation as auto

    from reconciler.engine.handle import StackHandle

__all__ = [
    "errored_children",
    "is_errored_child_failure",
    "repair_errored",
    "repair_errored_children",
    "repaired_for_retry",
]

log = logging.getLogger("reconciler.engine.stack")

ACTIVE, ERROR = "ACTIVE", "ERROR"
_ERRORED = re.compile(r"unexpected state 'ERROR'")


def is_errored_child_failure(error: BaseException) -> bool:
    """Whether a failed ``up`` is the provider's wait on an object in ``ERROR``."""
    return bool(_ERRORED.search(str(error)))


def errored_children(
    tree: Mapping[str, Any], *, own: Collection[str]
) -> list[tuple[str, str, str]]:
    """The objects in ``ERROR`` under a load balancer's status tree that the stack holds (IDs
    in ``own``; a member through its pool, which the stack's members resource is named by),
    parents first, each as (collection, ID, pool ID for a member else ""); none while the load
    balancer itself is not ``ACTIVE`` (Octavia would refuse the updates). Another Service's
    objects on a shared load balancer are never touched. Pure."""
    if tree.get("provisioning_status") != ACTIVE:
        return []
    found: list[tuple[str, str, str]] = []
    seen: set[str] = set()

    def add(kind: str, obj: Mapping[str, Any], pool_id: str = "") -> None:
        ident = str(obj.get("id") or "")
        if (pool_id or ident) not in own:
            return
        if ident and ident not in seen and obj.get("provisioning_status") == ERROR:
            seen.add(ident)
            found.append((kind, ident, pool_id))

    for listener in tree.get("listeners") or ():
        add(LISTENERS, listener)
        for pool in listener.get("pools") or ():
            add(POOLS, pool)
            monitor = pool.get("health_monitor") or pool.get("healthmonitor")
            if monitor:
                add(HEALTHMONITORS, monitor)
            for member in pool.get("members") or ():
                add("members", member, str(pool.get("id") or ""))
    return found


def repair_errored_children(
    rest: OpenStackRest,
    lb_id: str,
    *,
    own: Collection[str],
    stack_name: str,
    timeout: float,
    cancelled: threading.Event,
) -> list[tuple[str, str, str]]:
    """Update each object of the stack (IDs in ``own``) in ``ERROR`` under load balancer
    ``lb_id`` with nothing, one at a time, waiting for the load balancer to be ``ACTIVE``
    between them; the objects sent."""
    tree = rest.status_tree(lb_id)
    children = errored_children(tree or {}, own=own)
    for kind, ident, pool_id in children:
        log.warning(
            "stack %s: %s %s is in ERROR; sending it an update that changes nothing",
            stack_name,
            kind.rstrip("s"),
            ident,
        )
        late = UpTimeoutError(
            f"{kind.rstrip('s')} {ident} in ERROR could not be updated within {timeout:.0f}s "
            f"(its load balancer {lb_id} stayed PENDING_*)",
            stack=stack_name,
        )
        sent = False
        for _ in attempts(timeout=timeout, cancelled=cancelled, late=late):
            if not sent:
                try:
                    rest.touch(kind, ident, pool_id=pool_id)
                    sent = True
                except OpenStackRestError as exc:
                    if not exc.conflict:  # 409: the load balancer is PENDING_*
                        raise
                    continue
            lb = rest.load_balancer(lb_id)
            if lb is None or lb.get("provisioning_status") in (ACTIVE, ERROR):
                break
    return children


def repaired_for_retry(
    handle: StackHandle, stack: auto.Stack, lb_id: str | None, error: BaseException
) -> bool:
    """After an ``up`` of ``handle``'s stack that failed on one of its objects left in
    ``ERROR`` (under load balancer ``lb_id``): whether such objects were sent an update that
    changes nothing, so that the ``up`` can run again."""
    if not lb_id or not is_errored_child_failure(error):
        return False
    return repair_errored(handle, stack, lb_id)


def repair_errored(handle: StackHandle, stack: auto.Stack, lb_id: str | None) -> bool:
    """Send each of the stack's objects under load balancer ``lb_id`` that is in ``ERROR`` an
    update that changes nothing (Octavia applies it again and makes it ACTIVE): before an ``up``
    that reads the cloud first, which would otherwise find the values in place and leave the
    object in ``ERROR``. Whether any was."""
    if not lb_id:
        return False
    own = set(resources_of(_deployment(handle, stack)).values())
    engine = handle.engine
    engine.fence("repairing objects in ERROR", stack=handle.name)
    settings = engine.settings
    return bool(
        repair_errored_children(
            engine.rest(),
            lb_id,
            own=own,
            stack_name=handle.name,
            timeout=settings.operation_timeout,
            cancelled=engine.cancelled,
        )
    )


def _deployment(handle: StackHandle, stack: auto.Stack) -> Mapping[str, Any]:
    """The stack's state: read by the store (no ``pulumi`` start), else ``stack export``."""
    store = handle.engine.store_or_none()
    try:
        stored = store.deployment(handle.name) if store is not None else None
    except BucketError:
        stored = None
    return stored if stored is not None else (stack.export_stack().deployment or {})

"""Deleting a Service's load balancer when ``pulumi destroy`` cannot, one child at a time.

``pulumi destroy`` deletes the members, monitors, pools and listeners one by one, then the load
balancer. Found by the chaos run (docs/chaos.md), three states make every retry of that fail,
and the Service would keep its finalizer for ever:

* the load balancer is in ``ERROR`` (a failed Octavia flow): the provider waits for each child's
  pool or load balancer to be ``ACTIVE`` again and fails with ``unexpected state 'ERROR'``, or
  waits out its 10-minute timeout for a child whose delete ended in ``ERROR``;
* the load balancer has a child the state does not know (an operation interrupted between the
  cloud's answer and the state's checkpoint): Octavia answers ``Cannot delete Load Balancer ...
  - it has children``;
* a child in the state lost its parent (``Unable to retrieve parent``).

Octavia deletes such a load balancer with ``cascade`` (how OCCM deletes every one). So
:meth:`reconciler.engine.stack.ServiceStack.delete` cascades the load balancer its stack owns when
:func:`needs_cascade` says so before ``destroy`` (``ERROR``), or when
:func:`retry_destroy_after_cascade` recognises the failed ``destroy``; :func:`cascade_delete`
waits until the load balancer is gone, the engine refreshes the stack (the provider drops what
no longer exists) and destroys what is left (the floating IP, the security group). A load
balancer shared with other Services is never cascaded: their listeners hang from it.
"""

from __future__ import annotations

import contextlib
import logging
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from reconciler.engine.errors import UpTimeoutError
from reconciler.engine.openstack.client import OpenStackRest, OpenStackRestError
from reconciler.model.naming import floating_ip_to_delete
from stacks.vocabulary import (
    FIP_ASSOCIATION,
    FLOATINGIPS,
    HEALTHMONITORS,
    LISTENERS,
    LOADBALANCERS,
    MEMBERS_PREFIX,
    POOLS,
    SECURITY_GROUPS,
    object_kind,
)

log = logging.getLogger("reconciler.engine.stack")

ERROR = "ERROR"
FIRST_WAIT = 0.5
BACKOFF = 1.5
MAX_WAIT = 10.0
# how often a load balancer being deleted is looked at: soon, as its deletion is what a
# Service's finalizer waits for (a GET per load balancer every 0.1 s, then less often)
GONE_FIRST_WAIT = 0.1
GONE_BACKOFF = 1.25


# What a ``destroy`` that can never finish one child at a time fails with: a load balancer
# with children the state does not know (left by an operation interrupted between the cloud's
# answer and the state's checkpoint), a child whose parent is already gone, a parent in ERROR.
_STUCK_DESTROY = (
    re.compile(r"Cannot delete Load Balancer \S+ - it has children"),
    re.compile(r"Unable to retrieve parent"),
    re.compile(r"unexpected state 'ERROR'"),
    # a child's delete the cloud never finished (the provider waits while it is ACTIVE or
    # ERROR), given up after the child delete timeout (stacks.vocabulary.CHILD_DELETE_TIMEOUT_KEY)
    re.compile(r"to become DELETED: context deadline exceeded"),
)


def retry_destroy_after_cascade(error: Exception) -> bool:
    """Whether a failed ``destroy`` is one that a cascade delete of the stack's own load
    balancer, a refresh and a second ``destroy`` get past."""
    text = str(error)
    return any(p.search(text) for p in _STUCK_DESTROY)


def needs_cascade(lb: Mapping[str, Any] | None) -> bool:
    """Whether ``destroy`` cannot delete this load balancer's children one by one."""
    return lb is not None and lb.get("provisioning_status") == ERROR


def cascade_delete(
    rest: OpenStackRest,
    lb_id: str,
    *,
    stack_name: str,
    timeout: float,
    cancelled: threading.Event,
    lock: threading.Lock | None = None,
    check: Callable[[], None] | None = None,
    level: int = logging.WARNING,
) -> None:
    """Delete ``lb_id`` with cascade, once it is not ``PENDING_*`` (Octavia answers 409 then),
    and wait until Octavia no longer has it, all within ``timeout``. Raises
    :class:`UpTimeoutError` (retryable) past the deadline, or when ``cancelled`` is set.

    ``check`` (raising to refuse) runs right before the ``DELETE`` is asked, both under
    ``lock``: what joins the load balancer under the same lock either came before the check or
    finds the load balancer ``PENDING_DELETE``."""
    log.log(level, "deleting load balancer %s with cascade (stack %s)", lb_id, stack_name)
    late = UpTimeoutError(
        f"load balancer {lb_id} (to delete with cascade) was still there after {timeout:.0f}s; "
        "the next sync retries",
        stack=stack_name,
    )
    for _ in attempts(
        timeout=timeout, cancelled=cancelled, late=late, first=GONE_FIRST_WAIT, factor=GONE_BACKOFF
    ):
        lb = rest.load_balancer(lb_id)
        if lb is None:
            return
        # Asked, it is PENDING_DELETE until gone; not PENDING_* again: its delete flow failed
        # (Octavia's revert leaves it ERROR, or an operator reset it), so it is asked again
        if not str(lb.get("provisioning_status", "")).startswith("PENDING_"):
            with lock or contextlib.nullcontext():
                if check is not None:
                    check()
                try:
                    rest.delete_load_balancer(lb_id)
                except OpenStackRestError as exc:
                    if exc.not_found:  # gone meanwhile (or an earlier answer was lost)
                        return
                    if not exc.conflict:  # 409: it went PENDING_* meanwhile
                        raise


def delete_unused(
    rest: OpenStackRest,
    lb: Mapping[str, Any],
    *,
    cluster_name: str,
    stack_name: str,
    timeout: float,
    cancelled: threading.Event,
) -> bool:
    """Delete load balancer ``lb``, on which nobody was found (its last Service left), and
    then the floating IPs on its VIP that this cluster made and nobody kept
    (:func:`reconciler.model.naming.floating_ip_to_delete`, listed before: the VIP port goes
    with the load balancer). Returns whether this call deleted it.

    Without cascade: Octavia refuses to delete a load balancer that has children, checked
    under the same lock as a listener's create, so a Service that joined since it was looked
    at (its listener made in between; docs/engine.md, "Shared load balancers") keeps it where
    a cascade would take that listener along. Only children without any listener (left by
    nobody's interrupted ``destroy``) are cascaded. Retried while Octavia answers 409 (another
    Service's change is under way, or another leaver deletes it too); gone is no error."""
    lb_id = str(lb["id"])
    on_vip = rest.floating_ips_on_port(str(lb.get("vip_port_id") or ""))
    fips = [f for f in on_vip if floating_ip_to_delete(f, cluster_name=cluster_name)]
    late = UpTimeoutError(
        f"load balancer {lb_id}, which no Service uses any more, could not be deleted within "
        f"{timeout:.0f}s (it stayed PENDING_*)",
        stack=stack_name,
    )
    for _ in attempts(timeout=timeout, cancelled=cancelled, late=late):
        try:
            rest.delete_load_balancer(lb_id, cascade=False)
        except OpenStackRestError as exc:
            if exc.not_found:  # another Service that left deleted it
                return False
            if exc.conflict:  # PENDING_*: ask again
                continue
            if exc.status != 400:
                raise
            # it has children: a listener is a Service's that joined meanwhile, it stays theirs
            if rest.listener_tags(lb_id):
                log.info("stack %s: load balancer %s got a listener; it stays", stack_name, lb_id)
                return False
            cascade_delete(rest, lb_id, stack_name=stack_name, timeout=timeout, cancelled=cancelled)
        break
    for fip in fips:
        rest.delete("floatingips", str(fip["id"]), missing_ok=True)
    return True


def attempts(
    *,
    timeout: float,
    cancelled: threading.Event,
    late: UpTimeoutError,
    first: float = FIRST_WAIT,
    factor: float = BACKOFF,
) -> Iterator[None]:
    """One step per attempt, with a pause growing from ``first`` by ``factor`` (at most
    ``MAX_WAIT``) between them; raises ``late`` past ``timeout`` or when ``cancelled`` is set."""
    deadline = time.monotonic() + timeout
    wait = first
    while True:
        yield
        left = deadline - time.monotonic()
        if left <= 0 or cancelled.wait(min(wait, left)):
            raise late
        wait = min(wait * factor, MAX_WAIT)


# Deepest first: the load balancer (cascade) before anything, a monitor before its pool, a pool
# before its listener. Batch members and the floating-IP association are not deleted: they go
# with their pool or floating IP.
_ORDER = [LOADBALANCERS, HEALTHMONITORS, POOLS, LISTENERS, FLOATINGIPS, SECURITY_GROUPS]
_CHILDREN = (HEALTHMONITORS, POOLS, LISTENERS)


def unadopted_deletions(imports: Mapping[str, str]) -> list[tuple[str, str]]:
    """What the engine deletes itself, as (collection, cloud ID), in order: objects an
    interrupted or failed create made and the recovery found (``imports``, logical name -> ID)
    that no ``up`` will adopt, because the stack is being deleted or because the spec no longer
    declares them. The state never saw them, so ``destroy`` or ``up`` would leave them."""
    out = []
    for name, ident in imports.items():
        kind = object_kind(name)
        if kind is not None and not name.startswith((MEMBERS_PREFIX, FIP_ASSOCIATION)):
            out.append((kind, ident))
    return sorted(out, key=lambda d: _ORDER.index(d[0]))


def delete_unadopted(
    rest: OpenStackRest,
    imports: Mapping[str, str],
    *,
    stack_name: str,
    timeout: float,
    cancelled: threading.Event,
) -> None:
    """Delete what :func:`unadopted_deletions` lists, each within ``timeout`` (a child is
    retried while Octavia answers 409, its load balancer being ``PENDING_*``)."""
    deletions = unadopted_deletions(imports)
    lb_gone = any(kind == LOADBALANCERS for kind, _ident in deletions)
    for kind, ident in deletions:
        if kind in _CHILDREN and lb_gone:
            continue  # the cascade took it
        log.warning(
            "stack %s: deleting %s %s, made by an interrupted create", stack_name, kind, ident
        )
        if kind == LOADBALANCERS:
            cascade_delete(rest, ident, stack_name=stack_name, timeout=timeout, cancelled=cancelled)
        elif kind not in _CHILDREN:  # Neutron: no 409 for a busy parent, deleted once
            rest.delete(kind, ident, missing_ok=True)
        else:
            _delete_child(
                rest, kind, ident, stack_name=stack_name, timeout=timeout, cancelled=cancelled
            )


def _delete_child(
    rest: OpenStackRest,
    kind: str,
    ident: str,
    *,
    stack_name: str,
    timeout: float,
    cancelled: threading.Event,
) -> None:
    late = UpTimeoutError(
        f"{kind} {ident} (made by an interrupted create) could not be deleted within "
        f"{timeout:.0f}s; the next sync retries",
        stack=stack_name,
    )
    for _ in attempts(timeout=timeout, cancelled=cancelled, late=late):
        try:
            rest.delete(kind, ident, missing_ok=True)
            return
        except OpenStackRestError as exc:
            if not exc.conflict:  # 409: its load balancer is PENDING_*
                raise

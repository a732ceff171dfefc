"""A load balancer's own tags, kept as OCCM keeps them.

Each Service on a load balancer has its name (``kube_service_<cluster>_<namespace>_<name>``)
among the load balancer's tags, and those of its ``load-balancer-tags`` annotation: the owner's
are given when the load balancer is made, every Service adds what is missing after each
successful ``up`` (a Service that joins a shared load balancer, an owner whose annotation grew),
and a Service that leaves a load balancer it does not delete takes its name away (OCCM's
``EnsureLoadBalancerDeleted``). So OCCM and this controller count the Services on a load
balancer the same way (``max-shared-lb``, and "is anybody else on it?" before a delete).

The owner's stack declares the tags ``ignore_changes`` (stacks/program.py): its ``up`` never
takes other Services' names away. Tags are only ever added here, never replaced: an annotation
tag removed stays on the load balancer, as with OCCM, since another Service may have asked for
it too.

Octavia has no compare-and-set for tags: a write replaces them all, and Octavia refuses it (409)
only while the load balancer is ``PENDING_*``. A write held up on its way (a slow API) lands after
another Service has read, written and checked its own, and puts back what it read: a name taken
off comes back (the load balancer then counts a Service that is gone, and is never deleted), a
name added goes. So the Services of this controller change one load balancer's tags one at a
time (:class:`LoadBalancerLocks`, held from the read to the check after the write;
tests/integration/engine/test_engine_shared_concurrent.py). Another writer (OCCM) may still lose
a name, as between two OCCMs; nothing is deleted on the strength of the tags alone, though: the
listeners (each tagged with its Service's name, declared by its stack) are looked at too.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any

from reconciler.engine.delete.cloud import attempts
from reconciler.engine.errors import UpTimeoutError
from reconciler.engine.openstack.client import OpenStackRest, OpenStackRestError
from reconciler.model.naming import others_listener, services_tagged, with_tags, without_tag

__all__ = ["LoadBalancerLocks", "add_tags", "others_on", "remove_tag"]

log = logging.getLogger("reconciler.engine.stack")


class LoadBalancerLocks:
    """One lock per load balancer, shared by every Service of an engine (the controller's
    workers): a change of a load balancer's tags holds it from its read to its check."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._locks: dict[str, threading.Lock] = {}

    def __call__(self, lb_id: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(lb_id, threading.Lock())


def add_tags(
    rest: OpenStackRest,
    lb_id: str,
    wanted: Sequence[str],
    *,
    stack_name: str,
    timeout: float,
    cancelled: threading.Event,
    locks: LoadBalancerLocks,
) -> None:
    """Give load balancer ``lb_id`` the ``wanted`` tags it lacks (one GET when it has them)."""
    with locks(lb_id):
        _change(
            rest,
            lb_id,
            lambda tags: with_tags(tags, wanted),
            what=f"add tags {', '.join(wanted)}",
            stack_name=stack_name,
            timeout=timeout,
            cancelled=cancelled,
        )


def remove_tag(
    rest: OpenStackRest,
    lb_id: str,
    tag: str,
    *,
    stack_name: str,
    timeout: float,
    cancelled: threading.Event,
    locks: LoadBalancerLocks,
) -> None:
    """Take ``tag`` (a Service's name) away from load balancer ``lb_id``, if it is still there."""
    with locks(lb_id):
        _change(
            rest,
            lb_id,
            lambda tags: without_tag(tags, tag),
            what=f"remove tag {tag}",
            stack_name=stack_name,
            timeout=timeout,
            cancelled=cancelled,
        )


def _change(
    rest: OpenStackRest,
    lb_id: str,
    change: Callable[[Sequence[Any]], list[str] | None],
    *,
    what: str,
    stack_name: str,
    timeout: float,
    cancelled: threading.Event,
) -> None:
    """Read the tags; when they need a change, write it (not while the load balancer is
    ``PENDING_*``: Octavia answers 409) and wait until the update is over, so that what
    follows (an ``up`` of a child) is not refused. A load balancer that is gone has no tags to
    keep."""
    late = UpTimeoutError(
        f"load balancer {lb_id}: could not {what} within {timeout:.0f}s (it stayed PENDING_*); "
        "the next sync retries",
        stack=stack_name,
    )
    wrote = False
    for _ in attempts(timeout=timeout, cancelled=cancelled, late=late):
        lb = rest.load_balancer(lb_id)
        if lb is None:
            return
        pending = str(lb.get("provisioning_status", "")).startswith("PENDING_")
        changed = change(lb.get("tags") or ())
        if changed is None and not (wrote and pending):
            return
        if changed is None or pending:
            continue
        try:
            rest.set_load_balancer_tags(lb_id, changed)
        except OpenStackRestError as exc:
            if not exc.conflict:  # 409: it went PENDING_* meanwhile; read again
                raise
            continue
        wrote = True
        log.info("stack %s: load balancer %s: %s", stack_name, lb_id, what)


def others_on(rest: OpenStackRest, lb_id: str, *, ours: str) -> bool:
    """Whether Services other than ``ours`` (its OCCM name) are on load balancer ``lb_id``: a
    listener of somebody else's (:func:`reconciler.model.naming.others_listener`), or another
    Service's name among the load balancer's tags (how OCCM tells)."""
    if any(others_listener(tags, ours=ours) for tags in rest.listener_tags(lb_id)):
        return True
    lb = rest.load_balancer(lb_id)
    return bool(services_tagged((lb or {}).get("tags") or (), but=ours))

"""Deleting a Service's stack: :meth:`reconciler.engine.stack.ServiceStack.delete`, through the
:class:`~reconciler.engine.handle.StackHandle` surface.

``pulumi destroy`` deletes what the state holds; around it, what the state cannot see:

* **Shared load balancers**: while other Services are on the stack's own load balancer (their
  listeners, or their names among its tags), it is released (an ``up`` with
  ``retain_on_delete``, kept in the cloud, as OCCM does) instead of destroyed; the last
  Service to leave it (a sharer, or the owner if the others left meanwhile) deletes it,
  without cascade (:func:`_delete_released`). A Service that leaves a load
  balancer without deleting it takes its name off the load balancer's tags
  (:mod:`reconciler.engine.lb_tags`).
* **What the recovery found**: objects an interrupted create made, never in the state, are
  deleted directly (:func:`reconciler.engine.delete.cloud.delete_unadopted`). After an ``up``
  that did not finish, that includes a load balancer or floating IP whose create answer was
  lost (no pending operation): looked for with the spec that ``up`` was given
  (:func:`reconciler.engine.lost.configured_spec`), only by this Service's own name and
  description (a floating IP only while on no port), so nothing this cluster did not create.
* **Protection**: the load balancer and floating IP are declared ``protect`` (an ``up`` never
  deletes or replaces them); their protection is lifted (``pulumi state unprotect --all``)
  right before ``destroy``, and again by the next attempt after a crash.
* **Directly, as OCCM does** (:mod:`reconciler.engine.delete.direct`): when the state holds
  only the tree of the stack's own load balancer and a floating IP
  (:mod:`reconciler.engine.delete.direct_plan`), the load balancer is deleted with one cascade
  ``DELETE``, then the floating IP unless kept, then the stack is removed in the backend: no
  ``destroy``, and no ``pulumi`` at all when the last operation finished. Checked and asked
  under the load balancer's lock, which a Service joining it holds for its ``up``.
* **When destroy cannot go child by child** (a load balancer in ``ERROR``, a child the state
  does not know, a lost parent): the owned load balancer is deleted with cascade, the stack
  refreshed and destroyed again (:mod:`reconciler.engine.delete.cloud`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace

from pulumi import automation as auto

from reconciler.engine import run as engine_run
from reconciler.engine.delete.cloud import (
    delete_unadopted,
    delete_unused,
    needs_cascade,
    retry_destroy_after_cascade,
)
from reconciler.engine.delete.direct import (
    cascade_own,
    delete_directly,
    delete_without_cli,
    direct_plan,
)
from reconciler.engine.direct_state import remove_emptied_stack
from reconciler.engine.errors import EngineError
from reconciler.engine.handle import StackHandle, quiet
from reconciler.engine.lb_tags import others_on, remove_tag
from reconciler.engine.listing import stacks_tagged
from reconciler.engine.openstack.client import OpenStackRest
from reconciler.engine.plan import HASH_TAG, OWNS_TAG, applied_spec_from, outputs_from_tags
from reconciler.model.naming import (
    KEPT_FLOATING_IP_TAG,
    made_by_cluster,
    services_tagged,
)
from stacks.vocabulary import CONFIG_NAMESPACE, RELEASE_KEY

__all__ = ["DeleteResult", "delete_stack"]

log = logging.getLogger("reconciler.engine.stack")


@dataclass(frozen=True)
class DeleteResult:
    existed: bool
    released_load_balancer: bool = False  # kept in the cloud for the Services still on it
    deleted_shared_load_balancer: bool = False  # the last Service on a released LB was us
    direct: bool = False  # no `pulumi destroy`: one cascade DELETE (.direct_delete)


def delete_stack(ss: StackHandle, *, keep_floating_ip: bool | None = None) -> DeleteResult:
    """Destroy everything the stack of ``ss`` made, then remove the stack. ``keep_floating_ip``
    (the Service's ``keep-floatingip`` now; None: as last applied) decides whether the floating
    IP the stack made is left in the cloud."""
    exists = ss.check_stack()
    rest = ss.engine.rest()  # one Keystone login (on first use) for every lookup below
    if exists and delete_without_cli(ss, rest, keep_floating_ip):
        return DeleteResult(True, direct=True)
    stack = None if exists is False else ss.select_stack(exists, create=False)
    if stack is None:
        ss.forget()
        return DeleteResult(existed=False)
    tags = ss.tags_of(stack)
    current = tags.read()
    # The last operation finished (spec hash): nothing pending, and the tags hold the IDs.
    outputs = outputs_from_tags(current) if HASH_TAG in current else None
    if outputs is None:
        # Something may have been made that the state never heard of (a create whose answer
        # was lost leaves no pending operation): look for what the last `up` was asked to make
        # (reconciler.engine.lost), or destroy would leave it behind for ever.
        outputs = ss.outputs_of(stack)
        ss.recover(stack, ss.configured_spec_of() or applied_spec_from(outputs), rest=rest)
    unadopted, ss.imports = ss.imports, {}
    lb_id = str(outputs.get("lb_id") or "")
    shared = bool(outputs.get("shared"))
    released = False
    tags.apply(current, drop=[HASH_TAG])  # an interrupted destroy must not look applied
    owns = bool(lb_id) and not shared
    direct = direct_plan(ss, lb_id, keep_floating_ip) if owns and not unadopted else None
    if direct is not None and delete_directly(ss, rest, *direct):
        return DeleteResult(True)
    if keep_floating_ip is not None and outputs.get("floating_ip") and not shared:
        _keep_as_asked(ss, stack, keep=keep_floating_ip, applied=bool(outputs.get("fip_keep")))
    if lb_id and not shared and others_on(rest, lb_id, ours=ss.occm_name):
        stack.set_config(f"{CONFIG_NAMESPACE}:{RELEASE_KEY}", auto.ConfigValue("true"))
        # `up --refresh`: after a cut-off destroy (a controller killed mid-release) the state
        # may hold a child the cloud deletes or has deleted; built on, the `up` fails for ever
        ss.deadline(
            lambda: engine_run.up(stack, on_output=quiet, refresh=True),
            stack=stack,
            doing="release",
        )
        released = True
        _untag(ss, rest, lb_id)  # the Services still on it no longer count us
        keep = outputs.get("fip_keep") if keep_floating_ip is None else keep_floating_ip
        if keep and outputs.get("floating_ip"):
            _mark_kept(ss, rest, lb_id, str(outputs["floating_ip"]))
    if lb_id and shared:  # before destroy: a crash after it would leave the name for ever
        _untag(ss, rest, lb_id)
    if unadopted:  # found by the recovery, never in the state: destroy would leave them
        ss.engine.fence("deleting what a crash left", stack=ss.name)
        delete_unadopted(
            rest,
            unadopted,
            stack_name=ss.name,
            timeout=ss.engine.settings.operation_timeout,
            cancelled=ss.engine.cancelled,
        )
    owned = bool(lb_id) and not shared and not released
    if owned and needs_cascade(rest.load_balancer(lb_id)):
        _cascade(ss, rest, stack, lb_id)

    if not released:  # a released stack's release `up` declared nothing protected
        ss.unprotect_all()

    def destroy() -> None:
        ss.deadline(
            lambda: engine_run.destroy(stack, on_output=quiet), stack=stack, doing="destroy"
        )

    try:
        destroy()
    except EngineError as exc:
        if not owned or not retry_destroy_after_cascade(exc):
            raise
        log.warning(
            "destroy of stack %s failed; deleting load balancer %s with cascade, then "
            "destroying again: %s",
            ss.name,
            lb_id,
            exc,
        )
        _cascade(ss, rest, stack, lb_id)
        destroy()
    _remove_stack(ss, stack)
    # Whoever leaves a released load balancer last deletes it, the owner too: a sharer that
    # left at the same moment may have seen the owner still on it
    gone = _delete_released(ss, rest, lb_id) if lb_id and (shared or released) else False
    ss.forget()
    return DeleteResult(True, released, gone)


def _remove_stack(ss: StackHandle, stack: auto.Stack) -> None:
    if remove_emptied_stack(ss.engine, ss.name):  # no `pulumi stack rm`
        return
    ss.engine.fence("removing the stack", stack=ss.name)
    try:
        stack.workspace.remove_stack(ss.name)
    except auto.CommandError as exc:
        raise ss.engine.error(exc, stack=ss.name, doing="stack rm") from None


def _mark_kept(ss: StackHandle, rest: OpenStackRest, lb_id: str, address: str) -> None:
    """The owner of a released load balancer had ``keep-floatingip``: its floating IP stays
    with the load balancer for the Services still on it, and is tagged so that the last of them
    deletes the load balancer without it (:func:`reconciler.model.naming.floating_ip_to_delete`)."""
    lb = rest.load_balancer(lb_id)
    for fip in rest.floating_ips_on_port(str((lb or {}).get("vip_port_id") or "")):
        if fip.get("floating_ip_address") == address:
            ss.engine.fence("tagging the floating IP", stack=ss.name)
            rest.tag_floating_ip(str(fip["id"]), KEPT_FLOATING_IP_TAG)
            log.info("stack %s: floating IP %s kept for its owner (tagged)", ss.name, address)


def _keep_as_asked(ss: StackHandle, stack: auto.Stack, *, keep: bool, applied: bool) -> None:
    """``keep-floatingip`` is read from the Service as it is when it is deleted, not as it was
    at its last ``up``: when they differ, an ``up`` of the applied spec with the Service's
    value records it in the state (``retain_on_delete``; no cloud change) before ``destroy``."""
    if keep == applied:
        return
    spec = ss.applied_spec_of(stack)
    if spec is None or spec.floating_ip is None:
        return
    kept = replace(spec, floating_ip=replace(spec.floating_ip, keep=keep))
    ss.configure_stack(stack, kept)
    ss.deadline(  # --refresh: as the release's (the state may lag a cut-off destroy)
        lambda: engine_run.up(stack, on_output=quiet, refresh=True),
        stack=stack,
        doing="keep-floatingip",
    )


def _cascade(ss: StackHandle, rest: OpenStackRest, stack: auto.Stack, lb_id: str) -> None:
    """Delete the stack's own load balancer with cascade (when it still exists), then refresh,
    so the state forgets what the cascade removed (see delete.cloud). Refused, checked under
    the load balancer's lock right before the ``DELETE`` (:func:`cascade_own`), when a
    listener of another Service joined since: it would go with the cascade (retried soon; the
    next attempt releases the load balancer instead)."""
    cascade_own(ss, rest, lb_id, level=logging.WARNING)
    ss.deadline(lambda: engine_run.refresh(stack, on_output=quiet), stack=stack, doing="refresh")


def _untag(ss: StackHandle, rest: OpenStackRest, lb_id: str) -> None:
    """Take the Service's name off a load balancer it leaves without deleting it."""
    settings = ss.engine.settings
    ss.engine.fence("untagging the load balancer", stack=ss.name)
    remove_tag(
        rest,
        lb_id,
        ss.occm_name,
        stack_name=ss.name,
        timeout=settings.operation_timeout,
        cancelled=ss.engine.cancelled,
        locks=ss.engine.lb_locks,
    )


def _delete_released(ss: StackHandle, rest: OpenStackRest, lb_id: str) -> bool:
    """As the last Service on a load balancer released by its owner (a sharer, or the owner
    itself when the others left while it released it), delete it; never one this cluster did
    not make (a user's own, reached through ``load-balancer-id``: OCCM's rule too), whatever
    happens to the Services on it. Each Service leaving takes its name, listeners and stack off
    before it looks, so of two leaving at the same moment the later one finds nobody; a
    Service joining meanwhile keeps it (:func:`reconciler.engine.delete.cloud.delete_unused`)."""
    if rest.listener_tags(lb_id):
        return False
    lb = rest.load_balancer(lb_id)
    if lb is None:
        return False
    # a Service (of this cluster or OCCM's) still counts on it; the load balancer's own name
    # is its owner's, whose stack released it (an owner released before owners untagged
    # themselves left it there)
    if services_tagged(lb.get("tags") or (), but=str(lb.get("name") or "")):
        return False
    settings = ss.engine.settings
    if not made_by_cluster(lb, cluster_name=settings.cluster_name, cluster_id=settings.cluster_id):
        log.info(
            "stack %s: load balancer %s (%s) was not made by this cluster; it stays",
            ss.name,
            lb_id,
            lb.get("name"),
        )
        return False
    if stacks_tagged(ss.engine, OWNS_TAG, lb_id, work_dir=ss.work_dir):
        return False
    ss.engine.fence("deleting the released load balancer", stack=ss.name)
    return delete_unused(
        rest,
        lb,
        cluster_name=settings.cluster_name,
        stack_name=ss.name,
        timeout=settings.operation_timeout,
        cancelled=ss.engine.cancelled,
    )

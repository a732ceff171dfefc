"""What to do for one Service, and which patches and Events say so: pure functions over dicts.

The upstream service controller's ``syncLoadBalancerIfNeeded`` interleaves deciding and doing.
Here the deciding is split out, so every path is a table-driven unit test and
:mod:`reconciler.controller.loop` only carries the plans out (API calls, engine calls, in the order
given). Three decisions:

* :func:`decide`: ``ENSURE``, ``CLEANUP`` or ``IGNORE``, from the predicates of
  :mod:`reconciler.model.predicates` (upstream ``wantsLoadBalancer`` / ``needsCleanup`` and
  KEP-980, extended with the load balancer classes this controller owns), which hold every rule
  about which Services and which finalizers are ours; ``PAUSED`` instead of either of the first
  two for a Service with ``lb-reconciler.io/reconcile: disabled``;
* :func:`plan_ensure` then :func:`plan_after_ensure`: the spec (or the validation errors and the
  Warning that reports them, leaving the cloud alone), the finalizer patch that must succeed
  before any cloud change, the Events, and the status and annotation patches from the engine's
  outputs, each ``None`` when nothing differs;
* :func:`plan_cleanup`: the Events and the patch that releases the finalizer, to be applied only
  after the engine's ``delete`` returned;
* :func:`plan_paused`: the condition ``Paused`` and, for a paused Service that is being deleted
  (or no longer wants a load balancer), the Warning ``DeletionPaused``: its finalizer is kept and
  nothing is destroyed until the annotation is removed.

Finalizers. Classless Services use ``service.kubernetes.io/load-balancer-cleanup`` as upstream
does; a Service of a class this controller owns gets ``settings.class_finalizer`` instead (why:
:mod:`reconciler.model.predicates`). Finalizer patches are JSON merge patches that carry
``metadata.resourceVersion``: the list is replaced whole, and the precondition makes the API
server refuse (409) if anyone changed the object since we read it, so no one's finalizer is lost.

Events. Reasons and default messages are upstream's, and one of our own:
``CreateOnlyFieldChanged`` (Warning), after every sync whose Service asks to change a field the
load balancer keeps as it was made with (:mod:`reconciler.model.frozen`), naming the field, the
value in use, the value asked for and what to do. ``EnsuringLoadBalancer`` /
``EnsuredLoadBalancer`` frame a sync whose spec differs from the last one this process applied (or
the first after start, as upstream); ``UpdatedLoadBalancer`` ("with new hosts") when only members
changed (:func:`reconciler.controller.changes.classify_change` tells which);
``UnAvailableLoadBalancer`` when no Node is eligible; ``DeletingLoadBalancer`` /
``DeletedLoadBalancer`` around cleanup; ``SyncLoadBalancerFailed`` for a failure, including invalid
input, whose message names the field, the value and the fix.

Status: :mod:`reconciler.controller.ingress`. Annotations ``load-balancer-id`` and
``load-balancer-address`` are written as OCCM does, only the keys that differ.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from reconciler.config import CloudConfig
from reconciler.controller import conditions
from reconciler.controller.changes import Change, classify_change
from reconciler.controller.ingress import desired_ingress, status_patch
from reconciler.engine.results import EnsureResult
from reconciler.model import LoadBalancerSpec, ValidationError, build_spec
from reconciler.model.annotations import LOAD_BALANCER_ADDRESS, LOAD_BALANCER_ID
from reconciler.model.network import keep_floating_ip_now
from reconciler.model.predicates import (
    CLASS_FINALIZER,
    Ownership,
    being_deleted,
    finalizer_for,
    finalizers,
    held_finalizers,
    needs_cleanup,
    needs_update,
    part,
    paused,
    reconcile_value_problem,
    wants_load_balancer,
)
from reconciler.model.traffic import warning_reason

__all__ = [
    "CREATE_ONLY_REASON",
    "Action",
    "AfterEnsure",
    "CleanupPlan",
    "ControllerSettings",
    "EnsurePlan",
    "Event",
    "PausedPlan",
    "add_finalizer_patch",
    "decide",
    "failure_event",
    "plan_after_ensure",
    "plan_cleanup",
    "plan_ensure",
    "plan_paused",
    "service_key",
    "should_enqueue_on_add",
    "should_enqueue_on_update",
]

NORMAL, WARNING = "Normal", "Warning"
# A create-only field (reconciler.model.frozen) was edited; the load balancer keeps its value.
CREATE_ONLY_REASON = "CreateOnlyFieldChanged"
MAX_MESSAGE = 1024
# a paused Service that is being deleted keeps its finalizer (Warning)
DELETION_PAUSED_REASON = "DeletionPaused"
# lb-reconciler.io/reconcile with a value other than disabled or enabled (Warning)
RECONCILE_VALUE_REASON = "InvalidReconcileAnnotation"


@dataclass(frozen=True)
class ControllerSettings:
    """Which Services are ours and what we call them. ``owned_classes``: ``loadBalancerClass``
    values this controller serves; ``serve_default``: also serve Services without a class."""

    cluster_name: str = "kubernetes"
    owned_classes: frozenset[str] = frozenset()
    serve_default: bool = True
    class_finalizer: str = CLASS_FINALIZER

    @property
    def ownership(self) -> Ownership:
        """What the predicates of :mod:`reconciler.model.predicates` need of these settings."""
        return Ownership(self.owned_classes, self.serve_default, self.class_finalizer)


@dataclass(frozen=True)
class Event:
    type: str  # Normal or Warning
    reason: str
    message: str


class Action(enum.Enum):
    IGNORE = "ignore"
    ENSURE = "ensure"
    CLEANUP = "cleanup"
    PAUSED = (
        "paused"  # ENSURE or CLEANUP, but the Service says lb-reconciler.io/reconcile: disabled
    )


def _meta(service: Mapping[str, Any]) -> Mapping[str, Any]:
    return part(service, "metadata")


def service_key(obj: Mapping[str, Any]) -> str:
    meta = _meta(obj)
    return f"{meta.get('namespace') or ''}/{meta.get('name') or ''}"


def decide(service: Mapping[str, Any], settings: ControllerSettings) -> Action:
    """Upstream's ``!wantsLoadBalancer || needsCleanup`` split in three: clean up when
    :func:`~reconciler.model.predicates.needs_cleanup`; ensure when the Service wants our load
    balancer and is not being deleted; otherwise leave it alone. Upstream would ensure a Service
    being deleted that never got our finalizer; here it is left alone: a finalizer cannot be
    added any more, so nothing made for it could be held until it is deleted. A paused Service
    (:func:`~reconciler.model.predicates.paused`) that would be ensured or cleaned up is
    ``PAUSED``: nothing but its condition (and a Warning when it is being deleted)."""
    ours = settings.ownership
    action = Action.IGNORE
    if needs_cleanup(service, ours):
        action = Action.CLEANUP
    elif wants_load_balancer(service, ours) and not being_deleted(service):
        action = Action.ENSURE
    if action is not Action.IGNORE and paused(service):
        return Action.PAUSED
    return action


def should_enqueue_on_add(service: Mapping[str, Any], settings: ControllerSettings) -> bool:
    """Upstream ``AddFunc``: wants a load balancer or needs cleanup (covers missed deletions)."""
    return decide(service, settings) is not Action.IGNORE


def should_enqueue_on_update(
    old: Mapping[str, Any], new: Mapping[str, Any], settings: ControllerSettings
) -> bool:
    """Upstream ``UpdateFunc`` (``needsUpdate`` or ``needsCleanup``), plus: our finalizer is
    missing from a Service we serve (removed by hand), which the next sync puts back. Pausing
    and resuming are annotation changes (``needsUpdate``); a paused Service being deleted needs
    cleanup, so its sync says why nothing happens."""
    if needs_cleanup(new, settings.ownership):
        return True
    action = decide(new, settings)
    if action is Action.ENSURE and finalizer_for(new, settings.ownership) not in finalizers(new):
        return True
    return needs_update(old, new, settings.ownership)


# -- ensure -----------------------------------------------------------------------------------


def _invalid_message(errors: Sequence[ValidationError]) -> str:
    problems = " | ".join(str(e) for e in errors)
    text = (
        "Error syncing load balancer: invalid configuration, the load balancer was left as it "
        f"was: {problems}"
    )
    return _clip(text)


def _clip(text: str) -> str:
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 3] + "..."


@dataclass(frozen=True)
class EnsurePlan:
    """``spec`` None means invalid input: emit ``events`` and stop; the cloud is not touched."""

    spec: LoadBalancerSpec | None
    errors: tuple[ValidationError, ...]
    change: Change
    finalizer_patch: dict[str, Any] | None
    events: tuple[Event, ...]
    notices: tuple[str, ...] = ()


def add_finalizer_patch(
    service: Mapping[str, Any], settings: ControllerSettings
) -> dict[str, Any] | None:
    """The merge patch (with resourceVersion) that adds our finalizer; None if it is there."""
    finalizer = finalizer_for(service, settings.ownership)
    current = finalizers(service)
    if finalizer in current:
        return None
    rv = str(_meta(service).get("resourceVersion") or "")
    return {"metadata": {"resourceVersion": rv, "finalizers": [*current, finalizer]}}


def plan_ensure(
    *,
    service: Mapping[str, Any],
    nodes: Sequence[Mapping[str, Any]],
    config: CloudConfig,
    settings: ControllerSettings,
    previous: LoadBalancerSpec | None = None,
    previous_lb_id: str | None = None,
) -> EnsurePlan:
    result = build_spec(
        service=service, nodes=nodes, config=config, cluster_name=settings.cluster_name
    )
    notices = tuple(str(n) for n in result.notices)
    if result.spec is None:
        event = Event(WARNING, "SyncLoadBalancerFailed", _invalid_message(result.errors))
        return EnsurePlan(None, result.errors, Change.NONE, None, (event,), notices)
    change = classify_change(previous, result.spec, previous_lb_id=previous_lb_id)
    events: list[Event] = []
    if change is Change.FULL:
        events.append(Event(NORMAL, "EnsuringLoadBalancer", "Ensuring load balancer"))
    if change is not Change.NONE and any(n.field == "nodes" for n in result.notices):
        events.append(
            Event(
                WARNING,
                "UnAvailableLoadBalancer",
                "There are no available nodes for LoadBalancer",
            )
        )
    if change is not Change.NONE:
        for notice in result.notices:
            if reason := warning_reason(notice):
                events.append(Event(WARNING, reason, _clip(str(notice))))
        if problem := reconcile_value_problem(service):
            events.append(Event(WARNING, RECONCILE_VALUE_REASON, _clip(problem)))
    patch = add_finalizer_patch(service, settings)
    return EnsurePlan(result.spec, (), change, patch, tuple(events), notices)


@dataclass(frozen=True)
class AfterEnsure:
    status_patch: dict[str, Any] | None  # JSON merge patch for the status subresource
    annotation_patch: dict[str, Any] | None  # JSON merge patch for the Service
    events: tuple[Event, ...]


def plan_after_ensure(
    *,
    service: Mapping[str, Any],
    spec: LoadBalancerSpec,
    result: EnsureResult,
    change: Change,
    no_nodes: bool = False,
) -> AfterEnsure:
    events: tuple[Event, ...] = ()
    if change is Change.FULL:
        events = (Event(NORMAL, "EnsuredLoadBalancer", "Ensured load balancer"),)
    elif change is Change.HOSTS and not no_nodes:
        events = (Event(NORMAL, "UpdatedLoadBalancer", "Updated load balancer with new hosts"),)
    events += tuple(Event(WARNING, CREATE_ONLY_REASON, _clip(f.message())) for f in result.frozen)
    annotations = part(_meta(service), "annotations")
    wanted = {LOAD_BALANCER_ID: result.lb_id, LOAD_BALANCER_ADDRESS: result.address}
    differ = {k: v for k, v in wanted.items() if annotations.get(k) != v}
    annotation_patch = {"metadata": {"annotations": differ}} if differ else None
    status = status_patch(service, desired_ingress(spec.status, result.address))
    return AfterEnsure(status, annotation_patch, events)


# -- cleanup ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class CleanupPlan:
    """Before ``delete``: ``events_before``. After it succeeded: ``finalizer_patch`` (merge patch
    with resourceVersion; also drops our annotations), ``events_after``, then ``status_patch``."""

    events_before: tuple[Event, ...]
    finalizer_patch: dict[str, Any] | None
    events_after: tuple[Event, ...]
    status_patch: dict[str, Any] | None = field(default=None)
    keep_floating_ip: bool = False  # the Service's keep-floatingip now, for the engine's delete


def plan_cleanup(service: Mapping[str, Any], settings: ControllerSettings) -> CleanupPlan:
    held = set(held_finalizers(service, settings.ownership))
    current = finalizers(service)
    patch: dict[str, Any] | None = None
    if held:
        meta: dict[str, Any] = {
            "resourceVersion": str(_meta(service).get("resourceVersion") or ""),
            "finalizers": [f for f in current if f not in held],
        }
        annotations = part(_meta(service), "annotations")
        ours = {k: None for k in (LOAD_BALANCER_ID, LOAD_BALANCER_ADDRESS) if k in annotations}
        if ours:
            meta["annotations"] = ours
        patch = {"metadata": meta}
    status = status_patch(service, [])
    return CleanupPlan(
        events_before=(Event(NORMAL, "DeletingLoadBalancer", "Deleting load balancer"),),
        finalizer_patch=patch,
        events_after=(Event(NORMAL, "DeletedLoadBalancer", "Deleted load balancer"),),
        status_patch=status,
        keep_floating_ip=keep_floating_ip_now(part(_meta(service), "annotations")),
    )


# -- paused -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class PausedPlan:
    """What a paused Service gets: ``condition``; ``events`` go with a change of the condition
    (so a resync of a paused Service writes nothing). ``cleanup``: it is being deleted or wants
    no load balancer any more: its finalizer stays until it is resumed."""

    cleanup: bool
    condition: conditions.Condition
    events: tuple[Event, ...]


def plan_paused(service: Mapping[str, Any], settings: ControllerSettings) -> PausedPlan:
    ours = settings.ownership
    cleanup = needs_cleanup(service, ours)
    held = held_finalizers(service, ours)
    condition = conditions.paused(
        cleanup=cleanup, finalizer=held[0] if held else finalizer_for(service, ours)
    )
    events: tuple[Event, ...] = ()
    if cleanup:
        doing = "being deleted" if being_deleted(service) else "no longer a load balancer of ours"
        text = f"The Service is {doing} but {condition.message}"
        events = (Event(WARNING, DELETION_PAUSED_REASON, _clip(text)),)
    return PausedPlan(cleanup, condition, events)


# -- failures ---------------------------------------------------------------------------------


def failure_event(*, action: Action, error: str, retry_in: float | None, reason: str = "") -> Event:
    """Upstream's ``Error syncing load balancer: failed to ... load balancer: <err>``, plus when
    the next attempt is, so a user knows whether to wait or to act.

    ``<err>`` is the first line of ``error``: an engine error puts the cloud's own message there
    (:func:`reconciler.engine.failure_text.describe`) and pulumi's error lines after it, for the
    log. It is clipped so that the retry time always shows; the message stays the same from one
    attempt to the next while the cloud says the same, so Events aggregate (a count).
    ``reason``: the failure's own (``StackLocked``: the message says it all, without upstream's
    words); "" for ``SyncLoadBalancerFailed``."""
    verb = "delete" if action is Action.CLEANUP else "ensure"
    head = "" if reason else f"Error syncing load balancer: failed to {verb} load balancer: "
    tail = f"; retrying in {retry_in:g}s" if retry_in is not None else ""
    lines = error.strip().splitlines()
    said = lines[0].strip() if lines else "unknown error"
    room = MAX_MESSAGE - len(head) - len(tail)
    if len(said) > room:
        said = said[: room - 3] + "..."
    return Event(WARNING, reason or "SyncLoadBalancerFailed", head + said + tail)

"""The Service condition this controller owns, ``lb-reconciler.io/LoadBalancerReady``: which one
for which outcome, and whether the Service already says it. Pure.

``status.conditions`` of a Service is a list of ``metav1.Condition`` merged by ``type``
(``ServiceStatus.Conditions``: ``patchStrategy=merge``, ``patchMergeKey=type``), so a strategic
merge patch of the status subresource that names only our type leaves every other writer's
conditions alone (upstream's ``LoadBalancerPortsError``, another controller's). The patch is
all this module returns; :mod:`.sync` sends it.

What it says (status, reason; the message says the rest, the cloud's own words for a failure):

=================  =========  ==========================================================
reason             status     when
=================  =========  ==========================================================
``Provisioned``    True       the last ``ensure`` succeeded: the load balancer is as the
                              Service asks (its id and address in the message)
``Updating``       as before  an ``up`` is about to run for a change: the Service is new
                   (True, or  (no condition yet, no address), its spec changed
                   Unknown)   (``metadata.generation``), it was paused, refused, or an
                              annotation edit reached this process; True stays True (the
                              load balancer serves while it is updated)
``CloudError``     False      the engine failed (``up`` or ``destroy``): the cloud's message
``StackLocked``    False      the stack is locked by a holder that is not this controller
``Refused``        False      the Service's input is invalid (the field, value and fix)
``Paused``         Unknown    ``lb-reconciler.io/reconcile: disabled``: nothing is done
=================  =========  ==========================================================

``observedGeneration`` is the Service's ``metadata.generation``. The kube-apiserver sets none
on Services (1.36 does not), so it is 0 there and ``Updating`` for an edit relies on what this
process remembers of the spec it applied (``remembered_change``); a generation, where there is
one, counts too.

Writes are few by construction: :func:`condition_patch` returns None when the Service already
has the same status, reason, message and ``observedGeneration``, so a resync of unchanged
Services writes nothing; the messages hold nothing that changes from one attempt to the next
(no retry delay, no time). ``lastTransitionTime`` is the current one when the status is the
same, ``now`` otherwise (metav1.Condition's rule).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from reconciler.model.predicates import RECONCILE, external_address, part

__all__ = [
    "CONDITION_TYPE",
    "Condition",
    "condition_of",
    "condition_patch",
    "failed",
    "paused",
    "provisioned",
    "refused",
    "removal_patch",
    "updating",
]

CONDITION_TYPE = "lb-reconciler.io/LoadBalancerReady"
TRUE, FALSE, UNKNOWN = "True", "False", "Unknown"
PROVISIONED = "Provisioned"
UPDATING = "Updating"
CLOUD_ERROR = "CloudError"
STACK_LOCKED = "StackLocked"
REFUSED = "Refused"
PAUSED = "Paused"
MAX_MESSAGE = 4096  # the API's limit is 32768; what a person reads in `kubectl describe`


@dataclass(frozen=True)
class Condition:
    status: str  # True, False or Unknown
    reason: str
    message: str


def _clip(text: str) -> str:
    text = text.strip()
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 3] + "..."


def condition_of(service: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """Our condition as the Service has it (None: it has none)."""
    items = part(service, "status").get("conditions")
    for item in items if isinstance(items, list) else []:
        if isinstance(item, Mapping) and item.get("type") == CONDITION_TYPE:
            return item
    return None


def _generation(service: Mapping[str, Any]) -> int:
    value = part(service, "metadata").get("generation")
    return value if isinstance(value, int) and value >= 0 else 0


def _observed(condition: Mapping[str, Any]) -> int:
    """A condition's ``observedGeneration``; 0 when absent (the API server drops a 0: omitempty,
    and it sets no generation on Services)."""
    value = condition.get("observedGeneration")
    return value if isinstance(value, int) else 0


def provisioned(*, lb_id: str, address: str) -> Condition:
    where = f" at {address}" if address else ""
    return Condition(TRUE, PROVISIONED, f"load balancer {lb_id or '(no id)'}{where} is up to date")


def updating(service: Mapping[str, Any], *, remembered_change: bool) -> Condition | None:
    """The condition to write before an ``ensure`` (None: none). ``remembered_change``: this
    process applied another spec for this Service before (an annotation edit: annotations do
    not move ``metadata.generation``). Not written for what is not a change of the Service: a
    restart (nothing remembered), a Node change, a retry after a failure of the cloud."""
    current = condition_of(service)
    if current is None:
        if external_address(service):
            return None  # served before this controller wrote conditions: no news
        return Condition(UNKNOWN, UPDATING, "creating the load balancer")
    reason = current.get("reason")
    status = TRUE if current.get("status") == TRUE else UNKNOWN
    message = "updating the load balancer to the Service's changes"
    if reason in (PAUSED, REFUSED):
        return Condition(status, UPDATING, message)
    if _observed(current) != _generation(service):
        return Condition(status, UPDATING, message)
    if reason == PROVISIONED and remembered_change:
        return Condition(status, UPDATING, message)
    return None


def failed(*, deleting: bool, error: str, locked: bool) -> Condition:
    """An engine failure: the first line of ``error``, the cloud's message (``locked``: the stack
    is locked by a holder that is not this controller; the message names it)."""
    lines = error.strip().splitlines()
    said = lines[0].strip() if lines else "unknown error"
    if locked:
        return Condition(FALSE, STACK_LOCKED, _clip(said))
    verb = "delete" if deleting else "ensure"
    return Condition(FALSE, CLOUD_ERROR, _clip(f"failed to {verb} the load balancer: {said}"))


def refused(message: str) -> Condition:
    """The Service's input is invalid (the Warning's message: the field, the value, the fix)."""
    return Condition(FALSE, REFUSED, _clip(message))


def paused(*, cleanup: bool, finalizer: str) -> Condition:
    """``lb-reconciler.io/reconcile: disabled``. ``cleanup``: the Service is being deleted or no
    longer wants a load balancer, and ``finalizer`` is kept until it is resumed."""
    resume = f"remove the annotation {RECONCILE} (or set it to 'enabled') to resume"
    if cleanup:
        return Condition(
            UNKNOWN,
            PAUSED,
            f"reconciling is paused ({RECONCILE}: disabled): the load balancer is not deleted "
            f"and the finalizer {finalizer} is kept while paused; {resume}, then the load "
            "balancer is deleted and the finalizer released",
        )
    return Condition(
        UNKNOWN,
        PAUSED,
        f"reconciling is paused ({RECONCILE}: disabled): no stack operation, cloud call or "
        f"drift repair for this Service, the load balancer is left as it is; {resume}",
    )


def _timestamp(now: datetime) -> str:
    return now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def condition_patch(
    service: Mapping[str, Any], condition: Condition, *, now: datetime
) -> dict[str, Any] | None:
    """The strategic merge patch of the status subresource that sets our condition, or None
    when the Service already says exactly that (status, reason, message, observedGeneration)."""
    current = condition_of(service)
    generation = _generation(service)
    if current is not None and (
        current.get("status") == condition.status
        and current.get("reason") == condition.reason
        and current.get("message") == condition.message
        and _observed(current) == generation
    ):
        return None
    since = current.get("lastTransitionTime") if current is not None else None
    if current is None or current.get("status") != condition.status or not since:
        since = _timestamp(now)
    entry = {
        "type": CONDITION_TYPE,
        "status": condition.status,
        "reason": condition.reason,
        "message": condition.message,
        "observedGeneration": generation,
        "lastTransitionTime": since,
    }
    return {"status": {"conditions": [entry]}}


def removal_patch(service: Mapping[str, Any]) -> dict[str, Any] | None:
    """The strategic merge patch that removes our condition (the Service no longer wants a load
    balancer of ours); None when it has none."""
    if condition_of(service) is None:
        return None
    return {"status": {"conditions": [{"type": CONDITION_TYPE, "$patch": "delete"}]}}

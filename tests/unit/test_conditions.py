"""The condition ``lb-reconciler.io/LoadBalancerReady`` and the pause switch, as pure decisions:
which condition for which outcome, whether the Service already has it (no write), when
``lastTransitionTime`` moves; which Services are paused, what a paused one gets."""

from __future__ import annotations

import copy
import functools
from datetime import UTC, datetime
from typing import Any

import pytest

from reconciler.config import default_config
from reconciler.controller import conditions
from reconciler.controller.conditions import CONDITION_TYPE, Condition
from reconciler.controller.housekeeping_plan import is_orphan, not_paused
from reconciler.controller.sync_plan import (
    Action,
    ControllerSettings,
    decide,
    plan_ensure,
    plan_paused,
    should_enqueue_on_add,
    should_enqueue_on_update,
)
from reconciler.engine.plan import StackInfo
from reconciler.model import FINALIZER
from reconciler.model.predicates import RECONCILE, paused, reconcile_value_problem
from tests.builders import example_service, make_node

DEFAULT = ControllerSettings()
T0 = datetime(2026, 11, 27, 12, 0, 0, tzinfo=UTC)
T1 = datetime(2026, 11, 27, 12, 5, 7, tzinfo=UTC)
OTHER = {
    "type": "example.com/Healthy",
    "status": "True",
    "reason": "Fine",
    "message": "another controller's",
    "lastTransitionTime": "2026-01-01T00:00:00Z",
}
svc = functools.partial(example_service, resource_version="42")
PAUSE = {RECONCILE: "disabled"}


def with_conditions(service: dict[str, Any], *items: dict[str, Any], generation: int = 3) -> Any:
    service = copy.deepcopy(service)
    service["metadata"]["generation"] = generation
    service.setdefault("status", {})["conditions"] = [copy.deepcopy(i) for i in items]
    return service


def ours(status: str, reason: str, message: str, *, generation: int = 3, since: str = "") -> Any:
    return {
        "type": CONDITION_TYPE,
        "status": status,
        "reason": reason,
        "message": message,
        "observedGeneration": generation,
        "lastTransitionTime": since or "2026-11-27T11:00:00Z",
    }


def applied(service: dict[str, Any], patch: dict[str, Any] | None) -> Any:
    """``patch`` applied as the API server merges ``status.conditions`` (by type)."""
    assert patch is not None
    out = copy.deepcopy(service)
    items = out.setdefault("status", {}).setdefault("conditions", [])
    for entry in patch["status"]["conditions"]:
        items[:] = [i for i in items if i["type"] != entry["type"]]
        if entry.get("$patch") != "delete":
            items.append(entry)
    return out


def test_a_new_condition_names_only_our_type_with_the_generation_and_now() -> None:
    service = with_conditions(svc(), OTHER, generation=5)
    ready = conditions.provisioned(lb_id="lb-1", address="172.24.4.10")
    patch = conditions.condition_patch(service, ready, now=T0)
    assert patch == {
        "status": {
            "conditions": [
                {
                    "type": "lb-reconciler.io/LoadBalancerReady",
                    "status": "True",
                    "reason": "Provisioned",
                    "message": "load balancer lb-1 at 172.24.4.10 is up to date",
                    "observedGeneration": 5,
                    "lastTransitionTime": "2026-11-27T12:00:00Z",
                }
            ]
        }
    }
    after = applied(service, patch)
    assert OTHER in after["status"]["conditions"]  # the other controller's stays as it was
    # the same again: no write (a resync of an unchanged Service)
    assert conditions.condition_patch(after, ready, now=T1) is None


def test_the_transition_time_moves_only_when_the_status_does() -> None:
    service = with_conditions(
        svc(), ours("True", "Provisioned", "up", since="2026-11-27T10:00:00Z")
    )
    # same status, another reason: a write, the time kept
    update = Condition("True", "Updating", "updating")
    patch = conditions.condition_patch(service, update, now=T1)
    assert patch is not None
    assert patch["status"]["conditions"][0]["lastTransitionTime"] == "2026-11-27T10:00:00Z"
    # another status: the time is now
    failed = conditions.failed(deleting=False, error="boom\ndetails", locked=False)
    patch = conditions.condition_patch(service, failed, now=T1)
    assert patch is not None
    assert patch["status"]["conditions"][0]["lastTransitionTime"] == "2026-11-27T12:05:07Z"
    # a new generation alone is a write too (observedGeneration), the time kept
    newer = copy.deepcopy(service)
    newer["metadata"]["generation"] = 4
    patch = conditions.condition_patch(newer, Condition("True", "Provisioned", "up"), now=T1)
    assert patch is not None
    entry = patch["status"]["conditions"][0]
    assert (entry["observedGeneration"], entry["lastTransitionTime"]) == (4, "2026-11-27T10:00:00Z")


@pytest.mark.parametrize(
    ("deleting", "locked", "expected"),
    [
        (
            False,
            False,
            Condition(
                "False",
                "CloudError",
                "failed to ensure the load balancer: "
                "the cloud answered 400: Invalid availability zone.",
            ),
        ),
        (
            True,
            False,
            Condition(
                "False",
                "CloudError",
                "failed to delete the load balancer: "
                "the cloud answered 400: Invalid availability zone.",
            ),
        ),
        (
            False,
            True,
            Condition("False", "StackLocked", "the cloud answered 400: Invalid availability zone."),
        ),
    ],
)
def test_a_failure_is_the_first_line_of_the_error(
    deleting: bool, locked: bool, expected: Condition
) -> None:
    error = "the cloud answered 400: Invalid availability zone.\n  pulumi's lines\n"
    assert conditions.failed(deleting=deleting, error=error, locked=locked) == expected


def test_refused_is_false_and_clipped() -> None:
    long = conditions.refused("x" * 10_000)
    assert (long.status, long.reason) == ("False", "Refused")
    assert len(long.message) == conditions.MAX_MESSAGE
    assert long.message.endswith("...")


@pytest.mark.parametrize(
    ("current", "generation", "remembered", "ingress", "expected"),
    [
        (None, 1, False, None, Condition("Unknown", "Updating", "creating the load balancer")),
        # served before this controller wrote conditions: nothing new
        (None, 1, False, [{"ip": "1.2.3.4"}], None),
        # a restart, a Node change: nothing about the Service changed
        (ours("True", "Provisioned", "up"), 3, False, None, None),
        # its spec changed: True stays True while it is updated
        (ours("True", "Provisioned", "up"), 4, False, None, "True"),
        # an annotation edit this process saw
        (ours("True", "Provisioned", "up"), 3, True, None, "True"),
        # a retry after a failure of the cloud says the failure until it ends
        (ours("False", "CloudError", "boom"), 3, True, None, None),
        (ours("False", "CloudError", "boom"), 4, False, None, "Unknown"),
        (ours("False", "Refused", "bad"), 3, False, None, "Unknown"),
        (ours("Unknown", "Paused", "paused"), 3, False, None, "Unknown"),
    ],
)
def test_updating_is_said_only_for_a_change_of_the_service(
    current: Any, generation: int, remembered: bool, ingress: Any, expected: Any
) -> None:
    service = with_conditions(svc(ingress=ingress), *([current] if current else []))
    service["metadata"]["generation"] = generation
    got = conditions.updating(service, remembered_change=remembered)
    if isinstance(expected, str):
        assert got is not None
        assert (got.status, got.reason) == (expected, "Updating")
    else:
        assert got == expected


def test_removal_deletes_only_our_condition() -> None:
    assert conditions.removal_patch(with_conditions(svc(), OTHER)) is None
    service = with_conditions(svc(), OTHER, ours("True", "Provisioned", "up"))
    after = applied(service, conditions.removal_patch(service))
    assert after["status"]["conditions"] == [OTHER]


# -- the pause switch -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "is_paused", "problem"),
    [
        (None, False, False),
        ("disabled", True, False),
        ("enabled", False, False),
        ("Disabled", False, True),
        ("", False, True),
        ("off", False, True),
    ],
)
def test_only_disabled_pauses_and_unknown_values_are_named(
    value: str | None, is_paused: bool, problem: bool
) -> None:
    service = svc(annotations=None if value is None else {RECONCILE: value})
    assert paused(service) is is_paused
    said = reconcile_value_problem(service)
    assert (said is not None) is problem
    if said is not None:
        assert RECONCILE in said
        assert repr(value) in said
        assert "'disabled'" in said


@pytest.mark.parametrize(
    ("service", "action"),
    [
        (svc(annotations=PAUSE), Action.PAUSED),
        (svc(annotations=PAUSE, finalizers=[FINALIZER]), Action.PAUSED),
        (svc(annotations=PAUSE, finalizers=[FINALIZER], deleting=True), Action.PAUSED),
        (svc(annotations=PAUSE, finalizers=[FINALIZER], type="ClusterIP"), Action.PAUSED),
        # nothing of ours to keep: left alone as before
        (svc(annotations=PAUSE, deleting=True), Action.IGNORE),
        (svc(annotations=PAUSE, type="ClusterIP"), Action.IGNORE),
        (svc(annotations={RECONCILE: "off"}), Action.ENSURE),
    ],
)
def test_decide_pauses_what_would_be_ensured_or_cleaned_up(service: Any, action: Action) -> None:
    assert decide(service, DEFAULT) is action


def test_pausing_resuming_and_deleting_a_paused_service_are_synced() -> None:
    running = svc(finalizers=[FINALIZER])
    stopped = svc(finalizers=[FINALIZER], annotations=PAUSE)
    assert should_enqueue_on_update(running, stopped, DEFAULT)  # pause: the condition says so
    assert should_enqueue_on_update(stopped, running, DEFAULT)  # resume
    deleting = svc(finalizers=[FINALIZER], annotations=PAUSE, deleting=True)
    assert should_enqueue_on_update(stopped, deleting, DEFAULT)  # the Warning
    assert should_enqueue_on_add(stopped, DEFAULT)
    # the finalizer removed by hand from a paused Service is not put back
    bare = svc(annotations=PAUSE)
    assert not should_enqueue_on_update(stopped, bare, DEFAULT)


def test_a_paused_service_gets_paused_and_a_deleted_one_a_warning() -> None:
    plan = plan_paused(svc(annotations=PAUSE, finalizers=[FINALIZER]), DEFAULT)
    assert (plan.condition.status, plan.condition.reason, plan.cleanup) == (
        "Unknown",
        "Paused",
        False,
    )
    assert plan.events == ()
    assert "remove the annotation lb-reconciler.io/reconcile" in plan.condition.message
    plan = plan_paused(svc(annotations=PAUSE, finalizers=[FINALIZER], deleting=True), DEFAULT)
    assert plan.cleanup
    assert [(e.type, e.reason) for e in plan.events] == [("Warning", "DeletionPaused")]
    message = plan.events[0].message
    assert message.startswith("The Service is being deleted but reconciling is paused")
    assert FINALIZER in message
    assert "remove the annotation lb-reconciler.io/reconcile" in message
    assert plan.condition.message in message


def test_an_unknown_reconcile_value_warns_and_reconciles() -> None:
    nodes = [make_node("worker-a", internal="10.0.0.11")]
    service = svc(annotations={RECONCILE: "no"})
    plan = plan_ensure(service=service, nodes=nodes, config=default_config(), settings=DEFAULT)
    assert plan.spec is not None
    warnings = [e for e in plan.events if e.reason == "InvalidReconcileAnnotation"]
    assert len(warnings) == 1
    assert warnings[0].type == "Warning"
    assert RECONCILE in warnings[0].message
    assert "'disabled'" in warnings[0].message


def test_a_paused_services_stack_is_no_orphan_and_gets_no_drift_check() -> None:
    a, b = (
        StackInfo(
            stack=f"k.default.{n}",
            namespace="default",
            name=n,
            uid=f"u-{n}",
            lb_id=None,
            shared=False,
            owns_lb=None,
            spec_hash="h",
            last_update=None,
            update_in_progress=False,
            resource_count=8,
        )
        for n in "ab"
    )
    stopped = svc(annotations=PAUSE, type="ClusterIP")  # wants none, holds no finalizer
    assert is_orphan(a, stopped, settings=DEFAULT) is False
    assert is_orphan(a, svc(type="ClusterIP"), settings=DEFAULT) is True
    services = {"default/a": stopped, "default/b": svc()}
    assert not_paused([a, b], services) == (b,)


def test_as_the_api_server_keeps_it_no_generation_and_no_observed_generation() -> None:
    """The kube-apiserver sets no ``metadata.generation`` on Services and drops an
    ``observedGeneration`` of 0 (omitempty): a retry after a failure is no news, and the same
    condition again is no write."""
    now = datetime(2026, 11, 27, tzinfo=UTC)
    failed = conditions.failed(deleting=False, error="boom", locked=False)
    fresh = svc()
    fresh["metadata"].pop("generation", None)
    entry = conditions.condition_patch(fresh, failed, now=now)
    assert entry is not None
    written = entry["status"]["conditions"][0]
    assert written["observedGeneration"] == 0
    stored = {k: v for k, v in written.items() if k != "observedGeneration"}
    service = {**fresh, "status": {"conditions": [stored]}}
    assert conditions.updating(service, remembered_change=True) is None
    assert conditions.condition_patch(service, failed, now=now) is None

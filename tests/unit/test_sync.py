"""The pure decisions of one sync: which path, which patches, which Events (table-driven)."""

from __future__ import annotations

import copy
import functools
from dataclasses import replace
from typing import Any

import pytest

from reconciler.config import default_config, with_overrides
from reconciler.controller.backend import Failure, failure_of
from reconciler.controller.changes import Change, classify_change, node_fingerprint
from reconciler.controller.ingress import desired_ingress, ingress_equal
from reconciler.controller.sync_plan import (
    CREATE_ONLY_REASON,
    Action,
    ControllerSettings,
    decide,
    failure_event,
    plan_after_ensure,
    plan_cleanup,
    plan_ensure,
    should_enqueue_on_add,
    should_enqueue_on_update,
)
from reconciler.engine.results import EnsureResult
from reconciler.model import FINALIZER, StatusSpec
from reconciler.model.annotations import LOAD_BALANCER_ADDRESS, LOAD_BALANCER_ID
from reconciler.model.frozen import FrozenChange
from reconciler.model.predicates import CLASS_FINALIZER
from tests.builders import example_service, make_node

DEFAULT = ControllerSettings()
OWNS_GOLD = ControllerSettings(owned_classes=frozenset({"gold"}))
BESIDE_OCCM = ControllerSettings(owned_classes=frozenset({"gold"}), serve_default=False)
NODES = [make_node("worker-a", internal="10.0.0.11"), make_node("worker-b", internal="10.0.0.12")]
LB_ID = "aaaaaaaa-1111-4111-8111-111111111111"


# the example Service as the controller gets it from the API server
svc = functools.partial(example_service, resource_version="42")


@pytest.mark.parametrize(
    ("service", "settings", "action"),
    [
        (svc(), DEFAULT, Action.ENSURE),
        (svc(finalizers=[FINALIZER]), DEFAULT, Action.ENSURE),
        (svc(type="ClusterIP"), DEFAULT, Action.IGNORE),
        (svc(type="ClusterIP", finalizers=[FINALIZER]), DEFAULT, Action.CLEANUP),
        (svc(finalizers=[FINALIZER], deleting=True), DEFAULT, Action.CLEANUP),
        # deleting without our finalizer: cannot add one any more, nothing to hold
        (svc(deleting=True), DEFAULT, Action.IGNORE),
        # someone else's finalizer only
        (svc(type="ClusterIP", finalizers=["example.com/x"]), DEFAULT, Action.IGNORE),
        # another controller's class
        (svc(loadBalancerClass="other.example.com/lb"), OWNS_GOLD, Action.IGNORE),
        (
            svc(loadBalancerClass="other.example.com/lb", finalizers=[FINALIZER]),
            DEFAULT,
            Action.IGNORE,
        ),
        # a class we own
        (svc(loadBalancerClass="gold"), OWNS_GOLD, Action.ENSURE),
        (
            svc(loadBalancerClass="gold", finalizers=[CLASS_FINALIZER], deleting=True),
            OWNS_GOLD,
            Action.CLEANUP,
        ),
        (svc(type="ClusterIP", finalizers=[CLASS_FINALIZER]), OWNS_GOLD, Action.CLEANUP),
        # beside OCCM: classless Services and the standard finalizer are OCCM's
        (svc(), BESIDE_OCCM, Action.IGNORE),
        (svc(type="ClusterIP", finalizers=[FINALIZER]), BESIDE_OCCM, Action.IGNORE),
        (svc(loadBalancerClass="gold"), BESIDE_OCCM, Action.ENSURE),
    ],
)
def test_decide(service: dict[str, Any], settings: ControllerSettings, action: Action) -> None:
    assert decide(service, settings) is action
    assert should_enqueue_on_add(service, settings) is (action is not Action.IGNORE)


def test_enqueue_on_update_follows_needs_update() -> None:
    old = svc(finalizers=[FINALIZER])
    labels = copy.deepcopy(old)
    labels["metadata"]["labels"] = {"app": "other"}
    assert not should_enqueue_on_update(old, labels, DEFAULT)
    ports = copy.deepcopy(old)
    ports["spec"]["ports"][0]["port"] = 80
    assert should_enqueue_on_update(old, ports, DEFAULT)
    gone = copy.deepcopy(old)
    gone["metadata"]["finalizers"] = []  # finalizer removed by hand: put it back
    assert should_enqueue_on_update(old, gone, DEFAULT)
    deleting = copy.deepcopy(old)
    deleting["metadata"]["deletionTimestamp"] = "2025-01-01T00:00:00Z"
    assert should_enqueue_on_update(old, deleting, DEFAULT)
    status = copy.deepcopy(old)
    status["status"] = {"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}]}}
    assert not should_enqueue_on_update(old, status, DEFAULT)


# -- ensure -----------------------------------------------------------------------------------


def test_plan_ensure_new_service_adds_finalizer_with_resource_version() -> None:
    s = svc(finalizers=["example.com/keep-me"])
    plan = plan_ensure(service=s, nodes=NODES, config=default_config(), settings=DEFAULT)
    assert plan.spec is not None
    assert plan.finalizer_patch == {
        "metadata": {"resourceVersion": "42", "finalizers": ["example.com/keep-me", FINALIZER]}
    }
    assert [e.reason for e in plan.events] == ["EnsuringLoadBalancer"]
    assert plan.change is Change.FULL


def test_plan_ensure_owned_class_uses_our_finalizer() -> None:
    plan = plan_ensure(
        service=svc(loadBalancerClass="gold"),
        nodes=NODES,
        config=default_config(),
        settings=OWNS_GOLD,
    )
    assert plan.finalizer_patch is not None
    assert plan.finalizer_patch["metadata"]["finalizers"] == [CLASS_FINALIZER]


def test_plan_ensure_with_finalizer_has_no_patch() -> None:
    plan = plan_ensure(
        service=svc(finalizers=[FINALIZER]), nodes=NODES, config=default_config(), settings=DEFAULT
    )
    assert plan.finalizer_patch is None


def test_plan_ensure_invalid_annotation_is_a_warning_and_no_spec() -> None:
    s = svc(annotations={"loadbalancer.openstack.org/connection-limit": "lots"})
    plan = plan_ensure(service=s, nodes=NODES, config=default_config(), settings=DEFAULT)
    assert plan.spec is None
    assert plan.finalizer_patch is None
    (event,) = plan.events
    assert (event.type, event.reason) == ("Warning", "SyncLoadBalancerFailed")
    assert 'metadata.annotations["loadbalancer.openstack.org/connection-limit"]' in event.message
    assert "'lots'" in event.message
    assert "left as it was" in event.message


def test_plan_ensure_without_eligible_nodes_warns_unavailable() -> None:
    config = with_overrides(default_config(), subnet_id="bbbbbbbb-1111-4111-8111-111111111111")
    excluded = [
        make_node(
            "cp",
            internal="10.0.0.1",
            labels={"node.kubernetes.io/exclude-from-external-load-balancers": "true"},
        )
    ]
    plan = plan_ensure(service=svc(), nodes=excluded, config=config, settings=DEFAULT)
    assert plan.spec is not None
    assert [(e.type, e.reason) for e in plan.events] == [
        ("Normal", "EnsuringLoadBalancer"),
        ("Warning", "UnAvailableLoadBalancer"),
    ]
    assert plan.events[1].message == "There are no available nodes for LoadBalancer"


def _spec(nodes: list[dict[str, Any]] = NODES, **annotations: str) -> Any:
    plan = plan_ensure(
        service=svc(annotations=annotations or None),
        nodes=nodes,
        config=default_config(),
        settings=DEFAULT,
    )
    assert plan.spec is not None
    return plan.spec


def test_classify_change() -> None:
    base = _spec()
    assert classify_change(None, base, previous_lb_id=None) is Change.FULL
    assert classify_change(base, base, previous_lb_id=LB_ID) is Change.NONE
    fewer = _spec(nodes=NODES[:1])
    assert classify_change(base, fewer, previous_lb_id=LB_ID) is Change.HOSTS
    other = _spec(**{"loadbalancer.openstack.org/connection-limit": "10"})
    assert classify_change(base, other, previous_lb_id=LB_ID) is Change.FULL
    # our own load-balancer-id annotation coming back is not a change
    ours = _spec(**{LOAD_BALANCER_ID: LB_ID})
    assert classify_change(base, ours, previous_lb_id=LB_ID) is Change.NONE
    # a re-created Service (new uid) is a full change
    recreated = replace(base, service=replace(base.service, uid="other"))
    assert classify_change(base, recreated, previous_lb_id=LB_ID) is Change.FULL


def test_unchanged_spec_emits_no_events() -> None:
    base = _spec()
    plan = plan_ensure(
        service=svc(finalizers=[FINALIZER]),
        nodes=NODES,
        config=default_config(),
        settings=DEFAULT,
        previous=base,
        previous_lb_id=LB_ID,
    )
    assert plan.change is Change.NONE
    assert plan.events == ()


OUTPUTS = {"lb_id": LB_ID, "vip_address": "10.0.0.50", "floating_ip": "172.24.4.10"}
RESULT = EnsureResult(changed=True, spec_hash="h", outputs=OUTPUTS)


@pytest.mark.parametrize(
    ("change", "changed", "reasons"),
    [
        (Change.FULL, True, ["EnsuredLoadBalancer"]),
        (Change.FULL, False, ["EnsuredLoadBalancer"]),
        (Change.HOSTS, True, ["UpdatedLoadBalancer"]),
        (Change.NONE, False, []),
        # our own load-balancer-id annotation coming back changes the hash, so the engine may
        # report a change; it is not one the user made: no Event
        (Change.NONE, True, []),
    ],
)
def test_after_ensure_events(change: Change, changed: bool, reasons: list[str]) -> None:
    after = plan_after_ensure(
        service=svc(), spec=_spec(), result=replace(RESULT, changed=changed), change=change
    )
    assert [e.reason for e in after.events] == reasons


def test_after_ensure_hosts_without_nodes_has_no_updated_event() -> None:
    after = plan_after_ensure(
        service=svc(), spec=_spec(), result=RESULT, change=Change.HOSTS, no_nodes=True
    )
    assert after.events == ()


def test_after_ensure_patches_status_and_annotations_when_they_differ() -> None:
    after = plan_after_ensure(service=svc(), spec=_spec(), result=RESULT, change=Change.FULL)
    assert after.status_patch == {
        "status": {"loadBalancer": {"ingress": [{"ip": "172.24.4.10", "ipMode": "VIP"}]}}
    }
    assert after.annotation_patch == {
        "metadata": {"annotations": {LOAD_BALANCER_ID: LB_ID, LOAD_BALANCER_ADDRESS: "172.24.4.10"}}
    }


def test_after_ensure_no_patches_when_equal() -> None:
    s = svc(
        annotations={LOAD_BALANCER_ID: LB_ID, LOAD_BALANCER_ADDRESS: "172.24.4.10"},
        ingress=[{"ip": "172.24.4.10"}],  # ipMode defaulted by the server: still equal
    )
    after = plan_after_ensure(service=s, spec=_spec(), result=RESULT, change=Change.NONE)
    assert after.status_patch is None
    assert after.annotation_patch is None


def test_after_ensure_vip_when_no_floating_ip() -> None:
    result = replace(RESULT, outputs={**OUTPUTS, "floating_ip": None})
    after = plan_after_ensure(service=svc(), spec=_spec(), result=result, change=Change.FULL)
    assert after.status_patch is not None
    assert after.status_patch["status"]["loadBalancer"]["ingress"][0]["ip"] == "10.0.0.50"


@pytest.mark.parametrize(
    ("status", "ingress"),
    [
        (StatusSpec(None, None, "VIP"), [{"ip": "1.2.3.4", "ipMode": "VIP"}]),
        (StatusSpec(None, None, "Proxy"), [{"ip": "1.2.3.4", "ipMode": "Proxy"}]),
        (StatusSpec("lb.example.com", None, "Proxy"), [{"hostname": "lb.example.com"}]),
        (StatusSpec(None, "nip.io", "Proxy"), [{"hostname": "1.2.3.4.nip.io"}]),
    ],
)
def test_desired_ingress(status: StatusSpec, ingress: list[dict[str, str]]) -> None:
    assert desired_ingress(status, "1.2.3.4") == ingress


@pytest.mark.parametrize(
    ("current", "desired", "equal"),
    [
        (None, [], True),
        ([], [], True),
        (None, [{"ip": "1.2.3.4", "ipMode": "VIP"}], False),
        ([{"ip": "1.2.3.4"}], [{"ip": "1.2.3.4", "ipMode": "VIP"}], True),
        ([{"ip": "1.2.3.4", "ipMode": "VIP"}], [{"ip": "1.2.3.4", "ipMode": "Proxy"}], False),
        ([{"ip": "1.2.3.4", "ports": [{"port": 80}]}], [{"ip": "1.2.3.4"}], True),
        ([{"hostname": "a"}], [{"hostname": "b"}], False),
        ([{"ip": "1.2.3.4"}], [{"ip": "1.2.3.5"}], False),
    ],
)
def test_ingress_equal(current: Any, desired: Any, equal: bool) -> None:
    assert ingress_equal(current, desired) is equal


# -- cleanup ----------------------------------------------------------------------------------


def test_plan_cleanup_removes_only_our_finalizer_and_annotations() -> None:
    s = svc(
        type="ClusterIP",
        finalizers=["example.com/keep-me", FINALIZER],
        annotations={LOAD_BALANCER_ID: LB_ID, LOAD_BALANCER_ADDRESS: "1.2.3.4", "user": "x"},
        ingress=[{"ip": "1.2.3.4"}],
    )
    plan = plan_cleanup(s, DEFAULT)
    assert [e.reason for e in plan.events_before] == ["DeletingLoadBalancer"]
    assert [e.reason for e in plan.events_after] == ["DeletedLoadBalancer"]
    assert plan.finalizer_patch == {
        "metadata": {
            "resourceVersion": "42",
            "finalizers": ["example.com/keep-me"],
            "annotations": {LOAD_BALANCER_ID: None, LOAD_BALANCER_ADDRESS: None},
        }
    }
    assert plan.status_patch == {"status": {"loadBalancer": {"ingress": None}}}


def test_plan_cleanup_without_status_has_no_status_patch() -> None:
    plan = plan_cleanup(svc(finalizers=[FINALIZER], deleting=True), DEFAULT)
    assert plan.status_patch is None
    assert plan.finalizer_patch == {"metadata": {"resourceVersion": "42", "finalizers": []}}


def test_plan_cleanup_class_finalizer() -> None:
    s = svc(type="ClusterIP", finalizers=[CLASS_FINALIZER, FINALIZER])
    plan = plan_cleanup(s, BESIDE_OCCM)  # the standard one is OCCM's here
    assert plan.finalizer_patch is not None
    assert plan.finalizer_patch["metadata"]["finalizers"] == [FINALIZER]


# -- nodes and failures -----------------------------------------------------------------------


def test_node_fingerprint_ignores_ready_flaps_but_not_eligibility_or_addresses() -> None:
    base = node_fingerprint(NODES)
    flapped = [make_node("worker-a", internal="10.0.0.11", ready="False"), NODES[1]]
    assert node_fingerprint(flapped) == base
    moved = [make_node("worker-a", internal="10.0.0.99"), NODES[1]]
    assert node_fingerprint(moved) != base
    excluded = [
        make_node(
            "worker-a",
            internal="10.0.0.11",
            labels={"node.kubernetes.io/exclude-from-external-load-balancers": "true"},
        ),
        NODES[1],
    ]
    assert node_fingerprint(excluded) != base
    assert node_fingerprint([*NODES, make_node("worker-c", internal="10.0.0.13")]) != base


def test_failure_event_names_the_action_and_the_retry() -> None:
    e = failure_event(action=Action.ENSURE, error="quota exceeded", retry_in=20)
    assert (e.type, e.reason) == ("Warning", "SyncLoadBalancerFailed")
    assert e.message == (
        "Error syncing load balancer: failed to ensure load balancer: quota exceeded; "
        "retrying in 20s"
    )
    d = failure_event(action=Action.CLEANUP, error="boom", retry_in=None)
    assert d.message == "Error syncing load balancer: failed to delete load balancer: boom"
    long = failure_event(action=Action.ENSURE, error="x" * 5000, retry_in=None)
    assert len(long.message) == 1024


def test_failure_of_reads_failure_kind() -> None:
    class BusyError(Exception):
        failure_kind = Failure.RETRY_SOON

    class BadError(Exception):
        failure_kind = "invalid"

    class OddError(Exception):
        failure_kind = "no-such-kind"

    assert failure_of(BusyError()) is Failure.RETRY_SOON
    assert failure_of(BadError()) is Failure.INVALID
    assert failure_of(OddError()) is Failure.BACKOFF
    assert failure_of(RuntimeError()) is Failure.BACKOFF


def test_after_ensure_warns_for_each_create_only_field_asked_to_change() -> None:
    frozen = (
        FrozenChange("availability_zone", "annotation ...availability-zone", None, "az-2"),
        FrozenChange("floating_ip.network_id", "floating-network-id", "net-1", "net-2"),
    )
    after = plan_after_ensure(
        service=svc(), spec=_spec(), result=replace(RESULT, frozen=frozen), change=Change.NONE
    )
    assert [(e.type, e.reason) for e in after.events] == [("Warning", CREATE_ONLY_REASON)] * 2
    first, second = (e.message for e in after.events)
    assert "availability_zone" in first
    assert "'az-2'" in first
    assert "the load balancer keeps the cloud's choice" in first
    assert "the floating IP keeps 'net-1', not 'net-2'" in second


def _etp_local(**annotations: str) -> dict[str, Any]:
    s = svc(annotations=annotations or None)
    s["spec"]["externalTrafficPolicy"] = "Local"
    s["spec"]["healthCheckNodePort"] = 32000
    return s


def test_etp_local_without_a_monitor_is_a_warning_event() -> None:
    """OCCM's doc: a health monitor is required with externalTrafficPolicy: Local."""
    plan = plan_ensure(service=_etp_local(), nodes=NODES, config=default_config(), settings=DEFAULT)
    warnings = [e for e in plan.events if e.type == "Warning"]
    assert [e.reason for e in warnings] == ["LoadBalancerHealthMonitorMissing"]
    assert "enable-health-monitor" in warnings[0].message
    with_monitor = plan_ensure(
        service=_etp_local(**{"loadbalancer.openstack.org/enable-health-monitor": "true"}),
        nodes=NODES,
        config=default_config(),
        settings=DEFAULT,
    )
    assert [e for e in with_monitor.events if e.type == "Warning"] == []


@pytest.mark.parametrize(
    ("value", "keep"),
    [(None, False), ("false", False), ("true", True), ("True", True), ("yes", True)],
)
def test_cleanup_reads_keep_floatingip_as_the_service_says_now(
    value: str | None, keep: bool
) -> None:
    """Read at deletion, not at the last up; a malformed value keeps the floating IP (a
    deletion cannot be undone)."""
    annotations = {} if value is None else {"loadbalancer.openstack.org/keep-floatingip": value}
    s = svc(finalizers=[FINALIZER], deleting=True, annotations=annotations or None)
    assert plan_cleanup(s, DEFAULT).keep_floating_ip is keep

"""Drift: the modes (``--drift`` with ``--drift-interval``), the Events a check leads to, and the
per-Service bookkeeping behind ``lbr_drifted_stacks``.

The checks themselves run for real in tests/integration/engine/test_engine_drift.py (the engine
against the emulator) and tests/e2e/test_controller_process.py (the controller process).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from reconciler.controller.drift import DriftChecks
from reconciler.controller.drift_plan import (
    DRIFT_REPAIRED,
    DRIFT_RESOLVED,
    MESSAGE_LIMIT,
    DriftMode,
    drift_message,
    drift_mode,
    report_events,
)
from reconciler.controller.housekeeping import HousekeepingSettings
from reconciler.controller.metrics import Metrics
from reconciler.controller.sync_plan import Event
from reconciler.engine.results import DriftedResource, DriftReport, PropertyDrift
from reconciler.model import ServiceRef
from tests.builders import example_service

LISTENER_ID = "5288663c-fd34-4958-bb60-3871dd7672fd"
LISTENER = DriftedResource(
    name="listener-tcp-80",
    type="openstack:loadbalancer/listener:Listener",
    cloud_id=LISTENER_ID,
    properties=(PropertyDrift("connectionLimit", state=-1, cloud=7),),
)
MEMBERS = DriftedResource(
    name="members-tcp-80",
    type="openstack:loadbalancer/members:Members",
    cloud_id="1d2dc458-2f63-4de1-9ec4-bc70b3306623",
    properties=(
        PropertyDrift(
            "members",
            state=[
                {"name": "worker-a", "address": "10.0.0.11", "protocolPort": 30080},
                {"name": "worker-b", "address": "10.0.0.12", "protocolPort": 30080},
            ],
            cloud=[{"name": "worker-b", "address": "10.0.0.12", "protocolPort": 30080}],
        ),
    ),
)
GONE = DriftedResource(
    name="monitor-tcp-80",
    type="openstack:loadbalancer/monitor:Monitor",
    cloud_id="0e0e0e0e-0000-4000-8000-000000000000",
    deleted=True,
)


@pytest.mark.parametrize(
    ("choice", "interval", "mode"),
    [
        (None, 3600.0, DriftMode.REPAIR),  # the default, as before --drift
        (None, 0.0, DriftMode.OFF),  # --drift-interval 0 meant off, and still does
        ("repair", 60.0, DriftMode.REPAIR),
        ("report", 60.0, DriftMode.REPORT),
        ("off", 60.0, DriftMode.OFF),
        ("off", 0.0, DriftMode.OFF),
    ],
)
def test_drift_mode_from_the_two_flags(
    choice: str | None, interval: float, mode: DriftMode
) -> None:
    assert drift_mode(choice, interval) is mode


@pytest.mark.parametrize("choice", ["repair", "report"])
def test_a_mode_that_checks_with_an_interval_of_0_is_refused(choice: str) -> None:
    with pytest.raises(ValueError, match=f"--drift={choice} needs a --drift-interval above 0") as e:
        drift_mode(choice, 0.0)
    assert "--drift=off" in str(e.value)  # what to write instead


def test_an_unknown_mode_names_the_allowed_ones() -> None:
    with pytest.raises(ValueError, match="repair, report, off"):
        drift_mode("fix", 60.0)


def test_the_housekeepers_mode_is_off_with_an_interval_of_0() -> None:
    assert HousekeepingSettings().drift_mode is DriftMode.REPAIR
    assert HousekeepingSettings(drift=DriftMode.REPORT).drift_mode is DriftMode.REPORT
    assert HousekeepingSettings(drift_interval=0, drift=DriftMode.REPORT).drift_mode is (
        DriftMode.OFF
    )


def test_the_message_names_resource_property_and_both_values() -> None:
    text = drift_message(DriftReport((LISTENER, MEMBERS, GONE)))
    assert text.startswith("The cloud differs from the stack (changed outside lb-reconciler")
    assert (
        f"Listener listener-tcp-80 ({LISTENER_ID}): connectionLimit is 7 in the cloud, -1 in "
        "the stack"
    ) in text
    assert (
        "members: 1 in the cloud, 2 in the stack; not in the cloud: worker-a 10.0.0.11:30080"
        in (text)
    )
    assert "Monitor monitor-tcp-80 (0e0e0e0e-0000-4000-8000-000000000000) is gone" in text
    assert "--drift=repair" in text  # how to put it back


def test_strings_are_quoted_and_long_values_cut() -> None:
    lb = DriftedResource(
        "lb",
        "openstack:loadbalancer/loadBalancer:LoadBalancer",
        properties=(PropertyDrift("description", state="x" * 300, cloud="changed by hand"),),
    )
    text = drift_message(DriftReport((lb,)))
    assert 'description is "changed by hand" in the cloud, "xxxx' in text
    assert "x" * 100 not in text
    assert "…" in text


def test_the_message_fits_an_event_and_counts_what_it_leaves_out() -> None:
    many = tuple(
        DriftedResource(
            f"listener-tcp-{port}",
            LISTENER.type,
            cloud_id=LISTENER_ID,
            properties=LISTENER.properties,
        )
        for port in range(8000, 8040)
    )
    text = drift_message(DriftReport(many))
    assert len(text) <= MESSAGE_LIMIT
    shown = text.count("connectionLimit is 7")
    assert 0 < shown < len(many)
    assert f"and {len(many) - shown} more (see the controller's log)" in text
    huge = DriftedResource(
        "lb",
        "openstack:loadbalancer/loadBalancer:LoadBalancer",
        properties=tuple(PropertyDrift(f"p{i}", "a" * 70, "b" * 70) for i in range(40)),
    )
    text = drift_message(DriftReport((huge,)))
    assert len(text) <= MESSAGE_LIMIT
    assert "LoadBalancer lb: p0 is" in text


def test_report_events() -> None:
    (warning,) = report_events(DriftReport((LISTENER,)), was_drifted=False)
    assert (warning.type, warning.reason) == ("Warning", "DriftDetected")
    assert report_events(DriftReport((LISTENER,)), was_drifted=True) == (warning,)  # same text
    assert report_events(DriftReport(), was_drifted=True) == (DRIFT_RESOLVED,)
    assert report_events(DriftReport(), was_drifted=False) == ()


# -- DriftChecks: what a sync does with a requested check -------------------------------------


@dataclass
class CloudAnswers:
    """The engine's side of a check, as the test sets it; counts what was asked."""

    report: DriftReport = field(default_factory=DriftReport)
    refreshed_drift: bool = False
    calls: list[str] = field(default_factory=list)

    def refresh(self, service: ServiceRef) -> bool:
        self.calls.append("refresh")
        return self.refreshed_drift

    def check_drift(self, service: ServiceRef) -> DriftReport:
        self.calls.append("check_drift")
        return self.report


@dataclass
class Recorded:
    events: list[Event] = field(default_factory=list)

    def record(self, service: Any, event: Event) -> None:
        self.events.append(event)


def checks(mode: DriftMode) -> tuple[DriftChecks, CloudAnswers, Recorded, Metrics]:
    cloud, recorded, metrics = CloudAnswers(), Recorded(), Metrics(process_metrics=False)
    made = DriftChecks(engine=cloud, mode=mode, recorder=recorded, metrics=metrics)  # type: ignore[arg-type]
    return made, cloud, recorded, metrics


def drifted_stacks(metrics: Metrics) -> float:
    return metrics.registry.get_sample_value("lbr_drifted_stacks") or 0.0


SVC = example_service()
KEY, REF = "default/example-service", ServiceRef("default", "example-service", "uid")


def test_report_mode_warns_while_drifted_then_resolves_and_never_repairs() -> None:
    drift, cloud, recorded, metrics = checks(DriftMode.REPORT)
    assert drift.check(KEY, REF, SVC) is False
    assert cloud.calls == []  # nothing requested: nothing run
    cloud.report = DriftReport((LISTENER,))
    for _ in range(2):
        drift.request(KEY)
        assert drift.check(KEY, REF, SVC) is False  # the ensure that follows runs no up
        assert drifted_stacks(metrics) == 1
    assert cloud.calls == ["check_drift", "check_drift"]
    assert [e.reason for e in recorded.events] == ["DriftDetected", "DriftDetected"]
    assert recorded.events[0] == recorded.events[1]  # one Event, counted up
    drift.ensured(KEY, SVC, changed=True)  # an up for another reason repairs nothing here
    assert drifted_stacks(metrics) == 1
    cloud.report = DriftReport()
    drift.request(KEY)
    drift.check(KEY, REF, SVC)
    assert recorded.events[-1] == DRIFT_RESOLVED
    assert drifted_stacks(metrics) == 0
    drift.request(KEY)
    drift.check(KEY, REF, SVC)
    assert len(recorded.events) == 3  # resolved once, not at every clean check


def test_a_service_gone_leaves_the_gauge() -> None:
    drift, cloud, _recorded, metrics = checks(DriftMode.REPORT)
    cloud.report = DriftReport((GONE,))
    drift.request(KEY)
    drift.check(KEY, REF, SVC)
    assert drifted_stacks(metrics) == 1
    drift.forget(KEY)
    assert drifted_stacks(metrics) == 0


def test_repair_mode_counts_until_an_up_succeeds() -> None:
    drift, cloud, recorded, metrics = checks(DriftMode.REPAIR)
    cloud.refreshed_drift = True
    drift.request(KEY)
    assert drift.check(KEY, REF, SVC) is True  # the ensure that follows runs up
    assert cloud.calls == ["refresh"]
    assert drifted_stacks(metrics) == 1
    drift.ensured(KEY, SVC, changed=False)  # not the repair (e.g. the up failed, then a skip)
    assert drifted_stacks(metrics) == 1
    assert recorded.events == []
    drift.ensured(KEY, SVC, changed=True)  # the up (a retry's too) repaired it
    assert recorded.events == [DRIFT_REPAIRED]
    assert drifted_stacks(metrics) == 0
    assert metrics.registry.get_sample_value("lbr_drift_repaired_total") == 1


def test_off_takes_no_requests() -> None:
    drift, cloud, _recorded, _metrics = checks(DriftMode.OFF)
    drift.request(KEY)
    assert drift.check(KEY, REF, SVC) is False
    assert cloud.calls == []


# -- a fleet comparison's fingerprint: a check is not repeated for the same cloud -------------


def test_a_clean_check_is_not_repeated_for_the_same_fingerprint() -> None:
    drift, cloud, _recorded, _metrics = checks(DriftMode.REPAIR)
    assert drift.request(KEY, "fp-1") is True
    assert drift.check(KEY, REF, SVC) is False  # no drift found
    assert drift.request(KEY, "fp-1") is False  # the cloud is as that check saw it
    assert drift.check(KEY, REF, SVC) is False
    assert cloud.calls == ["refresh"]
    assert drift.request(KEY, "fp-2") is True  # the cloud changed since
    drift.check(KEY, REF, SVC)
    assert drift.request(KEY) is True  # the sweep's: no fingerprint, always checked
    drift.check(KEY, REF, SVC)
    assert cloud.calls == ["refresh"] * 3


def test_a_check_that_found_drift_or_failed_is_repeated_for_the_same_fingerprint() -> None:
    drift, cloud, _recorded, _metrics = checks(DriftMode.REPAIR)
    cloud.refreshed_drift = True
    drift.request(KEY, "fp-1")
    assert drift.check(KEY, REF, SVC) is True
    assert drift.request(KEY, "fp-1") is True

    def fail(service: ServiceRef) -> bool:
        raise RuntimeError("the cloud answered 503")

    cloud.refresh = fail  # type: ignore[method-assign]
    drift.check(KEY, REF, SVC)
    assert drift.request(KEY, "fp-1") is True  # the failed check proved nothing


def test_report_mode_keeps_checking_a_drifted_stack_at_the_same_fingerprint() -> None:
    """While the drift lasts the Warning repeats at every interval, and its end is found."""
    drift, cloud, recorded, _metrics = checks(DriftMode.REPORT)
    drift.request(KEY, "fp-1")
    drift.check(KEY, REF, SVC)  # clean at fp-1
    cloud.report = DriftReport((LISTENER,))
    assert drift.request(KEY, "fp-2") is True
    drift.check(KEY, REF, SVC)
    assert drift.drifted() == {KEY}
    assert drift.request(KEY, "fp-2") is True  # known drifted: checked again
    drift.check(KEY, REF, SVC)
    assert [e.reason for e in recorded.events] == ["DriftDetected", "DriftDetected"]
    cloud.report = DriftReport()
    assert drift.request(KEY, "fp-1") is True  # clean before, but drifted since: checked
    drift.check(KEY, REF, SVC)
    assert recorded.events[-1] == DRIFT_RESOLVED
    assert drift.request(KEY, "fp-1") is False


def test_a_service_gone_forgets_its_clean_fingerprint() -> None:
    drift, _cloud, _recorded, _metrics = checks(DriftMode.REPAIR)
    drift.request(KEY, "fp-1")
    drift.check(KEY, REF, SVC)
    drift.forget(KEY)
    assert drift.request(KEY, "fp-1") is True

"""Stack operations are counted by kind and result; failures are counted and re-raised."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from reconciler.controller.instrumented import InstrumentedEngine
from reconciler.controller.metrics import Metrics
from reconciler.engine.fleet_plan import FleetReport
from reconciler.engine.plan import StackInfo
from reconciler.engine.results import DriftedResource, DriftReport, EnsureResult
from reconciler.model import LoadBalancerSpec, ServiceRef
from tests.unit.model_helpers import spec_of


class FakeEngine:
    """Answers as told; the point here is the counting around it, not an engine."""

    def __init__(self) -> None:
        self.changed = True
        self.fail = False
        self.direct = False

    def ensure(self, spec: LoadBalancerSpec) -> EnsureResult:
        if self.fail:
            raise RuntimeError("boom")
        outputs = {"lb_id": "lb", "vip_address": "10.0.0.5"}
        return EnsureResult(
            changed=self.changed, spec_hash=spec.spec_hash(), outputs=outputs, direct=self.direct
        )

    def delete(self, service: ServiceRef, *, keep_floating_ip: bool | None = None) -> bool:
        if self.fail:
            raise RuntimeError("boom")
        return self.direct

    def refresh(self, service: ServiceRef) -> bool:
        return self.changed

    def check_drift(self, service: ServiceRef) -> DriftReport:
        if self.fail:
            raise RuntimeError("boom")
        return DriftReport((DriftedResource("lb", "t", deleted=True),) if self.changed else ())

    def stacks(self) -> list[StackInfo]:
        return []

    def compare_fleet(self, stacks: Sequence[str]) -> FleetReport | None:
        return None  # as a backend the CLI alone reads: every stack gets its own check

    def cancel(self) -> None:
        pass

    def take_over(self) -> list[str]:
        return []


def sample(metrics: Metrics, name: str, **labels: str) -> float:
    value = metrics.registry.get_sample_value(name, labels)
    return 0.0 if value is None else value


def test_up_skip_destroy_refresh_and_errors_are_counted() -> None:
    fake, metrics = FakeEngine(), Metrics(process_metrics=False)
    engine = InstrumentedEngine(fake, metrics)
    spec = spec_of()
    engine.ensure(spec)
    fake.changed = False
    engine.ensure(spec)
    assert engine.refresh(spec.service) is False
    assert engine.check_drift(spec.service) == DriftReport()
    engine.delete(spec.service)
    fake.direct = True
    engine.delete(spec.service)
    fake.changed = True
    engine.ensure(spec)  # pool members changed without `up`
    fake.changed = False
    fake.fail = True
    with pytest.raises(RuntimeError, match="boom"):
        engine.ensure(spec)
    total = "lbr_stack_operations_total"
    assert sample(metrics, total, kind="up", result="success") == 1
    assert sample(metrics, total, kind="skip", result="success") == 1
    assert sample(metrics, total, kind="refresh", result="success") == 1
    assert sample(metrics, total, kind="destroy", result="success") == 1
    assert sample(metrics, total, kind="direct-delete", result="success") == 1
    assert sample(metrics, total, kind="direct-update", result="success") == 1
    assert sample(metrics, total, kind="up", result="error") == 1
    assert sample(metrics, total, kind="refresh-preview", result="success") == 1
    assert sample(metrics, "lbr_drift_checks_total", drifted="false") == 2


def test_a_drift_check_that_writes_nothing_is_a_refresh_preview() -> None:
    fake, metrics = FakeEngine(), Metrics(process_metrics=False)
    engine = InstrumentedEngine(fake, metrics)
    ref = spec_of().service
    assert engine.check_drift(ref).drifted
    fake.fail = True
    with pytest.raises(RuntimeError, match="boom"):
        engine.check_drift(ref)
    total = "lbr_stack_operations_total"
    assert sample(metrics, total, kind="refresh-preview", result="success") == 1
    assert sample(metrics, total, kind="refresh-preview", result="error") == 1
    assert sample(metrics, total, kind="refresh", result="success") == 0
    assert sample(metrics, "lbr_drift_checks_total", drifted="true") == 1


def test_one_log_line_per_finished_operation(caplog: pytest.LogCaptureFixture) -> None:
    fake, metrics = FakeEngine(), Metrics(process_metrics=False)
    engine = InstrumentedEngine(fake, metrics, cluster_name="prod")
    spec = spec_of()
    changes = {"create": 5, "same": 2}
    fake.ensure = lambda s: EnsureResult(  # type: ignore[method-assign]
        changed=True, spec_hash=s.spec_hash(), outputs={}, resource_changes=changes
    )
    with caplog.at_level("DEBUG", logger="reconciler.controller.operations"):
        engine.ensure(spec)
        engine.check_drift(spec.service)
        fake.fail = True
        with pytest.raises(RuntimeError, match="boom"):
            engine.delete(spec.service)
    up, drift, failed = caplog.records
    service = f"{spec.service.namespace}/{spec.service.name}"
    assert (up.levelname, up.getMessage()) == ("INFO", "stack operation finished")
    assert vars(up)["service"] == service
    assert vars(up)["stack"] == f"prod.{spec.service.namespace}.{spec.service.name}"
    assert (vars(up)["operation"], vars(up)["result"]) == ("up", "succeeded")
    assert vars(up)["duration_seconds"] >= 0
    counts = ("resources_created", "resources_unchanged", "resources_deleted")
    assert tuple(vars(up)[k] for k in counts) == (5, 2, 0)
    assert (vars(drift)["operation"], vars(drift)["drifted"]) == ("refresh-preview", 1)
    assert (failed.levelname, failed.getMessage()) == ("WARNING", "stack operation failed")
    assert (vars(failed)["operation"], vars(failed)["result"]) == ("destroy", "failed")
    assert (vars(failed)["failure_kind"], vars(failed)["error"]) == ("backoff", "boom")


def test_a_skip_is_logged_at_debug_only(caplog: pytest.LogCaptureFixture) -> None:
    fake, metrics = FakeEngine(), Metrics(process_metrics=False)
    fake.changed = False
    with caplog.at_level("INFO", logger="reconciler.controller.operations"):
        InstrumentedEngine(fake, metrics).ensure(spec_of())
    assert caplog.records == []

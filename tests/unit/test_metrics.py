"""reconciler.controller.metrics: names, labels, validation, scrape-time gauges and the
exposition."""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import pytest
from prometheus_client.parser import text_string_to_metric_families

from reconciler.controller.metrics import (
    CONTENT_TYPE,
    RECONCILE_RESULTS,
    STACK_KINDS,
    STACK_RESULTS,
    Metrics,
)


def samples(metrics: Metrics) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    body, _ = metrics.render()
    out = {}
    for family in text_string_to_metric_families(body.decode()):
        for s in family.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


def value(metrics: Metrics, name: str, **labels: str) -> float:
    return samples(metrics)[(name, frozenset(labels.items()))]


def names(metrics: Metrics) -> set[str]:
    return {name for name, _ in samples(metrics)}


@pytest.fixture
def m() -> Metrics:
    return Metrics(process_metrics=False)


def test_render_is_prometheus_text(m: Metrics) -> None:
    body, content_type = m.render()
    assert content_type == CONTENT_TYPE
    assert content_type.startswith("text/plain; version=0.0.4")
    assert isinstance(body, bytes)
    assert b"# TYPE lbr_reconciles_total counter" in body
    assert b"# TYPE lbr_reconcile_duration_seconds histogram" in body
    assert b"# HELP lbr_leader " in body


def test_every_documented_metric_is_exposed(m: Metrics) -> None:
    assert {
        "lbr_reconciles_total",
        "lbr_reconcile_duration_seconds_count",
        "lbr_stack_operations_total",
        "lbr_stack_operation_duration_seconds_count",
        "lbr_workqueue_depth",
        "lbr_workqueue_in_flight",
        "lbr_services_failing",
        "lbr_last_success_timestamp_seconds",
        "lbr_orphan_stacks_found_total",
        "lbr_orphan_stacks_deleted_total",
        "lbr_drift_checks_total",
        "lbr_drift_repaired_total",
        "lbr_drifted_stacks",
        "lbr_stacks_held_by_others",
        "lbr_leader",
    } <= names(m)


def test_no_created_series(m: Metrics) -> None:
    assert not [n for n in names(m) if n.endswith("_created")]


def test_process_metrics_are_optional() -> None:
    assert not any(n.startswith("process_") for n in names(Metrics(process_metrics=False)))
    assert any(n.startswith("python_") for n in names(Metrics()))


def test_label_combinations_start_at_zero(m: Metrics) -> None:
    for result in RECONCILE_RESULTS:
        assert value(m, "lbr_reconciles_total", result=result) == 0
        assert value(m, "lbr_reconcile_duration_seconds_count", result=result) == 0
    for kind in STACK_KINDS:
        assert value(m, "lbr_stack_operation_duration_seconds_count", kind=kind) == 0
        for result in STACK_RESULTS:
            assert value(m, "lbr_stack_operations_total", kind=kind, result=result) == 0
    assert value(m, "lbr_drift_checks_total", drifted="true") == 0
    assert value(m, "lbr_drift_checks_total", drifted="false") == 0


def test_reconcile_counts_and_times(m: Metrics) -> None:
    assert value(m, "lbr_last_success_timestamp_seconds") == 0
    m.reconcile("error", 0.3)
    assert value(m, "lbr_last_success_timestamp_seconds") == 0
    before = time.time()
    m.reconcile("success", 0.3)
    assert value(m, "lbr_last_success_timestamp_seconds") >= int(before)
    m.reconcile("success", 200.0)
    m.reconcile("retry", 1.5)
    assert value(m, "lbr_reconciles_total", result="success") == 2
    assert value(m, "lbr_reconciles_total", result="retry") == 1
    assert value(m, "lbr_reconciles_total", result="error") == 1
    assert value(m, "lbr_reconcile_duration_seconds_count", result="success") == 2
    assert value(m, "lbr_reconcile_duration_seconds_sum", result="success") == pytest.approx(200.3)
    bucket = "lbr_reconcile_duration_seconds_bucket"
    assert value(m, bucket, result="success", le="0.5") == 1
    assert value(m, bucket, result="success", le="300.0") == 2


def test_reconcile_buckets_span_50ms_to_10min(m: Metrics) -> None:
    les = sorted(
        float(dict(labels)["le"])
        for name, labels in samples(m)
        if name == "lbr_reconcile_duration_seconds_bucket" and ("result", "success") in labels
    )
    assert les[0] == 0.05
    assert les[-2] >= 600  # the last finite bucket
    assert math.isinf(les[-1])


@pytest.mark.parametrize("kind", STACK_KINDS)
def test_stack_operation(m: Metrics, kind: str) -> None:
    m.stack_operation(kind, "success", 12.0)
    m.stack_operation(kind, "error", 3.0)
    assert value(m, "lbr_stack_operations_total", kind=kind, result="success") == 1
    assert value(m, "lbr_stack_operations_total", kind=kind, result="error") == 1
    assert value(m, "lbr_stack_operation_duration_seconds_count", kind=kind) == 2
    assert value(m, "lbr_stack_operation_duration_seconds_sum", kind=kind) == 15.0
    others = [k for k in STACK_KINDS if k != kind]
    assert all(value(m, "lbr_stack_operation_duration_seconds_count", kind=k) == 0 for k in others)


@pytest.mark.parametrize(
    ("call", "wrong", "allowed"),
    [
        (lambda m: m.reconcile("sucess", 1.0), "sucess", "success, retry, error, invalid"),
        (
            lambda m: m.stack_operation("upp", "success", 1.0),
            "upp",
            "up, direct-update, destroy, direct-delete, refresh, refresh-preview, skip",
        ),
        (lambda m: m.stack_operation("up", "ok", 1.0), "ok", "success, error"),
    ],
)
def test_unknown_labels_raise_and_create_no_series(
    m: Metrics, call: Callable[[Metrics], None], wrong: str, allowed: str
) -> None:
    before = set(samples(m))
    with pytest.raises(ValueError, match=f"'{wrong}'.*allowed: {allowed}"):
        call(m)
    assert set(samples(m)) == before
    assert wrong not in m.render()[0].decode()


@pytest.mark.parametrize("seconds", [-0.1, math.nan])
def test_bad_durations_raise(m: Metrics, seconds: float) -> None:
    with pytest.raises(ValueError, match="0 or more seconds"):
        m.reconcile("success", seconds)
    with pytest.raises(ValueError, match="0 or more seconds"):
        m.stack_operation("up", "success", seconds)
    assert value(m, "lbr_reconciles_total", result="success") == 0


def test_queue_gauges_are_read_at_scrape_time(m: Metrics) -> None:
    assert value(m, "lbr_workqueue_depth") == 0  # no source yet
    depth = [3]
    m.set_queue_depth_source(lambda: depth[0])
    m.set_in_flight_source(lambda: 2)
    m.set_failing_source(lambda: 4)
    assert value(m, "lbr_workqueue_depth") == 3
    assert value(m, "lbr_workqueue_in_flight") == 2
    assert value(m, "lbr_services_failing") == 4
    depth[0] = 7
    assert value(m, "lbr_workqueue_depth") == 7


def test_a_failing_source_reads_nan_and_keeps_the_scrape(
    m: Metrics, caplog: pytest.LogCaptureFixture
) -> None:
    def broken() -> int:
        raise RuntimeError("queue gone")

    m.set_queue_depth_source(broken)
    m.reconcile("error", 1.0)
    assert math.isnan(value(m, "lbr_workqueue_depth"))
    assert value(m, "lbr_reconciles_total", result="error") == 1
    assert "metric source failed" in caplog.text


def test_housekeeping_counters(m: Metrics) -> None:
    m.orphan_found()
    m.orphan_found()
    m.orphan_deleted()
    m.drift_checked(False)
    m.drift_checked(True)
    m.drift_checked(True)
    m.drift_repaired()
    assert value(m, "lbr_orphan_stacks_found_total") == 2
    assert value(m, "lbr_orphan_stacks_deleted_total") == 1
    assert value(m, "lbr_drift_checks_total", drifted="true") == 2
    assert value(m, "lbr_drift_checks_total", drifted="false") == 1
    assert value(m, "lbr_drift_repaired_total") == 1
    assert value(m, "lbr_drifted_stacks") == 0
    m.set_drifted_stacks(3)
    assert value(m, "lbr_drifted_stacks") == 3
    m.set_drifted_stacks(0)
    assert value(m, "lbr_drifted_stacks") == 0


def test_leader_gauge(m: Metrics) -> None:
    assert value(m, "lbr_leader") == 0
    m.set_leader(True)
    assert value(m, "lbr_leader") == 1
    m.set_leader(False)
    assert value(m, "lbr_leader") == 0


def test_instances_do_not_share_a_registry() -> None:
    a, b = Metrics(process_metrics=False), Metrics(process_metrics=False)
    a.reconcile("success", 1.0)
    a.set_leader(True)
    assert a.registry is not b.registry
    assert value(a, "lbr_reconciles_total", result="success") == 1
    assert value(b, "lbr_reconciles_total", result="success") == 0
    assert value(b, "lbr_leader") == 0

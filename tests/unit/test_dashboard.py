"""The chart's Grafana dashboard (charts/lb-reconciler/dashboards/lb-reconciler.json): it loads,
its panels do not overlap, and every query names a metric the controller exposes (read from a
real :class:`~reconciler.controller.metrics.Metrics` registry, process metrics included)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from reconciler.controller.metrics import Metrics

DASHBOARD = (
    Path(__file__).resolve().parents[2] / "charts" / "lb-reconciler" / "dashboards"
) / "lb-reconciler.json"
# a metric name in PromQL: an identifier followed by a selector, a range or a closing bracket
_NAME = re.compile(r"\b([a-z_][a-z0-9_]*)\s*(?=\{|\[)")
_FUNCTIONS = {"rate", "increase", "sum", "max", "histogram_quantile", "time", "by"}


def exposed() -> set[str]:
    text = Metrics(process_metrics=True).render()[0].decode()
    return {line.split("{")[0].split()[0] for line in text.splitlines() if line[:1].isalpha()}


def panels() -> list[dict[str, Any]]:
    doc = json.loads(DASHBOARD.read_text())
    assert doc["uid"] == "lb-reconciler"
    found: list[dict[str, Any]] = doc["panels"]
    return found


def test_every_query_names_an_exposed_metric() -> None:
    names = exposed()
    queried = set()
    for panel in panels():
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            metrics = set(_NAME.findall(target["expr"])) - _FUNCTIONS
            assert metrics, target["expr"]
            queried |= metrics
            assert metrics <= names, f"{panel['title']}: {metrics - names} not exposed"
    # the panels: queue depth, operations by result and duration, failing, locked and
    # drifted stacks, the leader, the last successful sync
    for metric in (
        "lbr_workqueue_depth",
        "lbr_stack_operations_total",
        "lbr_stack_operation_duration_seconds_bucket",
        "lbr_services_failing",
        "lbr_stacks_held_by_others",
        "lbr_drifted_stacks",
        "lbr_leader",
        "lbr_last_success_timestamp_seconds",
    ):
        assert metric in queried, metric


def test_panels_have_unique_ids_and_do_not_overlap() -> None:
    cells: set[tuple[int, int]] = set()
    ids = [p["id"] for p in panels()]
    assert len(ids) == len(set(ids))
    for panel in panels():
        g = panel["gridPos"]
        assert g["x"] + g["w"] <= 24, panel["title"]
        mine = {
            (x, y) for x in range(g["x"], g["x"] + g["w"]) for y in range(g["y"], g["y"] + g["h"])
        }
        assert not mine & cells, f"{panel['title']} overlaps another panel"
        cells |= mine


def test_the_name_pattern_finds_names_and_skips_functions() -> None:
    expr = 'sum by (le) (rate(lbr_x_bucket{job=~"$job"}[5m])) + time() - max(lbr_y{a="b"})'
    assert set(_NAME.findall(expr)) - _FUNCTIONS == {"lbr_x_bucket", "lbr_y"}

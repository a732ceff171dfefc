"""The benchmark's pure measurement decisions: statistics, /proc parsing, metrics, targets, the
baseline's backoff, the chart's series."""

from __future__ import annotations

import math
from typing import Any

import pytest

from bench.baseline import backoff_delays, poll
from bench.chart import series
from bench.procfs import ProcStat, TreeSample, descendants, parse_stat, sample_tree
from bench.stats import (
    TICKS,
    check_targets,
    growth_exponent,
    merge_runs,
    metric_sum,
    orphan_count,
    parse_metrics,
    percentile,
    ratio,
    resources,
    stack_operations,
    summarise,
    throughput_per_minute,
)

MIB = 1024 * 1024

# -- statistics -------------------------------------------------------------------------------


def test_percentile_interpolates_between_closest_ranks() -> None:
    values = [4.0, 1.0, 3.0, 2.0]
    assert percentile(values, 0.0) == 1.0
    assert percentile(values, 1.0) == 4.0
    assert percentile(values, 0.5) == 2.5
    assert percentile(values, 0.1) == pytest.approx(1.3)
    assert percentile([7.0], 0.9) == 7.0


@pytest.mark.parametrize("q", [-0.1, 1.5])
def test_percentile_rejects_quantiles_outside_0_1(q: float) -> None:
    with pytest.raises(ValueError, match=r"within 0\.\.1"):
        percentile([1.0], q)


def test_percentile_of_nothing_is_an_error() -> None:
    with pytest.raises(ValueError, match="no values"):
        percentile([], 0.5)


def test_summarise_keeps_every_sample_and_the_spread() -> None:
    s = summarise([3, 1, 2, 10, 4])
    assert s["n"] == 5
    assert s["samples"] == [3.0, 1.0, 2.0, 10.0, 4.0]  # in the order measured
    assert (s["median"], s["min"], s["max"], s["mean"]) == (3.0, 1.0, 10.0, 4.0)
    assert s["p10"] == pytest.approx(1.4)
    assert s["p90"] == pytest.approx(7.6)


def test_summarise_of_no_samples_has_no_figures() -> None:
    s = summarise([])
    assert s["n"] == 0
    assert s["samples"] == []
    assert all(s[k] is None for k in ("median", "mean", "min", "max", "p10", "p90"))


def test_ratio_and_throughput_refuse_missing_or_zero() -> None:
    assert ratio(3.0, 2.0) == 1.5
    assert ratio(None, 2.0) is None
    assert ratio(1.0, 0.0) is None
    assert throughput_per_minute(10, 20.0) == 30.0
    assert throughput_per_minute(10, 0.0) is None


def test_growth_exponent_of_linear_constant_and_quadratic_growth() -> None:
    assert growth_exponent({10: 20.0, 25: 50.0, 50: 100.0, 100: 200.0}) == pytest.approx(1.0)
    assert growth_exponent({10: 5.0, 100: 5.0}) == pytest.approx(0.0)
    assert growth_exponent({10: 1.0, 20: 4.0, 40: 16.0}) == pytest.approx(2.0)


def test_growth_exponent_needs_two_sizes() -> None:
    assert growth_exponent({10: 5.0}) is None
    assert growth_exponent({}) is None
    assert growth_exponent({10: 0.0, 20: 3.0}) is None  # a zero time cannot be fitted


# -- /proc -----------------------------------------------------------------------------------


def stat_line(pid: int, comm: str, ppid: int, ticks: tuple[int, int, int, int], rss: int) -> str:
    utime, stime, cutime, cstime = ticks
    fields = ["S", str(ppid), "1", "1", "0", "-1", "0"] + ["0"] * 4  # ..cmajflt
    fields += [str(utime), str(stime), str(cutime), str(cstime), "20", "0", "1", "0", "100"]
    fields += ["3133440", str(rss)] + ["0"] * 27
    return f"{pid} ({comm}) " + " ".join(fields)


def test_parse_stat_reads_cpu_ticks_and_rss_past_a_tricky_comm() -> None:
    text = stat_line(42, "pulumi (x) y", 7, (10, 5, 3, 2), 100)
    stat = parse_stat(text, page_size=4096)
    assert stat == ProcStat(
        pid=42, comm="pulumi (x) y", state="S", ppid=7, cpu_ticks=20, rss_bytes=409600
    )


def test_parse_stat_of_a_real_line() -> None:
    real = (
        "30700 (cat) R 30695 30695 8982 0 -1 4194304 100 0 0 0 0 0 0 0 20 0 1 0 2532684 "
        "3133440 382 18446744073709551615 94651609620480 94651609640361 140733557614224 0 0 0 0 "
        "0 0 0 0 0 17 1 0 0 0 0 0 94651609656368 94651609657984 94652175376384 140733557619386 "
        "140733557619406 140733557619406 140733557620715 0"
    )
    stat = parse_stat(real, page_size=4096)
    assert (stat.pid, stat.comm, stat.state, stat.ppid) == (30700, "cat", "R", 30695)
    assert (stat.cpu_ticks, stat.rss_bytes) == (0, 382 * 4096)


def procs(*rows: tuple[int, str, int, int, int, str]) -> dict[int, ProcStat]:
    return {
        pid: ProcStat(pid=pid, comm=comm, state=state, ppid=ppid, cpu_ticks=ticks, rss_bytes=rss)
        for pid, comm, ppid, ticks, rss, state in rows
    }


TABLE = procs(
    (1, "init", 0, 0, 0, "S"),
    (10, "python", 1, 500, 100 * MIB, "S"),  # the controller
    (11, "pulumi", 10, 40, 60 * MIB, "S"),
    (12, "pulumi-resource", 11, 30, 50 * MIB, "S"),
    (13, "pulumi", 10, 20, 70 * MIB, "S"),
    (14, "pulumi", 10, 7, 0, "Z"),  # ended, not yet waited for: CPU counts, memory does not
    (20, "other", 1, 999, 999 * MIB, "S"),
)


def test_descendants_follow_parent_pids_through_generations() -> None:
    assert descendants(TABLE, 10) == [11, 12, 13, 14]
    assert descendants(TABLE, 12) == []
    assert descendants(TABLE, 99) == []


def test_sample_tree_splits_root_and_children() -> None:
    s = sample_tree(TABLE, 10, at=5.0)
    assert s == TreeSample(
        at=5.0,
        root_rss=100 * MIB,
        children_rss=180 * MIB,
        cpu_ticks=597,
        pulumi_processes=2,
        children=3,
        pulumi_pids=(11, 13),
    )
    assert sample_tree(TABLE, 99, at=0.0) is None


def tree(at: float, root: int, children: int, ticks: int, pulumis: int) -> TreeSample:
    return TreeSample(at, root * MIB, children * MIB, ticks, pulumis, pulumis)


def test_resources_peaks_cpu_and_memory_per_pulumi_process() -> None:
    samples = [
        tree(0.0, 80, 0, 1000, 0),
        tree(0.2, 90, 300, 1000 + TICKS, 2),
        tree(0.4, 95, 100, 1000 + 3 * TICKS, 1),
    ]
    r = resources(samples, root_hwm=96 * MIB)
    assert r["cpu_seconds"] == pytest.approx(3.0)
    assert r["seconds"] == pytest.approx(0.4)
    assert (r["peak_root_mib"], r["root_hwm_mib"], r["peak_children_mib"]) == (95, 96, 300)
    assert r["peak_total_mib"] == 390
    assert r["peak_pulumi_processes"] == 2
    assert r["peak_children_mib_per_pulumi_process"] == 150
    fresh = resources(samples, from_zero=True)
    assert fresh["cpu_seconds"] == pytest.approx((1000 + 3 * TICKS) / TICKS)
    assert fresh["root_hwm_mib"] is None


def test_resources_count_distinct_pulumi_processes_seen() -> None:
    samples = [
        TreeSample(0.0, MIB, MIB, 0, 2, 2, (101, 102)),
        TreeSample(0.2, MIB, MIB, 0, 1, 1, (102,)),
        TreeSample(0.4, MIB, MIB, 0, 2, 2, (103, 104)),
    ]
    assert resources(samples)["pulumi_processes_seen"] == 4


def test_merge_runs_keeps_the_highest_peak_and_sums_cpu_and_operations() -> None:
    low = {"resources": {"peak_total_mib": 100, "cpu_seconds": 2.0}, "stack_operations": {"up": 1}}
    high = {
        "resources": {"peak_total_mib": 300, "cpu_seconds": 5.0, "peak_root_mib": 90},
        "stack_operations": {"up": 2, "skip": 1},
    }
    merged = merge_runs([low, high])
    assert merged["resources"] == {"peak_total_mib": 300, "cpu_seconds": 7.0, "peak_root_mib": 90}
    assert merged["stack_operations"] == {"up": 3, "skip": 1}
    assert merge_runs([]) == {}


def test_resources_of_no_samples() -> None:
    assert resources([]) == {"samples": 0}
    r = resources([tree(0.0, 10, 0, 0, 0)])
    assert r["peak_children_mib_per_pulumi_process"] is None


# -- /metrics --------------------------------------------------------------------------------

METRICS = """\
# HELP lbr_stack_operations_total Pulumi stack operations
# TYPE lbr_stack_operations_total counter
lbr_stack_operations_total{kind="up",result="success"} 3.0
lbr_stack_operations_total{result="error",kind="up"} 1.0
lbr_stack_operations_total{kind="destroy",result="success"} 2.0
lbr_stack_operations_total{kind="direct-delete",result="success"} 5.0
lbr_stack_operations_total{kind="direct-update",result="success"} 6.0
lbr_stack_operations_total{kind="refresh",result="success"} 0.0
lbr_stack_operations_total{kind="skip",result="success"} 7.0
lbr_reconciles_total{result="success"} 12.0
lbr_reconciles_total{result="retry"} 2.0
lbr_workqueue_depth 0.0
process_resident_memory_bytes 9.4e+07
bogus_line{a="b"} not-a-number
"""


def test_parse_metrics_sorts_labels_and_skips_comments() -> None:
    m = parse_metrics(METRICS)
    assert m['lbr_stack_operations_total{kind="up",result="error"}'] == 1.0
    assert m["lbr_workqueue_depth"] == 0.0
    assert m["process_resident_memory_bytes"] == 94_000_000
    assert not any(k.startswith("bogus") for k in m)


def test_metric_sum_filters_by_labels() -> None:
    m = parse_metrics(METRICS)
    assert metric_sum(m, "lbr_reconciles_total") == 14
    assert metric_sum(m, "lbr_reconciles_total", result="retry") == 2
    assert metric_sum(m, "lbr_stack_operations_total", kind="up") == 4
    assert metric_sum(m, "absent") == 0


def test_stack_operations_count_skip_apart_from_operations_that_ran() -> None:
    ops = stack_operations(parse_metrics(METRICS))
    assert ops == {
        "up": 4,
        "direct-update": 6,
        "destroy": 2,
        "direct-delete": 5,
        "refresh": 0,
        "skip": 7,
        "ran": 17,
    }


def test_orphans_count_cloud_objects_and_stacks() -> None:
    assert orphan_count({}, []) == 0
    assert orphan_count({"loadbalancers": ["a"], "floatingips": ["b", "c"]}, [{"stack": "x"}]) == 4


# -- targets ---------------------------------------------------------------------------------


def med(value: float) -> dict[str, Any]:
    return {"median": value}


def by_name(checks: list[dict[str, Any]]) -> dict[str, Any]:
    return {c["name"]: c["met"] for c in checks}


def test_targets_of_scenario_1() -> None:
    cloudlike = {
        "scenario": 1,
        "profile": "cloudlike",
        "controller": {"create_to_ip_seconds": med(12.0), "resources": {"peak_root_mib": 120}},
        "baseline": {"create_to_ip_seconds": med(10.0)},
    }
    assert by_name(check_targets(cloudlike)) == {
        "create->IP vs baseline": True,
        "controller memory": True,
    }
    instant = {
        "scenario": 1,
        "profile": "instant",
        "controller": {"create_to_ip_seconds": med(6.0)},
        "baseline": {"create_to_ip_seconds": med(0.1)},
    }
    assert by_name(check_targets(instant)) == {"create->IP median": False}
    unknown = {"scenario": 1, "profile": "cloudlike", "controller": {}, "baseline": {}}
    assert by_name(check_targets(unknown)) == {"create->IP vs baseline": None}


def test_targets_of_scenarios_2_3_and_5() -> None:
    burst = {
        "scenario": 2,
        "profile": "instant",
        "controller": {
            "points": [
                {"n": 10, "services_per_minute": 40.0},
                {"n": 25, "services_per_minute": 20},
            ],
            "growth_exponent": 1.2,
        },
    }
    assert by_name(check_targets(burst)) == {
        "N=10 throughput": True,
        "N=25 throughput": False,
        "growth with N": False,
    }
    restart = {
        "scenario": 3,
        "profile": "instant",
        "parameters": {"services": 500},
        "controller": {
            "stack_operations": {"ran": 0, "skip": 500},
            "restart_to_readyz_seconds": med(1.5),
            "restart_to_synced_seconds": med(12.0),
            "resources": {"peak_root_mib": 300.0},
        },
    }
    assert by_name(check_targets(restart)) == {
        "stack operations on restart": True,
        "restart to /readyz": True,
        "restart to every Service synced": False,  # issue 7: 10 s at 500
        "controller memory": False,
    }
    restart["parameters"] = {"services": 2000}  # issue 30: 30 s at 2,000
    assert by_name(check_targets(restart))["restart to every Service synced"] is True
    deletes = {"scenario": 5, "profile": "instant", "controller": {"orphans": 0}, "baseline": {}}
    assert by_name(check_targets(deletes)) == {"controller orphans": True}


# -- the baseline's wait and the chart --------------------------------------------------------


def test_backoff_delays_are_occms() -> None:
    delays = backoff_delays(steps=23)
    assert len(delays) == 22  # 23 checks, a sleep between two
    assert delays[:3] == pytest.approx([1.0, 1.2, 1.44])
    assert sum(delays) == pytest.approx((1.2**22 - 1) / 0.2)
    assert backoff_delays(steps=1) == []


def test_poll_checks_at_once_then_after_each_delay() -> None:
    slept: list[float] = []
    answers = iter([False, False, True])
    assert poll(lambda: next(answers), steps=23, sleep=slept.append)
    assert slept == pytest.approx([1.0, 1.2])
    slept.clear()
    assert not poll(lambda: False, steps=3, sleep=slept.append)
    assert slept == pytest.approx([1.0, 1.2])


def test_chart_series_sorts_by_n_and_gives_asymmetric_error_bars() -> None:
    def point(n: int, lo: float, mid: float, hi: float) -> dict[str, Any]:
        return {"n": n, "all_ready_seconds": {"min": lo, "median": mid, "max": hi}}

    side = {
        "points": [
            point(25, 9, 10, 14),
            point(10, 3, 4, 4.5),
            {"n": 50, "all_ready_seconds": {"median": None}},
        ]
    }
    ns, mid, low, high = series(side)
    assert ns == [10, 25]
    assert mid == [4.0, 10.0]
    assert low == [1.0, 1.0]
    assert high == pytest.approx([0.5, 4.0])
    assert series({}) == ([], [], [], [])
    assert not math.isnan(sum(mid))

"""docs/performance.md's table from results files: formatting only, every figure from the file."""

from __future__ import annotations

from typing import Any

from bench.stats import summarise
from bench.table import fmt, fmt_value, render


def test_fmt_shows_median_and_range_or_a_single_value() -> None:
    assert fmt(summarise([1.0, 2.0, 4.0])) == "2 (1-4) s"
    assert fmt(summarise([0.25])) == "0.25 s"
    assert fmt(summarise([])) == "-"
    assert fmt(None) == "-"
    assert fmt_value(None) == "-"
    assert fmt_value(93.0156, "MiB") == "93 MiB"
    assert fmt_value(0) == "0"


def result_1() -> dict[str, Any]:
    return {
        "scenario": 1,
        "profile": "cloudlike",
        "environment": {"loadavg_start": [3.2, 1, 1], "loadavg_end": [6.9, 2, 2]},
        "controller": {
            "create_to_ip_seconds": summarise([12.0, 10.0, 11.0]),
            "delete_to_gone_seconds": summarise([4.0]),
            "resources": {"peak_root_mib": 93.0, "peak_children_mib": 277.3},
        },
        "baseline": {
            "create_to_ip_seconds": summarise([8.0, 8.0, 8.0]),
            "delete_to_gone_seconds": summarise([1.0]),
            "resources": {"peak_root_mib": 50.2, "peak_children_mib": 0.0},
        },
    }


def test_render_rows_of_scenario_1() -> None:
    table = render([result_1()])
    lines = table.splitlines()
    assert lines[0].startswith("| scenario | profile | measure |")
    assert (
        "| 1 | cloudlike | create -> EXTERNAL-IP | 11 (10-12) s | 8 s | 1.38x | 3 | 3.2 / 6.9 |"
        in (lines)
    )
    assert "| 1 | cloudlike | delete -> finalizer released | 4 s | 1 s | 4x | 1 | 3.2 / 6.9 |" in (
        lines
    )
    assert "| 1 | cloudlike | peak RSS, process | 93 MiB | 50.2 MiB | - | - | 3.2 / 6.9 |" in lines


def test_render_rows_of_scenarios_2_and_5() -> None:
    def point(n: int, seconds: list[float], per_minute: float) -> dict[str, Any]:
        return {
            "n": n,
            "all_ready_seconds": summarise(seconds),
            "services_per_minute": per_minute,
            "resources": {"peak_total_mib": 10.0 * n, "peak_root_mib": 90.0},
        }

    burst = {
        "scenario": 2,
        "profile": "instant",
        "controller": {"points": [point(10, [20.0], 30.0)], "growth_exponent": 0.9},
        "baseline": {"points": [point(10, [2.0], 300.0)], "growth_exponent": None},
    }
    deletes = {
        "scenario": 5,
        "profile": "instant",
        "controller": {"all_gone_seconds": summarise([9.0]), "orphans": 0},
        "baseline": {"all_gone_seconds": summarise([3.0]), "orphans": 0},
    }
    lines = render([burst, deletes]).splitlines()
    assert "| 2 | instant | N=10: all have IPs | 20 s | 2 s | 10x | 1 | - / - |" in lines
    assert "| 2 | instant | N=10: Services/min | 30 | 300 | - | 1 | - / - |" in lines
    assert "| 2 | instant | growth exponent (t ~ N^b) | 0.9 | - | - | 1 | - / - |" in lines
    assert "| 2 | instant | peak RSS, process | 90 MiB | 90 MiB | - | - | - / - |" in lines
    assert "| 5 | instant | delete all -> all gone | 9 s | 3 s | 3x | 1 | - / - |" in lines
    assert "| 5 | instant | orphans left | 0 | 0 | - | 1 | - / - |" in lines

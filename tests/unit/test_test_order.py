"""The order ``make test`` hands tests out in: the long units early, spread out
(tests/durations.py)."""

from __future__ import annotations

import json

from tests.durations import from_report, long_units_early


def order(items: list[tuple[str, str]], durations: dict[str, float]) -> list[str]:
    ordered = long_units_early(
        items, node_id=lambda i: i[0], unit=lambda i: i[1], durations=durations
    )
    return [i[0] for i in ordered]


def test_long_units_move_into_the_first_half_at_even_intervals() -> None:
    # q0..q7 quick tests; g is one xdist group of two tests of 40 s (80 s in all); "late" is
    # one test of 70 s; "short" is 20 s: not long, so it stays where it was
    items = [(f"q{i}", f"q{i}") for i in range(4)]
    items += [("short", "short"), ("late", "late"), ("g::a", "g")]
    items += [(f"q{i}", f"q{i}") for i in range(4, 8)]
    items += [("g::b", "g")]
    durations = {"g::a": 40.0, "g::b": 40.0, "late": 70.0, "short": 20.0}
    # the rest (9 items) in two halves; two long units: at 0 and at round(9 / 2 / 2) = 2
    assert order(items, durations) == [
        "late",
        "q0",
        "q1",
        "g::a",
        "g::b",
        "q2",
        "q3",
        "short",
        "q4",
        "q5",
        "q6",
        "q7",
    ]


def test_without_long_units_the_order_stays() -> None:
    items = [("b", "b"), ("a", "a"), ("new", "new")]
    assert order(items, {"a": 59.0}) == ["b", "a", "new"]


def test_a_test_missing_from_the_record_counts_as_quick() -> None:
    items = [("new", "new"), ("known", "known")]
    assert order(items, {"known": 60.0}) == ["known", "new"]


def test_the_record_keeps_tests_of_three_seconds_or_more() -> None:
    lines = [
        json.dumps({"test": "a", "wall": 2.99, "cpu": 1.0}),
        json.dumps({"test": "b", "wall": 3.04, "cpu": 1.0}),
        "",
        json.dumps({"test": "c", "wall": 120.26, "cpu": 9.0}),
    ]
    assert from_report(lines) == {"b": 3.0, "c": 120.3}

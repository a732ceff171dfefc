"""The order ``make test`` hands tests out in: the longest units first (tests/durations.py)."""

from __future__ import annotations

import json

from tests.durations import from_report, longest_first


def test_groups_weigh_their_tests_sum_and_equal_units_keep_the_random_order() -> None:
    # (node id, unit): m1 is one xdist group of two tests; the rest are units of one test
    items = [
        ("quick_a", "quick_a"),
        ("m1::a", "m1"),
        ("slow", "slow"),
        ("quick_b", "quick_b"),
        ("m1::b", "m1"),
        ("quick_c", "quick_c"),
    ]
    durations = {"m1::a": 30.0, "m1::b": 30.0, "slow": 50.0}
    ordered = longest_first(items, node_id=lambda i: i[0], unit=lambda i: i[1], durations=durations)
    assert [i[0] for i in ordered] == ["m1::a", "m1::b", "slow", "quick_a", "quick_b", "quick_c"]


def test_a_test_missing_from_the_record_counts_as_quick() -> None:
    items = ["new", "known"]
    ordered = longest_first(items, node_id=str, unit=str, durations={"known": 4.0})
    assert ordered == ["known", "new"]


def test_the_record_keeps_tests_of_three_seconds_or_more() -> None:
    lines = [
        json.dumps({"test": "a", "wall": 2.99, "cpu": 1.0}),
        json.dumps({"test": "b", "wall": 3.04, "cpu": 1.0}),
        "",
        json.dumps({"test": "c", "wall": 120.26, "cpu": 9.0}),
    ]
    assert from_report(lines) == {"b": 3.0, "c": 120.3}

"""Node eligibility (KEP-3458), node-selector parsing and matching, member address choice."""

from __future__ import annotations

from typing import Any

import pytest

from reconciler.model.nodes import (
    EXCLUDE_LABEL,
    TO_BE_DELETED_TAINT,
    choose_nodes,
    exclusion_reason,
    is_eligible,
    matches_selector,
    node_address,
    node_ready,
    parse_node_selector,
)
from tests.builders import make_node

EMPTY = parse_node_selector(text="")


@pytest.mark.parametrize(
    ("node", "eligible"),
    [
        (make_node("n", internal="10.0.0.1"), True),
        (make_node("n", internal="10.0.0.1", ready="False"), True),  # readiness does not count
        (make_node("n", internal="10.0.0.1", ready="Unknown"), True),
        (make_node("n", labels={EXCLUDE_LABEL: ""}), False),  # "" does not parse: excluded
        (make_node("n", labels={EXCLUDE_LABEL: "true"}), False),
        (make_node("n", labels={EXCLUDE_LABEL: "yes"}), False),  # not a Go bool: excluded
        (make_node("n", labels={EXCLUDE_LABEL: "false"}), True),
        (make_node("n", labels={EXCLUDE_LABEL: "False"}), True),
        (make_node("n", labels={EXCLUDE_LABEL: "0"}), True),
        (make_node("n", labels={EXCLUDE_LABEL: "f"}), True),
        (make_node("n", taints=[{"key": TO_BE_DELETED_TAINT, "effect": "NoSchedule"}]), False),
        (make_node("n", taints=[{"key": "node.kubernetes.io/unschedulable"}]), True),
        (make_node("n", deleting=True), False),
        ({}, True),
    ],
)
def test_eligibility(node: dict[str, Any], eligible: bool) -> None:
    assert is_eligible(node) is eligible
    assert (exclusion_reason(node) is None) is eligible


def test_ready_is_reported_but_not_required() -> None:
    assert node_ready(make_node("n")) is True
    assert node_ready(make_node("n", ready="False")) is False
    assert node_ready({}) is False


@pytest.mark.parametrize(
    ("text", "terms", "problems"),
    [
        ("", {}, 0),
        ("env=production, region=default", {"env": "production", "region": "default"}, 0),
        ("env, region=default", {"env": "", "region": "default"}, 0),
        ("env=", {"env": ""}, 0),
        (" a=1 ,, b=2 ", {"a": "1", "b": "2"}, 0),
        ("a=1,a=2", {"a": "2"}, 0),
        ("example.com/role=edge", {"example.com/role": "edge"}, 0),
        ("env==prod", {"env": "=prod"}, 1),
        ("=prod", {}, 1),
        ("bad key=x", {"bad key": "x"}, 1),
    ],
)
def test_parse_node_selector(text: str, terms: dict[str, str], problems: int) -> None:
    selector = parse_node_selector(text=text)
    assert dict(selector.terms) == terms
    assert len(selector.problems) == problems


@pytest.mark.parametrize(
    ("labels", "text", "matches"),
    [
        ({"env": "production"}, "env=production", True),
        ({"env": "dev"}, "env=production", False),
        ({"env": "dev"}, "env", True),
        ({"other": "x"}, "env", False),
        ({"env": "production", "region": "default"}, "env=production,region=default", True),
        ({"env": "production"}, "env=production,region=default", False),
        ({}, "", True),
    ],
)
def test_matches_selector(labels: dict[str, str], text: str, matches: bool) -> None:
    node = make_node("n", labels=labels)
    if not labels:
        node["metadata"]["labels"] = {}
    assert matches_selector(node, parse_node_selector(text=text)) is matches


def test_node_without_labels_matches_no_selector() -> None:
    node = make_node("n")
    node["metadata"].pop("labels")
    assert matches_selector(node, parse_node_selector(text="env")) is False
    assert matches_selector(node, EMPTY) is True


@pytest.mark.parametrize(
    ("internal", "external", "family", "expected"),
    [
        ("10.0.0.1", "203.0.113.1", None, "10.0.0.1"),
        (None, "203.0.113.1", None, "203.0.113.1"),
        ("10.0.0.1", "2001:db8::1", "IPv6", "2001:db8::1"),
        ("fd00::1", "203.0.113.1", "IPv4", "203.0.113.1"),
        ("fd00::1", None, "IPv6", "fd00::1"),
        ("fd00::1", None, "IPv4", None),
        (None, None, None, None),
    ],
)
def test_node_address(
    internal: str | None, external: str | None, family: str | None, expected: str | None
) -> None:
    assert node_address(make_node("n", internal=internal, external=external), family=family) == (
        expected
    )


def test_choose_nodes_sorted_and_explained(nodes: list[dict[str, Any]]) -> None:
    nodes = [*nodes, make_node("no-address"), make_node("worker-c", internal="10.0.0.9")]
    choice = choose_nodes(nodes=nodes, selector=EMPTY, family="IPv4")
    assert choice.backends == (
        ("worker-a", "10.0.0.11"),
        ("worker-b", "10.0.0.12"),
        ("worker-c", "10.0.0.9"),
    )
    assert [name for name, _ in choice.excluded] == ["control-plane"]
    assert EXCLUDE_LABEL in choice.excluded[0][1]
    assert choice.without_address == ("no-address",)


def test_choose_nodes_order_does_not_depend_on_input_order(nodes: list[dict[str, Any]]) -> None:
    forward = choose_nodes(nodes=nodes, selector=EMPTY, family=None)
    backward = choose_nodes(nodes=list(reversed(nodes)), selector=EMPTY, family=None)
    assert forward == backward


def test_choose_nodes_applies_selector() -> None:
    nodes = [
        make_node("a", internal="10.0.0.1", labels={"pool": "edge"}),
        make_node("b", internal="10.0.0.2", labels={"pool": "core"}),
    ]
    choice = choose_nodes(nodes=nodes, selector=parse_node_selector(text="pool=edge"), family=None)
    assert choice.backends == (("a", "10.0.0.1"),)
    assert choice.excluded == (("b", "the Node does not match the node-selector"),)

"""Fixtures shared by the pure unit tests."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.unit.k8s_objects import EXAMPLE_SERVICE, make_node


@pytest.fixture
def service() -> dict[str, Any]:
    return copy.deepcopy(EXAMPLE_SERVICE)


@pytest.fixture
def nodes() -> list[dict[str, Any]]:
    return [
        make_node("worker-b", internal="10.0.0.12"),
        make_node("worker-a", internal="10.0.0.11"),
        make_node(
            "control-plane",
            internal="10.0.0.10",
            labels={"node.kubernetes.io/exclude-from-external-load-balancers": ""},
        ),
    ]

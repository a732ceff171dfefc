"""Fixtures shared by the pure unit tests."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import example_nodes, example_service


@pytest.fixture
def service() -> dict[str, Any]:
    return example_service()


@pytest.fixture
def nodes() -> list[dict[str, Any]]:
    return example_nodes()

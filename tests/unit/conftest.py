"""Fixtures shared by the pure unit tests."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest

from tests.builders import example_nodes, example_service


@pytest.fixture
def service() -> dict[str, Any]:
    return example_service()


@pytest.fixture
def nodes() -> list[dict[str, Any]]:
    return example_nodes()


@pytest.fixture
def restore_logging() -> Iterator[None]:
    """The root logger's handlers and level as they were before the test (``lb-reconciler run``
    configures it onto the test's captured stderr)."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)

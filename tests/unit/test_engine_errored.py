"""When ``delete`` must cascade-delete the load balancer before ``destroy``."""

from __future__ import annotations

import pytest

from reconciler.engine_errored import needs_cascade


@pytest.mark.parametrize(
    ("lb", "expected"),
    [
        (None, False),  # already gone
        ({"provisioning_status": "ACTIVE"}, False),
        ({"provisioning_status": "PENDING_UPDATE"}, False),  # destroy waits for it
        ({"provisioning_status": "ERROR"}, True),
        ({}, False),
    ],
)
def test_only_a_load_balancer_in_error_is_cascaded(
    lb: dict[str, str] | None, expected: bool
) -> None:
    assert needs_cascade(lb) is expected

"""When ``delete`` must cascade-delete the load balancer before ``destroy``."""

from __future__ import annotations

import pytest

from reconciler.engine_errored import (
    needs_cascade,
    retry_destroy_after_cascade,
    unadopted_deletions,
)


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


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            'got 400 instead: {"faultstring": "Validation failure: Cannot delete Load Balancer '
            "20f16ce4-5b0a-45d5-b68f-2a239996b26b - it has children. Delete them first or pass "
            'cascade=true."}',
            True,
        ),
        ("Unable to retrieve parent openstack_lb_pool_v2 (9382a12f) for the monitor", True),
        ("Error waiting for pool p to become ACTIVE: unexpected state 'ERROR', wanted", True),
        ("Invalid state PENDING_UPDATE of loadbalancer resource lb-1", False),  # retried later
        ("Quota exceeded for resources: ['floatingip']", False),
    ],
)
def test_which_failed_destroys_a_cascade_gets_past(text: str, expected: bool) -> None:
    assert retry_destroy_after_cascade(RuntimeError(text)) is expected


def test_unadopted_objects_are_deleted_deepest_first() -> None:
    imports = {
        "sg": "sg-1",
        "listener-tcp-80": "li-1",
        "fip": "fip-1",
        "pool-tcp-80": "po-1",
        "lb": "lb-1",
        "monitor-tcp-80": "mo-1",
        "members-tcp-80": "po-1",  # batch members go with their pool
        "fip-association": "fip-1",  # and the association with its floating IP
    }
    assert unadopted_deletions(imports) == [
        ("loadbalancers", "lb-1"),
        ("healthmonitors", "mo-1"),
        ("pools", "po-1"),
        ("listeners", "li-1"),
        ("floatingips", "fip-1"),
        ("security-groups", "sg-1"),
    ]
    assert unadopted_deletions({"listener-udp-53": "li-2"}) == [("listeners", "li-2")]
    assert unadopted_deletions({}) == []

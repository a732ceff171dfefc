"""The harness's reset: what a test left behind fails that test and is removed, so the tests after
it on the same emulator start from the seeded topology (one failure, not a cascade)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration.emulator.conftest import Admin, wait_until


def test_what_a_test_left_behind_is_named_then_removed(
    conn: Any, topo: dict[str, Any], admin: Admin
) -> None:
    seeded = {kind: len(records) for kind, records in admin.inventory().items()}
    lb = conn.load_balancer.create_load_balancer(name="left", vip_subnet_id=topo["subnet_id"])
    wait_until(lambda: admin.lbs()[0]["provisioning_status"] == "ACTIVE" or None, timeout=10)
    fip = conn.network.create_ip(floating_network_id=topo["external_network_id"])
    left = admin.created()
    assert left["loadbalancers"] == [lb.id]
    assert fip.id in left["floatingips"]
    assert lb.vip_port_id in left["ports"]

    with pytest.raises(AssertionError, match=r"left behind after 0\.3s \(now removed\)") as raised:
        admin.wait_nothing_created(timeout=0.3)
    assert lb.id in str(raised.value)
    assert fip.id in str(raised.value)
    assert admin.created() == {}
    after = {kind: len(records) for kind, records in admin.inventory().items()}
    assert after == seeded  # the seeded topology is all that is left
    assert conn.load_balancer.find_load_balancer("left") is None

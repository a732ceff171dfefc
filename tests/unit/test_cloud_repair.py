"""Which objects in ERROR the engine updates back before an up (reconciler.engine.delete.repair)."""

from __future__ import annotations

from typing import Any

import pytest

from reconciler.engine.delete.repair import errored_children, is_errored_child_failure
from reconciler.engine.errors import EngineError


def _tree(lb: str = "ACTIVE", **statuses: str) -> dict[str, Any]:
    """A status tree as Octavia's GET .../loadbalancers/{id}/status: two listeners, each with
    a pool, a monitor and a member; ``statuses`` by object ID (default ACTIVE)."""

    def obj(ident: str, **extra: Any) -> dict[str, Any]:
        return {"id": ident, "provisioning_status": statuses.get(ident, "ACTIVE"), **extra}

    return {
        "id": "lb",
        "provisioning_status": lb,
        "listeners": [
            obj(
                f"l{i}",
                pools=[
                    obj(
                        f"p{i}",
                        health_monitor=obj(f"h{i}", type="TCP"),
                        members=[obj(f"m{i}", address="10.0.0.1", protocol_port=30080)],
                    )
                ],
            )
            for i in (1, 2)
        ],
    }


OURS = {"lb", "l1", "p1", "h1"}  # the stack's IDs (its members resource is named by the pool)


def test_nothing_in_error_nothing_to_do() -> None:
    assert errored_children(_tree(), own=OURS) == []


def test_each_errored_object_of_the_stack_parents_first() -> None:
    tree = _tree(m1="ERROR", l1="ERROR", h1="ERROR", p1="ERROR")
    assert errored_children(tree, own=OURS) == [
        ("listeners", "l1", ""),
        ("pools", "p1", ""),
        ("healthmonitors", "h1", ""),
        ("members", "m1", "p1"),
    ]


def test_another_services_objects_on_a_shared_load_balancer_are_not_touched() -> None:
    tree = _tree(l2="ERROR", p2="ERROR", m2="ERROR", l1="ERROR")
    assert errored_children(tree, own=OURS) == [("listeners", "l1", "")]


@pytest.mark.parametrize("lb", ["ERROR", "PENDING_UPDATE"])
def test_nothing_while_the_load_balancer_is_not_active(lb: str) -> None:
    """Octavia refuses updates of children then (409); an LB in ERROR is an operator's
    failover, not this repair."""
    assert errored_children(_tree(lb, l1="ERROR"), own=OURS) == []


def test_pending_objects_are_not_errored() -> None:
    assert errored_children(_tree(l1="PENDING_UPDATE"), own=OURS) == []


def test_only_the_providers_wait_on_an_errored_object_triggers_it() -> None:
    waited = EngineError(
        "up failed: waiting for openstack_lb_listener_v2 4e63 to become 'ACTIVE': "
        "unexpected state 'ERROR', wanted target 'ACTIVE'"
    )
    assert is_errored_child_failure(waited)
    assert not is_errored_child_failure(EngineError("HTTP 400: Invalid availability zone az-2"))

"""When ``delete`` must cascade-delete the load balancer before ``destroy``."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from reconciler.engine import cloud_delete as engine_errored
from reconciler.engine.cloud_delete import (
    cascade_delete,
    delete_unadopted,
    needs_cascade,
    retry_destroy_after_cascade,
    unadopted_deletions,
)
from reconciler.engine.errors import UpTimeoutError
from reconciler.engine.openstack import OpenStackRestError


class FakeRest:
    """What the deletions call, scripted: the load balancer's statuses, one per read (None:
    gone), and how many 409s each child delete answers first."""

    def __init__(self, statuses: list[str | None], conflicts: int = 0) -> None:
        self.statuses = statuses
        self.conflicts = conflicts
        self.calls: list[tuple[str, ...]] = []

    def load_balancer(self, lb_id: str) -> dict[str, Any] | None:
        status = self.statuses.pop(0) if len(self.statuses) > 1 else self.statuses[0]
        return None if status is None else {"id": lb_id, "provisioning_status": status}

    def delete_load_balancer(self, lb_id: str) -> None:
        self.calls.append(("cascade", lb_id))

    def delete(self, kind: str, ident: str, *, missing_ok: bool = False) -> None:
        self.calls.append((kind, ident))
        if self.conflicts and kind in ("healthmonitors", "pools", "listeners"):
            self.conflicts -= 1
            raise OpenStackRestError("the cloud answered 409 ...", status=409)


@pytest.fixture(autouse=True)
def _short_pauses(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine_errored, "FIRST_WAIT", 0.01)
    monkeypatch.setattr(engine_errored, "MAX_WAIT", 0.01)


def test_cascade_waits_out_pending_then_asks_once_and_waits_until_gone() -> None:
    rest = FakeRest(["PENDING_UPDATE", "ACTIVE", "PENDING_DELETE", None])
    cascade_delete(rest, "lb-1", stack_name="s", timeout=10, cancelled=threading.Event())  # type: ignore[arg-type]
    assert rest.calls == [("cascade", "lb-1")]


class GoneMeanwhile(FakeRest):
    """The cloud answers 404 to the delete (it went between the read and the delete)."""

    def delete_load_balancer(self, lb_id: str) -> None:
        self.calls.append(("cascade", lb_id))
        raise OpenStackRestError("the cloud answered 404 ...", status=404)


def test_cascade_of_a_load_balancer_gone_meanwhile_is_done() -> None:
    rest = GoneMeanwhile(["ACTIVE"])  # still listed when read: only the 404 says it is gone
    cascade_delete(rest, "lb-1", stack_name="s", timeout=10, cancelled=threading.Event())  # type: ignore[arg-type]
    assert rest.calls == [("cascade", "lb-1")]


def test_a_refused_cascade_is_raised_with_the_clouds_answer() -> None:
    class Refused(FakeRest):
        def delete_load_balancer(self, lb_id: str) -> None:
            raise OpenStackRestError("the cloud answered 403 ...: Policy forbids", status=403)

    with pytest.raises(OpenStackRestError, match="Policy forbids"):
        cascade_delete(
            Refused(["ACTIVE"]), "lb-1", stack_name="s", timeout=10, cancelled=threading.Event()
        )  # type: ignore[arg-type]


def test_cascade_of_a_load_balancer_that_never_goes_is_retryable_after_the_timeout() -> None:
    rest = FakeRest(["PENDING_DELETE"])
    with pytest.raises(UpTimeoutError, match="still there"):
        cascade_delete(rest, "lb-1", stack_name="s", timeout=0.05, cancelled=threading.Event())  # type: ignore[arg-type]


def test_a_child_is_deleted_once_its_load_balancer_takes_changes_again() -> None:
    rest = FakeRest([None], conflicts=2)
    imports = {"listener-tcp-80": "li-1", "fip": "fip-1"}
    delete_unadopted(rest, imports, stack_name="s", timeout=10, cancelled=threading.Event())  # type: ignore[arg-type]
    assert rest.calls == [("listeners", "li-1")] * 3 + [("floatingips", "fip-1")]


def test_children_of_a_load_balancer_deleted_with_cascade_are_not_deleted_again() -> None:
    rest = FakeRest([None])
    imports = {"lb": "lb-1", "pool-tcp-80": "po-1", "sg": "sg-1"}
    delete_unadopted(rest, imports, stack_name="s", timeout=10, cancelled=threading.Event())  # type: ignore[arg-type]
    assert rest.calls == [("security-groups", "sg-1")]  # the load balancer was already gone


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
        (  # from the second chaos run: the provider waited 10 minutes for a lost delete
            "openstack:loadbalancer:Monitor monitor-tcp-9000 deleting (600s) error:   "
            "sdk-v2/provider2.go:571: sdk.helper_schema: Error waiting for "
            "openstack_lb_monitor_v2 eafacbb4-b8a4-407d-9a67-28efde5d90b6 to become DELETED: "
            "context deadline exceeded: provider=openstack@5.5.1",
            True,
        ),
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

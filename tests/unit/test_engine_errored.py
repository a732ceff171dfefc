"""When ``delete`` must cascade-delete the load balancer before ``destroy``."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from reconciler.engine.delete import cloud as engine_errored
from reconciler.engine.delete.cloud import (
    cascade_delete,
    delete_unadopted,
    delete_unused,
    needs_cascade,
    retry_destroy_after_cascade,
    unadopted_deletions,
)
from reconciler.engine.errors import UpTimeoutError
from reconciler.engine.openstack.client import OpenStackRestError


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


OURS = {
    "id": "fip-1",
    "description": "Floating IP for Kubernetes external service ns/a from cluster c",
}
USERS = {"id": "fip-2", "description": "the user's own"}


class ReleasedRest:
    """The last delete of a released load balancer, scripted: what each delete without cascade
    answers (None: accepted), the listeners found after a refusal, the load balancer's statuses
    for a cascade (one per read, None: gone)."""

    def __init__(
        self,
        answers: list[int | None],
        listeners: list[tuple[str, ...]] | None = None,
        statuses: list[str | None] | None = None,
    ) -> None:
        self.answers = answers
        self.listeners = listeners or []
        self.statuses = statuses or [None]
        self.calls: list[tuple[str, ...]] = []

    def floating_ips_on_port(self, port_id: str) -> list[dict[str, Any]]:
        assert port_id == "port-1"
        return [OURS, USERS]

    def delete_load_balancer(self, lb_id: str, *, cascade: bool = True) -> None:
        self.calls.append(("cascade" if cascade else "delete", lb_id))
        answer = self.answers.pop(0) if cascade is False else None
        if answer is not None:
            raise OpenStackRestError(f"the cloud answered {answer} ...", status=answer)

    def listener_tags(self, lb_id: str) -> list[tuple[str, ...]]:
        return self.listeners

    def load_balancer(self, lb_id: str) -> dict[str, Any] | None:
        status = self.statuses.pop(0) if len(self.statuses) > 1 else self.statuses[0]
        return None if status is None else {"id": lb_id, "provisioning_status": status}

    def delete(self, kind: str, ident: str, *, missing_ok: bool = False) -> None:
        assert missing_ok  # another Service leaving may have deleted it already
        self.calls.append((kind, ident))


def _unused(rest: ReleasedRest) -> bool:
    lb = {"id": "lb-1", "vip_port_id": "port-1"}
    return delete_unused(
        rest,  # type: ignore[arg-type]
        lb,
        cluster_name="c",
        stack_name="s",
        timeout=10,
        cancelled=threading.Event(),
    )


def test_an_unused_load_balancer_is_deleted_without_cascade_then_our_floating_ip() -> None:
    rest = ReleasedRest([409, 409, None])  # PENDING_* twice: asked again
    assert _unused(rest)
    assert rest.calls == [("delete", "lb-1")] * 3 + [("floatingips", "fip-1")]


def test_a_load_balancer_a_service_joined_meanwhile_stays_with_its_floating_ip() -> None:
    rest = ReleasedRest([400], listeners=[("kube_service_c_ns_joiner",)])
    assert not _unused(rest)
    assert rest.calls == [("delete", "lb-1")]


def test_children_without_a_listener_are_nobodys_and_cascaded() -> None:
    rest = ReleasedRest([400], statuses=["ACTIVE", None])
    assert _unused(rest)
    assert rest.calls == [("delete", "lb-1"), ("cascade", "lb-1"), ("floatingips", "fip-1")]


def test_a_load_balancer_another_leaver_deleted_is_left_to_it() -> None:
    rest = ReleasedRest([404])
    assert not _unused(rest)
    assert rest.calls == [("delete", "lb-1")]


def test_other_refusals_are_raised() -> None:
    with pytest.raises(OpenStackRestError, match="answered 403"):
        _unused(ReleasedRest([403]))

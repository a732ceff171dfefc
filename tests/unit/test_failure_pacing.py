"""Failures are visible and paced: what the controller does after a failed sync (retry when,
Warning or not) and the Events a Service gets, with the engine failing as the real one does
(its errors built from real runs, ``tests/unit/pulumi_failures/``) and a stand-in API server
that records writes. Pure: no threads run, no clock is read; each "attempt" is one worker turn
(:meth:`Controller.sync` then the settle)."""

from __future__ import annotations

import copy
import re
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from reconciler.config import default_config, with_overrides
from reconciler.controller.backend import Failure, failure_of
from reconciler.controller.loop import Controller, Retry, Settle, SyncOutcome, settle
from reconciler.controller.queue import Backoff, Schedule, WorkQueue
from reconciler.controller.sync_plan import Action, failure_event
from reconciler.engine.errors import (
    CloudUnavailableError,
    ConflictError,
    EngineError,
    FailureKind,
    InternalError,
    InterruptedOperationError,
    InvalidConfigError,
    NotLeaderError,
    QuotaError,
    StackLockedError,
    UpTimeoutError,
    engine_error,
)
from reconciler.engine.fleet_plan import FleetReport
from reconciler.engine.plan import StackInfo
from reconciler.engine.results import DriftReport, EnsureResult
from reconciler.model import FINALIZER, LoadBalancerSpec, ServiceRef
from tests.builders import EXAMPLE_SERVICE, example_service

TEXTS = Path(__file__).parent / "pulumi_failures"
KEY = "default/example-service"
PATH = "/api/v1/namespaces/default/services/example-service"
LB_ID = "6b2f4a1c-0000-4000-8000-000000000001"


def run_error(name: str, *, doing: str = "up", replace: Sequence[tuple[str, str]] = ()) -> str:
    text = (TEXTS / f"{name}.txt").read_text()
    for old, new in replace:
        text = text.replace(old, new)
    return text


def engine_failure(name: str, *, doing: str = "up", **kw: Any) -> EngineError:
    stack = "demo.default.example-service"
    return engine_error(run_error(name, **kw), doing=doing, subject=f"stack {stack}", stack=stack)


class StubKube:
    """The few API server calls a sync makes: Service merge patches (finalizers, annotations),
    status patches, Event creates and count patches."""

    def __init__(self, service: dict[str, Any]) -> None:
        self.service = copy.deepcopy(service)
        self.service["metadata"]["resourceVersion"] = "1"
        self.events: dict[str, dict[str, Any]] = {}  # name -> body

    def get(self, path: str) -> dict[str, Any]:
        assert path == PATH
        return copy.deepcopy(self.service)

    def patch(self, path: str, body: Any, *, kind: str = "merge") -> dict[str, Any]:
        if "/events/" in path:
            self.events[path.rsplit("/", 1)[1]].update(body)
            return {}
        if path.endswith("/status"):
            return copy.deepcopy(self.service)
        assert path == PATH, path
        meta = self.service["metadata"]
        for k, v in (body.get("metadata") or {}).items():
            if k == "annotations":
                notes = meta.setdefault("annotations", {})
                for a, value in v.items():
                    if value is None:
                        notes.pop(a, None)
                    else:
                        notes[a] = value
            elif k != "resourceVersion":
                meta[k] = v
        meta["resourceVersion"] = str(int(meta["resourceVersion"]) + 1)
        return copy.deepcopy(self.service)

    def create(self, path: str, body: Mapping[str, Any]) -> dict[str, Any]:
        assert path.endswith("/events"), path
        self.events[body["metadata"]["name"]] = dict(body)
        return dict(body)

    def warnings(self) -> list[dict[str, Any]]:
        return [e for e in self.events.values() if e["reason"] == "SyncLoadBalancerFailed"]


@dataclass
class FailingEngine:
    """Raises what it is given for ensure and delete (None: succeeds)."""

    ensure_error: Exception | None = None
    delete_error: Exception | None = None
    calls: list[str] = field(default_factory=list)

    def ensure(self, spec: LoadBalancerSpec) -> EnsureResult:
        self.calls.append("ensure")
        if self.ensure_error is not None:
            raise self.ensure_error
        outputs = {"lb_id": LB_ID, "vip_address": "10.0.0.5", "floating_ip": "172.24.4.10"}
        return EnsureResult(changed=True, spec_hash=spec.spec_hash(), outputs=outputs)

    def delete(self, service: ServiceRef, *, keep_floating_ip: bool | None = None) -> bool:
        self.calls.append("delete")
        if self.delete_error is not None:
            raise self.delete_error
        return False

    def refresh(self, service: ServiceRef) -> bool:
        return False

    def check_drift(self, service: ServiceRef) -> DriftReport:
        return DriftReport()

    def stacks(self) -> list[StackInfo]:
        return []

    def compare_fleet(self, stacks: Sequence[str]) -> FleetReport | None:
        return None  # as a backend the CLI alone reads: every stack gets its own check

    def cancel(self) -> None:
        pass

    def take_over(self) -> list[str]:
        return []


@dataclass
class World:
    kube: StubKube
    engine: FailingEngine
    controller: Controller
    now: list[float]  # the queue's clock

    def attempt(self) -> float | None:
        """One worker turn on the Service, at the time its retry is due: take the key, sync,
        settle. Returns the delay until the retry the settle scheduled (None: none)."""
        queue = self.controller.queue
        schedule = queue._schedule
        due = schedule.waiting().get(KEY)
        if due is None:
            queue.add(KEY)
        else:
            self.now[0] = due
        assert schedule.pop(now=self.now[0]) == KEY
        outcome = self.controller._sync.sync(KEY, self.kube.get(PATH))
        self.controller._settle(KEY, outcome)
        queue.done(KEY)
        scheduled = schedule.waiting().get(KEY)
        return None if scheduled is None else scheduled - self.now[0]

    def warning_messages(self) -> list[str]:
        return [e["message"] for e in self.kube.warnings()]


def world(service: dict[str, Any] | None = None, **engine: Any) -> World:
    kube = StubKube(service or EXAMPLE_SERVICE)
    failing = FailingEngine(**engine)
    controller = Controller(
        kube=kube,  # type: ignore[arg-type]
        engine=failing,
        config=with_overrides(default_config(), subnet_id="bbbbbbbb-1111-4111-8111-111111111111"),
        instance="unit",
    )
    now = [1000.0]
    # the defaults (5 s .. 300 s, retry-soon 2 s), on a clock of the test's own
    controller.queue = WorkQueue(backoff=Backoff(), clock=lambda: now[0])
    return World(kube, failing, controller, now)


def retry_delays(messages: Sequence[str]) -> list[float]:
    return [float(m) for msg in messages for m in re.findall(r"retrying in ([\d.]+)s", msg)]


# -- the decision -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("failure", "expected"),
    [
        (None, Settle(Retry.FORGET, warn=False)),
        (Failure.RETRY_SOON, Settle(Retry.SOON, warn=False)),
        (Failure.BUSY, Settle(Retry.SOON, warn=True)),
        (Failure.BACKOFF, Settle(Retry.BACKOFF, warn=True)),
        (Failure.INVALID, Settle(Retry.NONE, warn=True)),
    ],
)
def test_settle(failure: Failure | None, expected: Settle) -> None:
    assert settle(failure) == expected


def test_failure_kinds_of_the_engine_errors() -> None:
    assert failure_of(ConflictError("x")) is Failure.BUSY
    assert failure_of(InterruptedOperationError("x")) is Failure.RETRY_SOON
    for cls in (
        InvalidConfigError,
        QuotaError,
        UpTimeoutError,
        CloudUnavailableError,
        InternalError,
    ):
        assert failure_of(cls("x")) is Failure.BACKOFF, cls


def test_every_failure_kind_an_engine_error_can_name_is_a_failure() -> None:
    """The engine names its errors' kinds without importing the controller: each value is one
    of Failure's, and every EngineError class, the engine's subclasses included, has one."""
    assert set(typing.get_args(FailureKind)) <= {f.value for f in Failure}
    pending: list[type[EngineError]] = [EngineError]
    while pending:
        cls = pending.pop()
        pending += cls.__subclasses__()
        assert cls.failure_kind in typing.get_args(FailureKind), cls


# -- ensure -----------------------------------------------------------------------------------


def test_a_cloud_400_warns_on_the_first_failure_with_the_clouds_message() -> None:
    """The user's report: Octavia's 400 ``Invalid availability zone``, retried every 2-3 s for
    minutes, no Warning at all. The run is the real one (its outputs hold ``timeout_*``)."""
    w = world(ensure_error=engine_failure("replace_invalid_zone_400"))
    assert w.attempt() == 5
    assert w.warning_messages() == [
        "Error syncing load balancer: failed to ensure load balancer: up of stack "
        "demo.default.example-service failed: the cloud answered 400 to POST "
        "/load-balancer/v2.0/lbaas/loadbalancers: Validation failure: Invalid availability "
        "zone az-2.; retrying in 5s"
    ]
    assert FINALIZER in w.kube.service["metadata"]["finalizers"]


HELD = (
    "stack organization/lb-reconciler/demo.default.example-service is locked by "
    "alice@alice-laptop (pid 4242) since 2026-11-26T19:00:00+00:00, not by this controller"
)


def test_a_stack_held_by_a_person_is_a_warning_stacklocked_and_backs_off() -> None:
    """The user's report: a person's `pulumi` held the stack; the controller took the lock and
    applied the change, saying nothing. Now the engine refuses (StackLockedError) and the
    Service says who holds it, backing off; the gauge counts it until a sync gets through."""
    w = world(ensure_error=StackLockedError(HELD))
    held = "lbr_stacks_held_by_others"
    assert w.attempt() == 5
    locked = [e for e in w.kube.events.values() if e["reason"] == "StackLocked"]
    assert [e["message"] for e in locked] == [HELD + "; retrying in 5s"]
    assert locked[0]["type"] == "Warning"
    assert w.kube.warnings() == []  # not a SyncLoadBalancerFailed
    assert sample(w.controller.metrics, held) == 1
    assert w.attempt() == 10  # backoff, not retry-soon
    assert sample(w.controller.metrics, held) == 1
    w.engine.ensure_error = None
    assert w.attempt() is None
    assert sample(w.controller.metrics, held) == 0


def sample(metrics: Any, name: str) -> float:
    body, _ = metrics.render()
    values = [line.split()[-1] for line in body.decode().splitlines() if line.startswith(name)]
    assert len(values) == 1, values
    return float(values[0])


def test_retries_back_off_exponentially_to_five_minutes_and_reset_on_success() -> None:
    w = world(ensure_error=engine_failure("create_invalid_zone_400"))
    delays = [w.attempt() for _ in range(9)]
    assert delays == [5, 10, 20, 40, 80, 160, 300, 300, 300]
    assert retry_delays(w.warning_messages()) == [5, 10, 20, 40, 80, 160, 300]
    capped = next(e for e in w.kube.warnings() if e["message"].endswith("retrying in 300s"))
    assert capped["count"] == 3, "the same message again is a count, not a new Event"
    w.engine.ensure_error = None
    assert w.attempt() is None
    assert w.controller.queue.failures(KEY) == 0
    w.engine.ensure_error = engine_failure("create_invalid_zone_400")
    assert w.attempt() == 5  # from the start again


@pytest.mark.parametrize(
    "name",
    [
        "create_octavia_quota_403",
        "create_neutron_quota_409",
        "create_policy_403",
        "create_500",
        "create_connection_reset",
        "create_invalid_spec_subnet",
    ],
)
def test_every_engine_failure_warns_at_once_and_backs_off(name: str) -> None:
    w = world(ensure_error=engine_failure(name))
    assert w.attempt() == 5
    [message] = w.warning_messages()
    assert message.endswith("; retrying in 5s")
    said = str(w.engine.ensure_error).splitlines()[0]
    assert said in message, "the cloud's own message, as the engine put it"


def test_busy_warns_retries_soon_a_few_times_then_backs_off() -> None:
    """A lock held by a live operation (or Octavia's 409 while PENDING_*) clears by itself: a
    Warning at once, retries in 2 s, but only five of them until a success; then the backoff
    grows and stays growing (no new burst of 2 s retries between backoffs)."""
    w = world(ensure_error=engine_failure("up_locked"))
    delays = [w.attempt() for _ in range(9)]
    assert delays == [2, 2, 2, 2, 2, 5, 10, 20, 40]
    first = w.kube.warnings()[0]
    assert first["message"].endswith(
        "the stack is currently locked by 1 lock(s). Either wait for the other process(es) "
        "to end or delete the lock file with `pulumi cancel`.; retrying in 2s"
    )
    assert first["count"] == 5, "five equal messages are one Event with a count"
    assert retry_delays(w.warning_messages()) == [2, 5, 10, 20, 40]


def test_the_controllers_own_interruption_is_silent() -> None:
    w = world(
        ensure_error=InterruptedOperationError(
            "up of stack s was interrupted by the controller's shutdown", stack="s"
        )
    )
    assert w.attempt() == 2
    assert w.kube.warnings() == []


def test_no_warning_while_the_controller_stops() -> None:
    """Whatever a stack operation cut off by the shutdown fails with, it is not the cloud's
    doing; the next process retries and warns if the cloud still refuses."""
    w = world(ensure_error=engine_failure("create_500"))
    w.controller.stop(timeout=0.1)
    outcome = w.controller._sync.sync(KEY, w.kube.get(PATH))  # a sync under way
    assert outcome.failure is Failure.BACKOFF
    w.controller._settle(KEY, outcome)
    assert w.kube.warnings() == []


def test_an_invalid_service_is_warned_once_and_not_retried() -> None:
    bad = example_service(annotations={"loadbalancer.openstack.org/connection-limit": "lots"})
    w = world(bad)
    assert w.attempt() is None
    assert w.engine.calls == []
    [message] = w.warning_messages()
    assert "connection-limit" in message
    assert "retrying" not in message


# -- cleanup ----------------------------------------------------------------------------------


def test_cleanup_never_gives_up_and_warns_each_time_the_cloud_says_something_new() -> None:
    """A ``destroy`` answered 404 ("not found" included) is a failure like any other: the
    finalizer stays, a Warning says why, the retries back off; when the cloud's answer
    changes, a new Warning says so."""
    not_found = engine_failure(
        "destroy_pool_500",
        doing="destroy",
        replace=[
            ("but got 500 instead", "but got 404 instead"),
            ('"faultstring": "Injected fault"', '"faultstring": "Pool p could not be found."'),
        ],
    )
    w = world(example_service(finalizers=[FINALIZER], deleting=True), delete_error=not_found)
    assert [w.attempt() for _ in range(3)] == [5, 10, 20]
    assert w.kube.service["metadata"]["finalizers"] == [FINALIZER]
    messages = w.warning_messages()
    assert all(m.startswith("Error syncing load balancer: failed to delete") for m in messages)
    assert "the cloud answered 404 to DELETE /load-balancer/v2.0/lbaas/pools/" in messages[0]
    assert "Pool p could not be found." in messages[0]
    w.engine.delete_error = engine_failure("destroy_pool_500", doing="destroy")
    assert w.attempt() == 40
    assert "Injected fault; retrying in 40s" in w.warning_messages()[-1]
    w.engine.delete_error = None
    assert w.attempt() is None
    assert w.kube.service["metadata"]["finalizers"] == []
    assert w.engine.calls == ["delete"] * 5


def test_cleanup_of_a_busy_stack_also_warns() -> None:
    w = world(
        example_service(finalizers=[FINALIZER], deleting=True),
        delete_error=engine_failure("up_locked", doing="destroy"),
    )
    assert w.attempt() == 2
    [message] = w.warning_messages()
    assert "failed to delete load balancer" in message
    assert "currently locked" in message


# -- the queue and the Event ------------------------------------------------------------------


def test_retry_soon_stays_on_backoff_once_its_limit_is_reached() -> None:
    s = Schedule(backoff_policy=Backoff(soon=2, soon_limit=3))
    delays = [s.retry_soon("k", now=0) for _ in range(7)]
    assert delays == [2, 2, 2, 5, 10, 20, 40]
    s.forget("k")  # a success
    assert s.retry_soon("k", now=0) == 2


def test_retry_soon_is_bounded_by_default() -> None:
    s = Schedule()
    delays = [s.retry_soon("k", now=0) for _ in range(12)]
    assert delays.count(2) == Backoff().soon_limit == 5
    assert delays[5:] == [5, 10, 20, 40, 80, 160, 300]


def test_a_watch_event_makes_a_backing_off_key_ready_at_once() -> None:
    s = Schedule()
    for _ in range(6):
        s.backoff("k", now=0)
    assert s.pop(now=1) is None
    s.add("k")
    assert s.pop(now=1) == "k"


def test_failure_event_keeps_the_retry_time_and_the_first_line_only() -> None:
    error = "up of stack s failed: " + "x" * 3000 + "\n" + "pulumi's lines, for the log"
    event = failure_event(action=Action.ENSURE, error=error, retry_in=300)
    assert len(event.message) == 1024
    assert event.message.endswith("...; retrying in 300s")
    assert "pulumi's lines" not in event.message
    short = failure_event(action=Action.CLEANUP, error="boom\ndetails", retry_in=0.5)
    assert short.message == (
        "Error syncing load balancer: failed to delete load balancer: boom; retrying in 0.5s"
    )


# -- after the Lease is lost ---------------------------------------------------------------------


def test_an_engine_refusal_because_another_replica_leads_is_no_warning() -> None:
    w = world(ensure_error=NotLeaderError("up refused: this process no longer holds the Lease"))
    assert w.attempt() is not None  # retried soon (the process is stepping down anyway)
    assert w.warning_messages() == []


def test_a_worker_that_no_longer_leads_starts_no_sync() -> None:
    w = world()
    synced: list[str] = []

    def leading() -> bool:  # asked once, for the one key; the queue then closes
        w.controller.queue.shutdown()
        return False

    def sync(key: str) -> SyncOutcome:  # what a worker without the check would do
        synced.append(key)
        w.controller.queue.shutdown()
        return SyncOutcome(None)

    w.controller._leading = leading
    w.controller.sync = sync  # type: ignore[method-assign]
    w.controller.queue.add(KEY)
    w.controller._worker()  # takes the key, refuses it, returns at the shutdown
    assert synced == []
    assert w.engine.calls == []
    assert w.kube.events == {}  # no Event, no patch: the new leader does the work
    assert w.controller.queue.in_flight() == 0
    assert 'lbr_fenced_total{at="sync"} 1.0' in w.controller.metrics.render()[0].decode()

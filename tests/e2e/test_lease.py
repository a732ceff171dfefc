"""Leader election (:mod:`reconciler.controller.lease`) between real electors on a real
kube-apiserver.

Each test runs two electors, each with its own API connection (as two processes would), on one
Lease in its own namespace. A monitor samples both ``is_leader()`` answers in a tight loop for the
whole test and records every distinct Lease record it reads, so the tests can check:

* at no moment do both report leadership (reads alternate A, B, A, ...; "A, B, A all true" is a
  proven overlap, since one elector's leadership is one contiguous interval);
* a killed leader (stopped without releasing) is replaced only after its lease expired: the new
  holder's ``acquireTime`` is at least ``leaseDurationSeconds`` after the old holder's last
  ``renewTime`` (same host, same wall clock), which load can only make larger;
* a released lease is taken over long before it could have expired (the lease there is 60 s);
* a leader cut off from the API server steps down by itself, and is replaced after expiry.

Waits poll with generous deadlines; the only fixed wait is an observation window.
"""

from __future__ import annotations

import itertools
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar

import pytest

from reconciler.controller.kubeapi import KubeApi, KubeError, KubeUnavailableError
from reconciler.controller.kubeconfig import api_client
from reconciler.controller.lease import LeaderElector
from reconciler.controller.lease_plan import LeaseRecord, Observation, decide, micro_time
from reconciler.local.plane import LocalControlPlane

pytestmark = pytest.mark.e2e
T = TypeVar("T")
_counter = itertools.count()
LEASE = "lb-reconciler"
FAST = {"lease_duration": 3.0, "renew_deadline": 2.0, "retry_period": 0.5}


def wait_for(fn: Callable[[], T | None], *, what: str, timeout: float = 30.0) -> T:
    deadline = time.monotonic() + timeout
    last: T | None = None
    while time.monotonic() < deadline:
        last = fn()
        if last:
            return last
        time.sleep(0.02)  # poll interval; the deadline above bounds the wait
    raise AssertionError(f"timed out after {timeout} s waiting for {what}; last: {last!r}")


def parse_micro(text: str | None) -> datetime:
    assert text is not None
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%f%z")


class PartitionableKube(KubeApi):
    """A KubeApi that fails like an unreachable API server while ``cut`` is set."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.cut = threading.Event()

    def request(self, **kwargs: Any) -> dict[str, Any]:
        if self.cut.is_set():
            raise KubeUnavailableError(f"{kwargs.get('method')} {kwargs.get('path')}: partitioned")
        return super().request(**kwargs)


@dataclass
class Candidate:
    identity: str
    elector: LeaderElector
    kube: PartitionableKube
    stop: threading.Event = field(default_factory=threading.Event)
    started: list[float] = field(default_factory=list)
    stopped: list[float] = field(default_factory=list)
    thread: threading.Thread | None = None

    def halt(self) -> None:
        self.stop.set()
        if self.thread is not None:
            self.thread.join(timeout=30)
            assert not self.thread.is_alive(), f"{self.identity} did not stop"


@dataclass
class Election:
    """Candidates on one Lease, plus the monitor threads described in the module docstring."""

    plane: LocalControlPlane
    kube: KubeApi
    namespace: str
    candidates: list[Candidate] = field(default_factory=list)
    overlaps: list[str] = field(default_factory=list)
    history: list[LeaseRecord] = field(default_factory=list)
    samples: int = 0
    done: threading.Event = field(default_factory=threading.Event)
    monitors: list[threading.Thread] = field(default_factory=list)

    @property
    def path(self) -> str:
        return f"/apis/coordination.k8s.io/v1/namespaces/{self.namespace}/leases/{LEASE}"

    def add(self, name: str, **kwargs: Any) -> Candidate:
        identity = f"{name}-{uuid.uuid4().hex[:6]}"
        # one connection per elector; requests time out before the renew deadline
        kube = PartitionableKube(
            api_client=api_client(kubeconfig=self.plane.kubeconfig), request_timeout=1.5
        )
        holder: list[Candidate] = []
        elector = LeaderElector(
            kube=kube,
            namespace=self.namespace,
            name=LEASE,
            identity=identity,
            on_started_leading=lambda: holder[0].started.append(time.monotonic()),
            on_stopped_leading=lambda: holder[0].stopped.append(time.monotonic()),
            **{**FAST, **kwargs},
        )
        candidate = Candidate(identity, elector, kube)
        holder.append(candidate)
        self.candidates.append(candidate)
        return candidate

    def start(self, candidate: Candidate) -> None:
        candidate.thread = candidate.elector.start(candidate.stop)

    def leaders(self) -> list[str]:
        return [c.identity for c in self.candidates if c.elector.is_leader()]

    def lease(self) -> LeaseRecord | None:
        try:
            return LeaseRecord.of(self.kube.get(self.path))
        except KubeError as exc:
            if exc.not_found:
                return None
            raise

    def _sample(self) -> None:
        window: list[tuple[str, bool]] = []
        while not self.done.is_set():
            for c in list(self.candidates):
                window = [*window[-2:], (c.identity, c.elector.is_leader())]
                self.samples += 1
                (a, led_a), (b, led_b), (a2, led_a2) = ([("", False)] * 3 + window)[-3:]
                if a == a2 != b and led_a and led_b and led_a2:
                    self.overlaps.append(f"{a} and {b} both led at sample {self.samples}")
            time.sleep(0.001)

    def _watch_lease(self) -> None:
        while not self.done.wait(0.05):
            record = self.lease()
            if record is not None and (not self.history or self.history[-1] != record):
                self.history.append(record)

    def start_monitors(self) -> None:
        for target in (self._sample, self._watch_lease):
            thread = threading.Thread(target=target, daemon=True)
            thread.start()
            self.monitors.append(thread)

    def close(self) -> None:
        for c in self.candidates:
            c.halt()
        self.done.set()
        for thread in self.monitors:
            thread.join(timeout=10)
        for c in self.candidates:
            c.kube.close()


def assert_took_over_after_expiry(election: Election, *, old: Candidate, new: Candidate) -> None:
    """``new``'s acquireTime is a full lease duration after ``old``'s last renewTime it saw.

    The monitor may miss records, but only ever ``old``'s renewals, which makes the gap larger:
    the check cannot pass a premature takeover, and load cannot make it fail."""
    wait_for(
        lambda: any(r.holder == new.identity for r in election.history), what="new holder seen"
    )
    first_new = next(i for i, r in enumerate(election.history) if r.holder == new.identity)
    taken, last_old = election.history[first_new], election.history[first_new - 1]
    assert (last_old.holder, taken.transitions) == (old.identity, last_old.transitions + 1)
    waited = parse_micro(taken.acquire_time) - parse_micro(last_old.renew_time)
    assert waited.total_seconds() >= last_old.duration_seconds - 0.05, (
        f"{new.identity} took over {waited} after {old.identity}'s last renewal, "
        f"before its {last_old.duration_seconds} s lease expired"
    )


@pytest.fixture
def kube(control_plane: LocalControlPlane) -> Iterator[KubeApi]:
    api = KubeApi(api_client=api_client(kubeconfig=control_plane.kubeconfig))
    yield api
    api.close()


@pytest.fixture
def election(control_plane: LocalControlPlane, kube: KubeApi) -> Iterator[Election]:
    namespace = f"lease-{next(_counter)}-{uuid.uuid4().hex[:6]}"
    kube.create("/api/v1/namespaces", {"metadata": {"name": namespace}})
    e = Election(control_plane, kube, namespace)
    e.start_monitors()
    yield e
    e.close()
    assert e.samples > 100 or not e.candidates, "the monitor barely ran"
    if e.overlaps:
        pytest.fail(f"{len(e.overlaps)} samples with two leaders, first: {e.overlaps[0]}")


def test_exactly_one_of_two_electors_leads(election: Election) -> None:
    a, b = election.add("a"), election.add("b")
    election.start(a)
    election.start(b)
    winner_id = wait_for(lambda: election.leaders(), what="a leader")[0]
    winner, loser = (a, b) if winner_id == a.identity else (b, a)

    time.sleep(2 * FAST["lease_duration"])  # observation window: the winner keeps renewing

    assert election.leaders() == [winner.identity]
    assert (len(winner.started), len(winner.stopped)) == (1, 0)
    assert (loser.started, loser.stopped) == ([], [])
    record = election.lease()
    assert record is not None
    assert (record.holder, record.duration_seconds, record.transitions) == (winner.identity, 3, 0)
    assert parse_micro(record.renew_time) > parse_micro(record.acquire_time)  # renewed
    assert {r.holder for r in election.history} == {winner.identity}
    assert len({r.acquire_time for r in election.history}) == 1  # renewals keep acquireTime


def test_released_lease_is_taken_over_long_before_it_expires(election: Election) -> None:
    # a 60 s lease: only the release can explain a handover within the waits below
    slow = {"lease_duration": 60.0, "renew_deadline": 40.0, "retry_period": 0.5}
    a, b = election.add("a", **slow), election.add("b", **slow)
    election.start(a)
    wait_for(lambda: a.elector.is_leader(), what="a to lead")
    election.start(b)
    wait_for(lambda: len(election.history) >= 2, what="a to renew once")
    assert not b.elector.is_leader()

    a.halt()  # releases the lease, then calls on_stopped_leading
    assert (len(a.started), len(a.stopped)) == (1, 1)
    wait_for(lambda: b.elector.is_leader(), what="b to take the released lease", timeout=20)

    record = election.lease()
    assert record is not None
    assert (record.holder, record.duration_seconds, record.transitions) == (b.identity, 60, 1)

    b.halt()
    released = election.lease()
    assert released is not None
    assert (released.holder, released.duration_seconds, released.transitions) == ("", 1, 1)
    assert len(b.started) == len(b.stopped) == 1


def test_killed_leader_is_replaced_only_after_its_lease_expires(election: Election) -> None:
    # no release on stop: stopping the thread is a crash, as far as the Lease can tell
    a = election.add("a", release_on_cancel=False)
    b = election.add("b")
    election.start(a)
    wait_for(lambda: a.elector.is_leader(), what="a to lead")
    election.start(b)

    time.sleep(2 * FAST["lease_duration"])  # observation window: b follows while a renews
    assert election.leaders() == [a.identity]
    assert (b.started, a.stopped) == ([], [])

    a.halt()
    wait_for(lambda: b.elector.is_leader(), what="b to take over the expired lease")
    record = election.lease()
    assert record is not None
    assert (record.holder, record.transitions) == (b.identity, 1)

    assert_took_over_after_expiry(election, old=a, new=b)


def test_partitioned_leader_steps_down_and_is_replaced_after_expiry(election: Election) -> None:
    a, b = election.add("a"), election.add("b")
    election.start(a)
    wait_for(lambda: a.elector.is_leader(), what="a to lead")
    election.start(b)
    wait_for(lambda: len(election.history) >= 2, what="a to renew once")

    a.kube.cut.set()  # a can no longer renew (nor release)
    wait_for(lambda: a.stopped, what="a to give up after its renew deadline")
    assert a.thread is not None
    a.thread.join(timeout=10)
    assert not a.thread.is_alive(), "run() should return once leadership is lost"
    wait_for(lambda: b.elector.is_leader(), what="b to take over the expired lease")
    assert_took_over_after_expiry(election, old=a, new=b)
    assert (len(a.started), len(b.started), b.stopped) == (1, 1, [])


def test_a_write_based_on_a_stale_read_conflicts(election: Election) -> None:
    """The premise of the optimistic writes: a merge patch carrying an old resourceVersion
    gets 409 from the real API server, so two candidates cannot both take over one record."""
    collection = election.path.rsplit("/", 1)[0]
    wall = datetime.now(UTC)

    def decide_as(identity: str, lease: dict[str, Any] | None, seen: float) -> dict[str, Any]:
        observed = None if lease is None else Observation(LeaseRecord.of(lease), seen, "")
        d = decide(
            lease,
            name=LEASE,
            identity=identity,
            lease_duration=3.0,
            observed=observed,
            now=100.0,
            wall_now=wall,
        )
        assert d.body is not None
        return d.body

    election.kube.create(collection, decide_as("a", None, 100.0))
    current = election.kube.get(election.path)
    # both candidates read the same record, unchanged since they first saw it long ago
    b, c = decide_as("b", current, 0.0), decide_as("c", current, 0.0)
    election.kube.patch(election.path, b)
    with pytest.raises(KubeError) as caught:
        election.kube.patch(election.path, c)
    assert caught.value.conflict
    record = election.lease()
    assert record is not None
    assert (record.holder, record.transitions, record.acquire_time) == ("b", 1, micro_time(wall))

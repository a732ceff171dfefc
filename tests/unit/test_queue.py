"""The work queue's rules, with explicit ``now`` values or an injected clock: no sleeps."""

from __future__ import annotations

import threading

import pytest

from reconciler.controller.queue import Backoff, Schedule, WorkQueue


def test_add_deduplicates_and_keeps_order() -> None:
    s = Schedule()
    for key in ("a/x", "b/y", "a/x", "a/x"):
        s.add(key)
    assert s.depth() == 2
    assert s.pop(now=0) == "a/x"
    assert s.pop(now=0) == "b/y"
    assert s.pop(now=0) is None


def test_key_is_never_handed_out_twice_while_processing() -> None:
    s = Schedule()
    s.add("ns/svc")
    assert s.pop(now=0) == "ns/svc"
    s.add("ns/svc")  # a watch event during processing
    assert s.pop(now=0) is None  # not to a second worker
    assert s.processing() == {"ns/svc"}
    s.done("ns/svc")
    assert s.pop(now=0) == "ns/svc"  # processed again after: the change is seen
    s.done("ns/svc")
    assert s.pop(now=0) is None


def test_done_without_readd_does_not_requeue() -> None:
    s = Schedule()
    s.add("k")
    s.pop(now=0)
    s.done("k")
    assert s.pop(now=100) is None
    assert s.next_due(now=100) is None


@pytest.mark.parametrize(
    ("failures", "delay"),
    [(0, 5), (1, 10), (2, 20), (3, 40), (4, 80), (5, 160), (6, 300), (7, 300), (200, 300)],
)
def test_backoff_delays_are_upstreams(failures: int, delay: float) -> None:
    assert Backoff().delay(failures) == delay


def test_backoff_grows_per_key_and_resets_on_forget() -> None:
    s = Schedule()
    s.add("k")
    assert s.pop(now=0) == "k"
    assert s.backoff("k", now=0) == 5
    s.done("k")
    assert s.pop(now=4.9) is None
    assert s.next_due(now=4.9) == pytest.approx(0.1)
    assert s.pop(now=5) == "k"
    assert s.backoff("k", now=5) == 10
    s.done("k")
    assert s.pop(now=14) is None
    assert s.pop(now=15) == "k"
    assert s.failing() == 1  # one key backing off
    s.forget("k")  # success
    s.done("k")
    assert s.failures("k") == 0
    assert s.failing() == 0
    assert s.backoff("k", now=20) == 5


def test_backoff_is_per_key() -> None:
    s = Schedule()
    for _ in range(3):
        s.backoff("a", now=0)
    assert s.backoff("b", now=0) == 5
    assert s.failures("a") == 3


def test_retry_soon_does_not_grow_backoff_and_is_capped() -> None:
    s = Schedule(backoff_policy=Backoff(soon=2, soon_limit=3))
    s.backoff("k", now=0)  # one real failure: 5 s
    for i in range(3):
        assert s.retry_soon("k", now=0) == 2
        assert s.failures("k") == 1, i
        assert s.pop(now=2) == "k"
        s.done("k")
    # the fourth retry-soon in a row falls back to backoff: it grows from where it was
    assert s.retry_soon("k", now=0) == 10
    assert s.failures("k") == 2


def test_retry_soon_count_resets_on_forget() -> None:
    s = Schedule(backoff_policy=Backoff(soon=1, soon_limit=1))
    assert s.retry_soon("k", now=0) == 1
    s.forget("k")
    assert s.retry_soon("k", now=0) == 1


def test_add_makes_a_waiting_key_ready_now() -> None:
    s = Schedule()
    s.backoff("k", now=0)
    assert s.pop(now=1) is None
    s.add("k")  # a watch event is a better reason than the old failure
    assert s.pop(now=1) == "k"
    s.done("k")
    assert s.pop(now=10) is None  # the superseded retry does not fire again


def test_earliest_delay_wins() -> None:
    s = Schedule()
    s.add_after("k", delay=30, now=0)
    s.add_after("k", delay=10, now=0)
    s.add_after("k", delay=20, now=0)
    assert s.waiting() == {"k": 10}
    assert s.pop(now=9) is None
    assert s.pop(now=10) == "k"


def test_delay_while_ready_is_ignored_and_zero_delay_is_add() -> None:
    s = Schedule()
    s.add("k")
    s.add_after("k", delay=5, now=0)
    assert s.waiting() == {}
    s.add_after("j", delay=0, now=0)
    assert [s.pop(now=0), s.pop(now=0)] == ["k", "j"]


def test_retry_scheduled_while_processing_waits_for_done() -> None:
    s = Schedule()
    s.add("k")
    s.pop(now=0)
    s.backoff("k", now=0)
    assert s.pop(now=6) is None  # due, but still processing
    s.done("k")
    assert s.pop(now=6) == "k"


def test_depth_counts_ready_and_waiting() -> None:
    s = Schedule()
    s.add("a")
    s.add_after("b", delay=3, now=0)
    assert s.depth() == 2
    s.pop(now=0)
    assert s.depth() == 1


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_work_queue_get_returns_ready_key_and_times_out() -> None:
    clock = FakeClock()
    q = WorkQueue(clock=clock)
    q.add("ns/a")
    assert q.get(timeout=0) == "ns/a"
    assert q.get(timeout=0) is None
    q.done("ns/a")
    assert q.backoff("ns/a") == 5
    assert q.get(timeout=0) is None
    clock.now += 5
    assert q.get(timeout=0) == "ns/a"


def test_work_queue_shutdown_wakes_blocked_workers() -> None:
    q = WorkQueue()
    results: list[str | None] = []
    workers = [threading.Thread(target=lambda: results.append(q.get())) for _ in range(3)]
    for w in workers:
        w.start()
    q.shutdown()
    for w in workers:
        w.join(timeout=5)
        assert not w.is_alive()
    assert results == [None, None, None]
    q.add("k")  # ignored after shutdown
    assert q.depth() == 0


def test_work_queue_parallel_keys_one_worker_each() -> None:
    """Many workers, many adds: no key is ever processed by two workers at once."""
    q = WorkQueue()
    active: set[str] = set()
    lock = threading.Lock()
    overlaps: list[str] = []
    processed: list[str] = []
    gate = threading.Barrier(4, timeout=10)

    def worker() -> None:
        gate.wait()
        while (key := q.get(timeout=0.5)) is not None:
            with lock:
                if key in active:
                    overlaps.append(key)
                active.add(key)
                processed.append(key)
            q.add(key) if len(processed) < 200 else None  # re-add while processing
            with lock:
                active.discard(key)
            q.done(key)

    for i in range(20):
        q.add(f"ns/s{i % 5}")
    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert not overlaps
    assert len(processed) >= 200

"""The work queue: one key per Service, deduplicated, never in two workers at once.

The controller's unit of work is a *key* (``namespace/name``), never an event or an object: a
burst of watch events for one Service collapses into one pending key, and the worker reads the
latest state when it gets there. This is client-go's ``workqueue`` contract, which the upstream
service controller relies on, in two layers:

* :class:`Schedule` is the bookkeeping and nothing else: which keys are ready, which wait for a
  time, which are being processed, and how many times each has failed. It takes ``now`` as an
  argument and never reads a clock or sleeps, so the rules below are tested with plain numbers.
* :class:`WorkQueue` wraps it for threads: a lock, a condition to wake workers, a clock
  (injectable, ``time.monotonic`` by default) and :meth:`WorkQueue.shutdown`.

Rules:

* **Dedup.** Adding a key that is already ready does nothing. Adding a key that waits for a
  retry makes it ready now (the new event is a better reason to look than the old failure).
* **One worker per key.** A key handed to a worker is *processing* until :meth:`done`. Adding it
  meanwhile marks it *dirty*; ``done`` then makes it ready again, so the change that arrived during
  processing is seen (the worker may have read the Service before it).
* **Backoff.** :meth:`Schedule.backoff` schedules a retry after ``base * 2**failures`` seconds,
  capped (5 s .. 300 s, upstream's ``minRetryDelay``/``maxRetryDelay``), and counts a failure.
  :meth:`Schedule.forget` resets the count after a success.
* **Retry soon.** :meth:`Schedule.retry_soon` is for states that clear by themselves (an
  Octavia LB in PENDING_UPDATE, a 409 from the API server): a short fixed delay that does not grow
  the backoff. Only ``soon_limit`` of them since the key's last success; after that every
  retry-soon of the key is a backoff (growing, 5 s .. 300 s) until a success, so a state that
  never clears cannot spin every two seconds, not even in bursts between backoffs.
* **Delays keep the earliest time.** Two retries scheduled for one key keep the earlier one.

Shutdown: :meth:`WorkQueue.shutdown` wakes every waiting worker and makes :meth:`WorkQueue.get`
return None; keys being processed finish (the controller stops the engine's children separately).
"""

from __future__ import annotations

import heapq
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["Backoff", "Schedule", "WorkQueue"]


@dataclass(frozen=True)
class Backoff:
    """Retry timing. Defaults: upstream's service controller, and a 2 s retry-soon."""

    base: float = 5.0
    cap: float = 300.0
    soon: float = 2.0
    soon_limit: int = 5  # retry-soon delays per key between two successes

    def delay(self, failures: int) -> float:
        """The delay after the ``failures``-th failure in a row (0-based)."""
        if failures >= 64:  # 2**64 * 5 s is past any cap; avoid float overflow
            return self.cap
        return float(min(self.cap, self.base * (2**failures)))


@dataclass
class Schedule:
    """Queue bookkeeping over an explicit ``now``. Not thread-safe: :class:`WorkQueue` locks."""

    backoff_policy: Backoff = field(default_factory=Backoff)
    _ready: deque[str] = field(default_factory=deque)
    _ready_set: set[str] = field(default_factory=set)
    _waiting: dict[str, float] = field(default_factory=dict)  # key -> due time
    _heap: list[tuple[float, str]] = field(default_factory=list)  # may hold stale entries
    _processing: set[str] = field(default_factory=set)
    _dirty: set[str] = field(default_factory=set)
    _failures: dict[str, int] = field(default_factory=dict)
    _soon: dict[str, int] = field(default_factory=dict)

    # -- adding -------------------------------------------------------------------------------

    def add(self, key: str) -> None:
        """Make ``key`` ready now (or after its current processing ends)."""
        self._waiting.pop(key, None)
        if key in self._processing:
            self._dirty.add(key)
            return
        if key not in self._ready_set:
            self._ready.append(key)
            self._ready_set.add(key)

    def add_after(self, key: str, *, delay: float, now: float) -> None:
        """Make ``key`` ready at ``now + delay``; an earlier pending time wins."""
        if delay <= 0:
            self.add(key)
            return
        if key in self._ready_set:
            return  # it will be processed before the delay is over anyway
        due = now + delay
        current = self._waiting.get(key)
        if current is not None and current <= due:
            return
        self._waiting[key] = due
        heapq.heappush(self._heap, (due, key))

    def backoff(self, key: str, *, now: float) -> float:
        """Schedule a retry after a failure; return the delay chosen."""
        failures = self._failures.get(key, 0)
        delay = self.backoff_policy.delay(failures)
        self._failures[key] = failures + 1
        self.add_after(key, delay=delay, now=now)
        return delay

    def retry_soon(self, key: str, *, now: float) -> float:
        """Schedule a short retry that does not grow the backoff; past ``soon_limit`` of them
        since the last success (:meth:`forget`), a backoff."""
        count = self._soon.get(key, 0)
        if count >= self.backoff_policy.soon_limit:
            return self.backoff(key, now=now)
        self._soon[key] = count + 1
        delay = self.backoff_policy.soon
        self.add_after(key, delay=delay, now=now)
        return delay

    def forget(self, key: str) -> None:
        """A success: the next failure starts at the base delay again."""
        self._failures.pop(key, None)
        self._soon.pop(key, None)

    def failures(self, key: str) -> int:
        return self._failures.get(key, 0)

    def failing(self) -> int:
        """Keys whose last sync failed (backing off), until one succeeds or they are forgotten."""
        return len(self._failures)

    # -- taking -------------------------------------------------------------------------------

    def _promote(self, now: float) -> None:
        while self._heap and self._heap[0][0] <= now:
            due, key = heapq.heappop(self._heap)
            if self._waiting.get(key) != due:
                continue  # superseded by an earlier time or by add()
            del self._waiting[key]
            self.add(key)

    def pop(self, *, now: float) -> str | None:
        """The next ready key, now marked processing; None if nothing is ready."""
        self._promote(now)
        if not self._ready:
            return None
        key = self._ready.popleft()
        self._ready_set.discard(key)
        self._processing.add(key)
        return key

    def done(self, key: str) -> None:
        """Processing of ``key`` ended; if it was added meanwhile, it is ready again."""
        self._processing.discard(key)
        if key in self._dirty:
            self._dirty.discard(key)
            self.add(key)

    def next_due(self, *, now: float) -> float | None:
        """Seconds until something becomes ready: 0 if ready now, None if nothing is scheduled."""
        self._promote(now)
        if self._ready:
            return 0.0
        while self._heap and self._waiting.get(self._heap[0][1]) != self._heap[0][0]:
            heapq.heappop(self._heap)
        if not self._heap:
            return None
        return max(0.0, self._heap[0][0] - now)

    # -- inspection ---------------------------------------------------------------------------

    def depth(self) -> int:
        """Keys ready or waiting (not those being processed): the queue-depth metric."""
        return len(self._ready_set) + len(self._waiting)

    def processing(self) -> frozenset[str]:
        return frozenset(self._processing)

    def waiting(self) -> dict[str, float]:
        return dict(self._waiting)


class WorkQueue:
    """A thread-safe :class:`Schedule` with blocking :meth:`get` and :meth:`shutdown`."""

    def __init__(
        self, *, backoff: Backoff | None = None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._schedule = Schedule(backoff_policy=backoff or Backoff())
        self._clock = clock
        self._cond = threading.Condition()
        self._closed = False

    def add(self, key: str) -> None:
        with self._cond:
            if not self._closed:
                self._schedule.add(key)
                self._cond.notify()

    def add_after(self, key: str, *, delay: float) -> None:
        with self._cond:
            if not self._closed:
                self._schedule.add_after(key, delay=delay, now=self._clock())
                self._cond.notify()

    def backoff(self, key: str) -> float:
        with self._cond:
            delay = self._schedule.backoff(key, now=self._clock())
            self._cond.notify()
            return delay

    def retry_soon(self, key: str) -> float:
        with self._cond:
            delay = self._schedule.retry_soon(key, now=self._clock())
            self._cond.notify()
            return delay

    def forget(self, key: str) -> None:
        with self._cond:
            self._schedule.forget(key)

    def done(self, key: str) -> None:
        with self._cond:
            self._schedule.done(key)
            self._cond.notify()

    def get(self, *, timeout: float | None = None) -> str | None:
        """Block until a key is ready (returned, now processing), shutdown or ``timeout``: None."""
        deadline = None if timeout is None else self._clock() + timeout
        with self._cond:
            while not self._closed:
                now = self._clock()
                key = self._schedule.pop(now=now)
                if key is not None:
                    return key
                wait = self._schedule.next_due(now=now)
                if deadline is not None:
                    left = deadline - now
                    if left <= 0:
                        return None
                    wait = left if wait is None else min(wait, left)
                self._cond.wait(timeout=wait)
            return None

    def shutdown(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    @property
    def closed(self) -> bool:
        with self._cond:
            return self._closed

    def depth(self) -> int:
        with self._cond:
            return self._schedule.depth()

    def failures(self, key: str) -> int:
        with self._cond:
            return self._schedule.failures(key)

    def failing(self) -> int:
        with self._cond:
            return self._schedule.failing()

    def in_flight(self) -> int:
        """Keys being processed by a worker now."""
        with self._cond:
            return len(self._schedule.processing())

    def idle(self) -> bool:
        """Nothing ready, waiting or being processed."""
        with self._cond:
            return self._schedule.depth() == 0 and not self._schedule.processing()

"""Leader election on a ``coordination.k8s.io/v1`` Lease, after client-go's ``leaderelection``.

Decisions are pure (:func:`decide`, :func:`release_body`, :func:`validate_timings`): they take the
Lease as the API returned it (``None`` when absent), our identity, what we observed before and the
time, and say what to write. :class:`LeaderElector` is the thin I/O loop around them.

The algorithm (``tryAcquireOrRenew`` in client-go), run by every candidate:

* no Lease: create it naming us (a concurrent creator gets 409 AlreadyExists);
* the Lease names us: renew (new ``renewTime``, same ``acquireTime`` and ``leaseTransitions``);
* it names someone else: we remember the record and the *local monotonic time we first saw it*.
  The holder counts as alive until that record has stayed unchanged for its
  ``leaseDurationSeconds`` on our own clock. ``renewTime`` is never compared with our clock, so
  skew between machines' wall clocks does not matter (only the rate at which clocks tick does);
* it names nobody (released) or has expired by that measure: take it over, with
  ``acquireTime`` = now and ``leaseTransitions`` + 1.

Every write is a merge patch carrying ``metadata.resourceVersion``, so it succeeds only if nobody
wrote since our read (409 otherwise, like client-go's Update). Candidates poll every
``retry_period`` x (1 + up to 1.2 jitter); the leader renews every ``retry_period``. We advertise
``leaseDurationSeconds`` = ``lease_duration`` rounded up, never less than we rely on.

Timing guarantees, assuming only electors write the Lease and clocks tick at the same rate:

* Safety: :meth:`LeaderElector.is_leader` is true only until ``renew_deadline`` after the *start*
  of our last successful write; the renew loop gives up leadership at that moment (client-go
  cancels a renewal at its deadline). Another candidate takes over only ``lease_duration`` after
  it saw that write, so, as ``renew_deadline < lease_duration``, two electors never lead at once
  (unless a process freezes between checking ``is_leader()`` and acting on it).
* Liveness: a candidate sees the leader's last renewal within one poll, waits ``lease_duration``
  and takes over at its next poll: at most ``lease_duration + 4.4 x retry_period`` after the
  leader stopped renewing, typically about ``lease_duration + 2 x retry_period``. A released
  Lease (empty holder) is taken over at the next poll, within ``2.2 x retry_period``.

**Who held it.** Each replica, as it takes (or first renews) the Lease, adds itself to the
annotation ``lb-reconciler.io/holders`` (:mod:`.lease_holders`): its identity and the hostname
its ``pulumi`` children write into their stack locks. The leader reads it to tell the locks of
its cluster's other replicas from anyone else's (:mod:`reconciler.engine.state.lock_plan`).

On stop (or loss) the elector releases the Lease first, when ``release_on_cancel``, and then
calls ``on_stopped_leading``, as client-go does: ``is_leader()`` is already false then, but work
still in flight may overlap a successor's start. ``on_started_leading`` runs on the elector's
thread and must return promptly (start threads). Give the elector a :class:`KubeApi` whose
``request_timeout`` is below ``renew_deadline``: a hanging request delays ``on_stopped_leading``
(``is_leader()`` turns false on time anyway).
"""

from __future__ import annotations

import logging
import math
import random
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import Enum
from typing import Any

from reconciler.controller.kubeapi import KubeApi, KubeError, KubeUnavailableError
from reconciler.controller.lease_holders import (
    HOLDERS,
    Holder,
    holders_json,
    holders_of,
    with_holder,
)

__all__ = [
    "HOLDERS",
    "JITTER_FACTOR",
    "Action",
    "Decision",
    "Holder",
    "LeaderElector",
    "LeaseRecord",
    "Observation",
    "decide",
    "micro_time",
    "release_body",
    "validate_timings",
]

_log = logging.getLogger(__name__)
JITTER_FACTOR = 1.2  # client-go's JitterFactor: waits between candidate polls are [1, 2.2) x retry


def validate_timings(lease_duration: float, renew_deadline: float, retry_period: float) -> None:
    """client-go's ``NewLeaderElector`` checks; raises ValueError naming the broken rule."""
    if lease_duration < 1:
        raise ValueError(f"lease_duration must be at least 1 second, got {lease_duration}")
    if renew_deadline <= 0 or retry_period <= 0:
        raise ValueError("renew_deadline and retry_period must be greater than zero")
    if lease_duration <= renew_deadline:
        raise ValueError(
            f"lease_duration ({lease_duration}) must be greater than "
            f"renew_deadline ({renew_deadline})"
        )
    if renew_deadline <= JITTER_FACTOR * retry_period:
        raise ValueError(
            f"renew_deadline ({renew_deadline}) must be greater than "
            f"retry_period x {JITTER_FACTOR} ({JITTER_FACTOR * retry_period:g})"
        )


def micro_time(when: datetime) -> str:
    """A Kubernetes MicroTime: RFC 3339 in UTC with microseconds."""
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True)
class LeaseRecord:
    """The Lease's spec fields that make up client-go's LeaderElectionRecord."""

    holder: str = ""
    duration_seconds: int = 0
    acquire_time: str | None = None
    renew_time: str | None = None
    transitions: int = 0

    @classmethod
    def of(cls, lease: Mapping[str, Any]) -> LeaseRecord:
        spec = lease.get("spec") or {}
        return cls(
            holder=str(spec.get("holderIdentity") or ""),
            duration_seconds=int(spec.get("leaseDurationSeconds") or 0),
            acquire_time=spec.get("acquireTime"),
            renew_time=spec.get("renewTime"),
            transitions=int(spec.get("leaseTransitions") or 0),
        )

    def spec(self) -> dict[str, Any]:
        return {
            "holderIdentity": self.holder,
            "leaseDurationSeconds": self.duration_seconds,
            "acquireTime": self.acquire_time,
            "renewTime": self.renew_time,
            "leaseTransitions": self.transitions,
        }


@dataclass(frozen=True)
class Observation:
    """The last record we saw, since when (local monotonic time), at which resourceVersion."""

    record: LeaseRecord
    seen_at: float
    resource_version: str

    def expired(self, now: float) -> bool:
        return now >= self.seen_at + self.record.duration_seconds


class Action(Enum):
    CREATE = "create"  # no Lease yet: POST the body
    TAKE_OVER = "take over"  # released or expired: merge-patch the body
    RENEW = "renew"  # ours: merge-patch the body
    FOLLOW = "follow"  # someone else holds a live lease: write nothing


@dataclass(frozen=True)
class Decision:
    action: Action
    observation: Observation | None  # what to remember (before our write, if any)
    body: dict[str, Any] | None  # POST body (CREATE) or merge patch (TAKE_OVER, RENEW)
    reason: str


def decide(
    lease: Mapping[str, Any] | None,
    *,
    name: str,
    identity: str,
    lease_duration: float,
    observed: Observation | None,
    now: float,
    wall_now: datetime,
    hostname: str = "",
) -> Decision:
    """What to do with ``lease`` (``None``: absent). ``now`` is the local monotonic time.
    ``hostname``: what this replica's ``pulumi`` children write into stack locks; given, a
    write also records us among the Lease's holders (:data:`HOLDERS`) when it does not yet."""
    stamp = micro_time(wall_now)
    duration = math.ceil(lease_duration)  # never advertise less than we rely on
    holders = holders_of(lease)
    added = with_holder(holders, Holder(identity, hostname)) if hostname else holders
    annotations = {HOLDERS: holders_json(added)} if added != holders else {}
    if lease is None:
        mine = LeaseRecord(identity, duration, stamp, stamp, 0)
        meta: dict[str, Any] = {"name": name}
        if annotations:
            meta["annotations"] = annotations
        body = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": meta,
            "spec": mine.spec(),
        }
        return Decision(Action.CREATE, None, body, "no lease")
    record = LeaseRecord.of(lease)
    rv = str((lease.get("metadata") or {}).get("resourceVersion") or "")
    if observed is None or observed.record != record:
        seen = Observation(record, now, rv)  # the clock starts when we see a change
    else:
        seen = Observation(record, observed.seen_at, rv)
    if record.holder == identity:
        action, reason = Action.RENEW, "held by us"
        mine = LeaseRecord(identity, duration, record.acquire_time, stamp, record.transitions)
    elif record.holder and not seen.expired(now):
        return Decision(Action.FOLLOW, seen, None, f"held by {record.holder}, not expired")
    else:
        action = Action.TAKE_OVER
        reason = f"expired (held by {record.holder})" if record.holder else "released"
        mine = LeaseRecord(identity, duration, stamp, stamp, record.transitions + 1)
    metadata: dict[str, Any] = {"resourceVersion": rv}
    if annotations:
        metadata["annotations"] = annotations
    body = {"metadata": metadata, "spec": mine.spec()}
    return Decision(action, seen, body, reason)


def release_body(
    observed: Observation | None, *, identity: str, wall_now: datetime
) -> dict[str, Any] | None:
    """client-go's release: empty holder, 1 s duration. ``None`` when the lease is not ours."""
    if observed is None or observed.record.holder != identity:
        return None
    stamp = micro_time(wall_now)
    record = LeaseRecord("", 1, stamp, stamp, observed.record.transitions)
    return {"metadata": {"resourceVersion": observed.resource_version}, "spec": record.spec()}


class LeaderElector:
    """Campaigns for one Lease, then renews it; see the module docstring for the guarantees."""

    def __init__(
        self,
        *,
        kube: KubeApi,
        namespace: str,
        name: str,
        identity: str,
        on_started_leading: Callable[[], None],
        on_stopped_leading: Callable[[], None],
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
        release_on_cancel: bool = True,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        hostname: str = "",
    ) -> None:
        validate_timings(lease_duration, renew_deadline, retry_period)
        if not (namespace and name and identity):
            raise ValueError("namespace, name and identity must not be empty")
        self._kube, self._identity = kube, identity
        self._path = f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}"
        self._name, self._lease_duration = name, lease_duration
        self._renew_deadline, self._retry_period = renew_deadline, retry_period
        self._on_started, self._on_stopped = on_started_leading, on_stopped_leading
        self._release_on_cancel = release_on_cancel
        self._clock, self._wall_clock = clock, wall_clock
        self._hostname = hostname  # recorded among the Lease's holders (HOLDERS)
        self._holders: tuple[Holder, ...] = ()  # as the Lease named them at our last write
        self._observed: Observation | None = None
        self._valid_until: float | None = None  # leading until then (monotonic), unless renewed
        self._extra = {"lease": f"{namespace}/{name}", "identity": identity}

    def is_leader(self) -> bool:
        until = self._valid_until
        return until is not None and self._clock() < until

    def remaining(self) -> float:
        """Seconds until :meth:`is_leader` turns false unless the Lease is renewed first (0
        when not leading): a write that cannot end before then must not start."""
        until = self._valid_until
        return max(0.0, until - self._clock()) if until is not None else 0.0

    def epoch(self) -> int:
        """The Lease's ``leaseTransitions`` as we hold it: one more at every change of holder,
        so it names this leader's term (for the log of every backend write)."""
        observed = self._observed
        return observed.record.transitions if observed is not None else 0

    def replica_hosts(self) -> frozenset[str]:
        """The hostnames of the Lease's other holders (:data:`HOLDERS`), as it named them at
        our last write: the replicas whose stack locks are stale while we lead."""
        return frozenset(h.hostname for h in self._holders if h.identity != self._identity)

    def start(self, stop: threading.Event) -> threading.Thread:
        thread = threading.Thread(
            target=self.run, args=(stop,), name=f"leader-elector-{self._name}", daemon=True
        )
        thread.start()
        return thread

    def run(self, stop: threading.Event) -> None:
        """Campaign until leading, lead until ``stop`` is set or renewal fails, then return."""
        self._observed = None
        if not self._acquire(stop):
            return
        try:
            self._on_started()
            self._renew(stop)
        finally:
            self._valid_until = None
            if self._release_on_cancel:
                self._release()
            _log.info("stopped leading", extra=self._extra)
            self._on_stopped()

    def _acquire(self, stop: threading.Event) -> bool:
        _log.info("campaigning for the lease", extra=self._extra)
        while not stop.is_set():
            started = self._clock()
            if self._try_acquire_or_renew():
                self._valid_until = started + self._renew_deadline
                _log.info("became leader", extra=self._extra)
                return True
            stop.wait(self._retry_period * (1 + random.random() * JITTER_FACTOR))
        return False

    def _renew(self, stop: threading.Event) -> None:
        while not stop.wait(self._retry_period):
            started = self._clock()
            until = self._valid_until
            ok = until is not None and started < until and self._try_acquire_or_renew()
            if until is None or self._clock() >= until:
                reason = "renew deadline passed"
            elif ok:
                self._valid_until = started + self._renew_deadline
                continue
            elif self._observed is not None and self._observed.record.holder != self._identity:
                reason = f"lease taken by {self._observed.record.holder or 'nobody'}"
            else:
                continue  # failed, but still within the deadline: retry
            self._valid_until = None
            _log.warning("lost leadership", extra={**self._extra, "reason": reason})
            return

    def _try_acquire_or_renew(self) -> bool:
        try:
            try:
                lease: dict[str, Any] | None = self._kube.get(self._path)
            except KubeError as exc:
                if not exc.not_found:
                    raise
                lease = None
            decision = decide(
                lease,
                name=self._name,
                identity=self._identity,
                lease_duration=self._lease_duration,
                observed=self._observed,
                now=self._clock(),
                wall_now=self._wall_clock(),
                hostname=self._hostname,
            )
            self._observed = decision.observation
            if decision.body is None:
                _log.debug("following", extra={**self._extra, "reason": decision.reason})
                return False
            if decision.action is Action.CREATE:
                written = self._kube.create(self._path.rsplit("/", 1)[0], decision.body)
            else:
                written = self._kube.patch(self._path, decision.body)
        except (KubeError, KubeUnavailableError) as exc:
            level = logging.DEBUG if isinstance(exc, KubeError) and exc.conflict else logging.INFO
            _log.log(level, "lease attempt failed", extra={**self._extra, "error": str(exc)})
            return False
        rv = str(written.get("metadata", {}).get("resourceVersion") or "")
        self._observed = Observation(LeaseRecord.of(written), self._clock(), rv)
        self._holders = holders_of(written)
        return True

    def _release(self) -> None:
        body = release_body(self._observed, identity=self._identity, wall_now=self._wall_clock())
        if body is None:
            return
        try:
            written = self._kube.patch(self._path, body)
        except (KubeError, KubeUnavailableError) as exc:
            _log.warning("lease release failed", extra={**self._extra, "error": str(exc)})
            return
        rv = str(written.get("metadata", {}).get("resourceVersion") or "")
        self._observed = Observation(LeaseRecord.of(written), self._clock(), rv)
        _log.info("released the lease", extra=self._extra)

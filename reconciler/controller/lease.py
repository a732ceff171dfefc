"""Leader election on a ``coordination.k8s.io/v1`` Lease, after client-go's ``leaderelection``.

Decisions are pure (:mod:`.lease_plan`: :func:`decide`, :func:`release_body`,
:func:`validate_timings`): they take the Lease as the API returned it (``None`` when absent), our
identity, what we observed before and the time, and say what to write. :class:`LeaderElector`
is the thin I/O loop around them.

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
import random
import threading
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from reconciler.controller.kubeapi import KubeApi, KubeError, KubeUnavailableError
from reconciler.controller.lease_holders import Holder, holders_of
from reconciler.controller.lease_plan import (
    JITTER_FACTOR,
    Action,
    LeaseRecord,
    Observation,
    decide,
    release_body,
    validate_timings,
)

__all__ = ["LeaderElector"]

_log = logging.getLogger(__name__)


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
        self._ours: dict[str, Any] | None = None  # the Lease as our last write returned it
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
        # client-go's fast path: while leading, renew over the Lease our last write returned,
        # without reading it first (half the requests); its resourceVersion fails the patch if
        # anyone wrote since, and any failure falls back to reading the Lease
        ours, self._ours = self._ours, None
        if ours is not None and self.is_leader():
            try:
                return self._decide_and_write(ours)
            except (KubeError, KubeUnavailableError) as exc:
                _log.debug(
                    "renewal without a read failed", extra={**self._extra, "error": str(exc)}
                )
        try:
            try:
                lease: dict[str, Any] | None = self._kube.get(self._path)
            except KubeError as exc:
                if not exc.not_found:
                    raise
                lease = None
            return self._decide_and_write(lease)
        except (KubeError, KubeUnavailableError) as exc:
            level = logging.DEBUG if isinstance(exc, KubeError) and exc.conflict else logging.INFO
            _log.log(level, "lease attempt failed", extra={**self._extra, "error": str(exc)})
            return False

    def _decide_and_write(self, lease: Mapping[str, Any] | None) -> bool:
        """Decide over ``lease`` (None: absent) and write what the decision says; whether we
        hold the Lease now. Raises what the API server answered."""
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
        rv = str(written.get("metadata", {}).get("resourceVersion") or "")
        self._observed = Observation(LeaseRecord.of(written), self._clock(), rv)
        self._holders = holders_of(written)
        self._ours = written
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

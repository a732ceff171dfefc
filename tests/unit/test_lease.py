"""The pure decisions of :mod:`reconciler.controller.lease`: no API server, no threads, no sleeps.

Table-driven cases for each branch of ``decide`` (absent, follow, expired, ours, released),
``release_body`` and ``validate_timings``; hypothesis properties for the expiry rule and the
written bodies; and a simulated world (virtual time, an in-memory Lease with resourceVersions)
where two electors following the decisions and the renew-deadline rule never lead at once.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone
from typing import Any, cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reconciler.controller.kubeapi import KubeApi, KubeError
from reconciler.controller.lease import LeaderElector
from reconciler.controller.lease_holders import (
    HOLDERS as HOLDERS_NOTE,
)
from reconciler.controller.lease_holders import (
    MAX_HOLDERS,
    Holder,
    holders_json,
    holders_of,
    with_holder,
)
from reconciler.controller.lease_plan import (
    Action,
    LeaseRecord,
    Observation,
    decide,
    micro_time,
    release_body,
    validate_timings,
)

WALL = datetime(2026, 11, 22, 10, 0, 0, 123456, tzinfo=UTC)
STAMP = "2026-11-22T10:00:00.123456Z"
OLD = "2026-11-22T09:00:00.000000Z"
ME, OTHER = "me", "other"


def lease(
    holder: str | None,
    *,
    rv: str = "7",
    duration: int | None = 15,
    transitions: int | None = 3,
    renew: str = OLD,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"acquireTime": OLD, "renewTime": renew}
    if holder is not None:
        spec["holderIdentity"] = holder
    if duration is not None:
        spec["leaseDurationSeconds"] = duration
    if transitions is not None:
        spec["leaseTransitions"] = transitions
    return {"metadata": {"name": "lb", "namespace": "ns", "resourceVersion": rv}, "spec": spec}


def run_decide(
    current: dict[str, Any] | None,
    *,
    observed: Observation | None = None,
    now: float = 1000.0,
    lease_duration: float = 15.0,
    identity: str = ME,
    hostname: str = "",
) -> Any:
    return decide(
        current,
        name="lb",
        identity=identity,
        lease_duration=lease_duration,
        observed=observed,
        now=now,
        wall_now=WALL,
        hostname=hostname,
    )


def seen(current: dict[str, Any], at: float, rv: str = "7") -> Observation:
    return Observation(LeaseRecord.of(current), at, rv)


# -- decide: one case per branch --------------------------------------------------------------


def test_absent_lease_is_created_naming_us() -> None:
    d = run_decide(None)
    assert d.action is Action.CREATE
    assert d.observation is None
    assert d.body == {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "lb"},
        "spec": {
            "holderIdentity": ME,
            "leaseDurationSeconds": 15,
            "acquireTime": STAMP,
            "renewTime": STAMP,
            "leaseTransitions": 0,
        },
    }


FOLLOW_CASES = [
    # (case, lease, observation as (seen_at, rv) of the same record or None, now)
    ("first sight", lease(OTHER), None, 1000.0),
    ("first sight of an old renewTime (skew)", lease(OTHER, renew="1970-01-01T00:00:00Z"), None, 0),
    ("unchanged, just before expiry", lease(OTHER), (985.01, "7"), 1000.0),
    ("unchanged, short lease", lease(OTHER, duration=1), (999.5, "7"), 1000.0),
]


@pytest.mark.parametrize(
    ("current", "observed_at", "now"),
    [c[1:] for c in FOLLOW_CASES],
    ids=[c[0] for c in FOLLOW_CASES],
)
def test_live_lease_of_another_is_followed(
    current: dict[str, Any], observed_at: tuple[float, str] | None, now: float
) -> None:
    observed = None if observed_at is None else seen(current, *observed_at)
    d = run_decide(current, observed=observed, now=now)
    assert d.action is Action.FOLLOW
    assert d.body is None
    assert d.observation == seen(current, observed_at[0] if observed_at else now)


def test_a_renewal_restarts_the_local_clock() -> None:
    before = lease(OTHER, rv="7")
    after = lease(OTHER, rv="8", renew="2026-11-22T09:00:02.000000Z")
    d = run_decide(after, observed=seen(before, 0.0), now=1000.0)
    assert d.action is Action.FOLLOW
    assert d.observation == Observation(LeaseRecord.of(after), 1000.0, "8")


def test_same_record_new_resource_version_keeps_the_clock() -> None:
    current = lease(OTHER, rv="9")  # e.g. someone edited a label
    d = run_decide(current, observed=seen(current, 990.0, rv="7"), now=1000.0)
    assert d.action is Action.FOLLOW
    assert d.observation == Observation(LeaseRecord.of(current), 990.0, "9")


TAKE_OVER_CASES = [
    ("expired exactly", lease(OTHER), (985.0, "7"), 1000.0, 4),
    ("expired long ago", lease(OTHER), (0.0, "7"), 1000.0, 4),
    ("released", lease("", duration=1), None, 1000.0, 4),
    ("released, holder absent", lease(None), None, 1000.0, 4),
    ("no duration, no transitions", lease(OTHER, duration=None, transitions=None), None, 1.0, 1),
]


@pytest.mark.parametrize(
    ("current", "observed_at", "now", "transitions"),
    [c[1:] for c in TAKE_OVER_CASES],
    ids=[c[0] for c in TAKE_OVER_CASES],
)
def test_expired_or_released_lease_is_taken_over(
    current: dict[str, Any], observed_at: tuple[float, str] | None, now: float, transitions: int
) -> None:
    observed = None if observed_at is None else seen(current, *observed_at)
    d = run_decide(current, observed=observed, now=now)
    assert d.action is Action.TAKE_OVER
    assert d.body == {
        "metadata": {"resourceVersion": "7"},
        "spec": {
            "holderIdentity": ME,
            "leaseDurationSeconds": 15,
            "acquireTime": STAMP,
            "renewTime": STAMP,
            "leaseTransitions": transitions,
        },
    }


@pytest.mark.parametrize("observed_at", [None, 0.0, 999.0], ids=["first sight", "old", "recent"])
def test_our_lease_is_renewed_keeping_acquire_time(observed_at: float | None) -> None:
    current = lease(ME, duration=30)
    observed = None if observed_at is None else seen(current, observed_at)
    d = run_decide(current, observed=observed, now=1000.0)
    assert d.action is Action.RENEW
    assert d.body == {
        "metadata": {"resourceVersion": "7"},
        "spec": {
            "holderIdentity": ME,
            "leaseDurationSeconds": 15,
            "acquireTime": OLD,
            "renewTime": STAMP,
            "leaseTransitions": 3,
        },
    }


def test_fractional_lease_duration_is_rounded_up() -> None:
    d = run_decide(None, lease_duration=2.5)
    assert d.body is not None
    assert d.body["spec"]["leaseDurationSeconds"] == 3


@pytest.mark.parametrize(
    ("when", "text"),
    [
        (WALL, STAMP),
        (datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC), "2026-01-02T03:04:05.000000Z"),
        (
            datetime(2026, 1, 2, 5, 4, 5, 7, tzinfo=timezone(timedelta(hours=2))),
            "2026-01-02T03:04:05.000007Z",
        ),
    ],
)
def test_micro_time(when: datetime, text: str) -> None:
    assert micro_time(when) == text


# -- release -----------------------------------------------------------------------------------


def test_release_clears_the_holder_and_keeps_transitions() -> None:
    observed = seen(lease(ME), 1000.0, rv="12")
    assert release_body(observed, identity=ME, wall_now=WALL) == {
        "metadata": {"resourceVersion": "12"},
        "spec": {
            "holderIdentity": "",
            "leaseDurationSeconds": 1,
            "acquireTime": STAMP,
            "renewTime": STAMP,
            "leaseTransitions": 3,
        },
    }


@pytest.mark.parametrize("observed", [None, seen(lease(OTHER), 1.0), seen(lease(""), 1.0)])
def test_release_of_a_lease_not_ours_writes_nothing(observed: Observation | None) -> None:
    assert release_body(observed, identity=ME, wall_now=WALL) is None


def test_a_released_lease_is_taken_over_at_once() -> None:
    body = release_body(seen(lease(OTHER), 0.0), identity=OTHER, wall_now=WALL)
    assert body is not None
    released = {"metadata": {"resourceVersion": "8"}, "spec": body["spec"]}
    assert run_decide(released, now=5.0).action is Action.TAKE_OVER


# -- validation --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("timings", "message"),
    [
        ((10.0, 10.0, 2.0), "lease_duration (10.0) must be greater than renew_deadline (10.0)"),
        ((5.0, 10.0, 2.0), "must be greater than renew_deadline"),
        ((15.0, 2.4, 2.0), "renew_deadline (2.4) must be greater than retry_period x 1.2 (2.4)"),
        ((15.0, 10.0, 9.0), "retry_period x 1.2"),
        ((0.5, 0.4, 0.1), "lease_duration must be at least 1 second"),
        ((15.0, 0.0, 2.0), "greater than zero"),
        ((15.0, 10.0, -1.0), "greater than zero"),
    ],
)
def test_invalid_timings_are_rejected(timings: tuple[float, float, float], message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        validate_timings(*timings)


@pytest.mark.parametrize("timings", [(15.0, 10.0, 2.0), (3.0, 2.0, 0.5), (1.0, 0.5, 0.4)])
def test_valid_timings_pass(timings: tuple[float, float, float]) -> None:
    validate_timings(*timings)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"identity": ""}, "must not be empty"),
        ({"name": ""}, "must not be empty"),
        ({"renew_deadline": 20.0}, "greater than renew_deadline"),
    ],
)
def test_elector_validates_its_arguments(overrides: dict[str, Any], message: str) -> None:
    args: dict[str, Any] = {
        "kube": cast(KubeApi, object()),
        "namespace": "ns",
        "name": "lb",
        "identity": ME,
        "on_started_leading": lambda: None,
        "on_stopped_leading": lambda: None,
        **overrides,
    }
    with pytest.raises(ValueError, match=message):
        LeaderElector(**args)


# -- properties --------------------------------------------------------------------------------

HOLDERS = st.sampled_from([OTHER, "", ME])


@given(
    holder=HOLDERS,
    duration=st.integers(0, 120),
    transitions=st.integers(0, 1000),
    seen_at=st.floats(0, 1e6),
    elapsed=st.floats(0, 200),
)
def test_expiry_is_judged_by_local_observation_only(
    holder: str, duration: int, transitions: int, seen_at: float, elapsed: float
) -> None:
    current = lease(holder, duration=duration, transitions=transitions)
    d = run_decide(current, observed=seen(current, seen_at), now=seen_at + elapsed)
    assert d.observation is not None
    assert d.observation.seen_at == seen_at
    if holder == ME:
        expected = Action.RENEW
    elif holder and seen_at + elapsed < seen_at + duration:
        expected = Action.FOLLOW
    else:
        expected = Action.TAKE_OVER
    assert d.action is expected
    if d.body is not None:
        spec = d.body["spec"]
        assert spec["holderIdentity"] == ME
        assert spec["renewTime"] == STAMP
        assert d.body["metadata"] == {"resourceVersion": "7"}
        grew = 0 if holder == ME else 1
        assert spec["leaseTransitions"] == transitions + grew
        assert spec["acquireTime"] == (OLD if holder == ME else STAMP)


class World:
    """Two electors on one in-memory Lease in virtual time, each step a whole try (get+write).

    Each elector follows what ``LeaderElector`` does: on a successful write it leads until
    ``renew_deadline`` after the attempt; a renewal attempted after that point does not count
    (the elector has given up). A dead elector never acts again; a leader may release."""

    L, R = 3.0, 2.0

    def __init__(self) -> None:
        self.lease: dict[str, Any] | None = None
        self.rv = 0
        self.now = 0.0
        self.observed: dict[str, Observation | None] = {"a": None, "b": None}
        self.until: dict[str, float | None] = {"a": None, "b": None}
        self.dead: set[str] = set()

    def leaders(self) -> list[str]:
        return [who for who, until in self.until.items() if until is not None and self.now < until]

    def write(self, who: str, body: dict[str, Any], *, create: bool) -> bool:
        expected = None if create else body["metadata"]["resourceVersion"]
        current = None if self.lease is None else self.lease["metadata"]["resourceVersion"]
        if expected != current:
            return False  # 409
        self.rv += 1
        self.lease = {"metadata": {"resourceVersion": str(self.rv)}, "spec": dict(body["spec"])}
        self.observed[who] = Observation(LeaseRecord.of(self.lease), self.now, str(self.rv))
        return True

    def attempt(self, who: str) -> None:
        until = self.until[who]
        if who in self.dead or (until is not None and self.now >= until):
            self.until[who] = None  # gave up leadership
            return
        d = decide(
            self.lease,
            name="lb",
            identity=who,
            lease_duration=self.L,
            observed=self.observed[who],
            now=self.now,
            wall_now=WALL + timedelta(seconds=self.now),
        )
        self.observed[who] = d.observation
        if d.body is not None and self.write(who, d.body, create=d.action is Action.CREATE):
            self.until[who] = self.now + self.R
        else:
            observed = self.observed[who]
            if until is not None and observed is not None and observed.record.holder != who:
                self.until[who] = None  # someone else holds it now

    def release(self, who: str) -> None:
        if self.until[who] is None or self.now >= cast(float, self.until[who]):
            return
        self.until[who] = None
        body = release_body(self.observed[who], identity=who, wall_now=WALL)
        if body is not None:
            self.write(who, body, create=False)


STEPS = st.lists(
    st.tuples(
        st.sampled_from(["a", "b"]),
        st.sampled_from(["try", "try", "try", "try", "release", "die"]),
        st.one_of(st.sampled_from([0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0]), st.floats(0, 3.5)),
    ),
    max_size=60,
)


@settings(max_examples=500, deadline=None)
@given(steps=STEPS)
def test_simulated_electors_never_lead_together(steps: list[tuple[str, str, float]]) -> None:
    world = World()
    for who, op, dt in steps:
        world.now += dt
        assert len(world.leaders()) <= 1, (world.now, world.until)
        if op == "try":
            world.attempt(who)
        elif op == "release":
            world.release(who)
        else:
            world.dead.add(who)
        assert len(world.leaders()) <= 1, (world.now, world.until)


# -- who held it: the holders annotation --------------------------------------------------------


def holders(body: dict[str, Any]) -> tuple[Holder, ...]:
    return holders_of(body)


def test_a_replica_records_itself_among_the_holders_as_it_takes_the_lease() -> None:
    created = run_decide(None, now=0, hostname="pod-me")
    assert holders(created.body or {}) == (Holder(ME, "pod-me"),)
    # another replica takes it over: both are named, the newest last
    theirs = lease(OTHER)
    theirs["metadata"]["annotations"] = {HOLDERS_NOTE: holders_json((Holder(OTHER, "pod-other"),))}
    taken = run_decide(theirs, observed=seen(theirs, 0.0), now=1000.0, hostname="pod-me")
    assert taken.action is Action.TAKE_OVER
    assert taken.body is not None
    assert holders(taken.body) == (Holder(OTHER, "pod-other"), Holder(ME, "pod-me"))
    assert taken.body["metadata"]["resourceVersion"] == "7"


def test_a_renewal_writes_the_holders_only_when_they_change() -> None:
    mine = lease(ME)
    mine["metadata"]["annotations"] = {HOLDERS_NOTE: holders_json((Holder(ME, "pod-me"),))}
    renewed = run_decide(mine, now=0, hostname="pod-me")
    assert renewed.action is Action.RENEW
    assert renewed.body is not None
    assert "annotations" not in renewed.body["metadata"]
    # a Lease written before holders were recorded gets them at the next renewal
    legacy = run_decide(lease(ME), now=0, hostname="pod-me")
    assert legacy.body is not None
    assert holders(legacy.body) == (Holder(ME, "pod-me"),)


def test_the_holders_are_read_leniently_and_kept_bounded() -> None:
    def with_note(value: str) -> dict[str, Any]:
        return {"metadata": {"annotations": {HOLDERS_NOTE: value}}}

    assert holders_of(None) == ()
    assert holders_of(with_note("not json")) == ()
    assert holders_of(with_note('{"identity": "a"}')) == ()
    assert holders_of(with_note('[{"identity": "a"}, {"identity": "b", "hostname": "h"}]')) == (
        Holder("b", "h"),
    )
    many = tuple(Holder(f"r{i}", f"h{i}") for i in range(MAX_HOLDERS))
    grown = with_holder(many, Holder("new", "h-new"))
    assert len(grown) == MAX_HOLDERS
    assert grown[-1] == Holder("new", "h-new")
    assert grown[0] == Holder("r1", "h1")  # the oldest went
    # the same identity again moves to the end, once
    assert with_holder((Holder("a", "h1"), Holder("b", "h2")), Holder("a", "h3")) == (
        Holder("b", "h2"),
        Holder("a", "h3"),
    )


# -- the leader renews without reading first (client-go's fast path) ---------------------------


class LeaseServer:
    """One Lease as the API server keeps it: a resourceVersion per write, a merge patch that
    carries an older one is refused with 409; records each request's verb."""

    def __init__(self) -> None:
        self.lease: dict[str, Any] | None = None
        self.rv = 0
        self.verbs: list[str] = []

    def _store(self, spec: dict[str, Any]) -> dict[str, Any]:
        self.rv += 1
        self.lease = {"metadata": {"name": "lb", "resourceVersion": str(self.rv)}, "spec": spec}
        return dict(self.lease)

    def get(self, path: str) -> dict[str, Any]:
        self.verbs.append("get")
        if self.lease is None:
            raise KubeError(status=404, reason="NotFound", message="leases.coordination.k8s.io")
        return dict(self.lease)

    def create(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        self.verbs.append("create")
        return self._store(dict(body["spec"]))

    def patch(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        self.verbs.append("patch")
        assert self.lease is not None
        if body["metadata"]["resourceVersion"] != self.lease["metadata"]["resourceVersion"]:
            raise KubeError(status=409, reason="Conflict", message="the object has been modified")
        return self._store({**self.lease["spec"], **body["spec"]})


def test_the_leader_renews_without_a_read_and_reads_when_that_fails() -> None:
    server, now = LeaseServer(), [0.0]
    elector = LeaderElector(
        kube=cast(KubeApi, server),
        namespace="ns",
        name="lb",
        identity=ME,
        on_started_leading=lambda: None,
        on_stopped_leading=lambda: None,
        clock=lambda: now[0],
        wall_clock=lambda: WALL + timedelta(seconds=now[0]),
    )

    def attempt() -> bool:  # as the elector's loops do: a success leads until the deadline
        started = now[0]
        ok = elector._try_acquire_or_renew()
        if ok:
            elector._valid_until = started + 10.0
        return ok

    assert attempt()
    assert server.verbs == ["get", "create"]
    for _ in range(3):
        now[0] += 2.0
        assert attempt()
    assert server.verbs[2:] == ["patch", "patch", "patch"]  # renewals: no read first

    # another replica wrote the Lease (a live one naming it): the renewal's patch is refused,
    # the elector reads the Lease and follows it; it no longer holds the Lease
    assert server.lease is not None
    server._store({**server.lease["spec"], "holderIdentity": OTHER, "renewTime": STAMP})
    server.verbs.clear()
    now[0] += 2.0
    assert not attempt()
    assert server.verbs == ["patch", "get"]
    server.verbs.clear()
    now[0] += 2.0
    elector._valid_until = None  # the elector's loop gave up leading
    assert not attempt()
    assert server.verbs == ["get"]  # not leading: read first

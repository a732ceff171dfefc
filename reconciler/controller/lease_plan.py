"""Leader election's decisions (:mod:`.lease` has the algorithm and its guarantees). Pure.

They take the Lease as the API returned it (``None`` when absent), our identity, what we
observed before and the time, and say what to write: :func:`decide` (client-go's
``tryAcquireOrRenew``), :func:`release_body`; and :func:`validate_timings`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import Enum
from typing import Any

from reconciler.controller.lease_holders import (
    HOLDERS,
    Holder,
    holders_json,
    holders_of,
    with_holder,
)

__all__ = [
    "JITTER_FACTOR",
    "Action",
    "Decision",
    "LeaseRecord",
    "Observation",
    "decide",
    "micro_time",
    "release_body",
    "validate_timings",
]

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

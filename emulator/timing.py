"""Clocks and timing profiles: how long Octavia takes to turn PENDING_* into a final status.

Transitions are not driven by timers. A pending operation records the time it becomes due, and
the models apply every due transition before they serve a request (``Octavia.advance``). That
keeps the status machine pure (a test can drive it with :class:`ManualClock`), survives a
restart with a SQLite state file, and costs no background thread.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float: ...


class SystemClock:
    """Wall-clock seconds (wall time, not monotonic, so due times survive a restart)."""

    def now(self) -> float:
        return time.time()


class ManualClock:
    """A clock that moves only when told to; for pure tests of the status machine."""

    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self._now = start

    def now(self) -> float:
        return self._now

    def advance(self, seconds: float) -> None:
        self._now += seconds


@dataclass(frozen=True)
class TimingProfile:
    """Seconds from a request to its final status."""

    name: str
    lb_create: float
    lb_update: float
    lb_delete: float
    child: float  # listener/pool/member/monitor create, update or delete

    @staticmethod
    def named(name: str) -> TimingProfile:
        try:
            return PROFILES[name]
        except KeyError:
            raise ValueError(
                f"unknown timing profile {name!r}; use one of: {', '.join(sorted(PROFILES))}"
            ) from None


INSTANT = TimingProfile(name="instant", lb_create=0.0, lb_update=0.0, lb_delete=0.0, child=0.0)
CLOUDLIKE = TimingProfile(name="cloudlike", lb_create=3.0, lb_update=0.5, lb_delete=1.0, child=0.3)
PROFILES = {p.name: p for p in (INSTANT, CLOUDLIKE)}

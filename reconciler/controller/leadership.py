"""Whether this process may write now, and what it knows of its term: what the controller and
the engine ask (:class:`Leadership`; the engine's view of it is
:class:`reconciler.engine.context.Term`).

With leader election, the answers are the elector's (:class:`~.lease.LeaderElector`): the Lease
held and renewed within the renew deadline, by this process's own clock; how long until that
ends unless renewed; the term (the Lease's ``leaseTransitions``); the hostnames of the Lease's
other holders (:mod:`.lease_holders`). Without it, one replica is the only writer: always
leading, with no end and no other holders.
"""

from __future__ import annotations

import math
import os
import socket
import uuid

from reconciler.controller.lease import LeaderElector

__all__ = ["Leadership", "default_identity"]


def default_identity() -> str:
    """The Lease holder identity unless ``--identity`` is given: ``$POD_NAME`` (in a pod, also
    its hostname), else ``<hostname>_<random>`` (several replicas on one machine)."""
    return os.environ.get("POD_NAME") or f"{socket.gethostname()}_{uuid.uuid4().hex[:8]}"


class Leadership:
    """Whether this process may write now. With leader election: it holds the Lease and its
    last renewal started less than the renew deadline ago (``LeaderElector.is_leader``); before
    the elector exists, no. Without: always (one replica, the only writer)."""

    def __init__(self, *, elect: bool) -> None:
        self._elect = elect
        self.elector: LeaderElector | None = None

    def __call__(self) -> bool:
        if not self._elect:
            return True
        elector = self.elector
        return elector is not None and elector.is_leader()

    def remaining(self) -> float:
        """Seconds this process may still write unless the Lease is renewed first (infinite
        without leader election, 0 when not leading)."""
        if not self._elect:
            return math.inf
        elector = self.elector
        return elector.remaining() if elector is not None else 0.0

    def epoch(self) -> int:
        """This leader's term: the Lease's ``leaseTransitions`` (0 without leader election)."""
        elector = self.elector
        return elector.epoch() if elector is not None else 0

    def replica_hosts(self) -> frozenset[str]:
        """The hostnames of the Lease's other holders (none without leader election): their
        stack locks are stale while this process leads (reconciler.engine.state.lock_plan)."""
        elector = self.elector
        return elector.replica_hosts() if elector is not None else frozenset()

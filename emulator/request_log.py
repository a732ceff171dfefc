"""The emulator's request log: every request to Keystone, Neutron and Octavia, in order.

A test asks through ``GET /admin/requests`` what the cloud was asked, e.g. that nothing touched
a paused Service's load balancer. Each entry: a sequence number (from 1, never reused), the
time (the cloud's clock, ISO 8601), the method, the path as the client sent it (with its service
prefix: ``/load-balancer/v2/lbaas/loadbalancers/<id>``), the query string and the status
answered (``None``: the connection was dropped). The emulator's own ``/admin`` requests are not
logged. The log keeps the last ``limit`` entries (a long benchmark does not grow it for ever);
``?since=N`` returns the entries after sequence number ``N``, and ``next`` is the number to ask
from next time.
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import asdict, dataclass
from typing import Any

from emulator.timeutil import iso_micro

__all__ = ["LoggedRequest", "RequestLog"]


@dataclass(frozen=True)
class LoggedRequest:
    seq: int
    time: str
    method: str
    path: str
    query: str
    status: int | None


class RequestLog:
    def __init__(self, *, limit: int = 20_000) -> None:
        self._lock = threading.Lock()
        self._entries: deque[LoggedRequest] = deque(maxlen=limit)
        self._seq = 0

    def add(self, *, at: float, method: str, path: str, query: str, status: int | None) -> None:
        with self._lock:
            self._seq += 1
            self._entries.append(
                LoggedRequest(self._seq, iso_micro(at), method.upper(), path, query, status)
            )

    def since(self, seq: int = 0) -> dict[str, Any]:
        """The entries after ``seq``, oldest first, and ``next``: the last number given out."""
        with self._lock:
            entries = [asdict(e) for e in self._entries if e.seq > seq]
            return {"requests": entries, "next": self._seq}

    def clear(self) -> None:
        """Forget the entries; the numbers go on (a ``since`` taken before stays valid)."""
        with self._lock:
            self._entries.clear()

"""Resource storage: an in-memory table per kind, optionally written through to SQLite.

Every resource (network, port, load balancer, token...) is a JSON-able dict keyed by ``kind`` and
``id``. Keys that start with ``_`` are private to the models (pending transitions, secrets) and
are never rendered. Reads return copies, so a model must ``put`` what it changed: that keeps the
SQLite file, when there is one, equal to memory after every request, so a restarted emulator
finds the cloud it left (the point of the crash tests).

One re-entrant lock serialises all model operations (the emulator is small; correctness beats
parallelism). ``Store.lock`` is taken by the application around each request.
"""

from __future__ import annotations

import copy
import json
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

Record = dict[str, Any]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS resources (
    kind TEXT NOT NULL,
    id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (kind, id)
)
"""


class Store:
    """Tables of records; ``path=None`` keeps them in memory only."""

    def __init__(self, *, path: Path | None = None) -> None:
        self.lock = threading.RLock()
        self._tables: dict[str, dict[str, Record]] = {}
        self._seq = 0
        self._db: sqlite3.Connection | None = None
        if path is not None:
            self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(_SCHEMA)
            self._load()

    def _load(self) -> None:
        assert self._db is not None
        rows = self._db.execute("SELECT kind, id, seq, body FROM resources ORDER BY seq")
        for kind, rid, seq, body in rows:
            self._tables.setdefault(kind, {})[rid] = json.loads(body)
            self._seq = max(self._seq, int(seq))

    @property
    def persistent(self) -> bool:
        return self._db is not None

    def is_empty(self) -> bool:
        with self.lock:
            return not any(self._tables.values())

    def get(self, kind: str, rid: str) -> Record | None:
        with self.lock:
            record = self._tables.get(kind, {}).get(rid)
            return copy.deepcopy(record) if record is not None else None

    def all(self, kind: str, where: Callable[[Record], bool] | None = None) -> list[Record]:
        """Records of one kind, oldest first; only those ``where`` accepts when given. ``where``
        sees the stored record and must not change it: only the matches are copied, so a
        lookup among many records (the emulator makes some on every request) copies few."""
        with self.lock:
            table = self._tables.get(kind, {}).values()
            return [copy.deepcopy(r) for r in table if where is None or where(r)]

    def count(self, kind: str, where: Callable[[Record], bool]) -> int:
        """How many records of one kind ``where`` accepts (it must not change them)."""
        with self.lock:
            return sum(1 for r in self._tables.get(kind, {}).values() if where(r))

    def kinds(self) -> list[str]:
        with self.lock:
            return sorted(k for k, table in self._tables.items() if table)

    def put(self, kind: str, record: Record) -> None:
        rid = str(record["id"])
        with self.lock:
            table = self._tables.setdefault(kind, {})
            is_new = rid not in table
            table[rid] = copy.deepcopy(record)
            if self._db is not None:
                if is_new:
                    self._seq += 1
                    self._db.execute(
                        "INSERT OR REPLACE INTO resources (kind, id, seq, body) VALUES (?,?,?,?)",
                        (kind, rid, self._seq, json.dumps(record)),
                    )
                else:
                    self._db.execute(
                        "UPDATE resources SET body=? WHERE kind=? AND id=?",
                        (json.dumps(record), kind, rid),
                    )

    def delete(self, kind: str, rid: str) -> None:
        with self.lock:
            self._tables.get(kind, {}).pop(rid, None)
            if self._db is not None:
                self._db.execute("DELETE FROM resources WHERE kind=? AND id=?", (kind, rid))

    def close(self) -> None:
        with self.lock:
            if self._db is not None:
                self._db.close()
                self._db = None

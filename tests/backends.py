"""State backends for the tests: ``file://``, and real shared ones, ``postgres://`` and ``s3://``.

One PostgreSQL server and one MinIO server per test session (:mod:`reconciler.local.backends`),
started on first use (a session that runs no test on a kind starts no server of it), stopped at
the end. Each test gets a backend of its own: a folder (``file://``), a new database
(``postgres://``, whose name is also the key prefix the CLI uses), or a new bucket with a path
(``s3://<bucket>/state``, so the prefix rules are exercised too).

Use the ``backend`` fixture (``tests/conftest.py``), which parametrises a test over
:data:`BACKEND_KINDS`, or :meth:`BackendServers.backend` for one kind.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import threading
from dataclasses import dataclass, field
from pathlib import Path

from reconciler.engine.state.store import StateStore, open_state_store
from reconciler.local.backends import BackendServer, start_server
from reconciler.local.toolchain import Toolchain

BACKEND_KINDS = ("file", "postgres", "s3")


@dataclass
class Backend:
    """One empty backend: its URL, what ``pulumi`` needs beside it, and its store."""

    kind: str
    url: str
    env: dict[str, str]
    server: BackendServer | None = None

    def store(self) -> StateStore:
        store = open_state_store(self.url, env={**self.cli_env(), **self.env})
        assert store is not None
        return store

    def digest(self) -> dict[str, str]:
        """Every object of the backend (read with these credentials) and its bytes' digest:
        equal before and after means nothing was written."""
        store = self.store()
        try:
            return {
                obj.key: hashlib.sha256(store.bucket.read(obj.key) or b"").hexdigest()
                for obj in store.objects()
            }
        finally:
            store.close()

    def cli_env(self) -> dict[str, str]:
        """The variables a process needs to reach this backend, besides the passphrase."""
        return {"PULUMI_BACKEND_URL": self.url, **self.env}


@dataclass
class BackendServers:
    """The session's servers, started on first use."""

    folder: Path
    toolchain: Toolchain
    _servers: dict[str, BackendServer] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _count: itertools.count[int] = field(default_factory=itertools.count)

    def server(self, kind: str) -> BackendServer:
        with self._lock:
            if kind not in self._servers:
                self._servers[kind] = start_server(
                    kind,  # type: ignore[arg-type]
                    folder=self.folder / kind,
                    toolchain=self.toolchain,
                    durable=False,
                )
            return self._servers[kind]

    def backend(self, kind: str, *, folder: Path) -> Backend:
        """A new empty backend of ``kind``; ``folder`` holds a ``file://`` one."""
        if kind == "file":
            (folder / "backend").mkdir(parents=True, exist_ok=True)
            return Backend(kind, (folder / "backend").absolute().as_uri(), {})
        server = self.server(kind)
        name = f"lbr-test-{next(self._count)}"
        url = server.new_backend(name)
        if kind == "s3":
            base, _, query = url.partition("?")
            url = f"{base}/state?{query}"
        return Backend(kind, url, dict(server.env), server)

    def stop(self) -> None:
        with self._lock:
            for server in self._servers.values():
                server.stop()
            self._servers.clear()


def persons_lock(store: StateStore, stack: str) -> None:
    """A lock of alice's ``pulumi`` on her laptop (another host: never stale to anyone here),
    as the CLI writes one."""
    lock = {
        "pid": 1,
        "username": "alice",
        "hostname": "laptop",
        "timestamp": "2026-11-27T06:00:00Z",
    }
    store.bucket.write(f"{store.locks_prefix(stack)}alice.json", json.dumps(lock).encode())

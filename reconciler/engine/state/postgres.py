"""A ``postgres://`` state backend's objects: the rows of Pulumi's DIY PostgreSQL backend.

See :mod:`reconciler.engine.state.bucket` for the rules every bucket follows. The table layout is
the CLI's (``pkg/backend/diy/postgres/schema.sql`` of pulumi v3.259): ``key TEXT PRIMARY KEY, data
JSON NOT NULL, updated_at TIMESTAMPTZ``, ``data = {"data": "<base64 of the bytes>"}``; the table
is the URL's ``table`` parameter (default ``pulumi_state``), which the CLI creates when it first
opens the backend. Reached with psycopg 3.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import math
import os
import re
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any
from urllib.parse import unquote, urlsplit

from reconciler.engine.state.bucket import (
    DEFAULT_TIMEOUT,
    BucketError,
    Guard,
    StoredObject,
    WriteConflictError,
    found_by_listing,
    redacted_url,
    unguarded,
    url_query,
)

__all__ = ["POSTGRES_CLI_SETTINGS", "PostgresBucket", "cli_settings"]

# The CLI's DIY PostgreSQL driver (pulumi v3.259) lists stacks with 10 workers by default, each
# holding a cursor (a connection) while it asks for each row's size on another; its pool has
# 2 x GOMAXPROCS connections, so on a machine with fewer than 10 cores `pulumi stack ls` of more
# than a few stacks waits for a free connection for ever. One worker lists 500 stacks in 1 s.
POSTGRES_CLI_SETTINGS = {"PULUMI_DIY_BACKEND_PARALLEL": "1"}


def cli_settings(url: str) -> dict[str, str]:
    """Environment the ``pulumi`` CLI needs to work on backend ``url`` (unless the user set
    them): for ``postgres://``, one worker when listing stacks (:data:`POSTGRES_CLI_SETTINGS`)."""
    return dict(POSTGRES_CLI_SETTINGS) if url.lower().startswith("postgres://") else {}


_TABLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_$]*(\.[A-Za-z_][A-Za-z0-9_$]*)?$")
# libpq's connection keywords; the CLI's driver (lib/pq) sends any other URL parameter but
# ``table`` as a run-time setting (``search_path``, ``timezone``), as ``options=-c k=v`` does
_LIBPQ_WORDS = (
    "host hostaddr port dbname user password passfile channel_binding connect_timeout "
    "client_encoding options application_name fallback_application_name keepalives "
    "keepalives_idle keepalives_interval keepalives_count tcp_user_timeout sslmode "
    "sslnegotiation sslcompression sslcert sslkey sslpassword sslcertmode sslrootcert sslcrl "
    "sslcrldir sslsni requirepeer require_auth ssl_min_protocol_version "
    "ssl_max_protocol_version gssencmode krbsrvname gsslib gssdelegation service "
    "target_session_attrs load_balance_hosts"
)
_LIBPQ = frozenset(_LIBPQ_WORDS.split())
# what libpq reads from the environment, passed on when this process's own differs (extra_env)
_PG_ENV = {
    "PGHOST": "host",
    "PGPORT": "port",
    "PGUSER": "user",
    "PGPASSWORD": "password",
    "PGDATABASE": "dbname",
    "PGSSLMODE": "sslmode",
    "PGSSLROOTCERT": "sslrootcert",
    "PGSSLCERT": "sslcert",
    "PGSSLKEY": "sslkey",
    "PGCONNECT_TIMEOUT": "connect_timeout",
    "PGPASSFILE": "passfile",
}


def _pg_connect_args(url: str, env: Mapping[str, str]) -> dict[str, str]:
    """psycopg's keyword arguments for a ``postgres://`` backend URL, as the CLI's driver
    reads it (the environment's ``PG*`` variables fill what the URL leaves out)."""
    parts = urlsplit(url)
    args: dict[str, str] = {}
    if parts.hostname:
        args["host"] = unquote(parts.hostname)
    if parts.port:
        args["port"] = str(parts.port)
    if parts.username:
        args["user"] = unquote(parts.username)
    if parts.password is not None:
        args["password"] = unquote(parts.password)
    if parts.path.strip("/"):
        args["dbname"] = unquote(parts.path.strip("/"))
    settings = []
    for key, value in url_query(url).items():
        if key in _LIBPQ:
            args[key] = value
        elif key != "table":
            settings.append(f"-c {key}={value}")
    if settings:
        args["options"] = " ".join([args.get("options", ""), *settings]).strip()
    for var, keyword in _PG_ENV.items():
        if env.get(var):
            args.setdefault(keyword, env[var])
    return args


class _Pool:
    """At most ``size`` connections, each used by one statement at a time (the engine's
    workers, the housekeeper and the listing run statements at once: one shared connection made
    each wait for the others), opened when needed and kept for the next; one that failed is
    closed, not kept."""

    def __init__(self, connect: Callable[[], Any], *, size: int, wait: float) -> None:
        self._connect, self._wait = connect, wait
        self._idle: list[Any] = []
        self._slots = threading.BoundedSemaphore(size)
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def connection(self) -> Iterator[Any]:
        if not self._slots.acquire(timeout=self._wait):
            raise TimeoutError(f"no free connection after {self._wait:g}s")
        conn = None
        try:
            with self._lock:
                while self._idle and conn is None:
                    conn = self._idle.pop()
                    if conn.closed:
                        conn = None
            if conn is None:
                conn = self._connect()
            yield conn
        except BaseException:
            if conn is not None:
                with contextlib.suppress(Exception):
                    conn.close()
                conn = None
            raise
        finally:
            if conn is not None and not conn.closed:
                with self._lock:
                    self._idle.append(conn)
            self._slots.release()

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            with contextlib.suppress(Exception):
                conn.close()


# connections per backend: the engine's workers and housekeeper at once, no more
POOL_SIZE = 8


def _timeouts(timeout: float) -> dict[str, str]:
    """libpq's settings that bound every request by ``timeout`` seconds: the connect (libpq's
    minimum is 2 s), each statement (``statement_timeout``, on the server), unacknowledged data
    (``tcp_user_timeout``) and a silent peer (TCP keepalives)."""
    ms = str(max(1, int(timeout * 1000)))
    return {
        "connect_timeout": str(max(2, math.ceil(timeout))),
        "tcp_user_timeout": ms,
        "keepalives": "1",
        "keepalives_idle": str(max(1, int(timeout))),
        "keepalives_interval": "1",
        "keepalives_count": "2",
        "options": f"-c statement_timeout={ms}",
    }


class PostgresBucket:
    """A ``postgres://`` backend: the rows of one table, through a small pool of connections
    (:class:`_Pool`), every request bounded by ``timeout`` seconds (:func:`_timeouts`)."""

    def __init__(
        self, url: str, *, env: Mapping[str, str] | None = None, timeout: float = DEFAULT_TIMEOUT
    ) -> None:
        self.url = redacted_url(url)
        self.guard: Guard = unguarded
        self.write_bound = timeout  # the statement's bound: the guard is asked once connected
        query = url_query(url)
        table = query.get("table") or "pulumi_state"
        if not _TABLE.match(table):
            raise BucketError(
                f"backend {self.url}: table {table!r} is not a plain SQL name "
                "(letters, digits, _; optionally schema.table)"
            )
        # unquoted in the CLI's SQL, so PostgreSQL folds it to lower case
        self.table = tuple(table.lower().split("."))
        args = _pg_connect_args(url, os.environ if env is None else env)
        bounds = _timeouts(timeout)
        # the URL's (or PG*'s) own settings win, but the statement timeout is always set
        self._connect_args = {**bounds, **args}
        if "options" in args:
            self._connect_args["options"] = f"{args['options']} {bounds['options']}"
        self.prefix = unquote(urlsplit(url).path).lstrip("/")
        self.prefix = self.prefix + "/" if self.prefix else ""
        self._pool = _Pool(self._open, size=POOL_SIZE, wait=timeout)

    def _open(self) -> Any:
        import psycopg
        from psycopg.conninfo import make_conninfo

        return psycopg.connect(make_conninfo("", **self._connect_args), autocommit=True)

    def _sql(self, text: str) -> Any:
        from psycopg import sql

        index = sql.Identifier(f"{self.table[-1]}_key_prefix_idx")  # the CLI's name for it
        return sql.SQL(text).format(table=sql.Identifier(*self.table), index=index)

    def _run(
        self, doing: str, text: str, params: tuple[Any, ...], *, writes: bool = False
    ) -> tuple[list[tuple[Any, ...]], int]:
        """Run one statement (autocommit): the rows it returned and how many it touched. A
        missing table (the CLI has not opened this backend yet) reads as empty; writing to it
        is an error. A write passes the guard once its connection is open, right before it is
        sent; a broken connection is replaced and the statement sent once more."""
        import psycopg

        query = self._sql(text)
        for attempt in (1, 2):
            try:
                with (
                    self._pool.connection() as conn,
                    self.guard(doing, self.write_bound) if writes else _nothing(),
                    conn.cursor() as cur,
                ):
                    cur.execute(query, params)
                    rows = list(cur.fetchall()) if cur.description else []
                    return rows, cur.rowcount
            except psycopg.errors.UndefinedTable as exc:
                if writes:
                    raise BucketError(f"{doing} in backend {self.url}: {exc}") from None
                return [], 0
            except (psycopg.OperationalError, TimeoutError) as exc:
                if attempt == 2 or isinstance(exc, psycopg.errors.QueryCanceled):
                    raise BucketError(f"{doing} in backend {self.url}: {exc}") from None
            except psycopg.Error as exc:
                raise BucketError(f"{doing} in backend {self.url}: {exc}") from None
        return [], 0  # not reached

    def _rows(self, doing: str, text: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        return self._run(doing, text, params)[0]

    @staticmethod
    def _like(prefix: str) -> str:
        return re.sub(r"([\\%_])", r"\\\1", prefix) + "%"

    def list(self, prefix: str) -> list[StoredObject]:
        rows = self._rows(
            f"listing {prefix}",
            "SELECT key, length(decode(data->>'data', 'base64')), updated_at FROM {table} "
            "WHERE key LIKE %s ORDER BY key",
            (self._like(self.prefix + prefix),),
        )
        cut = len(self.prefix)
        return [StoredObject(key=str(k)[cut:], size=int(n or 0), modified=m) for k, n, m in rows]

    @staticmethod
    def _decode(data: Any) -> bytes:
        return base64.b64decode(str(data))

    def read(self, key: str) -> bytes | None:
        got = self.read_versioned(key)
        return None if got is None else got[0]

    def read_versioned(self, key: str) -> tuple[bytes, str] | None:
        """The row's bytes; its version is the MD5 of its stored text (what a conditional
        ``UPDATE`` compares)."""
        rows = self._rows(
            f"reading {key}",
            "SELECT data->>'data' FROM {table} WHERE key = %s",
            (self.prefix + key,),
        )
        if not rows:
            return None
        text = str(rows[0][0])
        return self._decode(text), _md5(text)

    def read_many(self, prefix: str, suffix: str) -> dict[str, bytes]:
        rows = self._rows(
            f"reading {prefix}*{suffix}",
            "SELECT key, data->>'data' FROM {table} WHERE key LIKE %s AND right(key, %s) = %s",
            (self._like(self.prefix + prefix), len(suffix), suffix),
        )
        cut = len(self.prefix)
        return {str(k)[cut:]: self._decode(d) for k, d in rows}

    def find(self, keys: Sequence[str]) -> Sequence[StoredObject]:
        return found_by_listing(self, keys)

    def exists(self, key: str) -> bool:
        query = "SELECT 1 FROM {table} WHERE key = %s"
        return bool(self._rows(f"reading {key}", query, (self.prefix + key,)))

    def write(
        self, key: str, data: bytes, *, if_version: str | None = None, durable: bool = True
    ) -> str:
        """An upsert; with ``if_version``, an ``UPDATE`` of the row only while its text's MD5
        is that version (PostgreSQL's compare-and-swap, atomic in the server)."""
        text = base64.b64encode(data).decode()
        blob = json.dumps({"data": text})
        doing = f"writing {key}"
        if if_version is None:
            self._run(
                doing,
                "INSERT INTO {table} (key, data) VALUES (%s, %s) "
                "ON CONFLICT (key) DO UPDATE SET data = EXCLUDED.data, updated_at = now()",
                (self.prefix + key, blob),
                writes=True,
            )
        else:
            _rows, count = self._run(
                doing,
                "UPDATE {table} SET data = %s, updated_at = now() "
                "WHERE key = %s AND md5(data->>'data') = %s",
                (blob, self.prefix + key, if_version),
                writes=True,
            )
            if count != 1:
                raise WriteConflictError(
                    f"{doing} in backend {self.url}: changed since it was read"
                )
        return _md5(text)

    def delete(self, key: str) -> None:
        self._run(
            f"deleting {key}",
            "DELETE FROM {table} WHERE key = %s",
            (self.prefix + key,),
            writes=True,
        )

    def prepare(self) -> None:
        """The table and its index, as the CLI makes them each time it opens the backend
        (``schema.sql`` of ``pkg/backend/diy/postgres``); a table named with its schema is
        left to the CLI (the index's name the CLI derives from it is not valid there)."""
        if len(self.table) != 1:
            raise BucketError(
                f"backend {self.url}: a table named with its schema is made by the CLI first "
                "(`pulumi stack ls` with PULUMI_BACKEND_URL set to it)"
            )
        for statement in (
            "CREATE TABLE IF NOT EXISTS {table} (key TEXT PRIMARY KEY, data JSON NOT NULL, "
            "updated_at TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now())",
            "CREATE INDEX IF NOT EXISTS {index} ON {table} (key text_pattern_ops)",
        ):
            self._run("making the table", statement, (), writes=True)

    def close(self) -> None:
        self._pool.close()


def _md5(text: str) -> str:
    """PostgreSQL's ``md5(text)`` of the stored base64 text, computed here."""
    return hashlib.md5(text.encode()).hexdigest()  # noqa: S324 (a version token, not security)


def _nothing() -> AbstractContextManager[None]:
    return contextlib.nullcontext()

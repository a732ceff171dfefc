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
import json
import os
import re
import threading
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote, urlsplit

from reconciler.engine.state.bucket import BucketError, StoredObject, redacted_url, url_query

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
    args.setdefault("connect_timeout", "10")
    return args


class PostgresBucket:
    """A ``postgres://`` backend: the rows of one table. One connection, shared by the
    engine's threads (each statement is short), opened on first use and again after a loss."""

    def __init__(self, url: str, *, env: Mapping[str, str] | None = None) -> None:
        self.url = redacted_url(url)
        query = url_query(url)
        table = query.get("table") or "pulumi_state"
        if not _TABLE.match(table):
            raise BucketError(
                f"backend {self.url}: table {table!r} is not a plain SQL name "
                "(letters, digits, _; optionally schema.table)"
            )
        # unquoted in the CLI's SQL, so PostgreSQL folds it to lower case
        self.table = tuple(table.lower().split("."))
        self._connect_args = _pg_connect_args(url, os.environ if env is None else env)
        self.prefix = unquote(urlsplit(url).path).lstrip("/")
        self.prefix = self.prefix + "/" if self.prefix else ""
        self._conn: Any = None
        self._lock = threading.Lock()

    def _sql(self, text: str) -> Any:
        from psycopg import sql

        return sql.SQL(text).format(table=sql.Identifier(*self.table))

    def _run(
        self, doing: str, text: str, params: tuple[Any, ...], *, writes: bool = False
    ) -> list[tuple[Any, ...]]:
        """Run one statement (autocommit); the rows it returned. A missing table (the CLI has
        not opened this backend yet) reads as empty; writing to it is an error."""
        import psycopg
        from psycopg.conninfo import make_conninfo

        query = self._sql(text)
        with self._lock:
            for attempt in (1, 2):
                try:
                    if self._conn is None or self._conn.closed:
                        info = make_conninfo("", **self._connect_args)
                        self._conn = psycopg.connect(info, autocommit=True)
                    with self._conn.cursor() as cur:
                        cur.execute(query, params)
                        return list(cur.fetchall()) if cur.description else []
                except psycopg.errors.UndefinedTable as exc:
                    if writes:
                        raise BucketError(f"{doing} in backend {self.url}: {exc}") from None
                    return []
                except psycopg.OperationalError as exc:
                    with contextlib.suppress(Exception):
                        self._conn.close()
                    self._conn = None
                    if attempt == 2:
                        raise BucketError(f"{doing} in backend {self.url}: {exc}") from None
                except psycopg.Error as exc:
                    raise BucketError(f"{doing} in backend {self.url}: {exc}") from None
        return []  # not reached

    @staticmethod
    def _like(prefix: str) -> str:
        return re.sub(r"([\\%_])", r"\\\1", prefix) + "%"

    def list(self, prefix: str) -> list[StoredObject]:
        rows = self._run(
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
        rows = self._run(
            f"reading {key}",
            "SELECT data->>'data' FROM {table} WHERE key = %s",
            (self.prefix + key,),
        )
        return self._decode(rows[0][0]) if rows else None

    def read_many(self, prefix: str, suffix: str) -> dict[str, bytes]:
        rows = self._run(
            f"reading {prefix}*{suffix}",
            "SELECT key, data->>'data' FROM {table} WHERE key LIKE %s AND right(key, %s) = %s",
            (self._like(self.prefix + prefix), len(suffix), suffix),
        )
        cut = len(self.prefix)
        return {str(k)[cut:]: self._decode(d) for k, d in rows}

    def exists(self, key: str) -> bool:
        query = "SELECT 1 FROM {table} WHERE key = %s"
        return bool(self._run(f"reading {key}", query, (self.prefix + key,)))

    def write(self, key: str, data: bytes) -> None:
        blob = json.dumps({"data": base64.b64encode(data).decode()})
        self._run(
            f"writing {key}",
            "INSERT INTO {table} (key, data) VALUES (%s, %s) "
            "ON CONFLICT (key) DO UPDATE SET data = EXCLUDED.data, updated_at = now()",
            (self.prefix + key, blob),
            writes=True,
        )

    def delete(self, key: str) -> None:
        self._run(
            f"deleting {key}",
            "DELETE FROM {table} WHERE key = %s",
            (self.prefix + key,),
            writes=True,
        )

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                with contextlib.suppress(Exception):
                    self._conn.close()
                self._conn = None

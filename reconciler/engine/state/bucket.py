"""The objects of a Pulumi DIY backend, per kind of backend URL: list, read, write, delete.

Only :mod:`reconciler.engine.state.store` uses the buckets (it says what the objects *mean*);
they say how a backend URL maps to objects, by the same rules the ``pulumi`` CLI (v3.259) follows
through the gocloud blob library, so a key here is the key the CLI reads and writes. This module
holds what every bucket shares; :mod:`reconciler.engine.state.folder`,
:mod:`reconciler.engine.state.s3` and :mod:`reconciler.engine.state.postgres` the buckets:

* ``file://<folder>``: the object ``k`` is the file ``<folder>/k``; the blob library keeps a
  ``<file>.attrs`` sidecar (content type, MD5) beside each, hidden from listings, removed with
  its object, written here the same way.
* ``s3://<bucket>[/<path>]?<params>``: the object ``k`` is ``[<prefix param>][<path>/]k`` in the
  bucket. The parameters are gocloud's (``endpoint``, ``region``, ``use_path_style`` or
  ``s3ForcePathStyle``, ``disable_https`` or ``disableSSL``, ``profile``, ``prefix``, the
  checksum settings); credentials are the AWS SDK's usual ones (``AWS_ACCESS_KEY_ID`` and
  ``AWS_SECRET_ACCESS_KEY``, ``AWS_PROFILE``, ...), read from the environment ``pulumi`` gets.
* ``postgres://user:pass@host:port/<database>?table=<t>&...``: Pulumi's DIY PostgreSQL backend
  (``pkg/backend/diy/postgres``): one row per object in table ``<t>`` (default ``pulumi_state``:
  ``key TEXT PRIMARY KEY, data JSON, updated_at TIMESTAMPTZ``), ``data`` =
  ``{"data": "<base64 of the bytes>"}``; and since the CLI treats a non-file URL's path as a
  folder in the bucket, each key is ``<database>/k``. ``PG*`` variables of the environment fill
  what the URL leaves out, as for the CLI's driver.

Any other scheme (Pulumi Cloud, ``gs://``, ``azblob://``) has no bucket here
(:func:`reconciler.engine.state.store.open_state_store` returns None): the engine asks the CLI.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol
from urllib.parse import parse_qs, unquote, urlsplit

__all__ = [
    "DEFAULT_TIMEOUT",
    "Bucket",
    "BucketError",
    "Guard",
    "StoredObject",
    "WriteConflictError",
    "found_by_listing",
    "is_true",
    "key_prefix",
    "redacted_url",
    "unguarded",
    "url_query",
    "version_of",
]


class BucketError(RuntimeError):
    """The backend could not be reached or answered an error; the message names the backend
    (credentials removed) and what failed."""


class WriteConflictError(BucketError):
    """A conditional write found the object changed, or gone, since the version it was given
    was read: another writer (a person's ``pulumi refresh``) wrote meanwhile. Nothing written."""


# A guard is called right before each write or delete reaches the backend, with what is done and
# the most seconds it can take (the bucket's timeouts); it raises to refuse it (a controller that
# could lose the Lease before the write ends), and the context it returns is left once the write
# is done (a log line naming the writer's term).
Guard = Callable[[str, float], AbstractContextManager[None]]

# Each backend request of a controller gives up after this many seconds unless the engine sizes
# it from the Lease's renew deadline (EngineSettings.backend_timeout).
DEFAULT_TIMEOUT = 5.0


def unguarded(_doing: str, _need: float) -> AbstractContextManager[None]:
    """The guard of a store that nothing fences (a command a person or CI runs)."""
    return contextlib.nullcontext()


def version_of(data: bytes) -> str:
    """The version token of an object whose backend has none of its own (``file://``): a
    digest of its bytes."""
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class StoredObject:
    """One object of a backend: its key (relative to the backend's root, e.g.
    ``.pulumi/meta.yaml``), size in bytes and last modification."""

    key: str
    size: int
    modified: datetime


class Bucket(Protocol):
    """A backend's objects. Writes and deletes pass ``guard`` first (:data:`Guard`); each
    request is bounded by ``timeout`` seconds (``write_bound`` for one write, retries
    included)."""

    url: str  # the backend URL, credentials removed (for messages)
    guard: Guard
    write_bound: float

    def list(self, prefix: str) -> list[StoredObject]:
        """The objects whose key starts with ``prefix``, sorted by key."""
        ...

    def find(self, keys: Sequence[str]) -> Sequence[StoredObject]:
        """Those of ``keys`` that are objects, sorted by key: a look at each in a folder, one
        listing of their common prefix where a listing is one request (:func:`found_by_listing`)."""
        ...

    def read(self, key: str) -> bytes | None:
        """The object's bytes; None when there is no such object."""
        ...

    def read_many(self, prefix: str, suffix: str) -> dict[str, bytes]:
        """Every object under ``prefix`` whose key ends with ``suffix``, read."""
        ...

    def read_versioned(self, key: str) -> tuple[bytes, str] | None:
        """The object's bytes and its version token (what :meth:`write`'s ``if_version``
        compares); None when there is no such object."""
        ...

    def exists(self, key: str) -> bool: ...

    def write(
        self, key: str, data: bytes, *, if_version: str | None = None, durable: bool = True
    ) -> str:
        """Write the object whole; its new version token. ``if_version``: only if the object
        is still at that version (:class:`WriteConflictError` otherwise), with the backend's own
        conditional write where it has one. ``durable=False``: a copy or an object whose loss in
        a power cut costs nothing (a checkpoint's ``.bak``, a history entry, a backup, a lock of
        this process); a folder then writes it atomically but without ``fsync``, as the CLI
        writes every object of a ``file://`` backend. S3 and PostgreSQL are durable either way."""
        ...

    def delete(self, key: str) -> None:
        """Remove the object; no error when it is already gone."""
        ...

    def prepare(self) -> None:
        """Make a new backend ready for its first write as the CLI does when it opens one (a
        ``postgres://`` backend's table); nothing where there is nothing to make."""
        ...

    def close(self) -> None: ...


def found_by_listing(bucket: Bucket, keys: Sequence[str]) -> list[StoredObject]:
    """:meth:`Bucket.find` by one listing of the keys' common prefix."""
    wanted = set(keys)
    prefix = os.path.commonprefix(list(keys))  # noqa: RUF071 (keys, not paths: by character)
    return [o for o in bucket.list(prefix) if o.key in wanted] if wanted else []


def redacted_url(url: str) -> str:
    """``url`` without a password (for messages and logs)."""
    return re.sub(r"(//[^/@:]*):[^/@]*@", r"\1:****@", url)


def url_query(url: str) -> dict[str, str]:
    return {k: v[-1] for k, v in parse_qs(urlsplit(url).query, keep_blank_values=True).items()}


def is_true(value: str | None) -> bool:
    return (value or "").strip().lower() in {"1", "t", "true", "yes"}


def key_prefix(url: str) -> str:
    """The key prefix the CLI puts before every object of a non-file URL: gocloud's ``prefix``
    parameter, then the URL's path as a folder (pulumi's ``blob.PrefixedBucket``)."""
    path = unquote(urlsplit(url).path).lstrip("/")
    folder = path if not path or path.endswith("/") else path + "/"
    return url_query(url).get("prefix", "") + folder

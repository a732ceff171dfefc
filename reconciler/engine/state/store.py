"""The one module that knows Pulumi's private DIY backend layout; everything else asks it.

A DIY backend (``file://``, ``s3://``, ``postgres://``) is a bucket of objects that the ``pulumi``
CLI (v3.259, ``pkg/backend/diy``) lays out as below; nothing in it is a public interface, so no
other module of this project reads or writes these keys: they call :class:`StateStore`, which is
tested on each kind of backend against objects the real CLI wrote
(``tests/integration/backends/test_state_store.py``). How a URL maps to objects (a folder, an S3
bucket and prefix, the rows of a PostgreSQL table) is :mod:`reconciler.engine.state.bucket`'s.

With ``.pulumi/meta.yaml`` = ``version: 1`` (what the CLI writes for every new backend; the
older layout without project folders is refused, :meth:`StateStore.check_layout`)::

    .pulumi/stacks/<project>/<stack>.json[.gz]        the checkpoint (and ``.json.bak``)
    .pulumi/stacks/<project>/<stack>.pulumi-tags      {"version": 1, "tags": {...}}
    .pulumi/history/<project>/<stack>/<stack>-<time>.history.json, .checkpoint.json
    .pulumi/backups/<project>/<stack>/...
    .pulumi/locks/organization/<project>/<stack>/<uuid>.json
                                     {"pid": .., "username": .., "hostname": .., "timestamp": ..}

A stack is locked while any object is under its lock folder (the CLI counts every one, even one it
cannot read); ``pulumi cancel`` removes them all (:meth:`StateStore.cancel`, the human's
force-unlock). The policy of which locks are stale is :mod:`reconciler.engine.recovery`'s; this
module only lists them (:meth:`StateStore.list_locks`) and removes one
(:meth:`StateStore.delete_lock`).
"""

from __future__ import annotations

import contextlib
import getpass
import gzip
import json
import os
import socket
import uuid
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from typing import Any

import yaml

from reconciler.engine.state.bucket import Bucket, BucketError, FileBucket, StoredObject
from reconciler.engine.state.lock_plan import LockRecord, parse_lock
from reconciler.engine.state.postgres import PostgresBucket, cli_settings
from reconciler.engine.state.s3 import S3Bucket
from stacks.vocabulary import PROJECT

__all__ = [
    "BucketError",
    "LockRecord",
    "StateStore",
    "StoredObject",
    "cli_settings",
    "open_state_store",
    "parse_tags_file",
]

ROOT = ".pulumi/"
META = ".pulumi/meta.yaml"
TAGS_SUFFIX = ".pulumi-tags"
TAGS_VERSION = 1
CHECKPOINT_SUFFIXES = (".json", ".json.gz", ".json.zst")
ORGANIZATION = "organization"  # the DIY backend's one organization


def parse_tags_file(text: str) -> dict[str, str] | None:
    """The tags in a stack's ``<stack>.pulumi-tags`` object (``{"version": 1, "tags": {...}}``);
    None for any other content (a format this code does not know: ask the CLI)."""
    try:
        raw = json.loads(text)
    except ValueError:
        return None
    if not isinstance(raw, Mapping) or raw.get("version") != 1:
        return None
    tags = raw.get("tags")
    if tags is None:
        return {}
    if not isinstance(tags, Mapping):
        return None
    return {str(k): str(v) for k, v in tags.items()}


def _lock_content() -> dict[str, Any]:
    """A lock record as the CLI writes one (``pkg/backend/diy/lock.go``): this process."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # a container's UID with no name (OpenShift's random UIDs)
        user = str(os.getuid())
    return {
        "pid": os.getpid(),
        "username": user,
        "hostname": socket.gethostname(),
        "timestamp": datetime.now(UTC).isoformat(),
    }


def _lock(obj: StoredObject, stack: str, data: bytes | None) -> LockRecord | None:
    """The record of a lock object's bytes (:func:`reconciler.engine.state.lock_plan.parse_lock`);
    None when the object went between the listing and the read (its operation ended)."""
    if data is None:
        return None
    text = data.decode(errors="replace")
    return parse_lock(text, stack=stack, key=obj.key, modified=obj.modified)


class StateStore:
    """A DIY backend's stacks, tags and locks for one project, on any bucket.

    Every method may raise :class:`~reconciler.engine.state.bucket.BucketError` (the backend
    is unreachable or refused); the message names the backend, never its password."""

    def __init__(self, bucket: Bucket, *, project: str = PROJECT) -> None:
        self.bucket = bucket
        self.project = project
        self._opened = False  # meta.yaml seen: the CLI has set the backend up

    @property
    def url(self) -> str:
        return self.bucket.url

    # --- keys --------------------------------------------------------------------------------

    def stacks_prefix(self) -> str:
        return f"{ROOT}stacks/{self.project}/"

    def locks_prefix(self, stack: str = "") -> str:
        base = f"{ROOT}locks/{ORGANIZATION}/{self.project}/"
        return f"{base}{stack}/" if stack else base

    def history_prefix(self, stack: str) -> str:
        return f"{ROOT}history/{self.project}/{stack}/"

    def backups_prefix(self, stack: str) -> str:
        return f"{ROOT}backups/{self.project}/{stack}/"

    def tags_key(self, stack: str) -> str:
        return f"{self.stacks_prefix()}{stack}{TAGS_SUFFIX}"

    # --- layout ------------------------------------------------------------------------------

    def opened(self) -> bool:
        """Whether the CLI has set the backend up (``meta.yaml`` written; it is never removed,
        so a True is remembered)."""
        if not self._opened:
            self._opened = self.bucket.read(META) is not None
        return self._opened

    def check_layout(self) -> None:
        """Raise :class:`BucketError` unless the backend is new or uses the project layout
        (``meta.yaml`` version 1): the older one keeps stacks elsewhere. (A ``file://``
        backend's staging folder loses what killed writes left in it.)"""
        if isinstance(self.bucket, FileBucket):
            self.bucket.sweep_staging()
        data = self.bucket.read(META)
        if data is None:
            return  # a new backend: the CLI writes version 1 when it first opens it
        try:
            meta = yaml.safe_load(data.decode(errors="replace"))
        except yaml.YAMLError:
            meta = None
        version = meta.get("version") if isinstance(meta, Mapping) else None
        if version != 1:
            raise BucketError(
                f"backend {self.url} uses Pulumi's state layout version {version!r}, not the "
                "project layout (version 1) this controller reads; upgrade it once with "
                "`pulumi state upgrade` (with PULUMI_BACKEND_URL set to it)"
            )

    # --- locks -------------------------------------------------------------------------------

    def list_locks(self, stack: str) -> list[LockRecord]:
        """Every lock object of ``stack``, read (the CLI counts each one as a lock)."""
        prefix = self.locks_prefix(stack)
        found = (_lock(obj, stack, self.bucket.read(obj.key)) for obj in self.bucket.list(prefix))
        return [lock for lock in found if lock is not None]

    def all_locks(self) -> dict[str, list[LockRecord]]:
        """The locks of every stack of the project that has any, by stack name (one listing;
        only the lock objects found are read)."""
        prefix = self.locks_prefix()
        out: dict[str, list[LockRecord]] = {}
        for obj in self.bucket.list(prefix):
            stack, _, rest = obj.key[len(prefix) :].partition("/")
            if stack and rest and "/" not in rest:
                lock = _lock(obj, stack, self.bucket.read(obj.key))
                if lock is not None:
                    out.setdefault(stack, []).append(lock)
        return out

    def delete_lock(self, key: str) -> None:
        """Remove one lock object (a key from :meth:`list_locks`); no error when it is gone.
        Refuses any key outside the project's lock folders."""
        rest = key[len(self.locks_prefix()) :] if key.startswith(self.locks_prefix()) else ""
        if rest.count("/") != 1 or rest.startswith("/") or ".." in rest.split("/"):
            raise ValueError(f"{key!r} is not a lock of project {self.project}")
        self.bucket.delete(key)

    def cancel(self, stack: str) -> int:
        """Remove every lock of ``stack``, as ``pulumi cancel`` does; how many there were."""
        locks = self.bucket.list(self.locks_prefix(stack))
        for obj in locks:
            self.bucket.delete(obj.key)
        return len(locks)

    # --- tags --------------------------------------------------------------------------------

    def tags(self, stack: str) -> dict[str, str] | None:
        """The stack's tags: {} when it has no tags object (a new stack; the CLI lists none
        either), None when the object is in a format this code does not know (ask the CLI)."""
        data = self.bucket.read(self.tags_key(stack))
        if data is None:
            return {}
        return parse_tags_file(data.decode(errors="replace"))

    def all_tags(self) -> dict[str, dict[str, str] | None]:
        """The tags of every stack of the project that has a tags object, by stack name, read
        in one go (one query, or one listing and parallel reads); None as in :meth:`tags`."""
        prefix = self.stacks_prefix()
        out: dict[str, dict[str, str] | None] = {}
        for key, data in self.bucket.read_many(prefix, TAGS_SUFFIX).items():
            stack = key[len(prefix) : -len(TAGS_SUFFIX)]
            if stack and "/" not in stack:
                out[stack] = parse_tags_file(data.decode(errors="replace"))
        return out

    def write_tags(self, stack: str, tags: Mapping[str, str]) -> None:
        """Write the stack's tags whole, as the CLI's ``stack tag set`` would leave them. An
        empty set is not written (the CLI removes the object instead: use the CLI)."""
        if not tags:
            raise ValueError("an empty tag set is removed by the CLI, not written")
        data = json.dumps({"version": TAGS_VERSION, "tags": dict(tags)}).encode()
        self.bucket.write(self.tags_key(stack), data)

    # --- stacks ------------------------------------------------------------------------------

    def stack_exists(self, stack: str) -> bool:
        """Whether the backend has a checkpoint of ``stack`` (plain or compressed)."""
        base = f"{self.stacks_prefix()}{stack}"
        return any(self.bucket.exists(base + suffix) for suffix in CHECKPOINT_SUFFIXES)

    def checkpoint(self, stack: str) -> dict[str, Any] | None:
        """The stack's checkpoint (``{"version": 3, "checkpoint": {...}}``); None when there is
        none, or it is zstd-compressed (which this code does not read)."""
        base = f"{self.stacks_prefix()}{stack}"
        data = self.bucket.read(base + ".json")
        if data is None and (packed := self.bucket.read(base + ".json.gz")) is not None:
            data = gzip.decompress(packed)
        if data is None:
            return None
        loaded = json.loads(data)
        return loaded if isinstance(loaded, dict) else None

    def deployment(self, stack: str) -> dict[str, Any] | None:
        """The stack's latest deployment, as ``pulumi stack export`` prints it (resources,
        pending operations); None when the checkpoint cannot be read here or has none."""
        checkpoint = self.checkpoint(stack)
        inner = (checkpoint or {}).get("checkpoint")
        latest = inner.get("latest") if isinstance(inner, dict) else None
        return latest if isinstance(latest, dict) else None

    def write_deployment(self, stack: str, deployment: Mapping[str, Any]) -> None:
        """Replace the stack's latest deployment in its checkpoint (plain or gzip, as stored),
        under the caller's :meth:`locked`; :class:`BucketError` when there is none to read."""
        base, checkpoint = f"{self.stacks_prefix()}{stack}", self.checkpoint(stack)
        inner = (checkpoint or {}).get("checkpoint")
        if checkpoint is None or not isinstance(inner, dict):
            raise BucketError(f"stack {stack} has no checkpoint this code reads")
        text = json.dumps({**checkpoint, "checkpoint": {**inner, "latest": deployment}}).encode()
        if self.bucket.exists(base + ".json"):
            self.bucket.write(base + ".json", text)
        else:
            self.bucket.write(base + ".json.gz", gzip.compress(text))

    def objects(self, prefix: str = ROOT) -> list[StoredObject]:
        """Every object under ``prefix`` (key, size, modification time)."""
        return self.bucket.list(prefix)

    def objects_of(self, stack: str) -> list[StoredObject]:
        """Every object that belongs to ``stack``: checkpoint, tags, history, backups, locks."""
        found = [
            obj
            for obj in self.bucket.list(f"{self.stacks_prefix()}{stack}.")
            if obj.key[len(self.stacks_prefix()) + len(stack) :].startswith((".json", TAGS_SUFFIX))
        ]
        for prefix in (
            self.history_prefix(stack),
            self.backups_prefix(stack),
            self.locks_prefix(stack),
        ):
            found += self.bucket.list(prefix)
        return found

    @contextlib.contextmanager
    def locked(self, stack: str) -> Iterator[list[LockRecord]]:
        """A lock of this process on ``stack``, taken as the CLI takes one: yields the locks of
        others that refuse it (none held: it is written, and checked again after writing), and
        removes it after."""
        held = self.list_locks(stack)
        if held:
            yield held
            return
        key = f"{self.locks_prefix(stack)}{uuid.uuid4()}.json"
        self.bucket.write(key, json.dumps(_lock_content()).encode())
        try:
            yield [lock for lock in self.list_locks(stack) if lock.key != key]
        finally:
            self.bucket.delete(key)

    def repair_torn_sidecars(self, stack: str) -> list[str]:
        """Remove a ``file://`` backend's torn sidecars of ``stack`` (``FileBucket``'s); their
        names. Not while a lock is held (a writer may be mid-write); none on other backends."""
        bucket = self.bucket
        if not isinstance(bucket, FileBucket) or bucket.list(self.locks_prefix(stack)):
            return []
        return list(bucket.remove_torn_sidecars(f"{self.stacks_prefix()}{stack}."))

    def close(self) -> None:
        self.bucket.close()


def open_state_store(
    url: str, *, env: Mapping[str, str] | None = None, project: str = PROJECT
) -> StateStore | None:
    """The store of backend ``url``; None for a backend that is not a DIY bucket this code
    reads (Pulumi Cloud, ``gs://``, ``azblob://``): ask the CLI. ``env``: the environment the
    ``pulumi`` CLI runs with (credentials; default this process's). Connects to nothing yet."""
    scheme = url.partition("://")[0].lower()
    bucket: Bucket
    if scheme == "file":
        bucket = FileBucket.from_url(url)
    elif scheme == "s3":
        bucket = S3Bucket(url, env=env)
    elif scheme == "postgres":
        bucket = PostgresBucket(url, env=env)
    else:
        return None
    return StateStore(bucket, project=project)

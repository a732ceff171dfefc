"""The one module that reads and writes Pulumi's private DIY backend layout (its keys and formats
are in :mod:`.layout`); everything else asks it.

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

import gzip
import json
import os
from collections.abc import Mapping
from typing import Any

import yaml

from reconciler.engine.state.bucket import (
    DEFAULT_TIMEOUT,
    Bucket,
    BucketError,
    Guard,
    StoredObject,
    WriteConflictError,
)
from reconciler.engine.state.folder import FileBucket
from reconciler.engine.state.layout import (
    CHECKPOINT_SUFFIXES,
    META,
    META_V1,
    ORGANIZATION,
    ROOT,
    TAGS_SUFFIX,
    TAGS_VERSION,
    Checkpoint,
    newest_checkpoint,
    parse_tags_file,
)
from reconciler.engine.state.lock_plan import LockRecord, lock_in
from reconciler.engine.state.postgres import PostgresBucket, cli_settings
from reconciler.engine.state.s3 import S3Bucket
from stacks.vocabulary import PROJECT

__all__ = [
    "CHECKPOINT_SUFFIXES",
    "DEFAULT_TIMEOUT",
    "META",
    "ORGANIZATION",
    "TAGS_SUFFIX",
    "BucketError",
    "Checkpoint",
    "Guard",
    "LockRecord",
    "StateStore",
    "StoredObject",
    "WriteConflictError",
    "cli_settings",
    "open_state_store",
    "parse_tags_file",
]


class StateStore:
    """A DIY backend's stacks, tags and locks for one project, on any bucket.

    Every method may raise :class:`~reconciler.engine.state.bucket.BucketError` (the backend
    is unreachable or refused); the message names the backend, never its password."""

    def __init__(self, bucket: Bucket, *, project: str = PROJECT) -> None:
        self.bucket = bucket
        self.project = project
        self._opened = False  # meta.yaml seen: set up by the CLI or by set_up
        # the keys of the stack locks this process holds now (state.stacks.locked): one of its
        # own that it no longer holds was left by a failed removal, and is stale
        self.holding: set[str] = set()

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

    def journal_prefix(self, stack: str) -> str:
        """Where a newer CLI keeps an update's journaled steps until it consolidates them
        (upstream pulumi's ``pkg/backend/diy/journal.go``); pulumi v3.259 writes none."""
        return f"{ROOT}journal/{self.project}/{stack}/"

    def tags_key(self, stack: str) -> str:
        return f"{self.stacks_prefix()}{stack}{TAGS_SUFFIX}"

    # --- layout ------------------------------------------------------------------------------

    def opened(self) -> bool:
        """Whether the backend is set up (``meta.yaml`` written; it is never removed, so a True
        is remembered): by the CLI when it first opened it, or by :meth:`set_up`."""
        if not self._opened:
            self._opened = self.bucket.read(META) is not None
        return self._opened

    def set_up(self) -> bool:
        """Set a new backend up as the CLI does when it first opens one (``ensurePulumiMeta``
        in ``pkg/backend/diy/meta.go``), without a ``pulumi`` start: ``meta.yaml`` with
        ``version: 1``, the project layout. Whether the backend is set up now. Not when the
        CLI would choose the old layout: stacks of it are there (``.pulumi/stacks/<stack>.json``)
        or ``PULUMI_DIY_BACKEND_LEGACY_LAYOUT`` asks for it; then nothing is written and the
        CLI decides. Two writers setting it up at once write the same bytes."""
        if self.opened():
            return True
        legacy = os.environ.get("PULUMI_DIY_BACKEND_LEGACY_LAYOUT", "").lower()
        if legacy in ("1", "t", "true") or any(
            "/" not in obj.key[len(f"{ROOT}stacks/") :]
            for obj in self.bucket.list(f"{ROOT}stacks/")
        ):
            return False
        self.bucket.prepare()
        self.bucket.write(META, META_V1)
        self._opened = True
        return True

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
        found = (lock_in(obj, stack, self.bucket.read(obj.key)) for obj in self.bucket.list(prefix))
        return [lock for lock in found if lock is not None]

    def all_locks(self) -> dict[str, list[LockRecord]]:
        """The locks of every stack of the project that has any, by stack name (one listing;
        only the lock objects found are read)."""
        prefix = self.locks_prefix()
        out: dict[str, list[LockRecord]] = {}
        for obj in self.bucket.list(prefix):
            stack, _, rest = obj.key[len(prefix) :].partition("/")
            if stack and rest and "/" not in rest:
                lock = lock_in(obj, stack, self.bucket.read(obj.key))
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

    def tags_versioned(self, stack: str) -> tuple[dict[str, str] | None, str | None]:
        """:meth:`tags` and the version of the object they are in (None: no object)."""
        got = self.bucket.read_versioned(self.tags_key(stack))
        if got is None:
            return {}, None
        return parse_tags_file(got[0].decode(errors="replace")), got[1]

    def write_tags(
        self, stack: str, tags: Mapping[str, str], *, if_version: str | None = None
    ) -> str:
        """Write the stack's tags whole, as the CLI's ``stack tag set`` would leave them; the
        object's new version. An empty set is not written (the CLI removes the object instead:
        use the CLI). ``if_version``: only over that version (:class:`WriteConflictError`)."""
        if not tags:
            raise ValueError("an empty tag set is removed by the CLI, not written")
        data = json.dumps({"version": TAGS_VERSION, "tags": dict(tags)}).encode()
        return self.bucket.write(self.tags_key(stack), data, if_version=if_version)

    # --- stacks ------------------------------------------------------------------------------

    def stack_names(self) -> list[str]:
        """The project's stacks as ``pulumi stack ls`` finds them: one per checkpoint object
        (``<stack>.json``, ``.json.gz``, ``.json.zst``), sorted; none read (the CLI reads each
        and leaves out one it cannot parse)."""
        prefix = self.stacks_prefix()
        keys = [obj.key[len(prefix) :] for obj in self.bucket.list(prefix)]
        found = {k[: -len(end)] for k in keys for end in CHECKPOINT_SUFFIXES if k.endswith(end)}
        return sorted(name for name in found if name and "/" not in name)

    def stack_exists(self, stack: str) -> bool:
        """Whether the backend has a checkpoint of ``stack`` (plain or compressed)."""
        base = f"{self.stacks_prefix()}{stack}"
        return any(self.bucket.exists(base + suffix) for suffix in CHECKPOINT_SUFFIXES)

    def checkpoint_key(self, stack: str) -> str | None:
        """The object the CLI reads ``stack``'s checkpoint from: the newest of ``.json``,
        ``.json.gz`` and ``.json.zst`` (on a tie the last listed: pulumi's ``stackPath``); None
        when there is none."""
        base = f"{self.stacks_prefix()}{stack}"
        return newest_checkpoint(self.bucket.find([base + e for e in CHECKPOINT_SUFFIXES]), base)

    def checkpoint_keys(self) -> dict[str, str]:
        """Every stack's checkpoint object, as :meth:`checkpoint_key` picks it, from one
        listing of the stacks' folder (instead of one per stack)."""
        prefix = self.stacks_prefix()
        found: dict[str, list[StoredObject]] = {}
        for obj in self.bucket.list(prefix):
            rest = obj.key[len(prefix) :]
            for end in CHECKPOINT_SUFFIXES:  # a key ends with one of them at most
                if rest.endswith(end) and rest != end and "/" not in rest:
                    found.setdefault(rest[: -len(end)], []).append(obj)
        return {name: newest_checkpoint(objs, prefix + name) or "" for name, objs in found.items()}

    def checkpoint_version(self, stack: str) -> tuple[str, str] | None:
        """The key and version :meth:`read_checkpoint` would give, without parsing the state
        (a writer's check that no one wrote since it read)."""
        key = self.checkpoint_key(stack)
        got = self.bucket.read_versioned(key) if key is not None else None
        return (key, got[1]) if key is not None and got is not None else None

    def read_checkpoint(self, stack: str, *, key: str | None = None) -> Checkpoint | None:
        """The stack's checkpoint as the CLI would read it (:meth:`checkpoint_key`, or ``key``
        from :meth:`checkpoint_keys`), with the version a conditional write compares; None
        when there is none, or it is zstd-compressed (not read here) or not a JSON object."""
        key = key if key is not None else self.checkpoint_key(stack)
        if key is None or key.endswith(".zst"):
            return None
        got = self.bucket.read_versioned(key)
        if got is None:
            return None
        raw, version = got
        try:
            document = json.loads(gzip.decompress(raw) if key.endswith(".gz") else raw)
        except (OSError, ValueError):
            return None
        if not isinstance(document, dict):
            return None
        return Checkpoint(key=key, version=version, raw=raw, document=document)

    def checkpoint(self, stack: str) -> dict[str, Any] | None:
        """The checkpoint document (``{"version": 3, ...}``) :meth:`read_checkpoint` reads."""
        read = self.read_checkpoint(stack)
        return read.document if read is not None else None

    def deployment(self, stack: str, *, key: str | None = None) -> dict[str, Any] | None:
        """The stack's latest deployment, as ``pulumi stack export`` prints it (resources,
        pending operations); None when the checkpoint cannot be read here or has none."""
        read = self.read_checkpoint(stack, key=key)
        return read.deployment if read is not None else None

    def write_deployment(
        self,
        stack: str,
        deployment: Mapping[str, Any],
        *,
        expect: Checkpoint,
        backup: bool = True,
        durable: bool = True,
    ) -> Checkpoint:
        """Replace the stack's latest deployment in the checkpoint ``expect`` was read from,
        as the CLI saves one (``saveCheckpoint``: the object it replaces copied to ``.bak``
        first unless not ``backup``, then written whole, plain or gzip as stored), under the
        caller's :meth:`locked` (``durable``: :meth:`.bucket.Bucket.write`'s); the checkpoint as
        written. :class:`WriteConflictError`, nothing replaced, when the object is no longer at
        ``expect``'s version (another writer)."""
        inner = expect.document.get("checkpoint")
        if not isinstance(inner, dict):
            raise BucketError(f"stack {stack} has no checkpoint this code reads")
        document = {**expect.document, "checkpoint": {**inner, "latest": dict(deployment)}}
        text = json.dumps(document, separators=(",", ":")).encode()  # as the CLI writes it
        raw = gzip.compress(text) if expect.key.endswith(".gz") else text
        if backup:
            self.bucket.write(expect.key + ".bak", expect.raw, durable=False)  # a copy
        version = self.bucket.write(expect.key, raw, if_version=expect.version, durable=durable)
        return Checkpoint(key=expect.key, version=version, raw=raw, document=document)

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
    url: str,
    *,
    env: Mapping[str, str] | None = None,
    project: str = PROJECT,
    timeout: float = DEFAULT_TIMEOUT,
) -> StateStore | None:
    """The store of backend ``url``; None for a backend that is not a DIY bucket this code
    reads (Pulumi Cloud, ``gs://``, ``azblob://``): ask the CLI. ``env``: the environment the
    ``pulumi`` CLI runs with (credentials; default this process's); ``timeout``: the most
    seconds one request to the backend may take. Connects to nothing yet."""
    scheme = url.partition("://")[0].lower()
    bucket: Bucket
    if scheme == "file":
        bucket = FileBucket.from_url(url)
    elif scheme == "s3":
        bucket = S3Bucket(url, env=env, timeout=timeout)
    elif scheme == "postgres":
        bucket = PostgresBucket(url, env=env, timeout=timeout)
    else:
        return None
    return StateStore(bucket, project=project)

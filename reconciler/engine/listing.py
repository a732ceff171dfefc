"""This cluster's stacks on the backend, and the stacks a tag names.

* :func:`list_stacks` on a DIY backend (``file://``, ``s3://``, ``postgres://``): the stack
  names, every stack's tags and every lock are read through :mod:`.state.store` in one go (a
  folder walk, one S3 listing and parallel reads, or one query), as ``pulumi stack ls --tag
  lbr:cluster=<cluster>`` selects them. With ``detail`` (the ``stacks``, ``preview``, ``adopt``
  and ``sweep`` commands) each selected stack's checkpoint is read too (eight at a time), for
  its last update and resource count as ``pulumi stack ls --json`` prints them: no ``pulumi``
  starts. A checkpoint the store does not read (compressed with zstd, not JSON) sends the whole
  listing to ``pulumi stack ls --json --all --project lb-reconciler --tag
  lbr:cluster=<cluster>``, as does any other backend; a tags object in a format this code does
  not know, to ``pulumi stack tag ls --json`` of that stack (about 0.35 s each, eight at a
  time). Without ``detail`` (the controller's periodic scan) no checkpoint is read. Nothing
  opens a stack or decrypts anything (docs/engine.md).
* :func:`last_operations`: each stack's last history entry (the newest history record, read by
  the store; ``pulumi stack history`` for other backends); :func:`stacks_tagged`: the names of
  the stacks with a tag.
"""

from __future__ import annotations

import json
import logging
import subprocess
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from reconciler.engine.plan import (
    CLUSTER_TAG,
    StackInfo,
    StackListing,
    listing_of,
    parse_stack_ls,
    stack_info,
)
from reconciler.engine.state.locks import locked
from reconciler.engine.state.stacks import history_records, last_update
from reconciler.engine.state.store import BucketError
from stacks.vocabulary import PROJECT

if TYPE_CHECKING:
    from reconciler.engine.context import EngineContext
    from reconciler.engine.state.store import StateStore

__all__ = ["last_operations", "list_stacks", "stack_history", "stacks_tagged"]

log = logging.getLogger("reconciler.engine.stack")
CLI_TAG_WORKERS = 8  # parallel `pulumi stack tag ls` (tags the store cannot read), checkpoint reads


def stacks_tagged(engine: EngineContext, key: str, value: str, *, work_dir: Path) -> list[str]:
    """Names of the project's stacks tagged ``key=value`` (``work_dir`` holds the project)."""
    done = subprocess.run(
        [
            str(engine.settings.toolchain.path("pulumi")),
            "stack",
            "ls",
            "--tag",
            f"{key}={value}",
            "--json",
        ],
        capture_output=True,
        text=True,
        cwd=work_dir,
        env=engine.env(),
        check=True,
    )
    return [str(s["name"]) for s in json.loads(done.stdout or "[]")]


def list_stacks(engine: EngineContext, *, detail: bool = True) -> list[StackInfo]:
    """Every stack of the engine's backend tagged ``lbr:cluster=<cluster_name>``, sorted by name.

    With ``detail``, each stack's last update and resource count (from its checkpoint, as
    ``pulumi stack ls`` reads them); without, both None: what the controller's periodic scan
    needs (names, tags, locks), at no checkpoint read. On a backend the store reads, no
    ``pulumi`` starts (the module's docstring says when one does).

    Raises :class:`~reconciler.engine.errors.EngineError` when the backend cannot be listed. A
    stack whose tags cannot be read (removed meanwhile) is left out, as is one without its
    namespace and name tags (see :func:`~reconciler.engine.plan.stack_info`).
    """
    subject = f"the stacks of cluster {engine.settings.cluster_name}"
    store = engine.store
    if store is None:
        return _infos(engine, _cli_listings(engine, subject), subject)
    cluster = engine.settings.cluster_name
    try:
        names, stored = store.stack_names(), store.all_tags()
    except BucketError as exc:
        raise engine.error(exc, stack="", doing="listing", subject=subject) from None
    # as `--tag lbr:cluster=<cluster>` selects: a stack without a tags object has no tag; one
    # whose tags the store cannot read is asked of the CLI (_infos)

    def selected(name: str) -> bool:
        if name not in stored:
            return False
        tags = stored[name]
        return tags is None or tags.get(CLUSTER_TAG) == cluster

    ours = [name for name in names if selected(name)]
    if not detail:
        listings = [listing_of(name, None) for name in ours]
        return _infos(engine, listings, subject, stored=stored)
    try:
        read = _read_listings(store, ours)
    except BucketError as exc:
        raise engine.error(exc, stack="", doing="listing", subject=subject) from None
    if read is None:  # a checkpoint the store does not read: as the CLI lists them
        return _infos(engine, _cli_listings(engine, subject), subject)
    return _infos(engine, read, subject, stored=stored)


def _read_listings(store: StateStore, names: Sequence[str]) -> list[StackListing] | None:
    """Each stack as listed (:func:`~reconciler.engine.plan.listing_of`) from its checkpoint,
    eight read at a time; a stack removed meanwhile is left out (as by the CLI). None when a
    checkpoint is one the store does not read
    (:meth:`~reconciler.engine.state.store.StateStore.read_checkpoint`)."""
    unread = object()
    keys = store.checkpoint_keys()  # one listing, not one per stack (None: looked up then)

    def read(name: str) -> StackListing | object | None:
        checkpoint = store.read_checkpoint(name, key=keys.get(name))
        if checkpoint is not None:
            return listing_of(name, checkpoint.deployment)
        return None if store.checkpoint_key(name) is None else unread  # None: removed meanwhile

    with ThreadPoolExecutor(max_workers=CLI_TAG_WORKERS) as pool:
        found = list(pool.map(read, names))
    if any(item is unread for item in found):
        return None
    return [item for item in found if isinstance(item, StackListing)]


def _cli_listings(engine: EngineContext, subject: str) -> list[StackListing]:
    """``pulumi stack ls --json --all`` of the project's stacks tagged with this cluster."""
    settings = engine.settings
    done = subprocess.run(
        [
            str(settings.toolchain.path("pulumi")),
            "stack",
            "ls",
            "--json",
            "--all",
            "--project",
            PROJECT,
            "--tag",
            f"{CLUSTER_TAG}={settings.cluster_name}",
        ],
        capture_output=True,
        text=True,
        cwd=settings.state_dir,
        env=engine.env(),
        check=False,
    )
    if done.returncode != 0:
        text = done.stdout + done.stderr
        raise engine.error(RuntimeError(text), stack="", doing="listing", subject=subject)
    try:
        return parse_stack_ls(done.stdout)
    except ValueError as exc:
        raise engine.error(exc, stack="", doing="listing", subject=subject) from None


def _infos(
    engine: EngineContext,
    listings: Sequence[StackListing],
    subject: str,
    *,
    stored: Mapping[str, dict[str, str] | None] | None = None,
) -> list[StackInfo]:
    """The listed stacks that are this cluster's, with their tags (``stored``: the store's, if
    read already) and whether a lock (not a stale one of this controller's) holds them."""
    cluster = engine.settings.cluster_name
    store = engine.store
    try:
        if stored is None:
            stored = store.all_tags() if store is not None else {}
        locks = store.all_locks() if store is not None else None
    except BucketError as exc:
        raise engine.error(exc, stack="", doing="listing", subject=subject) from None
    tags: dict[str, dict[str, str] | None] = {item.name: stored.get(item.name) for item in listings}
    missing = [item for item in listings if tags[item.name] is None]
    if missing:
        with ThreadPoolExecutor(max_workers=CLI_TAG_WORKERS) as pool:
            for item, found in zip(
                missing, pool.map(lambda item: _cli_tags(engine, item), missing), strict=True
            ):
                tags[item.name] = found
    out = []
    for item in listings:
        found = tags[item.name]
        if found is None:
            continue
        of_stack = locks.get(item.name, []) if locks is not None else None
        holding = store.holding if store is not None else ()
        busy = locked(of_stack, rule=engine.lock_rule(), holding=holding)
        info = stack_info(item, found, cluster_name=cluster, locked=busy)
        if info is None:
            log.warning("stack %s lacks its namespace or name tag; left out", item.name)
            continue
        out.append(info)
    return sorted(out, key=lambda info: info.stack)


def _stack_cli(engine: EngineContext, stack: str, *args: str) -> str | None:
    """stdout of ``pulumi stack <args> --stack <stack>`` run from the state folder; None when
    it failed (the caller says what that means)."""
    settings = engine.settings
    done = subprocess.run(
        [str(settings.toolchain.path("pulumi")), "stack", *args, "--stack", stack],
        capture_output=True,
        text=True,
        cwd=settings.state_dir,
        env=engine.env(),
        check=False,
    )
    return done.stdout if done.returncode == 0 else None


def last_operations(engine: EngineContext, infos: Sequence[StackInfo]) -> dict[str, str]:
    """Each stack's newest history entry as ``pulumi stack history --json --page-size 1``
    prints it ("" when that failed), keyed by stack name: on a DIY backend, the record read by
    the store (:func:`_stored_history`); else, or for a record the store does not read, that
    command, eight at a time. Nothing is decrypted."""
    store = engine.store

    def history(info: StackInfo) -> str:
        stored = _stored_history(store, info.stack) if store is not None else None
        if stored is not None:
            return stored
        args = ("history", "--json", "--page-size", "1")
        return _stack_cli(engine, info.qualified or info.stack, *args) or ""

    with ThreadPoolExecutor(max_workers=CLI_TAG_WORKERS) as pool:
        return {
            info.stack: text for info, text in zip(infos, pool.map(history, infos), strict=True)
        }


def _stored_history(store: StateStore, stack: str) -> str | None:
    """``[<the newest history record>]`` of ``stack`` (the fields ``pulumi stack history --json``
    prints, times as Unix seconds), ``[]`` without one; None when the store cannot read it (a
    format it does not know, the backend failing): the CLI is asked instead."""
    try:
        record = last_update(store, stack)
        if record is not None:
            return json.dumps([record])
        return None if store.bucket.list(store.history_prefix(stack)) else "[]"
    except BucketError:
        return None


def _cli_tags(engine: EngineContext, item: StackListing) -> dict[str, str] | None:
    out = _stack_cli(engine, item.qualified, "tag", "ls", "--json")
    try:
        raw = json.loads(out) if out is not None else None
    except ValueError:
        raw = None
    if not isinstance(raw, Mapping):
        log.warning("could not read the tags of stack %s; left out of the listing", item.name)
        return None
    return {str(k): str(v) for k, v in raw.items()}


def stack_history(engine: EngineContext, stack: str, *, limit: int) -> str | None:
    """``stack``'s newest ``limit`` history entries, newest first, as ``pulumi stack history
    --json`` prints them: on a DIY backend, the records read by the store; else that command.
    None when there is no such stack (or the command failed). Nothing is decrypted."""
    store = engine.store_or_none()
    if store is not None:
        try:
            if not store.stack_exists(stack):
                return None
            return json.dumps(history_records(store, stack, limit=limit))
        except BucketError:
            pass
    return _stack_cli(engine, stack, "history", "--json", "--page-size", str(limit))

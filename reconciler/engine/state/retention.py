"""How much of a stack's past the backend keeps: which history entries and backups to remove. Pure.

Every ``up``, ``refresh`` and ``destroy`` makes the ``pulumi`` CLI add a history entry (an update
record and a full copy of the checkpoint) and a backup of the checkpoint it replaces, and nothing
ever removes them: a drift check an hour on 500 Services is ~12,000 objects a day. The engine
keeps the newest ``keep`` of each per stack (:func:`reconciler.engine.state.stacks.prune` after each
operation) and everything of a stack it removes
(:func:`~reconciler.engine.state.stacks.remove_leftovers`). This module decides from the keys alone;
the key names are those :mod:`reconciler.engine.state.store` documents (the one module that knows
Pulumi's layout):

    <history prefix><stack>-<unix nanoseconds>.history.json[.gz|.zst]   (and .checkpoint.json...)
    <backups prefix><stack>.<unix nanoseconds>.json[.gz|.zst]

A ``file://`` backend's ``.attrs`` sidecar goes with its object. A key that does not match these
names (another tool's file, a future CLI's) is never removed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["DEFAULT_KEEP", "backups_to_prune", "history_to_prune", "retention_bound"]

DEFAULT_KEEP = 5  # history entries (and checkpoint backups) kept per stack: docs/operations.md
_EXT = r"json(?:\.gz|\.zst)?(?:\.attrs)?"


def _newest_first(keys: Iterable[str], pattern: re.Pattern[str]) -> list[tuple[int, str]]:
    out = []
    for key in keys:
        m = pattern.search(key)
        if m is not None:
            out.append((int(m.group("time")), key))
    return sorted(out, reverse=True)


def _older_than_newest(stamped: list[tuple[int, str]], keep: int) -> list[str]:
    times = sorted({t for t, _ in stamped}, reverse=True)
    kept = set(times[: max(keep, 0)])
    return sorted(key for t, key in stamped if t not in kept)


def history_to_prune(keys: Iterable[str], *, stack: str, keep: int) -> list[str]:
    """The keys of ``stack``'s history entries beyond the newest ``keep`` (an entry is the
    update record and the checkpoint copy of one operation, which share a time stamp)."""
    pattern = re.compile(
        rf"(?:^|/){re.escape(stack)}-(?P<time>\d+)\.(?:history|checkpoint)\.{_EXT}$"
    )
    return _older_than_newest(_newest_first(keys, pattern), keep)


def backups_to_prune(keys: Iterable[str], *, stack: str, keep: int) -> list[str]:
    """The keys of ``stack``'s checkpoint backups beyond the newest ``keep``."""
    pattern = re.compile(rf"(?:^|/){re.escape(stack)}\.(?P<time>\d+)\.{_EXT}$")
    return _older_than_newest(_newest_first(keys, pattern), keep)


def retention_bound(*, keep: int, checkpoint_bytes: int, sidecar_bytes: int = 0) -> int:
    """The most bytes one stack can hold once pruned, when no checkpoint it ever had exceeds
    ``checkpoint_bytes`` and no history record exceeds it either: the checkpoint and its
    ``.bak``, ``keep`` history entries (record + checkpoint copy), ``keep`` backups, the tags
    object; each object with a sidecar of at most ``sidecar_bytes`` on ``file://``. Locks are
    not counted (they exist only during an operation)."""
    objects = 2 + 2 * keep + keep + 1
    return objects * (checkpoint_bytes + sidecar_bytes)

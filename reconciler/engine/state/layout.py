"""The objects of Pulumi's DIY backend as the ``pulumi`` CLI (v3.259, ``pkg/backend/diy``) lays
them out, and their formats: keys and parsing only, no I/O. :mod:`.store` reads and writes
them; no other module uses what is here (see its docstring for the layout).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from reconciler.engine.state.bucket import StoredObject

__all__ = [
    "CHECKPOINT_SUFFIXES",
    "META",
    "META_V1",
    "ORGANIZATION",
    "ROOT",
    "SUFFIXES",
    "TAGS_SUFFIX",
    "TAGS_VERSION",
    "Checkpoint",
    "newest_checkpoint",
    "parse_tags_file",
]

ROOT = ".pulumi/"
META = ".pulumi/meta.yaml"
META_V1 = b"version: 1\n"  # what the CLI writes to a new backend (yaml.Marshal of version 1)
TAGS_SUFFIX = ".pulumi-tags"
TAGS_VERSION = 1
CHECKPOINT_SUFFIXES = (".json", ".json.gz", ".json.zst")
SUFFIXES = frozenset(CHECKPOINT_SUFFIXES)
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


@dataclass(frozen=True)
class Checkpoint:
    """A stack's checkpoint as read: the object it is in (:meth:`StateStore.checkpoint_key`),
    that object's version (what a conditional write compares) and bytes, and the document."""

    key: str
    version: str
    raw: bytes
    document: dict[str, Any]

    @property
    def format(self) -> object:
        """The checkpoint format's version (``3`` for every ``pulumi`` the direct paths know)."""
        return self.document.get("version")

    @property
    def deployment(self) -> dict[str, Any] | None:
        """The latest deployment (``pulumi stack export``'s), None without one."""
        inner = self.document.get("checkpoint")
        latest = inner.get("latest") if isinstance(inner, dict) else None
        return latest if isinstance(latest, dict) else None


def newest_checkpoint(objs: Iterable[StoredObject], base: str) -> str | None:
    """The key the CLI reads the checkpoint ``base`` (the stacks' folder and a stack's name)
    from: the newest of ``.json``, ``.json.gz`` and ``.json.zst`` among ``objs`` (listed in key
    order; on a tie the last listed: ``stackPath``); None when there is none."""
    best = None
    for obj in objs:
        if obj.key[len(base) :] in SUFFIXES and (best is None or obj.modified >= best.modified):
            best = obj
    return best.key if best is not None else None

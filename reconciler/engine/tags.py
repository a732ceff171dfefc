"""A stack's tags, read and written in one step where the backend allows it.

The tags are the engine's index of a stack: who it belongs to, what it made, and the hash of the
last applied spec (:mod:`reconciler.engine.plan`). The CLI reads them with ``pulumi stack tag ls``
and writes one per ``pulumi stack tag set``; each of those is a process start of the ``pulumi``
binary, about 0.45 s on two cores before it does anything. A new stack has eleven tags.

A ``file://`` backend keeps a stack's tags in one file,
``.pulumi/stacks/<project>/<stack>.pulumi-tags`` = ``{"version": 1, "tags": {...}}``, beside the
blob library's ``.attrs`` sidecar (content type and MD5; missing is valid, the MD5 is reported,
never checked on read). :class:`StackTags` reads that file, and writes it whole: the new content
to a temporary file renamed over the old one, then the sidecar the same way. That is how the
``pulumi`` CLI itself writes it, minus the in-place sidecar write that a kill can tear. A stack's
tags are written only by the worker that owns its Service (one at a time) and by ``pulumi stack
tag set``, which the engine does not run on a stack it writes this way. For any other backend,
or a tags file in a format this code does not know, the CLI is used, one tag per call.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from urllib.parse import unquote, urlsplit

from pulumi import automation as auto

from reconciler.engine.plan import parse_tags_file
from stacks.vocabulary import PROJECT

__all__ = ["StackTags", "file_tags", "stack_exists"]

TAGS_VERSION = 1
_SIDECAR_DEFAULTS = {
    "user.cache_control": "",
    "user.content_disposition": "",
    "user.content_encoding": "",
    "user.content_language": "",
    "user.content_type": "text/plain; charset=utf-8",
    "user.metadata": None,
}


def _stack_folder(backend: str) -> Path | None:
    if not backend.startswith("file://"):
        return None
    return Path(unquote(urlsplit(backend).path)) / ".pulumi" / "stacks" / PROJECT


def file_tags(backend: str, name: str) -> dict[str, str] | None:
    """A ``file://`` backend's tags of stack ``name``, read from its tags file; None: not a
    ``file://`` backend, no such file, or a format this code does not know."""
    folder = _stack_folder(backend)
    if folder is None:
        return None
    try:
        text = (folder / f"{name}.pulumi-tags").read_text()
    except OSError:
        return None
    return parse_tags_file(text)


def stack_exists(backend: str, name: str) -> bool | None:
    """Whether a ``file://`` backend has a checkpoint for stack ``name`` (plain or gzipped);
    None for other backends (ask the CLI)."""
    folder = _stack_folder(backend)
    if folder is None:
        return None
    return any((folder / f"{name}{suffix}").exists() for suffix in (".json", ".json.gz"))


def _write_atomically(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


class StackTags:
    """The tags of one stack: :meth:`read` them, then :meth:`apply` changes in one write.

    ``stack`` is the opened Automation API stack, used when the tags file cannot be (another
    backend, or an unknown format). ``before_write`` is called before any write (the engine's
    fence: it raises to refuse)."""

    def __init__(
        self,
        *,
        backend: str,
        stack_name: str,
        stack: auto.Stack,
        before_write: Callable[[], None] | None = None,
    ) -> None:
        self.stack = stack
        self._before_write = before_write
        folder = _stack_folder(backend)
        self._path = folder / f"{stack_name}.pulumi-tags" if folder is not None else None
        self._via_file = False

    def read(self) -> dict[str, str]:
        if self._path is not None:
            try:
                found = parse_tags_file(self._path.read_text())
            except FileNotFoundError:
                found = {}  # a new stack: the CLI would list none either
            except OSError:
                found = None
            if found is not None:
                self._via_file = True
                return found
        self._via_file = False
        return dict(self.stack.list_tags())

    def apply(
        self,
        current: Mapping[str, str],
        *,
        put: Mapping[str, str] | None = None,
        drop: Iterable[str] = (),
    ) -> dict[str, str]:
        """Set ``put`` and remove ``drop`` on top of ``current`` (what :meth:`read` returned,
        as updated by earlier calls); returns the tags as they are now. Writes nothing when
        nothing differs."""
        wanted = dict(current)
        wanted.update(put or {})
        for key in drop:
            wanted.pop(key, None)
        if wanted == dict(current):
            return wanted
        if self._before_write is not None:
            self._before_write()
        if self._via_file and self._path is not None and wanted:
            self._write_file(wanted)
            return wanted
        for key in current:
            if key not in wanted:
                self.stack.remove_tag(key)
        for key, value in wanted.items():
            if current.get(key) != value:
                self.stack.set_tag(key, value)
        return wanted

    def remove(self, *keys: str) -> None:
        """Read the tags and remove ``keys``."""
        self.apply(self.read(), drop=keys)

    def _write_file(self, tags: Mapping[str, str]) -> None:
        assert self._path is not None
        data = json.dumps({"version": TAGS_VERSION, "tags": dict(tags)}).encode()
        _write_atomically(self._path, data)
        sidecar = self._path.with_name(self._path.name + ".attrs")
        attrs: dict[str, object] = dict(_SIDECAR_DEFAULTS)
        with contextlib.suppress(OSError, ValueError):
            old = json.loads(sidecar.read_text())
            if isinstance(old, dict):
                attrs.update(old)
        attrs["md5"] = base64.b64encode(hashlib.md5(data).digest()).decode()  # noqa: S324
        _write_atomically(sidecar, json.dumps(attrs).encode())

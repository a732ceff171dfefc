"""A stack's tags, read and written in one step where the backend allows it.

The tags are the engine's index of a stack: who it belongs to, what it made, and the hash of the
last applied spec (:mod:`reconciler.engine.plan`). The CLI reads them with ``pulumi stack tag ls``
and writes one per ``pulumi stack tag set``; each of those is a process start of the ``pulumi``
binary, about 0.45 s on two cores before it does anything. A new stack has eleven tags.

A DIY backend (``file://``, ``s3://``, ``postgres://``) keeps a stack's tags in one object, which
:class:`StackTags` reads and writes whole through :mod:`.state.store` (a file
written to a temporary name and renamed, an S3 PUT, one row upsert): one step instead of a CLI
start per tag. That is the object the ``pulumi`` CLI itself reads and writes. A stack's tags are
written only by the worker that owns its Service (one at a time) and by ``pulumi stack tag set``,
which the engine does not run on a stack it writes this way. For any other backend, or a tags
object in a format this code does not know, the CLI is used, one tag per call.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from pulumi import automation as auto

from reconciler.engine.state.store import StateStore

__all__ = ["StackTags"]


class StackTags:
    """The tags of one stack: :meth:`read` them, then :meth:`apply` changes in one write.

    ``stack`` is the opened Automation API stack, used when the store cannot be (no store:
    another kind of backend; or a tags object in an unknown format). ``before_write`` is called
    before any write (the engine's fence: it raises to refuse)."""

    def __init__(
        self,
        *,
        store: StateStore | None,
        stack_name: str,
        stack: auto.Stack,
        before_write: Callable[[], None] | None = None,
    ) -> None:
        self.stack = stack
        self.store = store
        self.stack_name = stack_name
        self._before_write = before_write
        self._via_store = False

    def read(self) -> dict[str, str]:
        if self.store is not None:
            found = self.store.tags(self.stack_name)  # {}: a new stack, the CLI lists none
            if found is not None:
                self._via_store = True
                return found
        self._via_store = False
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
        if self._via_store and self.store is not None and wanted:
            self.store.write_tags(self.stack_name, wanted)
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

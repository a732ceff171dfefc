"""Kubernetes objects from manifest files, folders and stdin, each with the file and line it came
from. Parsing is pure (:func:`parse_text`); :func:`load` only reads the files.

The forms ``lb-reconciler preview -f`` accepts, in YAML or JSON:

* one object, or several in one multi-document YAML stream (``---`` between them), as written by
  hand or by ``helm template`` (its ``# Source:`` comments and empty documents are fine);
* a ``kind: List`` with ``items`` (``kubectl get svc -o yaml`` of several objects), or a typed
  list such as ``ServiceList`` whose items carry no ``kind`` (the API's own list responses);
* ``-`` for stdin; a folder for every ``*.yaml``, ``*.yml`` and ``*.json`` below it, in name order.

A document that does not parse stops that file (YAML cannot resynchronise after an error) and
becomes a :class:`LoadError` naming the file and the line; the objects before it are kept, so
every problem of a run can be reported at once. Empty documents are dropped silently.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import yaml

__all__ = ["STDIN", "Document", "LoadError", "Loaded", "find_files", "load", "parse_text"]

STDIN = "<stdin>"
SUFFIXES = (".yaml", ".yml", ".json")


@dataclass(frozen=True)
class Document:
    """One Kubernetes object and where it starts (``line`` 1-based; None when not known)."""

    source: str
    line: int | None
    body: Mapping[str, Any]

    @property
    def where(self) -> str:
        return f"{self.source}:{self.line}" if self.line else self.source

    @property
    def kind(self) -> str:
        return str(self.body.get("kind") or "")

    @property
    def name(self) -> str:
        meta = self.body.get("metadata")
        return str(meta.get("name") or "") if isinstance(meta, Mapping) else ""


@dataclass(frozen=True)
class LoadError:
    source: str
    line: int | None
    message: str

    @property
    def where(self) -> str:
        return f"{self.source}:{self.line}" if self.line else self.source

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"


@dataclass(frozen=True)
class Loaded:
    documents: tuple[Document, ...] = ()
    errors: tuple[LoadError, ...] = ()

    def __add__(self, other: Loaded) -> Loaded:
        return Loaded(self.documents + other.documents, self.errors + other.errors)


def _objects(
    body: Any, *, source: str, line: int | None, item_lines: Sequence[int | None]
) -> Iterator[Document | LoadError]:
    """``body`` as objects: a List's items (with their own lines), or the object itself."""
    if body is None:
        return
    if not isinstance(body, Mapping):
        kind = type(body).__name__
        yield LoadError(source, line, f"is a {kind}, not a Kubernetes object (kind, metadata)")
        return
    kind = str(body.get("kind") or "")
    items = body.get("items")
    if kind.endswith("List") and isinstance(items, list):
        item_kind = kind[: -len("List")]  # ServiceList items have no kind of their own
        for i, item in enumerate(items):
            item_line = item_lines[i] if i < len(item_lines) else line
            if isinstance(item, Mapping) and not item.get("kind") and item_kind:
                item = {"kind": item_kind, **item}
            yield from _objects(item, source=source, line=item_line, item_lines=())
        return
    if not kind:
        yield LoadError(source, line, "has no kind: not a Kubernetes object")
        return
    yield Document(source, line, body)


def _item_lines(node: yaml.Node) -> list[int | None]:
    """The start line of each entry of a mapping node's ``items`` sequence."""
    if not isinstance(node, yaml.MappingNode):
        return []
    for key, value in node.value:
        if getattr(key, "value", None) == "items" and isinstance(value, yaml.SequenceNode):
            return [n.start_mark.line + 1 for n in value.value]
    return []


def _parse_yaml(text: str, source: str) -> Iterator[Document | LoadError]:
    loader = yaml.SafeLoader(text)
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is None:
                continue
            body = loader.construct_document(node)
            line = node.start_mark.line + 1
            yield from _objects(body, source=source, line=line, item_lines=_item_lines(node))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(exc, "problem", None) or str(exc)
        context = getattr(exc, "context", None)
        message = f"{context}: {problem}" if context else str(problem)
        yield LoadError(source, line, f"is not valid YAML: {message}")
    finally:
        loader.dispose()


def _parse_json(text: str, source: str) -> Iterator[Document | LoadError]:
    try:
        body = json.loads(text)
    except json.JSONDecodeError as exc:
        yield LoadError(source, exc.lineno, f"is not valid JSON: {exc.msg} (column {exc.colno})")
        return
    if isinstance(body, list):  # a bare array of objects
        for item in body:
            yield from _objects(item, source=source, line=None, item_lines=())
        return
    yield from _objects(body, source=source, line=1, item_lines=())


def parse_text(text: str, *, source: str) -> Loaded:
    """Every object in ``text`` (YAML or JSON); ``source`` names it in errors."""
    looks_json = source.endswith(".json") or text.lstrip().startswith(("{", "["))
    found = list(_parse_json(text, source) if looks_json else _parse_yaml(text, source))
    return Loaded(
        tuple(d for d in found if isinstance(d, Document)),
        tuple(e for e in found if isinstance(e, LoadError)),
    )


def find_files(path: Path) -> list[Path]:
    """``path`` itself, or the manifests below a folder (recursive, sorted by path)."""
    if not path.is_dir():
        return [path]
    return sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in SUFFIXES)


def load(paths: Iterable[str], *, stdin: TextIO) -> Loaded:
    """Read and parse each path (``-`` is stdin, read once); unreadable paths are errors."""
    out = Loaded()
    read_stdin = False
    for given in paths:
        if given == "-":
            if not read_stdin:
                out += parse_text(stdin.read(), source=STDIN)
                read_stdin = True
            continue
        path = Path(given)
        if not path.exists():
            out += Loaded(errors=(LoadError(given, None, "no such file or folder"),))
            continue
        files = find_files(path)
        if not files:
            message = "has no *.yaml, *.yml or *.json files"
            out += Loaded(errors=(LoadError(given, None, message),))
        for file in files:
            try:
                text = file.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
                out += Loaded(errors=(LoadError(str(file), None, f"cannot be read: {reason}"),))
                continue
            out += parse_text(text, source=str(file))
    return out

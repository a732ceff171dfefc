"""StackTags: a file:// backend's tags file written whole through the state store, in the format
the pulumi CLI reads (the same on s3:// and postgres://: tests/integration/backends/).

(That the CLI reads what is written here, and that the CLI path gives the same tags, is checked
with the real CLI in tests/integration/engine/test_engine_cli_starts.py.)
"""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from reconciler.engine.state.store import StateStore, open_state_store
from reconciler.engine.tags import StackTags

NAME = "prod.default.web"


class RecordingStack:
    """Stands in for the Automation API stack where the file cannot be used: records calls."""

    def __init__(self, tags: dict[str, str]) -> None:
        self.tags = dict(tags)
        self.calls: list[tuple[str, ...]] = []

    def list_tags(self) -> dict[str, str]:
        self.calls.append(("ls",))
        return dict(self.tags)

    def set_tag(self, key: str, value: str) -> None:
        self.calls.append(("set", key, value))
        self.tags[key] = value

    def remove_tag(self, key: str) -> None:
        self.calls.append(("rm", key))
        del self.tags[key]


def folder(root: Path) -> Path:
    path = root / ".pulumi" / "stacks" / "lb-reconciler"
    path.mkdir(parents=True, exist_ok=True)
    return path


def store_of(backend: str) -> StateStore | None:
    return open_state_store(backend)


def file_tags(backend: str, name: str) -> dict[str, str] | None:
    store = store_of(backend)
    assert store is not None
    return store.tags(name)


def tags_of(stack: Any, backend: str) -> StackTags:
    return StackTags(store=store_of(backend), stack_name=NAME, stack=stack)


def test_file_backend_writes_once_with_a_matching_sidecar(tmp_path: Path) -> None:
    where = folder(tmp_path)
    sidecar = where / f"{NAME}.pulumi-tags.attrs"
    sidecar.write_text(json.dumps({"user.content_type": "text/plain; charset=utf-8", "md5": "x"}))
    (where / f"{NAME}.pulumi-tags").write_text('{"version":1,"tags":{"a":"1","gone":"x"}}')
    stack = RecordingStack({})
    tags = tags_of(stack, tmp_path.as_uri())
    current = tags.read()
    assert current == {"a": "1", "gone": "x"}
    now = tags.apply(current, put={"a": "2", "b": "3"}, drop=["gone"])
    assert now == {"a": "2", "b": "3"}
    assert stack.calls == []  # no CLI
    data = (where / f"{NAME}.pulumi-tags").read_bytes()
    assert json.loads(data) == {"version": 1, "tags": {"a": "2", "b": "3"}}
    attrs = json.loads(sidecar.read_text())
    assert attrs["md5"] == base64.b64encode(hashlib.md5(data).digest()).decode()  # noqa: S324
    assert attrs["user.content_type"] == "text/plain; charset=utf-8"
    assert file_tags(tmp_path.as_uri(), NAME) == {"a": "2", "b": "3"}
    assert sorted(p.name for p in where.iterdir()) == [
        f"{NAME}.pulumi-tags",
        f"{NAME}.pulumi-tags.attrs",
    ]  # no temporary files left


def test_unchanged_tags_write_nothing(tmp_path: Path) -> None:
    where = folder(tmp_path)
    path = where / f"{NAME}.pulumi-tags"
    path.write_text('{"version":1,"tags":{"a":"1"}}')
    before = path.stat().st_mtime_ns
    tags = tags_of(RecordingStack({}), tmp_path.as_uri())
    assert tags.apply(tags.read(), put={"a": "1"}, drop=["absent"]) == {"a": "1"}
    assert path.stat().st_mtime_ns == before


def test_a_new_stack_has_no_tags_file_yet(tmp_path: Path) -> None:
    where = folder(tmp_path)
    tags = tags_of(RecordingStack({}), tmp_path.as_uri())
    assert tags.read() == {}
    tags.apply({}, put={"lbr:cluster": "prod"})
    assert file_tags(tmp_path.as_uri(), NAME) == {"lbr:cluster": "prod"}
    assert (where / f"{NAME}.pulumi-tags.attrs").exists()


@pytest.mark.parametrize(
    ("backend", "content"),
    [
        ("https://api.pulumi.com", None),  # a backend read only through the CLI
        (None, '{"version":2,"tags":{"a":"1"}}'),  # a format this code does not know
    ],
)
def test_otherwise_one_cli_call_per_tag(tmp_path: Path, backend: str | None, content: str) -> None:
    if content is not None:
        (folder(tmp_path) / f"{NAME}.pulumi-tags").write_text(content)
    stack = RecordingStack({"a": "1", "gone": "x"})
    tags = tags_of(stack, backend or tmp_path.as_uri())
    current = tags.read()
    assert tags.apply(current, put={"a": "2", "b": "3"}, drop=["gone"]) == {"a": "2", "b": "3"}
    assert stack.calls == [("ls",), ("rm", "gone"), ("set", "a", "2"), ("set", "b", "3")]
    if content is not None:
        assert (folder(tmp_path) / f"{NAME}.pulumi-tags").read_text() == content


def test_stack_exists(tmp_path: Path) -> None:
    where = folder(tmp_path)
    store = store_of(tmp_path.as_uri())
    assert store is not None
    assert store.stack_exists(NAME) is False
    (where / f"{NAME}.json.gz").write_bytes(b"")
    assert store.stack_exists(NAME) is True
    assert store_of("https://api.pulumi.com") is None

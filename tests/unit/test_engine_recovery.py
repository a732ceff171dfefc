"""Repairing what a killed `pulumi` can leave in a file:// backend."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from pathlib import Path

import pytest

from reconciler.engine.errors import InterruptedOperationError
from reconciler.engine.processes import start_time, wait_gone
from reconciler.engine.recovery import repair_torn_sidecars, run_with_deadline
from reconciler.engine.state.store import open_state_store
from stacks.vocabulary import PROJECT


def _stacks(root: Path) -> Path:
    folder = root / ".pulumi" / "stacks" / PROJECT
    folder.mkdir(parents=True)
    return folder


def test_empty_or_half_written_sidecars_are_removed_and_good_ones_kept(tmp_path: Path) -> None:
    folder = _stacks(tmp_path)
    (folder / "c.ns.web.json").write_text("{}")
    (folder / "c.ns.web.json.attrs").write_text("")
    (folder / "c.ns.web.json.bak.attrs").write_text('{"user.content_type": "app')
    (folder / "c.ns.web.pulumi-tags.attrs").write_text('{"user.metadata": {}}')
    (folder / "c.ns.other.json.attrs").write_text("")
    store = open_state_store(tmp_path.as_uri())
    removed = repair_torn_sidecars(store=store, stack_name="c.ns.web")
    assert sorted(removed) == ["c.ns.web.json.attrs", "c.ns.web.json.bak.attrs"]
    assert (folder / "c.ns.web.pulumi-tags.attrs").exists()
    assert (folder / "c.ns.web.json").exists()
    assert (folder / "c.ns.other.json.attrs").exists()  # another stack's: not ours to touch


def test_nothing_is_touched_while_a_lock_is_held(tmp_path: Path) -> None:
    folder = _stacks(tmp_path)
    (folder / "c.ns.web.json.attrs").write_text("")
    locks = tmp_path / ".pulumi" / "locks" / "organization" / PROJECT / "c.ns.web"
    locks.mkdir(parents=True)
    (locks / "owner.json").write_text('{"pid": 1, "hostname": "h"}')
    store = open_state_store(tmp_path.as_uri())
    assert repair_torn_sidecars(store=store, stack_name="c.ns.web") == []
    assert (folder / "c.ns.web.json.attrs").exists()


def test_other_backends_are_left_alone() -> None:
    # no sidecars outside file://; no store at all for a backend only the CLI reads
    s3 = open_state_store("s3://bucket?endpoint=http://127.0.0.1:9")  # connects to nothing
    assert repair_torn_sidecars(store=s3, stack_name="c.ns.web") == []
    assert repair_torn_sidecars(store=None, stack_name="c.ns.web") == []


def test_a_cancel_interrupts_a_running_operation() -> None:
    release, cancel = threading.Event(), threading.Event()
    threading.Timer(0.2, cancel.set).start()
    with pytest.raises(InterruptedOperationError, match="shutdown"):
        run_with_deadline(
            lambda: release.wait(60),
            stack_name="s",
            doing="up",
            timeout=60,
            grace=0.1,
            on_error=lambda exc: exc,
            cancel=cancel,
        )
    release.set()


def test_an_operation_that_ends_in_time_returns_its_value() -> None:
    assert (
        run_with_deadline(
            lambda: 7,
            stack_name="s",
            doing="up",
            timeout=5,
            grace=0.1,
            on_error=lambda exc: exc,
            cancel=threading.Event(),
        )
        == 7
    )


def test_wait_gone_returns_once_killed_processes_have_exited() -> None:
    """A SIGKILLed process counts as gone once it has exited (a zombie not yet reaped counts
    too); a live one keeps the wait going until its timeout."""
    child = subprocess.Popen(["sleep", "60"])
    try:
        started = start_time(child.pid)
        assert started is not None
        assert not wait_gone({(child.pid, started)}, timeout=0.05)  # alive: the wait ran out
        os.kill(child.pid, signal.SIGKILL)
        assert wait_gone({(child.pid, started)}, timeout=10)
        assert start_time(child.pid) is None  # exited: a zombie until reaped below
    finally:
        child.kill()
        child.wait()

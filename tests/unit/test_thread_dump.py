"""``kill -USR1``: every thread's stack as one log record (reconciler.controller.thread_dump)."""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading

import pytest

from reconciler.controller import thread_dump


def test_sigusr1_logs_every_thread_s_stack_in_one_record(
    caplog: pytest.LogCaptureFixture,
) -> None:
    release = threading.Event()
    waiter = threading.Thread(target=lambda: release.wait(timeout=30), name="waiter")
    waiter.start()
    previous = signal.getsignal(signal.SIGUSR1)
    try:
        thread_dump.install()
        with caplog.at_level(logging.WARNING, logger=thread_dump.log.name):
            os.kill(os.getpid(), signal.SIGUSR1)  # handled in this (the main) thread, now
        (record,) = [r for r in caplog.records if r.getMessage() == thread_dump.MESSAGE]
    finally:
        signal.signal(signal.SIGUSR1, previous)
        release.set()
        waiter.join()
    threads: dict[str, str] = record.__dict__["threads"]
    (mine,) = [stack for name, stack in threads.items() if name.startswith("MainThread (0x")]
    assert "test_sigusr1_logs_every_thread_s_stack_in_one_record" in mine
    (its,) = [stack for name, stack in threads.items() if name.startswith("waiter (0x")]
    assert "in wait" in its  # where it is blocked, innermost call last


def test_format_names_each_thread_and_puts_the_innermost_call_last() -> None:
    frame = sys._getframe()
    stacks = thread_dump.format_stacks({7: frame}, {7: "worker-1"})
    assert list(stacks) == ["worker-1 (0x7)"]
    calls = [line for line in stacks["worker-1 (0x7)"].splitlines() if line.startswith("  File")]
    assert calls[-1].endswith("in test_format_names_each_thread_and_puts_the_innermost_call_last")
    assert any("_pytest" in call for call in calls[:-1])  # its callers, outermost first
    assert list(thread_dump.format_stacks({8: frame}, {})) == ["unknown (0x8)"]

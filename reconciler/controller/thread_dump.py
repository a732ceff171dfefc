"""``kill -USR1 <pid>``: every thread's stack as one log record, and the process goes on.

For a controller that does not stop or does not progress (docs/operations.md). The stacks are
taken by a Python signal handler, which runs in the main thread with the GIL held: one
consistent snapshot of every thread (``sys._current_frames``), written as a single record
through the controller's own log handler, so no other record lands in the middle of it.
(``faulthandler``, tried first, writes from the C signal handler while the other threads run:
its text came out cut short, with a JSON log line spliced into a frame.)

:func:`format_stacks` is the pure part; :func:`install` binds the signal.
"""

from __future__ import annotations

import logging
import signal
import sys
import threading
import traceback
from collections.abc import Mapping
from types import FrameType

__all__ = ["MESSAGE", "format_stacks", "install"]

log = logging.getLogger("reconciler.controller.thread_dump")

MESSAGE = "thread stacks"


def format_stacks(frames: Mapping[int, FrameType], names: Mapping[int, str]) -> dict[str, str]:
    """Each thread's stack, oldest call first, keyed ``<name> (0x<ident>)``."""
    return {
        f"{names.get(ident, 'unknown')} ({ident:#x})": "".join(traceback.format_stack(frame))
        for ident, frame in sorted(frames.items())
    }


def _log_stacks(_signum: int, _frame: FrameType | None) -> None:
    names = {t.ident: t.name for t in threading.enumerate() if t.ident is not None}
    stacks = format_stacks(sys._current_frames(), names)
    log.warning(MESSAGE, extra={"threads": stacks, "signal": "SIGUSR1"})


def install() -> None:
    """Log every thread's stack on SIGUSR1 (call from the main thread)."""
    signal.signal(signal.SIGUSR1, _log_stacks)

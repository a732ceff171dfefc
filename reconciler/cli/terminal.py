"""Terminal output for the user-facing commands: progress while waiting, colour when it helps.

Progress goes to **stderr**, so ``--output json`` on stdout stays machine-readable and a piped
command prints plain lines. Colour only when the stream is a terminal and ``NO_COLOR`` is unset
(https://no-color.org); ``FORCE_COLOR`` forces it.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

__all__ = ["Spinner", "Style", "progress"]

_CODES = {"bold": "1", "dim": "2", "red": "31", "green": "32", "yellow": "33", "cyan": "36"}


class Style:
    """ANSI colour for one stream, or nothing when it is not a terminal."""

    def __init__(self, stream: TextIO | None = None, *, enabled: bool | None = None) -> None:
        stream = stream if stream is not None else sys.stdout
        if enabled is None:
            if os.environ.get("NO_COLOR"):
                enabled = False
            elif os.environ.get("FORCE_COLOR"):
                enabled = True
            else:
                enabled = bool(getattr(stream, "isatty", lambda: False)())
        self.enabled = enabled

    def __call__(self, text: str, *styles: str) -> str:
        if not self.enabled or not styles:
            return text
        codes = ";".join(_CODES[s] for s in styles)
        return f"\033[{codes}m{text}\033[0m"


class Spinner:
    """One updating line while waiting (plain lines when the stream is not a terminal)."""

    def __init__(self, what: str, *, stream: TextIO | None = None, indent: str = "    ") -> None:
        self.what = what
        self.stream = stream if stream is not None else sys.stdout
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.indent = indent
        self.started = time.monotonic()
        self.frames = "|/-\\"
        self.n = 0

    def tick(self, detail: str = "") -> None:
        self.n += 1
        if self.tty:
            elapsed = time.monotonic() - self.started
            frame = self.frames[self.n % len(self.frames)]
            line = f"{self.indent}{frame} {self.what} {detail} ({elapsed:.0f}s)"
            print(f"\r{line[:78]:<78}", end="", file=self.stream, flush=True)

    def clear(self) -> None:
        if self.tty:
            print("\r" + " " * 78 + "\r", end="", file=self.stream, flush=True)

    def done(self, result: str) -> None:
        elapsed = time.monotonic() - self.started
        self.clear()
        print(
            f"{self.indent}{self.what}: {result} after {elapsed:.1f}s", file=self.stream, flush=True
        )


@contextmanager
def progress(what: str, *, stream: TextIO | None = None) -> Iterator[Spinner]:
    """Spin on ``stream`` (default stderr) while the body runs; a terminal only sees it.

    When the stream is not a terminal one plain line says what is being done, so logs of CI runs
    still show the step.
    """
    spinner = Spinner(what, stream=stream if stream is not None else sys.stderr, indent="")
    stop = threading.Event()
    if not spinner.tty:
        print(f"{what} ...", file=spinner.stream, flush=True)

    def spin() -> None:
        while not stop.wait(0.2):
            spinner.tick()

    thread = threading.Thread(target=spin, name="spinner", daemon=True)
    if spinner.tty:
        thread.start()
    try:
        yield spinner
    finally:
        stop.set()
        if spinner.tty:
            thread.join()
            spinner.clear()

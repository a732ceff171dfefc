"""This process's ``pulumi`` children and their descendants, read from ``/proc``; signals to them.

:mod:`.recovery` interrupts a hanging operation with these; :mod:`.state.locks`
asks which ``pulumi`` children are alive, and since when, to tell a lock held by one of them from a
stale one. A process is named by its PID *and* its start time, so a PID reused by another process is
never mistaken for it. No decisions live here.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

__all__ = [
    "alive",
    "children_running",
    "descendants",
    "kill_all",
    "kill_tree",
    "pulumi_children",
    "send_signal",
    "start_time",
    "started_at",
    "wait_gone",
]


def alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def send_signal(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


def _stat(pid: int) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name (state is the first)."""
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def start_time(pid: int) -> str | None:
    """When ``pid`` started, in clock ticks after boot (``/proc``'s words); None when it is
    gone or a zombie."""
    fields = _stat(pid)
    return fields[19] if fields and fields[0] != "Z" else None


def descendants(pid: int) -> set[tuple[int, str]]:
    """(PID, start time) of every live descendant of ``pid``, read from ``/proc``."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (fields := _stat(int(entry.name))) is not None:
            parents.setdefault(int(fields[1]), []).append(int(entry.name))
    found: set[tuple[int, str]] = set()
    todo = list(parents.get(pid, []))
    while todo:
        child = todo.pop()
        started = start_time(child)
        if started is not None:
            found.add((child, started))
        todo.extend(parents.get(child, []))
    return found


def wait_gone(processes: set[tuple[int, str]], *, timeout: float = 5.0) -> bool:
    """Wait until each of ``processes`` (PID, start time) has exited (gone or a zombie), at
    most ``timeout`` seconds; whether all did. A SIGKILLed process is not gone at once: the
    kernel tears it down first (a provider plugin's memory, its threads), and whoever looks
    right after the signal still finds it running."""
    deadline = time.monotonic() + timeout
    while any(start_time(pid) == started for pid, started in processes):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.01)
    return True


def kill_all(processes: set[tuple[int, str]]) -> None:
    """SIGKILL each of ``processes`` (PID, start time) that is still the same process (not a
    reused PID), and return once they have exited (:func:`wait_gone`)."""
    for pid, started in processes:
        if start_time(pid) == started:
            send_signal(pid, signal.SIGKILL)
    wait_gone(processes)


def kill_tree(pid: int) -> set[tuple[int, str]]:
    """SIGKILL the process group led by ``pid`` and every descendant of ``pid``, as a
    container's end kills every process in it; return the descendants (PID, start time).

    ``pulumi`` starts each plugin in a process group of its own, so signalling the group alone
    would leave the plugins running, re-parented. A descendant is signalled only while its start
    time still matches (the same process, not a reused PID)."""
    tree = descendants(pid)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)
    kill_all(tree)
    return tree


def _pulumi_children() -> dict[int, list[str]]:
    """This process's live ``pulumi`` children: PID -> command line."""
    me = os.getpid()
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
        except (OSError, IndexError):
            continue
        args = [a.decode(errors="replace") for a in cmdline if a]
        if int(stat[1]) == me and stat[0] != "Z" and args and Path(args[0]).name == "pulumi":
            found[int(entry.name)] = args
    return found


def children_running(*, stack_name: str) -> list[int]:
    """PIDs of this process's ``pulumi`` children working on ``stack_name``."""
    return [pid for pid, args in _pulumi_children().items() if stack_name in args]


def _boot_time() -> datetime | None:
    try:
        for line in Path("/proc/stat").read_text().splitlines():
            if line.startswith("btime "):
                return datetime.fromtimestamp(int(line.split()[1]), UTC)
    except (OSError, ValueError):
        pass
    return None


def started_at(pid: int) -> datetime | None:
    """When process ``pid`` of this host started (wall clock, to the second: the kernel's boot
    time is kept in whole seconds); None when there is no such process (gone, or a zombie)."""
    started, boot = start_time(pid), _boot_time()
    if started is None or boot is None:
        return None
    return boot + timedelta(seconds=int(started) / os.sysconf("SC_CLK_TCK"))


def pulumi_children() -> dict[int, datetime]:
    """This process's live ``pulumi`` children, each with when it started
    (:func:`started_at`)."""
    out = {}
    for pid in _pulumi_children():
        started = started_at(pid)
        if started is not None:
            out[pid] = started
    return out

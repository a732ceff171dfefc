"""CPU seconds and resident memory of a process tree, read from ``/proc``.

The tree is a root process (the controller, or the baseline job) and every live descendant (the
``pulumi`` CLI children and their provider plugins), found by parent pid at each sample, so a
child started in its own session still counts. Memory is sampled (every 0.2 s by default): the
root's RSS and the children's summed RSS are kept apart, and their peaks are what a pod's memory
limit must hold. CPU seconds of the tree at one moment are ``utime + stime + cutime + cstime`` of
the root and of every live descendant: a child that ended and was waited for has its time in its
parent's ``cutime``, so the difference between two readings is the tree's CPU in between (time
of a grandchild re-parented to init is lost; the controller's children do not do that).

Parsing and tree walking are pure functions; :class:`Sampler` is the thin thread around them.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

TICKS = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")
MIB = 1024 * 1024


@dataclass(frozen=True)
class ProcStat:
    pid: int
    comm: str
    state: str
    ppid: int
    cpu_ticks: int  # utime + stime + cutime + cstime
    rss_bytes: int


def parse_stat(text: str, *, page_size: int = PAGE) -> ProcStat:
    """One ``/proc/<pid>/stat`` line (``comm`` may hold spaces and parentheses)."""
    head, _, rest = text.rpartition(")")
    pid_text, _, comm = head.partition(" (")
    fields = rest.split()
    # fields[0] is field 3 (state); utime..cstime are fields 14..17, rss is field 24
    return ProcStat(
        pid=int(pid_text),
        comm=comm,
        state=fields[0],
        ppid=int(fields[1]),
        cpu_ticks=sum(int(f) for f in fields[11:15]),
        rss_bytes=int(fields[21]) * page_size,
    )


def descendants(procs: Mapping[int, ProcStat], root: int) -> list[int]:
    """Pids of every live descendant of ``root`` (not ``root`` itself), by parent pid."""
    children: dict[int, list[int]] = {}
    for p in procs.values():
        children.setdefault(p.ppid, []).append(p.pid)
    found: list[int] = []
    todo = list(children.get(root, []))
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return sorted(found)


@dataclass(frozen=True)
class TreeSample:
    at: float
    root_rss: int
    children_rss: int
    cpu_ticks: int
    pulumi_processes: int  # ``pulumi`` CLI processes (one or more per running stack operation)
    children: int
    pulumi_pids: tuple[int, ...] = ()


def sample_tree(procs: Mapping[int, ProcStat], root: int, *, at: float) -> TreeSample | None:
    """The tree of ``root`` in one snapshot of the process table; None when the root is gone."""
    top = procs.get(root)
    if top is None:
        return None
    kids = [procs[pid] for pid in descendants(procs, root)]
    live = [k for k in kids if k.state != "Z"]
    return TreeSample(
        at=at,
        root_rss=top.rss_bytes,
        children_rss=sum(k.rss_bytes for k in live),
        cpu_ticks=top.cpu_ticks + sum(k.cpu_ticks for k in kids),
        pulumi_processes=sum(1 for k in live if k.comm == "pulumi"),
        children=len(live),
        pulumi_pids=tuple(k.pid for k in live if k.comm == "pulumi"),
    )


def read_procs(proc: Path = Path("/proc")) -> dict[int, ProcStat]:
    """Every process's stat now (processes that end while being read are skipped)."""
    out: dict[int, ProcStat] = {}
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            out[int(entry.name)] = parse_stat((entry / "stat").read_text())
        except (OSError, ValueError, IndexError):
            continue
    return out


def peak_rss_of(pid: int) -> int | None:
    """``VmHWM`` of one live process: its own resident peak since it started, exactly."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


@dataclass
class Sampler:
    """Samples the tree of ``root`` every ``interval`` seconds between start() and stop()."""

    root: int
    interval: float = 0.2
    samples: list[TreeSample] = field(default_factory=list)
    root_hwm: int | None = None
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def _take(self) -> None:
        sample = sample_tree(read_procs(), self.root, at=time.monotonic())
        if sample is not None:
            self.samples.append(sample)
            self.root_hwm = peak_rss_of(self.root) or self.root_hwm

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self._take()

    def start(self) -> Sampler:
        self._take()
        self._thread = threading.Thread(target=self._loop, name="bench-sampler", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> list[TreeSample]:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._take()
        return self.samples

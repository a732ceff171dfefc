"""The order ``make test`` hands tests to its workers: the long units early, spread out.

In a random order, one of the suite's long units could come last: a module of one worker
(module-scoped fixtures, ``xdist_group``) whose tests take minutes, the two minutes of chaos. Seed
101 at 2d52513 ended with one worker busy 107 s after the other four had finished. Handing every
unit out longest first ended that (the five workers ended within 3 s) but cost more than it
saved (22 min 8 s against 19 min 36 s, the same CPU): the long units are mostly waits (leases,
Octavia-like delays, a person's lock held for 40 s), and all five workers waited at once at the
start while the quick CPU-bound tests crowded together at the end.

So the random order of pytest-randomly stays, and only the units of at least ``LONG`` seconds
move: each into the first half of the queue, at even intervals, in their random order. None of
them can then come last, and waits still meet CPU-bound tests throughout the run.

A unit's length is the sum of its tests' durations in ``tests/durations.json``: the wall time
of each test that took at least ``KEEP`` seconds in a run measured with ``LBR_TEST_CPU=<file>``
(tests/conftest.py). A test missing from it (new, renamed) counts as quick; remake the file now
and then::

    LBR_TEST_CPU=/tmp/cpu.jsonl make test
    .venv/bin/python -m tests.durations /tmp/cpu.jsonl
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

FILE = Path(__file__).with_name("durations.json")
KEEP = 3.0  # seconds: what is quicker counts as 0
LONG = 60.0  # seconds: a unit this long could keep one worker busy alone at the end

T = TypeVar("T")


def load(path: Path = FILE) -> dict[str, float]:
    """The recorded wall time of each slow test; empty if there is no file."""
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    return {str(k): float(v) for k, v in data.items()}


def long_units_early(
    items: Sequence[T],
    *,
    node_id: Callable[[T], str],
    unit: Callable[[T], str],
    durations: dict[str, float],
) -> list[T]:
    """``items`` with each unit of at least ``LONG`` seconds moved into the first half, at even
    intervals in their order in ``items``; everything else keeps its order. A unit (an xdist
    group, or one test) weighs the sum of its tests' durations."""
    weight: dict[str, float] = defaultdict(float)
    for item in items:
        weight[unit(item)] += durations.get(node_id(item), 0.0)
    long = [u for u in dict.fromkeys(unit(item) for item in items) if weight[u] >= LONG]
    if not long:
        return list(items)
    members: dict[str, list[T]] = {name: [] for name in long}
    rest: list[T] = []
    for item in items:
        members.get(unit(item), rest).append(item)
    step = len(rest) / 2 / len(long)
    out: list[T] = []
    taken = 0
    for k, name in enumerate(long):
        upto = round(k * step)
        out += rest[taken:upto]
        taken = max(taken, upto)
        out += members[name]
    return out + rest[taken:]


def from_report(lines: Sequence[str]) -> dict[str, float]:
    """Durations from an ``LBR_TEST_CPU`` report: each test's wall time, if at least ``KEEP``."""
    out: dict[str, float] = {}
    for line in lines:
        if line.strip():
            row = json.loads(line)
            if row["wall"] >= KEEP:
                out[row["test"]] = round(float(row["wall"]), 1)
    return dict(sorted(out.items()))


def main(argv: Sequence[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m tests.durations LBR_TEST_CPU_REPORT", file=sys.stderr)
        return 2
    durations = from_report(Path(argv[0]).read_text().splitlines())
    FILE.write_text(json.dumps(durations, indent=1) + "\n")
    print(f"{FILE}: {len(durations)} tests of {KEEP:g} s or more")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

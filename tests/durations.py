"""The longest work first: the order ``make test`` hands tests to its workers.

On 2 cores the suite is CPU-bound for most of its run, but its slowest units are waits: a module
of one worker (module-scoped fixtures, ``xdist_group``) whose tests take minutes, the two minutes
of chaos. Handed out last, one of them kept one worker busy for almost two minutes after the
other four had finished (seed 101 at 2d52513: the last test ended 107 s after the others). So the
units are handed out longest first (the classic longest-processing-time rule), each unit's length
from ``tests/durations.json``; among units of the same length (every quick test: 0) the random
order of pytest-randomly stays.

``tests/durations.json`` maps a test's node id to its wall time in seconds, for the tests that
took at least ``KEEP`` seconds in a run measured with ``LBR_TEST_CPU=<file>`` (tests/conftest.py).
A test missing from it (new, renamed) counts as quick; remake the file now and then::

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

T = TypeVar("T")


def load(path: Path = FILE) -> dict[str, float]:
    """The recorded wall time of each slow test; empty if there is no file."""
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    return {str(k): float(v) for k, v in data.items()}


def longest_first(
    items: Sequence[T],
    *,
    node_id: Callable[[T], str],
    unit: Callable[[T], str],
    durations: dict[str, float],
) -> list[T]:
    """``items`` with the longest units first; a unit (an xdist group, or one test) weighs the
    sum of its tests' durations. The sort is stable: equal units keep their order in ``items``."""
    weight: dict[str, float] = defaultdict(float)
    for item in items:
        weight[unit(item)] += durations.get(node_id(item), 0.0)
    return sorted(items, key=lambda item: -weight[unit(item)])


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

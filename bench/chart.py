"""The chart of scenario 2: time until all N Services have an IP, controller vs baseline.

``python -m bench.chart RESULTS.json [--out burst.png]``. Needs matplotlib, the optional
``bench`` extra (``pip install -e '.[bench]'``); without it the command says so and exits 3.
Points are medians; the bars span min..max of the repetitions; the time axis turns logarithmic
when the two sides are more than 20 times apart.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any


class ChartUnavailableError(RuntimeError):
    """matplotlib is not installed, or the results are not scenario 2."""


def series(side: Mapping[str, Any]) -> tuple[list[int], list[float], list[float], list[float]]:
    """(N, median, median-min, max-median) of one side's points, sorted by N (pure)."""
    points = sorted(side.get("points") or [], key=lambda p: p["n"])
    points = [p for p in points if p["all_ready_seconds"].get("median") is not None]
    ns = [int(p["n"]) for p in points]
    med = [float(p["all_ready_seconds"]["median"]) for p in points]
    low = [m - float(p["all_ready_seconds"]["min"]) for m, p in zip(med, points, strict=True)]
    high = [float(p["all_ready_seconds"]["max"]) - m for m, p in zip(med, points, strict=True)]
    return ns, med, low, high


def draw_burst(result: Mapping[str, Any], out: Path) -> Path:
    if result.get("scenario") != 2:
        raise ChartUnavailableError("the chart is of scenario 2 results (a burst of N Services)")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ChartUnavailableError(
            "matplotlib is not installed; install the optional extra: pip install -e '.[bench]'"
        ) from None
    fig, ax = plt.subplots(figsize=(7, 4.5))
    sizes: set[int] = set()
    medians: list[float] = []
    for key, label, marker in (
        ("controller", "lb-reconciler (Pulumi stacks)", "o"),
        ("baseline", "direct API (OCCM's sequence)", "s"),
    ):
        ns, med, low, high = series(result.get(key) or {})
        if ns:
            ax.errorbar(ns, med, yerr=[low, high], marker=marker, capsize=3, label=label)
            sizes.update(ns)
            medians += med
    if sizes:
        ax.set_xticks(sorted(sizes))
    if medians and min(medians) > 0 and max(medians) / min(medians) > 20:
        ax.set_yscale("log")  # both sides readable when they are orders of magnitude apart
    env = result.get("environment") or {}
    params = result.get("parameters") or {}
    ax.set_xlabel("Services created at once (N)")
    ax.set_ylabel("seconds until every Service has an IP")
    ax.set_title(
        f"Burst, emulator profile '{result.get('profile')}', workers {params.get('workers')}, "
        f"{env.get('nproc')} cores"
    )
    ax.grid(True, alpha=0.3)
    ax.legend()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.chart", description=__doc__)
    p.add_argument("results", type=Path, help="a scenario 2 results JSON of bench.run")
    p.add_argument("--out", type=Path, help="the PNG (default: next to the JSON)")
    args = p.parse_args(argv)
    out = args.out or args.results.with_suffix(".png")
    try:
        draw_burst(json.loads(args.results.read_text()), out)
    except ChartUnavailableError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 3
    print(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

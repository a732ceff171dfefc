"""``python -m bench.table RESULTS.json...``: the Markdown table of docs/performance.md.

Every figure comes from a results file of :mod:`bench.run`; nothing is computed here but the
formatting (median, then min-max of the samples) and the controller/baseline ratio of medians.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from bench.stats import ratio

HEADER = (
    "| scenario | profile | measure | lb-reconciler | baseline | ratio | n | load avg start/end |\n"
    "|---|---|---|---|---|---|---|---|\n"
)


def fmt(summary: Mapping[str, Any] | None, unit: str = "s") -> str:
    """``median (min-max) unit``; one sample shows alone; none shows as a dash."""
    if not summary or summary.get("median") is None:
        return "-"
    median, low, high = summary["median"], summary["min"], summary["max"]
    if summary.get("n", 0) <= 1 or low == high:
        return f"{median:.3g} {unit}"
    return f"{median:.3g} ({low:.3g}-{high:.3g}) {unit}"


def fmt_value(value: Any, unit: str = "") -> str:
    if value is None:
        return "-"
    text = f"{value:.3g}" if isinstance(value, float) else str(value)
    return f"{text} {unit}".rstrip()


def _ratio(ctl: Mapping[str, Any] | None, base: Mapping[str, Any] | None) -> str:
    r = ratio((ctl or {}).get("median"), (base or {}).get("median"))
    return "-" if r is None else f"{r:.3g}x"


Row = tuple[str, str, str, str, int | None]


def measures(result: Mapping[str, Any]) -> Iterator[Row]:
    """(measure, controller, baseline, ratio, samples) for one results file."""
    ctl, base = result.get("controller") or {}, result.get("baseline") or {}
    scenario = result.get("scenario")
    if scenario == 1:
        for key, label in (
            ("create_to_ip_seconds", "create -> EXTERNAL-IP"),
            ("delete_to_gone_seconds", "delete -> finalizer released"),
        ):
            c, b = ctl.get(key), base.get(key)
            yield label, fmt(c), fmt(b), _ratio(c, b), int((c or {}).get("n", 0))
    if scenario == 2:
        base_points = {p["n"]: p for p in base.get("points", [])}
        for p in ctl.get("points", []):
            bp = base_points.get(p["n"], {})
            c, b = p["all_ready_seconds"], bp.get("all_ready_seconds")
            yield f"N={p['n']}: all have IPs", fmt(c), fmt(b), _ratio(c, b), int(c.get("n", 0))
            yield (
                f"N={p['n']}: Services/min",
                fmt_value(p.get("services_per_minute")),
                fmt_value(bp.get("services_per_minute")),
                "-",
                int(c.get("n", 0)),
            )
        yield (
            "growth exponent (t ~ N^b)",
            fmt_value(ctl.get("growth_exponent")),
            fmt_value(base.get("growth_exponent")),
            "-",
            len(ctl.get("points", [])),
        )
    if scenario == 3:
        n = int((ctl.get("restart_to_synced_seconds") or {}).get("n", 0))
        yield "restart -> /readyz", fmt(ctl.get("restart_to_readyz_seconds")), "-", "-", n
        yield (
            "restart -> every Service synced",
            fmt(ctl.get("restart_to_synced_seconds")),
            "-",
            "-",
            n,
        )
        yield "CPU seconds to synced", fmt(ctl.get("cpu_seconds"), "CPU s"), "-", "-", n
        ops = ctl.get("stack_operations") or {}
        ran = f"{ops.get('ran', '-')} (skip {ops.get('skip', '-')})"
        yield "stack operations (all but skip)", ran, "-", "-", n
        seen = (ctl.get("resources") or {}).get("pulumi_processes_seen")
        yield "pulumi CLI processes seen", fmt_value(seen), "-", "-", n
    if scenario == 4:
        c, b = ctl.get("node_to_all_pools_seconds"), base.get("node_to_all_pools_seconds")
        yield (
            "Node added -> in every pool",
            fmt(c),
            fmt(b),
            _ratio(c, b),
            int((c or {}).get("n", 0)),
        )
    if scenario == 5:
        c, b = ctl.get("all_gone_seconds"), base.get("all_gone_seconds")
        yield "delete all -> all gone", fmt(c), fmt(b), _ratio(c, b), int((c or {}).get("n", 0))
        yield "orphans left", fmt_value(ctl.get("orphans")), fmt_value(base.get("orphans")), "-", 1
    for key, label in (
        ("peak_root_mib", "peak RSS, process"),
        ("peak_children_mib", "peak RSS, pulumi children"),
    ):
        c_res = _resources(ctl)
        b_res = _resources(base)
        if c_res.get(key) is not None:
            yield (
                label,
                fmt_value(c_res.get(key), "MiB"),
                fmt_value(b_res.get(key), "MiB"),
                "-",
                None,
            )


def _resources(side: Mapping[str, Any]) -> Mapping[str, Any]:
    res = side.get("resources")
    if res:
        return dict(res)
    points = side.get("points") or []
    peaks = [p.get("resources") or {} for p in points]
    return max(peaks, key=lambda r: r.get("peak_total_mib") or 0) if peaks else {}


def render(results: Sequence[Mapping[str, Any]]) -> str:
    lines = [HEADER]
    for result in results:
        env = result.get("environment") or {}
        start, end = env.get("loadavg_start") or [None], env.get("loadavg_end") or [None]
        load = f"{fmt_value(start[0])} / {fmt_value(end[0])}"
        for measure, c, b, r, n in measures(result):
            samples = "-" if n is None else n
            row = (result.get("scenario"), result.get("profile"), measure, c, b, r, samples, load)
            lines.append("| " + " | ".join(str(x) for x in row) + " |\n")
    return "".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.table", description=__doc__)
    p.add_argument("results", type=Path, nargs="+", help="results JSON files of bench.run")
    args = p.parse_args(argv)
    print(render([json.loads(path.read_text()) for path in args.results]), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

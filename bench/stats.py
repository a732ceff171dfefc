"""Pure measurement decisions: how samples become the numbers in results and docs.

* :func:`summarise`: every sample kept, with n, median, mean, min, max, p10 and p90 (linear
  interpolation between closest ranks, as numpy's default), so a reader sees the spread, not
  only a centre;
* :func:`throughput_per_minute`: Services made ready per minute of wall time;
* :func:`growth_exponent`: the slope ``b`` of a least-squares fit of ``log t = a + b log N``;
  ``b <= 1`` is "no worse than linear" (the burst target), ``b`` near 0 means parallelism hides N;
* :func:`resources`: peak memory (root and children apart), CPU seconds, and children's memory
  per running ``pulumi`` CLI process from :class:`bench.procfs.TreeSample` lists;
* :func:`parse_metrics` / :func:`stack_operations`: the controller's ``/metrics`` text;
* :func:`check_targets`: the issue's targets against a result, each with its value and verdict.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from bench.procfs import MIB, TICKS, TreeSample

Summary = dict[str, Any]


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0..1) of ``values`` by linear interpolation between closest ranks."""
    if not values:
        raise ValueError("percentile of no values")
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"quantile must be within 0..1, got {q}")
    ordered = sorted(values)
    position = q * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def summarise(samples: Sequence[float]) -> Summary:
    """Every sample, and n, median, mean, min, max, p10, p90 (None when there are none)."""
    values = [float(v) for v in samples]
    if not values:
        keys = ("median", "mean", "min", "max", "p10", "p90")
        return {"n": 0, "samples": [], **dict.fromkeys(keys)}
    return {
        "n": len(values),
        "samples": values,
        "median": percentile(values, 0.5),
        "mean": sum(values) / len(values),
        "min": min(values),
        "max": max(values),
        "p10": percentile(values, 0.1),
        "p90": percentile(values, 0.9),
    }


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    """``numerator / denominator``, or None when either is missing or the denominator is 0."""
    if numerator is None or denominator is None or denominator == 0:
        return None
    return numerator / denominator


def throughput_per_minute(count: int, seconds: float) -> float | None:
    return None if seconds <= 0 else count * 60.0 / seconds


def growth_exponent(points: Mapping[int, float]) -> float | None:
    """``b`` of the least-squares fit ``log t = a + b log N`` (None with fewer than two N)."""
    pairs = [(math.log(n), math.log(t)) for n, t in points.items() if n > 0 and t > 0]
    if len({x for x, _ in pairs}) < 2:
        return None
    mean_x = sum(x for x, _ in pairs) / len(pairs)
    mean_y = sum(y for _, y in pairs) / len(pairs)
    sxx = sum((x - mean_x) ** 2 for x, _ in pairs)
    sxy = sum((x - mean_x) * (y - mean_y) for x, y in pairs)
    return sxy / sxx


def resources(
    samples: Sequence[TreeSample], *, root_hwm: int | None = None, from_zero: bool = False
) -> dict[str, Any]:
    """Peaks in MiB (root and children apart), CPU seconds between the first and last sample
    (``from_zero``: since the root started, for a process sampled from its start), the most
    ``pulumi`` processes seen at once, and children's MiB per running operation."""
    if not samples:
        return {"samples": 0}
    peak_children = max(s.children_rss for s in samples)
    peak_ops = max(s.pulumi_processes for s in samples)
    per_op = [s.children_rss / s.pulumi_processes for s in samples if s.pulumi_processes]
    return {
        "samples": len(samples),
        "seconds": samples[-1].at - samples[0].at,
        "cpu_seconds": (samples[-1].cpu_ticks - (0 if from_zero else samples[0].cpu_ticks)) / TICKS,
        "peak_root_mib": max(s.root_rss for s in samples) / MIB,
        "root_hwm_mib": None if root_hwm is None else root_hwm / MIB,
        "peak_children_mib": peak_children / MIB,
        "peak_total_mib": max(s.root_rss + s.children_rss for s in samples) / MIB,
        "peak_pulumi_processes": peak_ops,
        # a lower bound of `pulumi` CLI runs: one shorter than the sampling interval is missed
        "pulumi_processes_seen": len({pid for s in samples for pid in s.pulumi_pids}),
        "peak_children_mib_per_pulumi_process": max(per_op) / MIB if per_op else None,
    }


def merge_runs(runs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Observations of several measured windows as one: the resources of the window with the
    highest total peak (its CPU seconds summed over all), stack operations summed."""
    if not runs:
        return {}
    peak = max(runs, key=lambda r: (r.get("resources") or {}).get("peak_total_mib") or 0)
    res = dict(peak.get("resources") or {})
    if "cpu_seconds" in res:
        res["cpu_seconds"] = sum((r.get("resources") or {}).get("cpu_seconds", 0) for r in runs)
    ops: dict[str, int] = {}
    for r in runs:
        for kind, count in (r.get("stack_operations") or {}).items():
            ops[kind] = ops.get(kind, 0) + count
    return {"resources": res, "stack_operations": ops}


def parse_metrics(text: str) -> dict[str, float]:
    """Prometheus text format -> ``{'name{k="v",...}': value}`` with labels sorted."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        sample, _, value = line.rpartition(" ")
        name, _, labels = sample.partition("{")
        parts = sorted(p for p in labels.rstrip("}").split(",") if p)
        key = f"{name}{{{','.join(parts)}}}" if parts else name
        try:
            out[key] = float(value)
        except ValueError:
            continue
    return out


def metric_sum(metrics: Mapping[str, float], name: str, **labels: str) -> float:
    """Sum of every sample of ``name`` whose labels include ``labels``."""
    want = [f'{k}="{v}"' for k, v in labels.items()]
    total = 0.0
    for key, value in metrics.items():
        metric, _, rest = key.partition("{")
        if metric == name and all(w in rest.rstrip("}").split(",") for w in want):
            total += value
    return total


def stack_operations(metrics: Mapping[str, float]) -> dict[str, int]:
    """``lbr_stack_operations_total`` by kind (both results), and ``ran``: up + direct-update +
    destroy + direct-delete + refresh (``skip`` is the engine finding nothing to do, not an
    operation; ``direct-delete`` a delete without ``pulumi``, one cascade ``DELETE``;
    ``direct-update`` pool members changed without ``pulumi``, one batch ``PUT`` per pool)."""
    kinds = {
        kind: int(metric_sum(metrics, "lbr_stack_operations_total", kind=kind))
        for kind in ("up", "direct-update", "destroy", "direct-delete", "refresh", "skip")
    }
    kinds["ran"] = sum(kinds[k] for k in kinds if k != "skip")
    return kinds


def delta(after: Mapping[str, int], before: Mapping[str, int]) -> dict[str, int]:
    return {k: after[k] - before.get(k, 0) for k in after}


def orphan_count(created: Mapping[str, Sequence[str]], stacks: Sequence[Any]) -> int:
    """Cloud objects created and not deleted (emulator inventory), plus stacks left."""
    return sum(len(v) for v in created.values()) + len(stacks)


def _median(result: Mapping[str, Any], side: str, metric: str) -> float | None:
    value = ((result.get(side) or {}).get(metric) or {}).get("median")
    return None if value is None else float(value)


def check_targets(result: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The issue's targets that apply to this result: name, target, value, met (None: unknown)."""
    scenario, profile = result.get("scenario"), result.get("profile")
    checks: list[dict[str, Any]] = []

    def add(name: str, target: str, value: Any, met: bool | None) -> None:
        checks.append({"name": name, "target": target, "value": value, "met": met})

    if scenario == 1:
        ctl = _median(result, "controller", "create_to_ip_seconds")
        base = _median(result, "baseline", "create_to_ip_seconds")
        if profile == "cloudlike":
            r = ratio(ctl, base)
            add("create->IP vs baseline", "<= 1.5x", r, None if r is None else r <= 1.5)
        if profile == "instant":
            add("create->IP median", "< 5 s", ctl, None if ctl is None else ctl < 5.0)
    if scenario == 2 and profile == "instant":
        for point in (result.get("controller") or {}).get("points", []):
            tpm = point.get("services_per_minute")
            add(f"N={point['n']} throughput", ">= 30/min", tpm, None if tpm is None else tpm >= 30)
        b = (result.get("controller") or {}).get("growth_exponent")
        add("growth with N", "exponent <= 1", b, None if b is None else b <= 1.0)
    if scenario == 3:
        restart = result.get("controller") or {}
        ops = (restart.get("stack_operations") or {}).get("ran")
        add("stack operations on restart", "0", ops, None if ops is None else ops == 0)
        ready = (restart.get("restart_to_readyz_seconds") or {}).get("median")
        add("restart to /readyz", "< 10 s", ready, None if ready is None else ready < 10.0)
        # every Service synced: issue 7 asked 10 s at 500 Services, issue 30 30 s at 2,000
        bound = 10.0 if (result.get("parameters") or {}).get("services", 0) <= 500 else 30.0
        synced = (restart.get("restart_to_synced_seconds") or {}).get("median")
        met = None if synced is None else synced < bound
        add("restart to every Service synced", f"< {bound:.0f} s", synced, met)
    if scenario == 6:
        quiet = result.get("controller") or {}
        idle = quiet.get("idle_cpu_seconds_per_service_hour")
        add("idle CPU s per Service-hour", "<= 0.05", idle, None if idle is None else idle <= 0.05)
        change = quiet.get("hand_change") or {}
        within = change.get("within_one_interval")
        add("a hand change found", "within one interval", change.get("found_seconds"), within)
    if scenario == 5:
        for side in ("controller", "baseline"):
            left = (result.get(side) or {}).get("orphans")
            if left is not None:
                add(f"{side} orphans", "0", left, left == 0)
    peak = ((result.get("controller") or {}).get("resources") or {}).get("peak_root_mib")
    if peak is not None:
        add("controller memory", "< 250 MiB", peak, peak < 250)
    return checks

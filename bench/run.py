"""``python -m bench.run``: one scenario, one timing profile, results as JSON (see --help)."""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import platform
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.stats import check_targets

RESULTS = Path(__file__).resolve().parent / "results"
DEFAULT_REPEAT = {1: 5, 2: 1, 3: 1, 4: 1, 5: 1, 6: 1}
DEFAULT_SERVICES = {3: 500, 4: 50, 5: 50, 6: 500}
PACKAGES = ("lb-reconciler", "pulumi", "pulumi-openstack", "openstacksdk", "kubernetes")

HELP = """\
Run one benchmark scenario of issue 7 against a fresh local kube-apiserver + etcd and the
OpenStack emulator with a timing profile: the controller (lb-reconciler run, as a process), then
the direct-API baseline (OCCM's sequence with openstacksdk, bench/baseline.py) on the same
emulator. Results: every sample, median, p10/p90, min/max, the environment (nproc, load average
at start and end, versions) and the issue's targets, as JSON.

scenarios:
  1  one Service: create -> EXTERNAL-IP, delete -> finalizer released (controller, baseline)
  2  a burst of N Services (--sizes): time until all have IPs, Services/min, growth with N
  3  restart with --services unchanged Services: time to ready, CPU s, stack operations (controller)
  4  one Node added with --services Services: time until every pool has it (both)
  5  delete --services Services: time until all gone, orphans left (both)
  6  a quiet fleet of --services Services: CPU per Service-hour with drift checks on
     (--drift-interval, --intervals), and a listener changed by hand put back (controller)

examples:
  python -m bench.run --scenario 1 --profile instant --repeat 5 --out bench/results/s1-instant.json
  python -m bench.run --scenario 2 --profile instant --sizes 10,25,50,100 --chart docs/burst.png
  python -m bench.run --scenario 3 --profile instant --services 500
  python -m bench.run --scenario 3 --profile instant --services 2000 --clone
  python -m bench.run --scenario 5 --profile cloudlike --services 50 --baseline-workers 1
  python -m bench.run --scenario 6 --profile instant --services 500 --drift-interval 300
  python -m bench.chart bench/results/s2-instant.json --out docs/burst.png

exit codes: 0 done (targets are reported, not enforced); 1 a scenario failed;
3 the chart could not be drawn (matplotlib missing: pip install -e '.[bench]').
"""


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m bench.run",
        description=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--scenario", type=int, choices=range(1, 7), required=True)
    p.add_argument("--profile", choices=("instant", "cloudlike"), default="instant")
    p.add_argument("--repeat", type=int, help="repetitions (default: 5 for 1, else 1)")
    p.add_argument(
        "--sizes",
        default="10,25,50,100",
        help="scenario 2: burst sizes, comma-separated (default: %(default)s)",
    )
    p.add_argument("--services", type=int, help="scenarios 3-6: Services (500, 50, 50, 500)")
    p.add_argument(
        "--drift-interval",
        type=float,
        default=300.0,
        help="scenario 6: the controller's --drift-interval in seconds (default: %(default)s)",
    )
    p.add_argument(
        "--intervals",
        type=int,
        default=2,
        help="scenario 6: drift intervals in each measured window (default: %(default)s)",
    )
    p.add_argument("--workers", type=int, default=4, help="the controller's --workers (4)")
    p.add_argument(
        "--baseline-workers",
        type=int,
        help="parallel Services of the baseline (default: --workers; OCCM's default is 1)",
    )
    p.add_argument(
        "--sweep-intervals",
        type=int,
        help="scenario 6: the controller's --drift-sweep-interval in drift intervals (default: "
        "as the controller's defaults are)",
    )
    p.add_argument(
        "--clone",
        action="store_true",
        help="scenario 3: the controller converges one Service, the others are cloned from it "
        "(cloud objects through the APIs, stacks into the backend; bench/clone.py), not created "
        "through the controller: 2,000 creates take over an hour on 2 cores",
    )
    p.add_argument("--out", type=Path, help="results JSON (default: bench/results/...)")
    p.add_argument("--chart", type=Path, help="scenario 2: also draw this PNG (needs matplotlib)")
    p.add_argument("--folder", type=Path, help="keep the plane, state and logs here")
    p.add_argument(
        "--backend",
        choices=("file", "postgres", "s3"),
        default="file",
        help="the controller's state backend: the demo's file:// folder, or a local PostgreSQL "
        "or MinIO server started for the run (default: %(default)s)",
    )
    args = p.parse_args(argv)
    if args.repeat is None:
        args.repeat = DEFAULT_REPEAT[args.scenario]
    if args.services is None:
        args.services = DEFAULT_SERVICES.get(args.scenario, 1)
    if args.baseline_workers is None:
        args.baseline_workers = args.workers
    args.size_list = [int(s) for s in str(args.sizes).split(",") if s.strip()]
    return args


def _first_line(argv: list[str]) -> str | None:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    except OSError:
        return None
    text = (done.stdout or done.stderr).strip()
    return text.splitlines()[0] if text else None


def environment() -> dict[str, Any]:
    from reconciler.local.toolchain import find_toolchain

    tc = find_toolchain()
    versions: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    versions["pulumi-cli"] = _first_line([str(tc.path("pulumi")), "version"])
    versions["kube-apiserver"] = _first_line([str(tc.path("kube-apiserver")), "--version"])
    versions["etcd"] = _first_line([str(tc.path("etcd")), "--version"])
    versions["git"] = _first_line(["git", "describe", "--always", "--dirty"])
    return {
        "nproc": os.cpu_count(),
        "machine": platform.machine(),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "versions": versions,
    }


def run_scenario(args: argparse.Namespace) -> dict[str, Any]:
    from bench import scenarios
    from bench.harness import Environment

    with Environment.running(
        profile=args.profile, workers=args.workers, folder=args.folder, backend=args.backend
    ) as env:
        if args.scenario == 1:
            return scenarios.scenario_1(
                env, repeat=args.repeat, baseline_workers=args.baseline_workers
            )
        if args.scenario == 2:
            return scenarios.scenario_2(
                env,
                sizes=args.size_list,
                repeat=args.repeat,
                baseline_workers=args.baseline_workers,
            )
        if args.scenario == 3:
            return scenarios.scenario_3(
                env, services=args.services, repeat=args.repeat, clone=args.clone
            )
        if args.scenario == 6:
            from bench.quiet import SWEEP_INTERVALS, scenario_6

            return scenario_6(
                env,
                services=args.services,
                interval=args.drift_interval,
                intervals=args.intervals,
                sweep_intervals=args.sweep_intervals or SWEEP_INTERVALS,
            )
        run = scenarios.scenario_4 if args.scenario == 4 else scenarios.scenario_5
        return run(
            env,
            services=args.services,
            repeat=args.repeat,
            baseline_workers=args.baseline_workers,
        )


def _exit_on_sigterm(signum: int, _frame: object) -> None:
    """SIGTERM unwinds like Ctrl-C: the environment stops its controller, kube-apiserver and
    etcd instead of leaving them running (and loading the machine) after the run is killed."""
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    load_start = os.getloadavg()
    started = time.monotonic()
    result: dict[str, Any] = {
        "scenario": args.scenario,
        "profile": args.profile,
        "started_at": datetime.now(tz=UTC).isoformat(timespec="seconds"),
        "command": " ".join(["python -m bench.run", *(argv if argv is not None else sys.argv[1:])]),
        "parameters": {
            "repeat": args.repeat,
            "sizes": args.size_list if args.scenario == 2 else None,
            "services": args.services if args.scenario in (3, 4, 5, 6) else 1,
            "drift_interval": args.drift_interval if args.scenario == 6 else None,
            "intervals": args.intervals if args.scenario == 6 else None,
            "sweep_intervals": args.sweep_intervals if args.scenario == 6 else None,
            "clone": args.clone if args.scenario == 3 else None,
            "workers": args.workers,
            "baseline_workers": args.baseline_workers,
            "backend": args.backend,
        },
        "environment": environment(),
    }
    result["environment"]["loadavg_start"] = list(load_start)
    failed = False
    try:
        result.update(run_scenario(args))
    except Exception as exc:  # written to the results, so that a failed run is not lost
        result["error"] = f"{type(exc).__name__}: {exc}"
        failed = True
    result["environment"]["loadavg_end"] = list(os.getloadavg())
    result["wall_seconds"] = time.monotonic() - started
    result["targets"] = check_targets(result)
    backend = "" if args.backend == "file" else f"-{args.backend}"
    out = args.out or RESULTS / f"s{args.scenario}-{args.profile}{backend}-{int(time.time())}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"results: {out}")
    if failed:
        print(f"error: {result['error']}", file=sys.stderr)
        return 1
    for check in result["targets"]:
        verdict = {True: "met", False: "NOT met", None: "unknown"}[check["met"]]
        print(f"  {check['name']}: {check['value']} (target {check['target']}): {verdict}")
    if args.chart is not None and args.scenario == 2:
        from bench.chart import ChartUnavailableError, draw_burst

        try:
            draw_burst(result, args.chart)
        except ChartUnavailableError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 3
        print(f"chart: {args.chart}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""``python -m conformance`` (``make conformance``): Octavia's API suite against the emulator.

For each RBAC mode asked (default: ``none``, then ``advanced``): a fresh emulator on a free
loopback port with the conformance topology (:mod:`conformance.workspace`), a tempest workspace
under the logs folder (``etc/tempest.conf``, ``etc/accounts.yaml``, the topology the emulator
was given), ``tempest run`` of ``octavia_tempest_plugin.tests.api.v2`` (or the modules and the
filter asked) on ``--workers`` workers, the subunit stream read back into a per-module table.
Then the table is printed, kept in ``docs/conformance.md`` when the whole suite ran, and the
logs folder is named: per mode the tempest workspace, ``tempest.log`` (tempest's debug log:
every request and answer), ``run.log`` (stestr's output), ``results.subunit``,
``results.jsonl`` and ``failures.txt`` (each failing test, its cause and its traceback).

Exit status: 0 when every module :data:`conformance.results.GATED` names for a mode passed
(whatever failed elsewhere), 1 when one of them had a failure, 2 when the run could not be
made (the virtualenv, the emulator, tempest itself).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import yaml

from conformance import results, venv, workspace
from emulator.cloud import EmulatorConfig
from emulator.server import EmulatorHandle, start
from emulator.timing import INSTANT
from emulator.topology import load_topology

ROOT = Path(__file__).resolve().parents[1]
REQUIREMENTS = ROOT / "conformance" / "requirements.txt"
SUBUNIT_JSON = ROOT / "conformance" / "subunit_json.py"
DEFAULT_MODES = ("none", "advanced")
SUITE = ("tempest", "octavia-tempest-plugin")
RUN_TIMEOUT = 3600.0  # one mode; the whole suite takes minutes against the instant emulator
KEEP_RUNS = 5  # default logs folders kept under .state/conformance (about 40 MB a mode each)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m conformance",
        description="Run Octavia's API suite (octavia-tempest-plugin, tests.api.v2) against "
        "the emulator, print a per-module pass/fail/skip table and keep it in "
        "docs/conformance.md. Exit 1 only if a gated module fails (conformance/results.py "
        "GATED), 2 if the run cannot be made.",
        epilog="examples: python -m conformance --mode none --module pool; "
        "python -m conformance --mode none --filter 'PoolAPITest.test_HTTP_LC_pool_show\\['",
    )
    parser.add_argument(
        "--mode",
        action="append",
        choices=workspace.MODES,
        help="RBAC_test_type to run, repeatable (default: none, then advanced; "
        "keystone_default_roles needs Keystone's admin API, which the emulator lacks)",
    )
    parser.add_argument(
        "--module",
        action="append",
        choices=results.MODULES,
        help="run only this module of tests/api/v2, repeatable (default: all)",
    )
    parser.add_argument(
        "--filter",
        default=None,
        metavar="REGEX",
        help="run only the tests whose id matches REGEX (re.search; an id ends in "
        "'[id-<uuid>,...]'), e.g. 'test_HTTP_LC_pool_show\\[' or 'member_batch_update'",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=2,
        help="tempest workers, 1 or 2 (default 2: the machine has 2 cores and the emulator "
        "runs beside them)",
    )
    parser.add_argument(
        "--venv",
        type=Path,
        default=ROOT / ".venv-conformance",
        help="the suite's virtualenv, made from conformance/requirements.txt when missing "
        "or out of date (default: .venv-conformance)",
    )
    parser.add_argument(
        "--logs",
        type=Path,
        default=None,
        help="folder for the workspaces and logs (default: .state/conformance/<UTC time>)",
    )
    parser.add_argument(
        "--doc",
        type=Path,
        default=ROOT / "docs" / "conformance.md",
        help="where to keep the table of a whole-suite run (default: docs/conformance.md); "
        "a run of some modules or a filter writes none",
    )
    parser.add_argument("--no-doc", action="store_true", help="do not write --doc")
    parser.add_argument(
        "--list", action="store_true", help="list the selected tests and exit (no emulator)"
    )
    return parser


def selection_regex(modules: list[str] | None, test_filter: str | None) -> str:
    """The ``tempest run --regex`` for these modules (all when None) and filter: the package
    prefix, the module names, and the filter as a lookahead (stestr uses ``re.search``)."""
    names = "|".join(re.escape(m) for m in modules) if modules else r"\w+"
    lookahead = f"(?=.*(?:{test_filter}))" if test_filter else ""
    return rf"^{lookahead}{re.escape(results.PACKAGE)}\.test_(?:{names})\."


def _tempest(
    venv_dir: Path, ws: Path, args: list[str], *, log: Path | None = None, timeout: float = 600.0
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OS_", "TEMPEST_"))}
    env["PATH"] = f"{venv_dir / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(venv_dir)
    env.pop("PYTHONPATH", None)
    command = [
        str(venv_dir / "bin" / "tempest"),
        "run",
        "--config-file",
        str(ws / "etc" / "tempest.conf"),
        *args,
    ]
    if log is None:
        return subprocess.run(
            command, cwd=ws, env=env, capture_output=True, text=True, timeout=timeout, check=False
        )
    with log.open("w") as out:
        return subprocess.run(
            command,
            cwd=ws,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=timeout,
            check=False,
        )


def _stestr(venv_dir: Path, ws: Path, args: list[str]) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [str(venv_dir / "bin" / "stestr"), *args],
        cwd=ws,
        capture_output=True,
        timeout=600,
        check=False,
    )


def _write_workspace(ws: Path, mode: str, workers: int, emu: EmulatorHandle | None) -> Path:
    """The workspace's files; without ``emu`` (listing only) the cloud's URLs are dummies."""
    (ws / "etc").mkdir(parents=True, exist_ok=True)
    (ws / "lock").mkdir(exist_ok=True)
    accounts = ws / "etc" / "accounts.yaml"
    accounts.write_text(yaml.safe_dump(workspace.accounts_yaml(mode, workers=workers)))
    if emu is not None:
        info = emu.topology()
        cloud = workspace.Cloud(
            auth_url=emu.auth_url,
            region=info["region_name"],
            public_network_id=info["external_network_id"],
            providers=dict(emu.cloud.config.topology.octavia["providers"]),
        )
    else:
        cloud = workspace.Cloud("http://127.0.0.1:9/identity/v3", "RegionOne", "none", {})
    conf = ws / "etc" / "tempest.conf"
    conf.write_text(
        workspace.tempest_conf(
            mode=mode,
            cloud=cloud,
            accounts_file=str(accounts),
            lock_path=str(ws / "lock"),
            log_file=str(ws / "tempest.log"),
        )
    )
    return conf


def list_tests(venv_dir: Path, ws: Path, regex: str) -> list[str]:
    if not (ws / ".stestr").exists():  # stestr's list wants its repository, as run does
        _stestr(venv_dir, ws, ["init"]).check_returncode()
    done = _tempest(venv_dir, ws, ["--list-tests", "--regex", regex])
    if done.returncode != 0:
        raise RuntimeError(f"tempest --list-tests failed:\n{done.stdout}\n{done.stderr}")
    return [
        line.strip()
        for line in done.stdout.splitlines()
        if line.strip().startswith(results.PACKAGE)
    ]


def read_outcomes(venv_dir: Path, ws: Path) -> list[results.Outcome]:
    stream = _stestr(venv_dir, ws, ["last", "--subunit"]).stdout
    (ws / "results.subunit").write_bytes(stream)
    parsed = subprocess.run(
        [str(venv.python_of(venv_dir)), str(SUBUNIT_JSON)],
        input=stream,
        capture_output=True,
        timeout=600,
        check=True,
    ).stdout
    (ws / "results.jsonl").write_bytes(parsed)
    outcomes = []
    for line in parsed.decode().splitlines():
        item = json.loads(line)
        outcomes.append(
            results.Outcome(item["id"], item["status"], item["reason"], item["traceback"])
        )
    return outcomes


def write_failures(path: Path, report: results.Report, outcomes: list[results.Outcome]) -> None:
    tracebacks = {results.base_id(o.test_id): o.traceback for o in outcomes}
    with path.open("w") as out:
        for text, n in results.top_causes(report, limit=1000):
            out.write(f"{n:5d}  {text}\n")
        out.write("\n")
        for test_id, text in sorted(report.failures.items()):
            out.write(f"=== {test_id}\n{text}\n")
            trace = tracebacks.get(results.base_id(test_id), "")
            if trace:
                out.write(trace.rstrip() + "\n")
            out.write("\n")
        for klass, text in sorted(report.teardown_errors.items()):
            out.write(f"=== tearDownClass ({klass})\n{text}\n\n")


def run_mode(
    mode: str, *, venv_dir: Path, logs: Path, regex: str, workers: int, listed: list[str]
) -> results.Report:
    ws = logs / mode
    ws.mkdir(parents=True, exist_ok=True)
    topology_file = ws / "topology.yaml"
    topology_file.write_text(yaml.safe_dump(workspace.topology(mode, workers=workers)))
    config = EmulatorConfig(timing=INSTANT, topology=load_topology(path=topology_file))
    emu = start(host="127.0.0.1", port=0, config=config)
    try:
        _write_workspace(ws, mode, workers, emu)
        print(
            f"conformance: {mode}: {len(listed)} tests on {workers} workers against {emu.url}",
            flush=True,
        )
        _tempest(
            venv_dir,
            ws,
            ["--regex", regex, "--concurrency", str(workers)],
            log=ws / "run.log",
            timeout=RUN_TIMEOUT,
        )
    finally:
        emu.stop()
    outcomes = read_outcomes(venv_dir, ws)
    report = results.build_report(mode, listed=listed, outcomes=outcomes)
    write_failures(ws / "failures.txt", report, outcomes)
    return report


def prune_runs(parent: Path, *, keep: int) -> None:
    """Remove all but the ``keep`` newest run folders (named by UTC time) under ``parent``."""
    runs = sorted(p for p in parent.glob("*T*Z") if p.is_dir())
    for old in runs[: max(len(runs) - keep, 0)]:
        shutil.rmtree(old, ignore_errors=True)


def _git_commit() -> str:
    done = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.strip() or "unknown"


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if not 1 <= args.workers <= 2:
        print("error: --workers must be 1 or 2", file=sys.stderr)
        return 2
    modes = tuple(args.mode or DEFAULT_MODES)
    whole = not args.module and not args.filter
    regex = selection_regex(args.module, args.filter)
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%SZ")
    if args.logs is None:
        prune_runs(ROOT / ".state" / "conformance", keep=KEEP_RUNS - 1)
    logs = (args.logs or ROOT / ".state" / "conformance" / stamp).resolve()
    started = time.monotonic()
    try:
        venv.ensure(args.venv, REQUIREMENTS)
        listing = logs / "list"
        _write_workspace(listing, modes[0], args.workers, None)
        listed = list_tests(args.venv, listing, regex)
        (logs / "tests.txt").write_text("".join(f"{t}\n" for t in listed))
    except (OSError, subprocess.SubprocessError, RuntimeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.list:
        print("\n".join(listed))
        return 0
    if not listed:
        print(f"error: no test matches {regex}", file=sys.stderr)
        return 2
    reports, walls = [], {}
    for mode in modes:
        began = time.monotonic()
        try:
            reports.append(
                run_mode(
                    mode,
                    venv_dir=args.venv,
                    logs=logs,
                    regex=regex,
                    workers=args.workers,
                    listed=listed,
                )
            )
        except (OSError, subprocess.SubprocessError, RuntimeError) as exc:
            print(f"error: {mode}: {exc}", file=sys.stderr)
            return 2
        walls[mode] = time.monotonic() - began
    print()
    print(results.table(reports))
    print()
    for report in reports:
        for text, n in results.top_causes(report, limit=8):
            print(f"  {report.mode}: {n:4d}  {text}")
    command = "python -m conformance " + shlex.join(argv if argv is not None else sys.argv[1:])
    if whole and not args.no_doc:
        args.doc.write_text(
            results.markdown(
                reports,
                date=datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
                commit=_git_commit(),
                versions=venv.installed_versions(args.venv, SUITE),
                command=command.strip(),
                wall_seconds=walls,
            )
            + "\n"
        )
        print(f"\ntable kept in {args.doc}")
    print(f"logs (workspaces, tempest.log, results.subunit, failures.txt): {logs}")
    print(f"wall time: {time.monotonic() - started:.0f} s")
    broken = {r.mode: r.gate_failures(results.GATED.get(r.mode, ())) for r in reports}
    broken = {mode: gaps for mode, gaps in broken.items() if gaps}
    if broken:
        print(f"FAILED: gated modules with failures: {broken}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

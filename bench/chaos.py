"""``python -m bench.chaos``: the chaos run of issue 7 (see --help and docs/chaos.md).

One :class:`bench.harness.Environment` (local kube-apiserver + etcd, the emulator with its cloud
in a SQLite file, ``lb-reconciler run`` as a process), then, until ``--duration`` or
``--max-ops`` is reached, at random moments drawn from ``random.Random(--seed)``:

* **operations**: create a Service (1-3 TCP ports), update one (its ports, or the harmless
  ``loadbalancer.openstack.org/connection-limit`` annotation), delete one, add or remove a Node
  (the two Nodes of :class:`reconciler.local.demo.Demo` always stay);
* **faults**, appended to the emulator's fault injector, each bounded by a count: HTTP 5xx and
  409 answers, latency, dropped connections, a load balancer transition ending in ``ERROR``, a
  load balancer stuck in ``PENDING_*``;
* **kills**: SIGKILL to the controller's process group, then a new ``lb-reconciler run``;
* **emulator restarts**: the emulator stopped and served again on the same port from its SQLite
  file (the fault rules with count left are put back, as an operator's faults file would be).

A load balancer ``PENDING_*`` for longer than ``--unstick-after`` seconds, or in ``ERROR``
that long under a live Service, is set ``ACTIVE`` (with its children; a stuck delete is
finished instead) through ``PUT /admin/loadbalancers/{id}/status``, as an Octavia operator
fixes one in the database (counted as an operator action, see :func:`operator_fix`).
Neither the controller nor OCCM can do that themselves: a stuck operation never ends, and
failover is an admin API. A load balancer in ``ERROR`` of a deleted Service is left to the
controller, which deletes it with cascade. At the end every fault is cleared, the controller
is given up to ``--settle`` seconds to converge, and :func:`bench.invariants.check` decides.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import random
import signal
import sys
import time
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import requests

from bench.evidence import collect, orphan, orphan_key
from bench.harness import CLUSTER, NAMESPACE, SERVICES, Environment, service_body
from bench.invariants import CLOUD, Violation, check, node_addresses, service_view
from emulator.faults import FaultConfig, FaultRule, LbFault
from reconciler.controller.kubeapi import KubeError
from reconciler.model import naming
from reconciler.model.annotations import CONNECTION_LIMIT

HELP = """\
The chaos run of issue 7, on loopback only: for --duration seconds (or --max-ops operations,
whichever comes first), random Service creates/updates/deletes and Node churn while the
emulator injects errors, latency, dropped connections, ERROR and stuck-PENDING load balancers,
the controller is SIGKILLed and restarted, and the emulator is restarted with its SQLite state.
Then the faults are cleared, the controller gets up to --settle seconds to converge, and the
invariants are checked: every live LoadBalancer Service has exactly one ACTIVE load balancer
matching its ports and Nodes, with a floating IP in its status; no stack and no cloud object
without a Service; no Service stuck with its finalizer. Prints the counts (operations, faults,
kills, emulator restarts, operator actions, violations); --out writes them as JSON.

examples:
  python -m bench.chaos                                   # 20 minutes, seed 1
  python -m bench.chaos --duration 300 --seed 7 --out bench/results/chaos-5min.json
  python -m bench.chaos --duration 120 --services 6 --kill-every 30 --emulator-restart-every 45
  python -m bench.chaos --max-ops 50 --profile cloudlike --folder /tmp/chaos  # keep the logs

exit codes: 0 no violation; 1 violations (each listed with its Service and what is wrong);
2 the environment could not be set up, or the run could not go on.
"""

PORTS = (80, 443, 8080, 8443, 5432, 9000)
NODE = "chaos-node-{}"
NODE_IP = "10.0.1.{}"
MAX_NODES = 4
OPERATIONS = {"create": 4, "update": 3, "delete": 2, "node_add": 1, "node_remove": 1}
GLOBS = (
    "octavia.*",
    "neutron.*",
    "octavia.loadbalancer.*",
    "octavia.listener.*",
    "octavia.pool.*",
    "octavia.member.*",
    "octavia.healthmonitor.*",
    "neutron.floatingip.*",
    "neutron.port.*",
)
FAULTS = ("error", "conflict", "latency", "drop", "lb_error", "lb_stuck")


@dataclass
class Options:
    duration: float = 1200.0
    max_ops: int | None = None
    seed: int = 1
    services: int = 8
    workers: int = 4
    profile: str = "instant"
    op_every: float = 3.0
    fault_every: float = 15.0
    kill_every: float = 90.0
    emulator_restart_every: float = 150.0
    unstick_after: float = 60.0
    settle: float = 900.0
    folder: Path | None = None


@dataclass
class Injected:
    """One fault rule added during the run; ``fired`` counts earlier emulator lifetimes."""

    kind: str
    rule: FaultRule | LbFault
    key: str | None = None  # "rules[i]" / "loadbalancers[i]" in the running injector
    fired: int = 0

    def left(self) -> int | None:
        """Firings left of the rule's original ``count`` (None: unbounded)."""
        return None if self.rule.count is None else self.rule.count - self.fired


@dataclass
class Counts:
    operations: Counter[str] = field(default_factory=Counter)
    operations_failed: Counter[str] = field(default_factory=Counter)
    faults_injected: Counter[str] = field(default_factory=Counter)
    controller_kills: int = 0
    controller_exits: list[int | None] = field(default_factory=list)
    emulator_restarts: int = 0
    operator_actions: Counter[str] = field(default_factory=Counter)


def draw_fault(rng: random.Random, kind: str) -> FaultRule | LbFault:
    """One bounded fault of ``kind`` (see :data:`FAULTS`)."""
    lbs = f"kube_service_{CLUSTER}_{NAMESPACE}_*"
    if kind == "lb_error":
        return LbFault(name=lbs, outcome="error", phase=rng.choice(("create", "update")))
    if kind == "lb_stuck":
        return LbFault(name=lbs, outcome="stuck", phase=rng.choice(("create", "update", "delete")))
    operation = rng.choice(GLOBS)
    count = rng.randint(1, 4)
    if kind == "latency":
        latency = round(rng.uniform(0.2, 2.0), 2)
        return FaultRule(
            operation=operation, rate=0.5, latency=latency, status=200, count=count * 3
        )
    if kind == "drop":
        return FaultRule(operation=operation, rate=0.2, drop=True, count=count)
    status = 409 if kind == "conflict" else rng.choice((500, 502, 503))
    rate = round(rng.uniform(0.05, 0.3), 2)
    return FaultRule(operation=operation, rate=rate, status=status, count=count)


def operator_fix(lb: Mapping[str, Any], *, live_names: Collection[str]) -> tuple[str, str] | None:
    """What an Octavia operator does about this load balancer, as (action, status to force):
    a stuck delete is finished, another stuck operation or an ``ERROR`` under a live Service
    (``live_names``: their load balancer names) is set ``ACTIVE``; None: nothing."""
    status = str(lb.get("provisioning_status", ""))
    if status == "PENDING_DELETE":
        return "finish_stuck_delete", "DELETED"
    if status.startswith("PENDING_"):
        return "unstick_pending_lb", "ACTIVE"
    if status == "ERROR" and lb.get("name") in live_names:
        return "repair_error_lb", "ACTIVE"
    return None


def service_ports(rng: random.Random) -> list[dict[str, Any]]:
    chosen = sorted(rng.sample(PORTS, rng.randint(1, 3)))
    return [
        {"name": f"p{p}", "protocol": "TCP", "port": p, "targetPort": p + 10000} for p in chosen
    ]


class Chaos:
    def __init__(self, env: Environment, options: Options) -> None:
        self.env = env
        self.options = options
        self.rng = random.Random(options.seed)
        self.counts = Counts()
        self.injected: list[Injected] = []
        self.sick_since: dict[str, float] = {}  # load balancer ID -> first seen sick
        self.serial = 0
        self.nodes: dict[str, str] = {}  # chaos Nodes: name -> IP

    # -- operations ------------------------------------------------------------------------

    def services(self) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = self.env.kube.list(SERVICES).get("items", [])
        return items

    def operate(self) -> None:
        present = self.services()
        live = [
            s["metadata"]["name"] for s in present if not s["metadata"].get("deletionTimestamp")
        ]
        kinds = dict(OPERATIONS)
        if len(present) >= self.options.services:
            kinds.pop("create")
        if not live:
            kinds.pop("update")
            kinds.pop("delete")
        if len(self.nodes) >= MAX_NODES:
            kinds.pop("node_add")
        if not self.nodes:
            kinds.pop("node_remove")
        kind = self.rng.choices(list(kinds), weights=list(kinds.values()))[0]
        try:
            self._do(kind, sorted(live))
        except KubeError as exc:
            self.counts.operations_failed[f"{kind}: {exc.status} {exc.reason}"] += 1
            return
        self.counts.operations[kind] += 1

    def _do(self, kind: str, live: list[str]) -> None:
        kube = self.env.kube
        if kind == "create":
            self.serial += 1
            name = f"chaos-{self.serial:04d}"
            kube.create(SERVICES, service_body(name, ports=service_ports(self.rng)))
        elif kind == "update":
            name = self.rng.choice(live)
            if self.rng.random() < 0.5:
                patch: dict[str, Any] = {"spec": {"ports": service_ports(self.rng)}}
            else:
                limit = self.rng.choice((None, 100, 1000, 5000))
                value = None if limit is None else str(limit)
                patch = {"metadata": {"annotations": {CONNECTION_LIMIT: value}}}
            kube.patch(f"{SERVICES}/{name}", patch)
        elif kind == "delete":
            kube.request(method="DELETE", path=f"{SERVICES}/{self.rng.choice(live)}")
        elif kind == "node_add":
            free = [i for i in range(1, 100) if NODE.format(i) not in self.nodes]
            i = self.rng.choice(free)
            self.env.add_node(NODE.format(i), NODE_IP.format(i))
            self.nodes[NODE.format(i)] = NODE_IP.format(i)
        elif kind == "node_remove":
            name = self.rng.choice(sorted(self.nodes))
            self.env.remove_node(name)
            del self.nodes[name]

    # -- faults ----------------------------------------------------------------------------

    def inject(self) -> None:
        kind = self.rng.choice(FAULTS)
        self._arm(Injected(kind=kind, rule=draw_fault(self.rng, kind)))
        self.counts.faults_injected[kind] += 1

    def _arm(self, item: Injected, *, rule: FaultRule | LbFault | None = None) -> None:
        """Add ``rule`` (default: the item's own) to the running injector."""
        faults = self.env.emulator.cloud.faults
        rule = rule or item.rule
        if isinstance(rule, FaultRule):
            config = faults.extend(rules=(rule,))
            item.key = f"rules[{len(config.rules) - 1}]"
        else:
            config = faults.extend(loadbalancers=(rule,))
            item.key = f"loadbalancers[{len(config.loadbalancers) - 1}]"
        if item not in self.injected:
            self.injected.append(item)

    def _collect_fired(self) -> None:
        """Move the running injector's counts into the ledger (before it is replaced)."""
        fired = self.env.emulator.cloud.faults.fired()
        for item in self.injected:
            if item.key is not None:
                item.fired += fired.get(item.key, 0)
                item.key = None

    def fired(self) -> Counter[str]:
        now = self.env.emulator.cloud.faults.fired()
        out: Counter[str] = Counter()
        for item in self.injected:
            out[item.kind] += item.fired + (now.get(item.key, 0) if item.key else 0)
        return out

    def clear_faults(self) -> None:
        self._collect_fired()
        faults = self.env.emulator.cloud.faults
        faults.configure(FaultConfig(seed=faults.config.seed))

    # -- kills and restarts ----------------------------------------------------------------

    def kill_controller(self) -> None:
        self.env.kill_controller()
        self.counts.controller_kills += 1
        time.sleep(self.rng.uniform(0.0, 3.0))  # a pod is rescheduled after a moment
        self.env.start_controller()

    def restart_emulator(self) -> None:
        self._collect_fired()
        self.env.restart_emulator()
        self.counts.emulator_restarts += 1
        faults = self.env.emulator.cloud.faults
        faults.configure(FaultConfig(seed=self.options.seed))
        for item in self.injected:  # the rules with count left, as in a faults file
            left = item.left()
            if left is None or left > 0:
                self._arm(item, rule=dataclasses.replace(item.rule, count=left))

    def patrol(self, *, unstick_after: float) -> None:
        """Restart a controller that exited by itself; play the Octavia operator for load
        balancers stuck ``PENDING_*``, or in ``ERROR`` under a live Service, for longer than
        ``unstick_after`` (a load balancer in ERROR of a deleted Service is the controller's
        to delete, with cascade)."""
        proc = self.env.controller
        if proc is not None and proc.poll() is not None:
            self.counts.controller_exits.append(proc.returncode)
            self.env.controller = None
            self.env.start_controller()
        now = time.monotonic()
        live = {
            naming.lb_name(cluster_name=CLUSTER, namespace=NAMESPACE, name=s["metadata"]["name"])
            for s in self.services()
            if not s["metadata"].get("deletionTimestamp")
        }
        sick = {}
        for lb in self.env.inventory().get("loadbalancers", []):
            if (fix := operator_fix(lb, live_names=live)) is not None:
                sick[lb["id"]] = fix
        for lb_id in list(self.sick_since):
            if lb_id not in sick:
                del self.sick_since[lb_id]
        for lb_id, (action, status) in sick.items():
            since = self.sick_since.setdefault(lb_id, now)
            if now - since >= unstick_after:
                url = f"{self.env.emulator.url}/admin/loadbalancers/{lb_id}/status"
                body = {"provisioning_status": status, "children": "all"}
                requests.put(url, json=body, timeout=30)
                self.counts.operator_actions[action] += 1
                del self.sick_since[lb_id]

    # -- the run ---------------------------------------------------------------------------

    def run(self) -> None:
        o = self.options
        rng = self.rng
        start = time.monotonic()
        end = start + o.duration
        due = {
            "op": start,
            "fault": start + rng.uniform(0.5, 1.5) * o.fault_every,
            "kill": start + rng.uniform(0.5, 1.5) * o.kill_every,
            "emulator": start + rng.uniform(0.5, 1.5) * o.emulator_restart_every,
            "patrol": start,
            "progress": start + 60.0,
        }
        every = {
            "op": o.op_every,
            "fault": o.fault_every,
            "kill": o.kill_every,
            "emulator": o.emulator_restart_every,
        }
        act = {
            "op": self.operate,
            "fault": self.inject,
            "kill": self.kill_controller,
            "emulator": self.restart_emulator,
        }
        while time.monotonic() < end:
            if o.max_ops is not None and sum(self.counts.operations.values()) >= o.max_ops:
                break
            now = time.monotonic()
            if now >= due["patrol"]:
                self.patrol(unstick_after=o.unstick_after)
                due["patrol"] = now + 2.0
            if now >= due["progress"]:
                print(f"[chaos] {round(now - start)} s: {self.progress()}", flush=True)
                due["progress"] = now + 60.0
            for what, run in act.items():
                if time.monotonic() >= due[what]:
                    run()
                    due[what] = time.monotonic() + rng.uniform(0.2, 1.8) * every[what]
            time.sleep(max(0.05, min(min(due.values()), end) - time.monotonic()))

    def progress(self) -> str:
        c = self.counts
        return (
            f"{sum(c.operations.values())} operations, "
            f"{sum(c.faults_injected.values())} faults, {c.controller_kills} kills, "
            f"{c.emulator_restarts} emulator restarts"
        )

    def violations(self, *, with_stacks: bool) -> list[Violation]:
        services = [service_view(s) for s in self.services()]
        nodes = node_addresses(self.env.kube.list("/api/v1/nodes").get("items", []))
        inventory = self.env.emulator.cloud.inventory()
        stacks = [str(s.get("service")) for s in self.env.stacks()] if with_stacks else []
        return check(
            cluster=CLUSTER,
            namespace=NAMESPACE,
            services=services,
            nodes=nodes,
            resources=inventory["resources"],
            created=inventory["created"],
            stacks=stacks if with_stacks else [f"{NAMESPACE}/{s.name}" for s in services],
        )

    def settle(self) -> tuple[list[Violation], float]:
        """Clear the faults, then wait (bounded) until no invariant is broken."""
        self.clear_faults()
        started = time.monotonic()
        deadline = started + self.options.settle
        found: list[Violation] = []
        shown = started
        while time.monotonic() < deadline:
            self.patrol(unstick_after=10.0)
            found = self.violations(with_stacks=False)
            if not found and self._idle():
                found = self.violations(with_stacks=True)
                if not found:
                    break
            if time.monotonic() - shown >= 30.0:
                shown = time.monotonic()
                waited = round(shown - started)
                print(f"[chaos] settling for {waited} s, {len(found)} violations left:", flush=True)
                for v in found[:10]:
                    print(f"[chaos]   {v}", flush=True)
            time.sleep(2.0)
        return found, time.monotonic() - started

    def evidence(self, found: Sequence[Violation]) -> dict[str, list[str]]:
        """What the controller, the stack and the cloud say about each Service in ``found``
        (:mod:`bench.evidence`), read before the environment goes."""
        try:
            log_text = self.env.log_path.read_text(errors="replace")
        except OSError:
            log_text = ""
        try:
            emulator_log = self.env.emulator_log_path.read_text(errors="replace")
        except OSError:
            emulator_log = ""
        events = self.env.kube.list(f"/api/v1/namespaces/{NAMESPACE}/events").get("items", [])
        resources = self.env.emulator.cloud.inventory()["resources"]
        out = collect(
            services=[v.service for v in found if "/" in v.service],
            cluster=CLUSTER,
            events=events,
            log_text=log_text,
            backend=(self.env.demo.state / "backend").absolute().as_uri(),
            resources=resources,
        )
        for v in found:
            key = orphan_key(v.what) if v.service == CLOUD else None
            if key is not None:
                kind, rid = key
                out[f"{CLOUD} {kind[:-1]} {rid}"] = orphan(
                    kind=kind,
                    rid=rid,
                    resources=resources,
                    log_text=log_text,
                    emulator_log=emulator_log,
                )
        return out

    def _idle(self) -> bool:
        try:
            m = self.env.metrics()
        except RuntimeError:
            return False
        return m.get("lbr_workqueue_depth", 1) == 0 and m.get("lbr_workqueue_in_flight", 1) == 0


def run_chaos(options: Options) -> dict[str, Any]:
    """The whole run; results as plain data (``violations`` empty when every invariant holds).
    Raises on a setup failure or a run that could not go on."""
    with Environment.running(
        profile=options.profile,
        workers=options.workers,
        folder=options.folder,
        emulator_state=True,
    ) as env:
        env.start_controller()
        env.wait_ready()
        chaos = Chaos(env, options)
        started = time.monotonic()
        chaos.run()
        chaos_seconds = time.monotonic() - started
        found, settle_seconds = chaos.settle()
        c = chaos.counts
        evidence = chaos.evidence(found) if found else {}
        return {
            "chaos_seconds": round(chaos_seconds, 1),
            "settle_seconds": round(settle_seconds, 1),
            "operations": dict(c.operations),
            "operations_total": sum(c.operations.values()),
            "operations_failed": dict(c.operations_failed),
            "faults_injected": dict(c.faults_injected),
            "faults_fired": dict(chaos.fired()),
            "controller_kills": c.controller_kills,
            "controller_exits": c.controller_exits,
            "emulator_restarts": c.emulator_restarts,
            "operator_actions": dict(c.operator_actions),
            "services_at_end": len(chaos.services()),
            "chaos_nodes_at_end": len(chaos.nodes),
            "violations": [str(v) for v in found],
            "controller_log": str(env.log_path) if options.folder else None,
            "emulator_log": str(env.emulator_log_path) if options.folder else None,
            "evidence": evidence,
        }


def parse_args(argv: list[str] | None) -> tuple[Options, Path | None]:
    """The options, and where to write the results (``--out``)."""
    p = argparse.ArgumentParser(
        prog="python -m bench.chaos",
        description=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    d = Options()
    p.add_argument("--duration", type=float, default=d.duration, help="seconds of chaos (1200)")
    p.add_argument("--max-ops", type=int, help="stop after this many operations too")
    p.add_argument("--seed", type=int, default=d.seed, help="random seed (1)")
    p.add_argument("--services", type=int, default=d.services, help="cap on Services (8)")
    p.add_argument("--workers", type=int, default=d.workers, help="controller --workers (4)")
    p.add_argument("--profile", choices=("instant", "cloudlike"), default=d.profile)
    p.add_argument("--op-every", type=float, default=d.op_every, help="mean s between ops (3)")
    p.add_argument("--fault-every", type=float, default=d.fault_every, help="mean s (15)")
    p.add_argument("--kill-every", type=float, default=d.kill_every, help="mean s (90)")
    p.add_argument(
        "--emulator-restart-every",
        type=float,
        default=d.emulator_restart_every,
        help="mean s (150)",
    )
    p.add_argument(
        "--unstick-after",
        type=float,
        default=d.unstick_after,
        help="the operator sets a load balancer PENDING this long ACTIVE (60)",
    )
    p.add_argument(
        "--settle", type=float, default=d.settle, help="max s to converge at the end (900)"
    )
    p.add_argument("--out", type=Path, help="write the results as JSON here")
    p.add_argument("--folder", type=Path, help="keep the plane, state and logs here")
    a = p.parse_args(argv)
    options = Options(
        duration=a.duration,
        max_ops=a.max_ops,
        seed=a.seed,
        services=a.services,
        workers=a.workers,
        profile=a.profile,
        op_every=a.op_every,
        fault_every=a.fault_every,
        kill_every=a.kill_every,
        emulator_restart_every=a.emulator_restart_every,
        unstick_after=a.unstick_after,
        settle=a.settle,
        folder=a.folder,
    )
    return options, a.out


def _exit_on_sigterm(signum: int, _frame: object) -> None:
    """SIGTERM unwinds like Ctrl-C, so the environment stops its processes."""
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    options, out = parse_args(argv)
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    result: dict[str, Any] = {
        "started_at": datetime.now(tz=UTC).isoformat(timespec="seconds"),
        "command": " ".join(
            ["python -m bench.chaos", *(argv if argv is not None else sys.argv[1:])]
        ),
        "options": {k: str(v) if isinstance(v, Path) else v for k, v in vars(options).items()},
    }
    try:
        result.update(run_chaos(options))
    except Exception as exc:  # reported, exit 2
        result["error"] = f"{type(exc).__name__}: {exc}"
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=2) + "\n")
        print(f"results: {out}")
    if "error" in result:
        print(f"error: {result['error']}", file=sys.stderr)
        return 2
    print(summary(result))
    return 1 if result["violations"] else 0


def summary(result: dict[str, Any]) -> str:
    lines = [
        f"chaos: {result['chaos_seconds']} s, settled in {result['settle_seconds']} s",
        f"operations: {result['operations_total']} {result['operations']}",
        f"operations refused by the API server: {sum(result['operations_failed'].values())}",
        f"faults injected: {result['faults_injected']}",
        f"faults fired: {result['faults_fired']}",
        f"controller kills: {result['controller_kills']}, "
        f"exits on its own: {len(result['controller_exits'])}",
        f"emulator restarts: {result['emulator_restarts']}",
        f"operator actions: {result['operator_actions']}",
        f"violations: {len(result['violations'])}",
    ]
    lines += [f"  {v}" for v in result["violations"]]
    for service, said in (result.get("evidence") or {}).items():
        lines.append(f"evidence for {service}:")
        lines += [f"  {line}" for line in said]
    return "\n".join(lines)


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        raise SystemExit(main())

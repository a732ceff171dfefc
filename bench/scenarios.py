"""The five scenarios of issue 7, each for the controller and (where it applies) the baseline.

Every scenario runs the controller's part first, stops the controller, then runs the baseline
on the same emulator with other Service names, so the two never compete for the 2 cores. Each
returns plain data: every sample (with :func:`bench.stats.summarise`), the resources of the
measured window (:func:`bench.stats.resources`), stack operations from ``/metrics``, and what was
left behind: cloud objects created in the phase and not deleted, stacks, Services whose
finalizer was never released. Setup (creating the Services a scenario starts from) is not timed.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Sequence
from typing import Any

from bench.harness import CLUSTER, NAMESPACE, Environment, wait_for
from bench.procfs import Sampler
from bench.stats import (
    delta,
    growth_exponent,
    merge_runs,
    metric_sum,
    orphan_count,
    ratio,
    resources,
    stack_operations,
    summarise,
    throughput_per_minute,
)
from reconciler.model import naming

NEW_NODE = "bench-node-{}"
NEW_NODE_IP = "10.0.0.{}"


def timeout_for(env: Environment, count: int) -> float:
    """Generous deadlines (a failed wait is an error, never a sample)."""
    per_service = 10.0 if env.profile == "instant" else 30.0
    return 180.0 + count * per_service


def names(prefix: str, count: int) -> list[str]:
    return [f"{prefix}-{i:03d}" for i in range(count)]


def leftovers(env: Environment, before: dict[str, list[str]]) -> dict[str, list[str]]:
    """Cloud objects created since ``before`` and still there, by kind."""
    out: dict[str, list[str]] = {}
    for kind, ids in env.created().items():
        new = [i for i in ids if i not in set(before.get(kind, []))]
        if new:
            out[kind] = new
    return out


@contextlib.contextmanager
def observed(env: Environment) -> Iterator[dict[str, Any]]:
    """Resources of the controller's tree and its stack operations during the block, and
    until its work queue is idle after it (an ``up`` is counted when it returns, which can be
    after the cloud already shows its effect)."""
    assert env.controller is not None
    env.wait_idle(timeout=timeout_for(env, 1))
    before = stack_operations(env.metrics())
    sampler = Sampler(root=env.controller.pid).start()
    out: dict[str, Any] = {}
    yield out
    env.wait_idle(timeout=timeout_for(env, 1))
    samples = sampler.stop()
    out["resources"] = resources(samples, root_hwm=sampler.root_hwm)
    out["stack_operations"] = delta(stack_operations(env.metrics()), before)


def controller_cleanup(
    env: Environment, services: Sequence[str], cloud_before: Any
) -> dict[str, Any]:
    """Delete ``services`` (if still there), wait, and report what was left behind."""
    present = [n for n in services if n in env.watch.present]
    env.delete_services(present)
    stuck: list[str] = []
    try:
        env.wait_gone(services, timeout=timeout_for(env, len(services)))
    except TimeoutError:
        stuck = sorted(n for n in services if n in env.watch.present)
    left = leftovers(env, cloud_before)
    stacks = env.stacks()
    return {
        "stuck_finalizers": stuck,
        "leftovers": left,
        "stacks_left": [s.get("stack") for s in stacks],
        "orphans": orphan_count(left, stacks),
    }


def baseline_orphans(env: Environment, before: dict[str, list[str]]) -> dict[str, Any]:
    left = leftovers(env, before)
    return {"leftovers": left, "orphans": orphan_count(left, [])}


def phase_seconds(phase: dict[str, Any]) -> list[float]:
    return [float(r["seconds"]) for r in phase["results"]]


def phase_errors(phase: dict[str, Any]) -> list[str]:
    return [f"{r['name']}: {r['error']}" for r in phase["results"] if r["error"]]


# -- 1: one Service ---------------------------------------------------------------------------


def scenario_1(env: Environment, *, repeat: int, baseline_workers: int) -> dict[str, Any]:
    cloud_before = env.created()
    env.start_controller()
    env.wait_ready()
    to_ip: list[float] = []
    to_gone: list[float] = []
    made = names("one", repeat)
    with observed(env) as ctl:
        for name in made:
            started = env.create_services([name])[name]
            env.wait_ips([name], timeout=timeout_for(env, 1))
            to_ip.append(env.watch.ip_at[name] - started)
            started = env.delete_services([name])[name]
            env.wait_gone([name], timeout=timeout_for(env, 1))
            to_gone.append(env.watch.gone_at[name] - started)
    ctl.update(controller_cleanup(env, made, cloud_before))
    ctl["create_to_ip_seconds"] = summarise(to_ip)
    ctl["delete_to_gone_seconds"] = summarise(to_gone)
    env.stop_controller()

    before = env.created()
    phases = []
    for name in names("base-one", repeat):
        svc = env.baseline_services([name])
        phases += [{"action": "ensure", "services": svc}, {"action": "delete", "services": svc}]
    out, res = env.run_baseline(phases, workers=baseline_workers)
    base: dict[str, Any] = {
        "create_to_ip_seconds": summarise([s for p in out[0::2] for s in phase_seconds(p)]),
        "delete_to_gone_seconds": summarise([s for p in out[1::2] for s in phase_seconds(p)]),
        "errors": [e for p in out for e in phase_errors(p)],
        "resources": res,
        **baseline_orphans(env, before),
    }
    return {
        "controller": ctl,
        "baseline": base,
        "comparison": {
            "create_to_ip_median_ratio": ratio(
                ctl["create_to_ip_seconds"]["median"], base["create_to_ip_seconds"]["median"]
            ),
            "delete_to_gone_median_ratio": ratio(
                ctl["delete_to_gone_seconds"]["median"], base["delete_to_gone_seconds"]["median"]
            ),
        },
    }


# -- 2: a burst of N Services -----------------------------------------------------------------


def _point(n: int, totals: list[float], each: list[float]) -> dict[str, Any]:
    summary = summarise(totals)
    median = summary["median"]
    return {
        "n": n,
        "all_ready_seconds": summary,
        "per_service_seconds": summarise(each),
        "services_per_minute": None if median is None else throughput_per_minute(n, median),
    }


def scenario_2(
    env: Environment, *, sizes: Sequence[int], repeat: int, baseline_workers: int
) -> dict[str, Any]:
    cloud_before = env.created()
    env.start_controller()
    env.wait_ready()
    points, all_made = [], []
    for n in sizes:
        totals: list[float] = []
        each: list[float] = []
        windows = []
        for r in range(repeat):
            made = names(f"burst{n}-{r}", n)
            all_made += made
            with observed(env) as seen:  # the burst, until the last `up` returned
                started = env.create_services(made)
                env.wait_ips(made, timeout=timeout_for(env, n))
            windows.append(seen)
            first = min(started.values())
            totals.append(max(env.watch.ip_at[m] for m in made) - first)
            each += [env.watch.ip_at[m] - started[m] for m in made]
            env.delete_services(made)
            env.wait_gone(made, timeout=timeout_for(env, n))
        points.append({**_point(n, totals, each), **merge_runs(windows)})
    ctl: dict[str, Any] = {"points": points, **controller_cleanup(env, all_made, cloud_before)}
    ctl["growth_exponent"] = growth_exponent(
        {p["n"]: p["all_ready_seconds"]["median"] for p in points}
    )
    env.stop_controller()

    before = env.created()
    base_points = []
    for n in sizes:
        phases = []
        for r in range(repeat):
            svc = env.baseline_services(names(f"base-burst{n}-{r}", n))
            phases += [{"action": "ensure", "services": svc}, {"action": "delete", "services": svc}]
        out, res = env.run_baseline(phases, workers=baseline_workers)
        totals = [float(p["wall_seconds"]) for p in out[0::2]]
        each = [s for p in out[0::2] for s in phase_seconds(p)]
        errors = [e for p in out for e in phase_errors(p)]
        base_points.append({**_point(n, totals, each), "resources": res, "errors": errors})
    base: dict[str, Any] = {"points": base_points, **baseline_orphans(env, before)}
    base["growth_exponent"] = growth_exponent(
        {p["n"]: p["all_ready_seconds"]["median"] for p in base_points}
    )
    return {"controller": ctl, "baseline": base}


# -- 3: restart with N unchanged Services -----------------------------------------------------


def scenario_3(
    env: Environment, *, services: int, repeat: int, clone: bool = False
) -> dict[str, Any]:
    """``clone``: the controller converges the first Service only; the others are made from
    it by :func:`bench.clone.make_fleet` (not timed)."""
    cloud_before = env.created()
    env.start_controller()
    env.wait_ready()
    made = names("steady", services)
    prepared: dict[str, Any] | None = None
    if clone:
        env.create_services(made[:1])
        env.wait_ips(made[:1], timeout=timeout_for(env, 1))
        env.wait_idle(timeout=timeout_for(env, 1))
        env.stop_controller()
        from bench.clone import make_fleet

        prepared = make_fleet(env, template=made[0], names=made[1:])
    else:
        env.create_services(made)
        env.wait_ips(made, timeout=timeout_for(env, services))
    readyz, synced, cpu, ops, runs = [], [], [], [], []
    for _ in range(repeat):
        env.stop_controller()
        proc = env.start_controller()
        started = env.started_at
        sampler = Sampler(root=proc.pid).start()
        env.wait_ready(timeout=timeout_for(env, services))
        readyz.append(time.monotonic() - started)
        env.wait_synced(services, timeout=timeout_for(env, services))
        synced.append(time.monotonic() - started)
        samples = sampler.stop()
        res = resources(samples, root_hwm=sampler.root_hwm, from_zero=True)
        cpu.append(res["cpu_seconds"])
        ops.append(stack_operations(env.metrics()))
        runs.append(res)
    ctl: dict[str, Any] = {
        "restart_to_readyz_seconds": summarise(readyz),
        "restart_to_synced_seconds": summarise(synced),
        "cpu_seconds": summarise(cpu),
        "stack_operations": {k: sum(o[k] for o in ops) for k in ops[0]} if ops else {},
        "resources": max(runs, key=lambda r: r.get("peak_total_mib", 0)) if runs else {},
        "restarts": runs,
        "prepared": prepared,
        "first_fleet_comparison": first_fleet_comparison(env, services),
    }
    ctl.update(controller_cleanup(env, made, cloud_before))
    env.stop_controller()
    return {"controller": ctl}


def first_fleet_comparison(env: Environment, services: int) -> dict[str, Any]:
    """After the last restart: the housekeeper's first fleet drift comparison (one scan after
    the start) and what it found; every stack that differs from the cloud is a suspect, and
    its drift check a stack operation."""
    key = "lbr_drift_fleet_comparisons_total"
    wait_for(
        lambda: metric_sum(env.metrics(), key) >= 1,
        what="the first fleet comparison",
        timeout=timeout_for(env, services),
    )
    env.wait_idle(timeout=timeout_for(env, services))
    m = env.metrics()
    return {
        "comparisons": metric_sum(m, key),
        "suspects": metric_sum(m, "lbr_drift_fleet_suspects_total"),
        "drift_checks": metric_sum(m, "lbr_drift_checks_total"),
        "stack_operations": stack_operations(m),
    }


# -- 4: one Node added ------------------------------------------------------------------------


def pools_with(env: Environment, lb_names: set[str], address: str) -> tuple[int, int]:
    """(pools of these load balancers, of which have a member at ``address``)."""
    inv = env.inventory()
    lbs = {lb["id"] for lb in inv.get("loadbalancers", []) if lb["name"] in lb_names}
    pools = [p for p in inv.get("pools", []) if {x["id"] for x in p["loadbalancers"]} & lbs]
    at_address = {m["id"] for m in inv.get("members", []) if m["address"] == address}
    return len(pools), sum(1 for p in pools if {m["id"] for m in p["members"]} & at_address)


def _lb_names(made: Sequence[str]) -> set[str]:
    return {naming.lb_name(cluster_name=CLUSTER, namespace=NAMESPACE, name=n) for n in made}


def _wait_members(env: Environment, made: Sequence[str], address: str) -> None:
    lbs = _lb_names(made)

    def every_pool() -> bool:
        total, have = pools_with(env, lbs, address)
        return total == len(made) and have == total

    deadline = time.monotonic() + timeout_for(env, len(made))
    while not every_pool():
        if time.monotonic() > deadline:
            raise TimeoutError(f"member {address} not in every pool")
        time.sleep(0.2)


def scenario_4(
    env: Environment, *, services: int, repeat: int, baseline_workers: int
) -> dict[str, Any]:
    cloud_before = env.created()
    env.start_controller()
    env.wait_ready()
    made = names("nodes", services)
    env.create_services(made)
    env.wait_ips(made, timeout=timeout_for(env, services))
    seconds: list[float] = []
    with observed(env) as ctl:
        for r in range(repeat):
            started = time.monotonic()
            env.add_node(NEW_NODE.format(r), NEW_NODE_IP.format(50 + r))
            _wait_members(env, made, NEW_NODE_IP.format(50 + r))
            seconds.append(time.monotonic() - started)
    ctl["node_to_all_pools_seconds"] = summarise(seconds)
    ctl.update(controller_cleanup(env, made, cloud_before))
    env.stop_controller()
    for r in range(repeat):
        env.remove_node(NEW_NODE.format(r))

    before = env.created()
    base_names = names("base-nodes", services)

    def with_nodes(added: int) -> list[dict[str, Any]]:
        """The Services as OCCM sees them after ``added`` new Nodes (fresh dicts each time)."""
        svc = env.baseline_services(base_names)
        extra = [[NEW_NODE.format(r), NEW_NODE_IP.format(50 + r)] for r in range(added)]
        return [{**s, "nodes": [*s["nodes"], *extra]} for s in svc]

    phases: list[dict[str, Any]] = [{"action": "ensure", "services": with_nodes(0)}]
    phases += [{"action": "update", "services": with_nodes(r + 1)} for r in range(repeat)]
    phases.append({"action": "delete", "services": with_nodes(repeat)})
    out, res = env.run_baseline(phases, workers=baseline_workers)
    base = {
        "node_to_all_pools_seconds": summarise([float(p["wall_seconds"]) for p in out[1:-1]]),
        "errors": [e for p in out for e in phase_errors(p)],
        "resources": res,
        **baseline_orphans(env, before),
    }
    return {"controller": ctl, "baseline": base}


# -- 5: delete N Services ---------------------------------------------------------------------


def scenario_5(
    env: Environment, *, services: int, repeat: int, baseline_workers: int
) -> dict[str, Any]:
    cloud_before = env.created()
    env.start_controller()
    env.wait_ready()
    totals: list[float] = []
    each: list[float] = []
    ips: list[int] = []
    all_made: list[str] = []
    windows = []
    for r in range(repeat):
        made = names(f"del{r}", services)
        all_made += made
        env.create_services(made)
        env.wait_ips(made, timeout=timeout_for(env, services))
        ips.append(sum(1 for m in made if m in env.watch.ip_at))
        with observed(env) as seen:
            started = env.delete_services(made)
            with contextlib.suppress(TimeoutError):  # stuck ones are reported below
                env.wait_gone(made, timeout=timeout_for(env, services))
        windows.append(seen)
        gone = [m for m in made if m in env.watch.gone_at]
        if gone:
            totals.append(max(env.watch.gone_at[m] for m in gone) - min(started.values()))
        each += [env.watch.gone_at[m] - started[m] for m in gone]
    ctl: dict[str, Any] = merge_runs(windows)
    ctl.update(controller_cleanup(env, all_made, cloud_before))
    ctl.update(all_gone_seconds=summarise(totals), per_service_seconds=summarise(each))
    ctl["services_with_ip"] = ips
    env.stop_controller()

    before = env.created()
    base_totals: list[float] = []
    errors: list[str] = []
    runs = []
    for r in range(repeat):
        svc = env.baseline_services(names(f"base-del{r}", services))
        setup, _ = env.run_baseline(
            [{"action": "ensure", "services": svc}], workers=baseline_workers
        )
        errors += phase_errors(setup[0])
        out, res = env.run_baseline(
            [{"action": "delete", "services": svc}], workers=baseline_workers
        )
        errors += phase_errors(out[0])
        base_totals.append(float(out[0]["wall_seconds"]))
        runs.append(res)
    base = {
        "all_gone_seconds": summarise(base_totals),
        "errors": errors,
        "resources": runs[-1] if runs else {},
        **baseline_orphans(env, before),
    }
    return {"controller": ctl, "baseline": base}

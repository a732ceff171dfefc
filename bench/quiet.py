"""Scenario 6, the quiet fleet: what N converged Services cost when nothing changes.

Three phases on one set of Services, created through the controller (setup, not timed):

1. **base**: the controller with ``--drift=off`` for the window (``--intervals`` drift
   intervals): its CPU (the controller and its children) per second, what a fleet pays without
   drift checks (watches, the Lease, the housekeeping scans);
2. **drift**: the controller restarted with ``--drift-interval`` (short, so that the window holds
   whole intervals) and ``--drift-sweep-interval`` in the same proportion to it as their
   defaults (``--sweep-intervals``), for the same window. The drift checks' CPU per interval is the
   window's CPU minus the base rate times its length, divided by the intervals in it;
3. **change**: one listener's ``connection_limit`` changed by hand (openstacksdk, as a person
   would); the time until a drift check found it (``lbr_drift_checks_total{drifted="true"}``)
   and until the controller has put it back (``--drift=repair``).

``idle_cpu_seconds_per_service_hour`` is one hour of the base rate plus one interval's drift
checks (at the default ``--drift-interval``, one hour, each Service is checked once an hour),
divided by N. The window's stack operations (``refresh``, ``up``) are reported with it: with
nothing changed there should be no ``up``.
"""

from __future__ import annotations

import time
from typing import Any

from bench.baseline import connect
from bench.harness import CLUSTER, NAMESPACE, Environment, wait_for
from bench.procfs import Sampler
from bench.scenarios import controller_cleanup, names, timeout_for
from bench.stats import delta, metric_sum, resources, stack_operations
from reconciler.controller.housekeeping import HousekeepingSettings
from reconciler.model import naming

# lb-reconciler run's --drift-interval and --drift-sweep-interval defaults
DEFAULT_DRIFT_INTERVAL = HousekeepingSettings.drift_interval
# the sweep in its default proportion to the interval (--sweep-intervals)
SWEEP_INTERVALS = round(HousekeepingSettings.drift_sweep_interval / DEFAULT_DRIFT_INTERVAL)
CHANGED_LIMIT = 4242


def cpu_window(env: Environment, seconds: float) -> dict[str, Any]:
    """The controller tree's resources over ``seconds`` of wall time, and its stack operations."""
    assert env.controller is not None
    before = stack_operations(env.metrics())
    sampler = Sampler(root=env.controller.pid).start()
    time.sleep(seconds)
    samples = sampler.stop()
    out = resources(samples, root_hwm=sampler.root_hwm)
    out["stack_operations"] = delta(stack_operations(env.metrics()), before)
    return out


def per_service_hour(
    *, base: dict[str, Any], drift: dict[str, Any], interval: float, services: int
) -> dict[str, float]:
    """The idle figures from the two windows (see the module docstring)."""
    base_rate = base["cpu_seconds"] / base["seconds"]
    checks = drift["cpu_seconds"] - base_rate * drift["seconds"]
    per_interval = checks / (drift["seconds"] / interval)
    hour = base_rate * 3600.0 + per_interval * (3600.0 / DEFAULT_DRIFT_INTERVAL)
    return {
        "base_cpu_seconds_per_hour": base_rate * 3600.0,
        "drift_cpu_seconds_per_interval": per_interval,
        "idle_cpu_seconds_per_service_hour": hour / services,
    }


def _listener_of(conn: Any, service: str) -> Any:
    lb_name = naming.lb_name(cluster_name=CLUSTER, namespace=NAMESPACE, name=service)
    lbs = list(conn.load_balancer.load_balancers(name=lb_name))
    if len(lbs) != 1:
        raise RuntimeError(f"expected one load balancer {lb_name}, found {len(lbs)}")
    # openstacksdk sends no load balancer filter for listeners: match on each one's parents
    owned = [li for li in conn.load_balancer.listeners() if {"id": lbs[0].id} in li.load_balancers]
    if not owned:
        raise RuntimeError(f"load balancer {lb_name} has no listener")
    return owned[0]


def hand_change(env: Environment, service: str, *, interval: float) -> dict[str, Any]:
    """Change ``service``'s listener by hand; seconds until the controller put it back."""
    conn = connect(env.emulator.topology())
    try:
        listener = _listener_of(conn, service)
        repaired_before = metric_sum(env.metrics(), "lbr_drift_repaired_total")
        checks_before = _checks(env)
        was = listener.connection_limit
        started = time.monotonic()
        conn.load_balancer.update_listener(listener.id, connection_limit=CHANGED_LIMIT)
        found_at: list[float] = []

        def put_back() -> bool:
            if not found_at and _checks(env) > checks_before:  # the check that finds it ran
                found_at.append(time.monotonic() - started)
            now = conn.load_balancer.get_listener(listener.id).connection_limit
            return bool(now == was)

        restored = True
        try:
            wait_for(put_back, what="the listener put back", timeout=3 * interval, every=0.5)
        except TimeoutError:
            restored = False
        seconds = time.monotonic() - started
        repaired = metric_sum(env.metrics(), "lbr_drift_repaired_total") - repaired_before
    finally:
        conn.close()
    found = found_at[0] if found_at else seconds if restored else None
    return {
        "service": service,
        "changed": f"connection_limit {was} -> {CHANGED_LIMIT}",
        "found_seconds": found,
        "put_back": restored,
        "seconds": seconds,
        "drift_repaired": repaired,
        "within_one_interval": found is not None and found <= interval,
    }


def _checks(env: Environment) -> float:
    """Drift checks that found drift so far."""
    return metric_sum(env.metrics(), "lbr_drift_checks_total", drifted="true")


def scenario_6(
    env: Environment,
    *,
    services: int,
    interval: float,
    intervals: int,
    sweep_intervals: int = SWEEP_INTERVALS,
) -> dict[str, Any]:
    cloud_before = env.created()
    made = names("quiet", services)
    env.start_controller(extra_args=["--drift=off"])
    env.wait_ready()
    env.create_services(made)
    env.wait_ips(made, timeout=timeout_for(env, services))
    env.wait_idle(timeout=timeout_for(env, services))
    window = interval * intervals
    base = cpu_window(env, window)
    env.stop_controller()

    sweep = interval * sweep_intervals
    env.start_controller(
        extra_args=["--drift-interval", str(interval), "--drift-sweep-interval", str(sweep)]
    )
    env.wait_ready(timeout=timeout_for(env, services))
    env.wait_synced(services, timeout=timeout_for(env, services))
    drift = cpu_window(env, window)
    figures = per_service_hour(base=base, drift=drift, interval=interval, services=services)
    change = hand_change(env, made[0], interval=interval)
    checks = {
        drifted: metric_sum(env.metrics(), "lbr_drift_checks_total", drifted=drifted)
        for drifted in ("true", "false")
    }
    ctl: dict[str, Any] = {
        **figures,
        "drift_interval_seconds": interval,
        "drift_sweep_interval_seconds": sweep,
        "fleet_comparisons": {
            result: metric_sum(env.metrics(), "lbr_drift_fleet_comparisons_total", result=result)
            for result in ("compared", "failed", "unavailable")
        },
        "fleet_suspects": metric_sum(env.metrics(), "lbr_drift_fleet_suspects_total"),
        "window_seconds": window,
        "base": base,
        "drift": drift,
        "drift_checks": checks,
        "hand_change": change,
        "resources": drift,
    }
    ctl.update(controller_cleanup(env, made, cloud_before))
    env.stop_controller()
    return {"controller": ctl}

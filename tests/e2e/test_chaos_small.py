"""The CI-sized chaos run: bench/chaos.py's own code path for 2 minutes with a fixed seed.

Random Service creates/updates/deletes and Node churn; 5xx/409 answers, latency, dropped
connections, ERROR and stuck-PENDING load balancers from the emulator; the controller SIGKILLed
and restarted; the emulator restarted from its SQLite file. Then every fault is cleared and the
run waits (bounded) until the invariants hold.

Correctness only, never timing: no violation (every live Service has exactly one matching
ACTIVE load balancer and its IP, no orphaned stack or cloud object, no stuck finalizer), and the
chaos really happened (operations, faults, at least one kill and one emulator restart).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.chaos import Options, run_chaos, summary
from reconciler.local.toolchain import Toolchain

pytestmark = pytest.mark.e2e


@pytest.mark.timeout(1200)  # 2 minutes of chaos, up to 10 to settle, the plane's start and stop
def test_two_minutes_of_chaos_leave_no_violation(toolchain: Toolchain, tmp_path: Path) -> None:
    result = run_chaos(
        Options(
            duration=120.0,
            seed=7,
            services=5,
            workers=4,
            profile="instant",
            op_every=3.0,
            fault_every=8.0,
            kill_every=35.0,
            emulator_restart_every=50.0,
            unstick_after=30.0,
            settle=600.0,
            folder=tmp_path / "chaos",
        )
    )
    print(summary(result))
    assert result["violations"] == [], summary(result)
    assert result["operations_total"] > 0
    assert sum(result["faults_injected"].values()) > 0
    assert result["controller_kills"] >= 1
    assert result["emulator_restarts"] >= 1

"""The housekeeper's drift checks over time (:class:`reconciler.controller.housekeeping.
Housekeeper`), on a clock of the test's and an engine double: what a quiet fleet is asked for
with the fleet comparison on, what a difference brings, and the fallback when no comparison can
be made. (The comparison itself against real stacks: tests/integration/engine/test_engine_fleet.py.)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from reconciler.controller.housekeeping import Housekeeper, HousekeepingSettings
from reconciler.controller.metrics import Metrics
from reconciler.controller.sync_plan import ControllerSettings
from reconciler.engine.fleet_plan import FleetReport, Verdict
from reconciler.engine.plan import StackInfo
from reconciler.model import FINALIZER
from tests.builders import make_service
from tests.unit.test_housekeeping import stack

N = 50
SCAN, INTERVAL = 30.0, 300.0


def info(i: int) -> StackInfo:
    return stack(f"web-{i:03d}")


@dataclass
class FleetEngine:
    """The engine's side: N stacks; the comparison's verdicts, or its failure."""

    verdicts: dict[str, Verdict] = field(default_factory=dict)
    fails: bool = False
    readable: bool = True
    compared: int = 0

    def stacks(self) -> list[StackInfo]:
        return [info(i) for i in range(N)]

    def compare_fleet(self, stacks: Sequence[str]) -> FleetReport | None:
        self.compared += 1
        if self.fails:
            raise RuntimeError("the cloud answered 503 to GET /v2/lbaas/listeners")
        if not self.readable:
            return None
        same = {name: Verdict(fingerprint=f"fp-{name}") for name in stacks}
        return FleetReport({**same, **self.verdicts})


@dataclass
class Run:
    engine: FleetEngine
    now: float = 0.0
    asked: list[tuple[float, str, str | None]] = field(default_factory=list)

    def __post_init__(self) -> None:
        services: Mapping[str, dict[str, Any]] = {
            f"default/web-{i:03d}": make_service(
                f"web-{i:03d}", namespace="default", finalizers=(FINALIZER,)
            )
            for i in range(N)
        }
        self.keeper = Housekeeper(
            engine=self.engine,  # type: ignore[arg-type]
            services=lambda: services,
            settings=HousekeepingSettings(interval=SCAN, drift_interval=INTERVAL),
            controller_settings=ControllerSettings(),
            request_orphan_delete=lambda key, ref: pytest.fail(f"orphan {key}"),
            request_drift_check=lambda key, fp: self.asked.append((self.now, key, fp)),
            metrics=Metrics(process_metrics=False),
            clock=lambda: self.now,
        )

    def scans(self, seconds: float) -> None:
        end = self.now + seconds
        while self.now < end:
            self.keeper.scan()
            self.now += SCAN


def test_a_quiet_fleet_is_compared_once_per_interval_and_asked_for_no_check() -> None:
    run = Run(FleetEngine())
    run.scans(2 * INTERVAL)
    assert run.engine.compared == 2  # one scan after the start, then once per interval
    assert run.asked == []  # the sweep's slots are a week apart


def test_a_stack_that_differs_is_checked_at_the_next_comparison() -> None:
    run = Run(FleetEngine())
    run.scans(INTERVAL)
    differs = Verdict(differs=("listener L: connection_limit is 7 in the cloud",), fingerprint="x")
    run.engine.verdicts = {"c.default.web-007": differs}
    run.scans(INTERVAL)
    assert [(key, fp) for _, key, fp in run.asked] == [("default/web-007", "x")]


@pytest.mark.parametrize("broken", ["fails", "unreadable"])
def test_without_a_comparison_every_stack_gets_its_own_check_each_interval(broken: str) -> None:
    engine = FleetEngine(fails=broken == "fails", readable=broken != "unreadable")
    run = Run(engine)
    run.scans(3 * INTERVAL)
    asked = [key for at, key, _ in run.asked if at >= INTERVAL]  # the first interval: first seen
    assert sorted(set(asked)) == sorted(f"default/web-{i:03d}" for i in range(N))
    assert all(fp is None for _, _, fp in run.asked)

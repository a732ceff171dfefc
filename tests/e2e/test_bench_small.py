"""The CI-sized benchmark: scenarios 1, 5 and 3 (``--clone``) of bench/ through the real
harness (its own kube-apiserver, the emulator with the ``instant`` profile, ``lb-reconciler run``
as a process, the openstacksdk baseline as a process).

Correctness only, never timing: every Service got an IP, every deleted Service was released by
its finalizer, and neither the controller nor the baseline left a load balancer, listener, pool,
member, monitor, floating IP, port or stack behind.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bench import scenarios
from bench.harness import Environment
from reconciler.local.toolchain import Toolchain

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def env(toolchain: Toolchain, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Environment]:
    folder: Path = tmp_path_factory.mktemp("bench")
    with Environment.running(profile="instant", workers=4, folder=folder) as environment:
        yield environment


def assert_clean(side: dict[str, Any]) -> None:
    assert side.get("stuck_finalizers", []) == []
    assert side["leftovers"] == {}
    assert side.get("stacks_left", []) == []
    assert side["orphans"] == 0


def deletes(side: dict[str, Any]) -> int:
    """Stack deletes counted, either way (``destroy``, or ``direct-delete`` without pulumi)."""
    ops = side["stack_operations"]
    return int(ops["destroy"]) + int(ops["direct-delete"])


def test_one_service_gets_an_ip_and_leaves_nothing(env: Environment) -> None:
    result = scenarios.scenario_1(env, repeat=1, baseline_workers=1)
    ctl, base = result["controller"], result["baseline"]
    assert ctl["create_to_ip_seconds"]["n"] == 1
    assert ctl["delete_to_gone_seconds"]["n"] == 1
    assert ctl["stack_operations"]["up"] >= 1
    assert deletes(ctl) >= 1
    assert_clean(ctl)
    assert base["errors"] == []
    assert base["create_to_ip_seconds"]["n"] == 1
    assert_clean(base)
    assert env.created() == {}


def test_deleting_five_services_leaves_no_orphan(env: Environment) -> None:
    result = scenarios.scenario_5(env, services=5, repeat=1, baseline_workers=2)
    ctl, base = result["controller"], result["baseline"]
    assert ctl["services_with_ip"] == [5]
    assert ctl["per_service_seconds"]["n"] == 5  # every one released by its finalizer
    assert deletes(ctl) >= 5
    assert_clean(ctl)
    assert base["errors"] == []
    assert_clean(base)
    assert env.created() == {}
    assert env.stacks() == []


def test_services_cloned_from_a_converged_one_restart_with_no_stack_operation(
    env: Environment, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Scenario 3 ``--clone``: two Services cloned from one the controller made. The real
    engine previews each clone against its stack and the cloud and finds nothing to change;
    the restarted controller runs no stack operation, its fleet comparison finds no stack that
    differs from the cloud, and the controller deletes the clones like any other Service."""
    # the first fleet comparison is one housekeeping scan after the start (30 s by default)
    monkeypatch.setattr(
        env, "controller_args", (*env.controller_args, "--housekeeping-interval", "2")
    )
    result = scenarios.scenario_3(env, services=3, repeat=1, clone=True)
    ctl = result["controller"]
    assert ctl["prepared"]["clones"] == 2
    assert ctl["prepared"]["previewed"] == ["steady-001", "steady-002"]
    assert ctl["stack_operations"]["ran"] == 0
    assert ctl["stack_operations"]["skip"] >= 3
    first = ctl["first_fleet_comparison"]
    assert first["comparisons"] >= 1
    assert first["suspects"] == 0
    assert first["drift_checks"] == 0
    assert first["stack_operations"]["ran"] == 0
    assert_clean(ctl)
    assert env.created() == {}
    assert env.stacks() == []

"""The CI-sized benchmark: scenarios 1 and 5 of bench/ through the real harness (its own
kube-apiserver, the emulator with the ``instant`` profile, ``lb-reconciler run`` as a process,
the openstacksdk baseline as a process).

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

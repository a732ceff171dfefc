"""Deleting a Service whose load balancer went to ``ERROR`` must still empty the cloud.

Found by the chaos run (bench/chaos.py): an update that Octavia fails leaves the load balancer
and the children it touched in ``ERROR``. Octavia then refuses nothing but a delete of the load
balancer itself (with ``cascade``, as OCCM deletes); ``pulumi destroy``, which deletes children
one by one and waits for each, never got past the first child, and the Service kept its
finalizer for ever. The engine must delete such a load balancer with cascade, let the state
forget what the cascade removed, and destroy the rest (the floating IP).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from emulator.cloud import CloudConfig as EmulatorConfig
from emulator.server import EmulatorHandle, start
from emulator.timing import INSTANT
from reconciler.engine_errors import EngineError
from reconciler.model.annotations import CONNECTION_LIMIT
from reconciler.toolchain import Toolchain
from tests.integration.engine.conftest import Cloud, Env, only, service, spec_for, wait_until

TIMEOUT = 120.0  # operation_timeout: a destroy stuck on an ERROR child ends here (the bug)


@pytest.fixture
def fault_env(toolchain: Toolchain, tmp_path: Path) -> Iterator[tuple[Env, str]]:
    """An emulator of its own (its faults touch no other test) and its admin URL."""
    handle: EmulatorHandle = start(config=EmulatorConfig(timing=INSTANT))
    try:
        cloud = Cloud(handle)
        env = Env(topo=handle.topology(), cloud=cloud, toolchain=toolchain, state_dir=tmp_path)
        yield env, cloud.url
    finally:
        handle.stop()


def test_delete_of_a_load_balancer_in_error_empties_the_cloud(
    fault_env: tuple[Env, str],
) -> None:
    env, admin = fault_env
    config = env.config()
    svc = service("broken", ports=[{"port": 80, "protocol": "TCP", "nodePort": 30080}])
    stack = env.engine(config, operation_timeout=TIMEOUT).stack(
        service=spec_for(svc, config).service
    )
    created = stack.ensure(spec_for(svc, config))
    lb_id = created.outputs["lb_id"]

    # Octavia fails the next update: the load balancer and the listener go to ERROR
    fault = {"name": "kube_service_*_broken", "outcome": "error", "phase": "update"}
    requests.post(f"{admin}/faults/loadbalancers", json=fault, timeout=10).raise_for_status()
    svc["metadata"]["annotations"][CONNECTION_LIMIT] = "1000"
    with pytest.raises(EngineError):
        stack.ensure(spec_for(svc, config))
    requests.delete(f"{admin}/faults", timeout=10).raise_for_status()
    lb = only(env.cloud.lbs())
    assert (lb["id"], lb["provisioning_status"]) == (lb_id, "ERROR")
    assert only(env.cloud.inventory()["listeners"])["provisioning_status"] == "ERROR"

    result = stack.delete()

    assert result.existed
    assert env.cloud.lbs() == []
    wait_until(lambda: env.cloud.created() == {} or None, timeout=15)
    assert stack.delete().existed is False  # the stack is gone too


def test_delete_that_octavia_fails_is_finished_by_the_next_delete(
    fault_env: tuple[Env, str],
) -> None:
    env, admin = fault_env
    config = env.config()
    svc = service("failing", ports=[{"port": 80, "protocol": "TCP", "nodePort": 30080}])
    stack = env.engine(config, operation_timeout=TIMEOUT).stack(
        service=spec_for(svc, config).service
    )
    stack.ensure(spec_for(svc, config))

    # Octavia fails the first child delete: that child, its pool and the LB go to ERROR
    fault = {"name": "kube_service_*_failing", "outcome": "error", "phase": "update"}
    requests.post(f"{admin}/faults/loadbalancers", json=fault, timeout=10).raise_for_status()
    with pytest.raises(EngineError):
        stack.delete()
    assert only(env.cloud.lbs())["provisioning_status"] == "ERROR"

    result = stack.delete()  # the controller's retry

    assert result.existed
    assert env.cloud.lbs() == []
    wait_until(lambda: env.cloud.created() == {} or None, timeout=15)

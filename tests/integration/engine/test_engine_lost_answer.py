"""A create the cloud carried out but whose answer was lost must not block the Service.

Found by a CI chaos run (0d95c0f): a Service's port changed 443 -> 8443, the emulator restarted
while the listener for 8443 was being created, and the listener was made but its answer never
arrived. Pulumi records no ID and no pending operation for a create that failed, so every later
``up`` created the listener again and Octavia refused it (port in use), for ever: the Service
kept a listener on 443 and one on 8443 without a pool, and never converged. A real Octavia API
process that dies mid-answer does the same. The engine must look for what the spec wants and
the state lacks after an ``up`` that did not finish, listeners, pools and monitors included, and
delete it so the next ``up`` makes it as the spec says (reconciler/engine/lost.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from reconciler.engine.errors import EngineError
from reconciler.engine.stack import ServiceStack
from reconciler.model.spec import LoadBalancerSpec
from tests.builders import stored_service
from tests.integration.engine.conftest import Env, only, spec_for

# each test starts real pulumi runs or servers for many seconds: not in make test-fast
pytestmark = pytest.mark.slow

TIMEOUT = 60.0  # operation_timeout: before the fix the next up waited here on Octavia's 409


def _ports(port: int) -> list[dict[str, Any]]:
    return [{"name": "web", "port": port, "protocol": "TCP", "nodePort": 30080}]


OPERATIONS = ["octavia.listener.create", "octavia.pool.create", "octavia.healthmonitor.create"]


def _lost_on_the_way_to_8443(
    env: Env, operation: str, prefix: str
) -> tuple[ServiceStack, Callable[[int], LoadBalancerSpec]]:
    """A Service converged on port 443, then moved to 8443 while the cloud makes the object of
    ``operation`` and its answer is lost (the ``up`` fails); the stack, and the spec of a port."""
    config = env.config(load_balancer="create-monitor = true")
    name = prefix + operation.split(".")[1]

    def on(port: int) -> LoadBalancerSpec:
        return spec_for(stored_service(name, ports=_ports(port)), config)

    stack = env.engine(config, operation_timeout=TIMEOUT).stack(service=on(443).service)
    stack.ensure(on(443))
    env.cloud.post("/faults/rules", {"operation": operation, "drop": True, "after": True})
    with pytest.raises(EngineError):
        stack.ensure(on(8443))
    env.cloud.clear_faults()
    return stack, on


def _one_listener_pool_monitor_on(env: Env, port: int) -> None:
    cloud = env.cloud.inventory()
    listener = only(cloud["listeners"])
    assert listener["protocol_port"] == port
    pool = only(cloud["pools"])
    assert listener["default_pool_id"] == pool["id"]
    assert only(cloud["healthmonitors"])["pools"] == [{"id": pool["id"]}]


@pytest.mark.parametrize("operation", OPERATIONS)
def test_a_port_change_whose_create_answer_was_lost_converges(
    fault_env: tuple[Env, str], operation: str
) -> None:
    env, _admin = fault_env
    stack, on = _lost_on_the_way_to_8443(env, operation, "lost-")

    assert stack.ensure(on(8443)).changed
    _one_listener_pool_monitor_on(env, 8443)
    assert stack.ensure(on(8443)).changed is False  # settled: the hash is recorded

    assert stack.delete().existed
    assert env.cloud.lbs() == []


@pytest.mark.parametrize("operation", OPERATIONS)
def test_a_lost_create_then_another_port_change_leaves_nothing_behind(
    fault_env: tuple[Env, str], operation: str
) -> None:
    """Found by the CI chaos run (seed 7, "2 pools for 1 listeners"): the object whose create
    answer was lost belongs to a port the Service no longer has when the engine next tries. The
    recovery looked only for what the *new* spec wants, so the old port's object stayed in the
    cloud, unknown to the state, for ever. It must be found by the spec the failed ``up`` was
    given (the stack's config) and deleted."""
    env, _admin = fault_env
    stack, on = _lost_on_the_way_to_8443(env, operation, "relost-")

    # the port changes again before the engine retries
    assert stack.ensure(on(9443)).changed
    _one_listener_pool_monitor_on(env, 9443)

    assert stack.delete().existed
    assert env.cloud.lbs() == []

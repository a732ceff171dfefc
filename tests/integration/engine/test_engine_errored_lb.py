"""Deleting a Service must empty the cloud even when ``pulumi destroy`` cannot, child by child.

Found by the chaos run (bench/chaos.py), each case made every retry of ``destroy`` fail, and
the Service kept its finalizer for ever: a child in ``ERROR`` (a failed child flow: Octavia's
revert tasks leave the load balancer ACTIVE) or the load balancer in ``ERROR`` (a failed LB
flow); a child in the cloud that the state does not know (``it has children``, which was even
classified as not retryable). The engine must delete its own load balancer with cascade, let
the state forget what the cascade removed, and destroy the rest. The deletion tests here failed
before that fix (reconciler/engine/delete/cloud.py); the emulator then put the load balancer in
ERROR after a failed child flow too, which Octavia does not.

Since the direct delete (one cascade ``DELETE``, docs/engine.md), a stack of only its own
load-balancer tree never runs ``destroy``; ``destroy`` remains for the others (a security group,
a released load balancer). So each deletion case runs both ways: ``direct`` (the engine's
default) and through ``destroy`` (``EngineSettings.direct_delete=False``).
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
import requests

from reconciler.engine.errors import EngineError
from reconciler.engine.stack import ServiceStack
from reconciler.model.annotations import CONNECTION_LIMIT
from tests.builders import stored_service
from tests.emulated import connect, wait_until
from tests.integration.engine.conftest import Env, only, spec_for

# each test starts real pulumi runs or servers for many seconds: not in make test-fast
pytestmark = pytest.mark.slow

TIMEOUT = 120.0  # operation_timeout: a destroy stuck on an ERROR child ends here (the bug)


DIRECT = pytest.mark.parametrize("direct", [True, False], ids=["direct", "destroy"])


def _applied(
    env: Env, name: str, *, direct: bool = True
) -> tuple[ServiceStack, dict[str, Any], str]:
    """A Service's stack after its first ``ensure``: the stack, the Service, the LB's ID."""
    config = env.config()
    svc = stored_service(name)
    stack = env.engine(config, operation_timeout=TIMEOUT, direct_delete=direct).stack(
        service=spec_for(svc, config).service
    )
    return stack, svc, stack.ensure(spec_for(svc, config)).outputs["lb_id"]


def _emptied(env: Env, stack: ServiceStack) -> None:
    assert stack.delete().existed
    assert env.cloud.lbs() == []
    env.cloud.wait_nothing_created(timeout=15)


def _fail_next_update(admin: str, name: str, count: int = 1, phase: str = "update") -> None:
    fault = {
        "name": f"kube_service_*_{name}",
        "outcome": "error",
        "phase": phase,
        "count": count,
    }
    requests.post(f"{admin}/faults/loadbalancers", json=fault, timeout=10).raise_for_status()


def _listener_in_error(
    env: Env, admin: str, name: str, *, direct: bool = True
) -> tuple[ServiceStack, dict[str, Any]]:
    """A Service whose listener update Octavia failed: as its ListenerToErrorOnRevertTask
    leaves it, the listener in ERROR and the load balancer ACTIVE. Octavia fails twice: the
    update, and the engine's repair of the listener (an update that changes nothing) before it
    runs the ``up`` again, so the error reaches the caller."""
    stack, svc, lb_id = _applied(env, name, direct=direct)
    _fail_next_update(admin, name, count=2)
    svc["metadata"]["annotations"][CONNECTION_LIMIT] = "1000"
    # the listener's own failure, not another one (a CI run once ended here with the load
    # balancer ACTIVE: the message then says which error it was)
    with pytest.raises(EngineError, match="unexpected state 'ERROR'"):
        stack.ensure(spec_for(svc, env.config()))
    requests.delete(f"{admin}/faults", timeout=10).raise_for_status()
    lb = only(env.cloud.lbs())
    assert (lb["id"], lb["provisioning_status"]) == (lb_id, "ACTIVE")
    assert only(env.cloud.inventory()["listeners"])["provisioning_status"] == "ERROR"
    return stack, svc


@DIRECT
def test_delete_of_a_listener_in_error_empties_the_cloud(
    fault_env: tuple[Env, str], direct: bool
) -> None:
    env, admin = fault_env
    stack, _svc = _listener_in_error(env, admin, "broken", direct=direct)

    _emptied(env, stack)
    assert stack.delete().existed is False  # the stack is gone too


@DIRECT
def test_delete_of_a_load_balancer_in_error_empties_the_cloud(
    fault_env: tuple[Env, str], direct: bool
) -> None:
    """Only LB-level flows leave the load balancer in ERROR: here an LB update (an operator's
    rename, say) that Octavia fails, on top of a listener left in ERROR."""
    env, admin = fault_env
    stack, _svc = _listener_in_error(env, admin, "broken-lb", direct=direct)
    lb_id = only(env.cloud.lbs())["id"]
    _fail_next_update(admin, "broken-lb")
    conn = connect(env.topo)
    conn.load_balancer.update_load_balancer(lb_id, description="renamed by an operator")
    wait_until(lambda: only(env.cloud.lbs())["provisioning_status"] == "ERROR" or None, timeout=30)
    requests.delete(f"{admin}/faults", timeout=10).raise_for_status()

    _emptied(env, stack)
    assert stack.delete().existed is False


def test_an_up_after_a_failed_listener_update_repairs_the_listener(
    fault_env: tuple[Env, str],
) -> None:
    """The load balancer is ACTIVE, so Octavia takes a new update of the listener in ERROR
    (only the LB's status is tested), but the provider waits for the listener to be ACTIVE
    before it sends one (terraform-provider-openstack ``resourceListenerV2Update``): without
    the engine's repair (reconciler.engine.delete.repair) every later ``up`` failed with
    "unexpected state 'ERROR'". The next ``ensure`` must make it ACTIVE again, with the
    Service's values, and the same listener (nothing replaced)."""
    env, admin = fault_env
    stack, svc = _listener_in_error(env, admin, "repaired")
    before = only(env.cloud.inventory()["listeners"])["id"]
    try:
        stack.ensure(spec_for(svc, env.config()))
        listener = only(env.cloud.inventory()["listeners"])
        assert (listener["provisioning_status"], listener["connection_limit"]) == ("ACTIVE", 1000)
        assert listener["id"] == before
    finally:
        _emptied(env, stack)


@DIRECT
def test_delete_that_octavia_fails_midway_still_empties_the_cloud(
    fault_env: tuple[Env, str], direct: bool
) -> None:
    env, admin = fault_env
    stack, _svc, _lb_id = _applied(env, "failing", direct=direct)

    # destroy: Octavia fails the first child delete, that child goes to ERROR (the LB stays
    # ACTIVE), and destroy fails with "unexpected state 'ERROR'"; the engine cascades and
    # destroys again. direct: Octavia fails the cascade's flow (its revert leaves the load
    # balancer ERROR); the engine asks again
    _fail_next_update(admin, "failing", phase="update" if not direct else "delete")
    fired_before = requests.get(f"{admin}/faults/fired", timeout=10).json()

    _emptied(env, stack)
    assert requests.get(f"{admin}/faults/fired", timeout=10).json() != fired_before


@DIRECT
def test_delete_with_a_child_the_state_does_not_know(
    fault_env: tuple[Env, str], direct: bool
) -> None:
    env, _admin = fault_env
    stack, _svc, lb_id = _applied(env, "unknown-child", direct=direct)
    conn = connect(env.topo)  # a listener created, its answer lost before the checkpoint
    conn.load_balancer.create_listener(loadbalancer_id=lb_id, protocol="TCP", protocol_port=9999)
    wait_until(lambda: only(env.cloud.lbs())["provisioning_status"] == "ACTIVE" or None, timeout=30)

    _emptied(env, stack)


def test_delete_of_a_child_the_cloud_lost_is_given_up_and_cascaded(
    fault_env: tuple[Env, str],
) -> None:
    """A child's delete gets stuck and an operator sets the load balancer and its children
    ACTIVE again, as the chaos run's operator does. The Service's deletion must still empty the
    cloud, with the child delete timeout the engine gives the provider in the state.

    This does not reproduce the 10-minute wait of the chaos runs (here the emulator finishes the
    child's delete when the operator acts); the fallback for it is unit-tested
    (test_engine_errored.py, with the provider's error text from the run)."""
    env, admin = fault_env
    config = env.config()
    svc = stored_service("lost-delete")
    # through destroy: the direct delete has no child deletes to get stuck
    stack = env.engine(
        config, operation_timeout=TIMEOUT, child_delete_timeout=5, direct_delete=False
    ).stack(service=spec_for(svc, config).service)
    lb_id = stack.ensure(spec_for(svc, config)).outputs["lb_id"]
    opened = stack.open_stack(create=False)
    assert opened is not None
    listener = only(
        [
            r
            for r in opened.export_stack().deployment["resources"]
            if r["type"].endswith(":Listener")
        ]
    )
    assert listener.get("customTimeouts") == {"delete": 5.0}
    fault = {"name": "kube_service_*_lost-delete", "outcome": "stuck", "phase": "update"}
    requests.post(f"{admin}/faults/loadbalancers", json=fault, timeout=10).raise_for_status()

    def operator() -> None:  # the run's operator: a stuck load balancer is set ACTIVE
        wait_until(lambda: only(env.cloud.lbs())["provisioning_status"] == "PENDING_UPDATE" or None)
        requests.delete(f"{admin}/faults", timeout=10).raise_for_status()
        body = {"provisioning_status": "ACTIVE", "children": "all"}
        env.cloud.put(f"/loadbalancers/{lb_id}/status", body)

    helper = threading.Thread(target=operator)
    helper.start()
    try:
        _emptied(env, stack)
    finally:
        helper.join(timeout=60)


def test_a_listener_update_the_cloud_refused_is_sent_again(fault_env: tuple[Env, str]) -> None:
    """Octavia answers 400 to a listener update: the ``up`` fails with the cloud's message, but
    the provider keeps the refused value in the stack's state. Once the cloud accepts again, the
    next ``ensure`` must still send the update (it reads the cloud first), not find the state
    already as the spec wants and leave the listener as it was."""
    env, admin = fault_env
    stack, svc, _lb_id = _applied(env, "refused")
    try:
        rule = {"operation": "octavia.listener.update", "status": 400, "message": "not allowed"}
        requests.post(f"{admin}/faults/rules", json=rule, timeout=10).raise_for_status()
        svc["metadata"]["annotations"][CONNECTION_LIMIT] = "1000"
        with pytest.raises(EngineError, match="not allowed"):
            stack.ensure(spec_for(svc, env.config()))
        requests.delete(f"{admin}/faults", timeout=10).raise_for_status()
        assert only(env.cloud.inventory()["listeners"])["connection_limit"] != 1000

        result = stack.ensure(spec_for(svc, env.config()))
        assert result.changed
        assert only(env.cloud.inventory()["listeners"])["connection_limit"] == 1000
    finally:
        _emptied(env, stack)

"""An ``up`` that hangs is interrupted after ``operation_timeout``; the next ``ensure`` recovers.

The emulator is told (``POST /admin/faults/loadbalancers``) to leave the Service's load balancer
in ``PENDING_CREATE`` for ever, so the provider waits for ``ACTIVE`` and ``pulumi up`` hangs. The
engine, with a short ``operation_timeout``, must interrupt it and raise
:class:`UpTimeoutError` within a bounded time, leaving no ``pulumi`` and no provider plugin
process behind (the plugin is killed with ``pulumi``), and no live lock on the stack. Then the
fault is cleared and the cloud finishes the create (``PUT /admin/loadbalancers/{id}/status``);
the next ``ensure`` converges with exactly one load balancer (the stuck one, adopted, not a
second), and ``delete`` leaves nothing.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
import requests

from reconciler.controller.backend import Failure, failure_of
from reconciler.engine.errors import UpTimeoutError
from reconciler.engine.recovery import alive, children_running
from reconciler.engine.stack import ServiceStack
from reconciler.engine.state.store import LockRecord
from tests.builders import stored_service
from tests.emulated import wait_until
from tests.integration.engine.conftest import Env, only, spec_for

# each test starts real pulumi runs or servers for many seconds: not in make test-fast
pytestmark = pytest.mark.slow

TIMEOUT = 8.0  # operation_timeout given to the engine
GRACE = 20.0  # interrupt_grace: SIGINT, then SIGKILL after this long
DEADLINE = TIMEOUT + 3 * GRACE + 30  # generous bound on ensure() raising


def _processes_of(marker: str) -> list[int]:
    """PIDs of live processes whose environment mentions ``marker`` (pulumi and its plugins
    inherit the engine's ``PULUMI_BACKEND_URL``, which holds this test's own directory)."""
    found = []
    needle = marker.encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if state != "Z" and needle in environ:
            found.append(int(entry.name))
    return found


def _locks(stack: ServiceStack) -> list[LockRecord]:
    store = stack.engine.store
    assert store is not None
    return store.list_locks(stack.name)


def test_hanging_up_is_interrupted_then_next_ensure_converges(
    fault_env: tuple[Env, str],
) -> None:
    env, admin = fault_env
    name = "hang"
    stuck = {"name": f"kube_service_*_{name}", "outcome": "stuck", "phase": "create"}
    requests.post(f"{admin}/faults/loadbalancers", json=stuck, timeout=10).raise_for_status()
    config = env.config()
    svc = stored_service(name)
    spec = spec_for(svc, config)
    stack = env.engine(config, operation_timeout=TIMEOUT, interrupt_grace=GRACE).stack(
        service=spec.service
    )
    marker = (env.state_dir / "backend").as_uri()

    outcome: list[BaseException] = []

    def run() -> None:
        try:
            stack.ensure(spec)
        except BaseException as exc:
            outcome.append(exc)

    started = time.monotonic()
    worker = threading.Thread(target=run, name="hanging-ensure")
    worker.start()
    lb = wait_until(lambda: env.cloud.lbs(), timeout=60)[0]  # the create reached the cloud
    assert lb["provisioning_status"] == "PENDING_CREATE"
    worker.join(DEADLINE)
    assert not worker.is_alive(), f"ensure did not return within {DEADLINE}s"
    elapsed = time.monotonic() - started
    assert len(outcome) == 1, outcome
    error = outcome[0]
    assert isinstance(error, UpTimeoutError), error
    assert failure_of(error) is Failure.BACKOFF  # retried, with backoff and a Warning
    assert error.stack == stack.name
    assert elapsed >= TIMEOUT

    # nothing left running, nothing left locked
    assert children_running(stack_name=stack.name) == []
    wait_until(lambda: not _processes_of(marker) or None, timeout=30)
    # pulumi stuck on a create does not stop on SIGINT, so it is killed and its lock stays;
    # the lock must be stale (its owner gone), which the next operation clears
    assert all(not alive(lock.pid or 0) for lock in _locks(stack)), _locks(stack)

    # the cloud recovers: the fault is cleared and the stuck create completes
    requests.delete(f"{admin}/faults", timeout=10).raise_for_status()
    requests.put(
        f"{admin}/loadbalancers/{lb['id']}/status",
        json={"provisioning_status": "ACTIVE"},
        timeout=10,
    ).raise_for_status()

    result = stack.ensure(spec)
    assert result.changed
    got = only(env.cloud.lbs())  # the stuck one, adopted; no duplicate
    assert got["id"] == lb["id"] == result.outputs["lb_id"]
    assert got["provisioning_status"] == "ACTIVE"
    inv = env.cloud.inventory()
    assert len(inv["listeners"]) == 1
    assert len(inv["members"]) == 2
    assert not stack.ensure(spec).changed
    assert not _processes_of(marker)
    assert _locks(stack) == []

    assert stack.delete().existed
    assert env.cloud.lbs() == []
    assert env.cloud.created() == {}

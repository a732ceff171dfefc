"""The real engine as a controller's (``leading`` given) and as a command's (none): fencing by
the Lease, and whose stack locks each may clear.

* A controller whose process no longer holds the Lease writes nothing: no ``pulumi`` runs, the
  state, the tags and the cloud stay as they were; an ``up`` running when the Lease is lost is
  killed at once, and the next leader converges the stack (one load balancer, no lock left).
* A lock written by another replica of the controller (a host among the Lease's holders) is
  left alone by a command (``preview``, the listing), and cleared by the leader before its
  operation; a stranger's (a person's laptop) is left alone by both, and named.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from emulator.timing import TimingProfile
from reconciler.engine.errors import EngineError, NotLeaderError, StackLockedError
from reconciler.engine.processes import children_running, descendants, start_time
from reconciler.engine.stack import Engine
from reconciler.engine.state.locks import Cleared
from reconciler.toolchain import Toolchain
from tests.builders import stored_service
from tests.emulated import wait_until
from tests.integration.engine.conftest import Env, env_of_its_own, only, spec_for

# each test starts real pulumi runs or servers for many seconds: not in make test-fast
pytestmark = pytest.mark.slow

SLOW_CREATE = TimingProfile(name="slow-create", lb_create=4.0, lb_update=0, lb_delete=0, child=0)


@pytest.fixture
def slow_env(toolchain: Toolchain, tmp_path: Path) -> Iterator[Env]:
    with env_of_its_own(toolchain, tmp_path, timing=SLOW_CREATE) as env:
        yield env


class Lease:
    """What the runner's Leadership answers, set by the test: whether it leads, for how long,
    its term, and the hostnames of the Lease's other holders (the previous leader's pod)."""

    def __init__(self, *replicas: str) -> None:
        self.held = True
        self.replicas = frozenset(replicas)

    def __call__(self) -> bool:
        return self.held

    def remaining(self) -> float:
        return 60.0 if self.held else 0.0

    def epoch(self) -> int:
        return 1

    def replica_hosts(self) -> frozenset[str]:
        return self.replicas


def backend(env: Env) -> Path:
    return env.state_dir / "backend"


def snapshot(env: Env) -> dict[str, bytes]:
    """Every file of the backend (state, history, tags, locks), by path."""
    root = backend(env)
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def locks(env: Env) -> list[dict[str, Any]]:
    out = []
    for path in (backend(env) / ".pulumi" / "locks").rglob("*.json"):
        out.append(json.loads(path.read_text()))
    return out


def leader_engine(env: Env, lease: Callable[[], bool]) -> Engine:
    return Engine(settings=env.engine(env.config()).settings, leading=lease)


def test_a_controller_that_no_longer_leads_writes_nothing(env: Env) -> None:
    lease = Lease()
    engine = leader_engine(env, lease)
    spec = spec_for(stored_service("fenced"), env.config())
    stack = engine.stack(service=spec.service)
    assert stack.ensure(spec).changed
    lb = only(env.cloud.lbs())
    before, inventory = snapshot(env), env.cloud.inventory()

    lease.held = False  # the renew deadline passed: another replica may lead by now
    edited = spec_for(
        stored_service(
            "fenced",
            ports=[
                {"port": 80, "protocol": "TCP", "nodePort": 30080},
                {"port": 443, "protocol": "TCP", "nodePort": 30443},
            ],
        ),
        env.config(),
    )
    with pytest.raises(NotLeaderError, match="no longer holds the Lease"):
        stack.ensure(edited)
    with pytest.raises(NotLeaderError):
        stack.refresh()
    with pytest.raises(NotLeaderError):
        stack.delete()
    with pytest.raises(NotLeaderError):
        engine.take_over()
    assert snapshot(env) == before  # no state, history, tags or lock written
    assert env.cloud.inventory() == inventory
    assert children_running(stack_name=stack.name) == []

    lease.held = True  # (a test's shortcut: a real process that lost the Lease exits)
    stack.delete()
    assert env.cloud.lbs() == []
    assert lb["id"]


def test_a_lost_lease_kills_the_running_up_and_the_next_leader_converges(slow_env: Env) -> None:
    env = slow_env
    old_lease = Lease()
    old = leader_engine(env, old_lease)
    spec = spec_for(stored_service("handover"), env.config())
    stack = old.stack(service=spec.service)
    errors: list[BaseException] = []

    def run() -> None:
        try:
            stack.ensure(spec)
        except BaseException as exc:
            errors.append(exc)

    worker = threading.Thread(target=run)
    worker.start()
    wait_until(lambda: env.cloud.lbs(), timeout=60)  # the create reached the cloud
    pids = wait_until(lambda: children_running(stack_name=stack.name), timeout=10)
    plugins = {p for pid in pids for p in descendants(pid)}
    assert locks(env), "the running up holds its lock"
    old_lease.held = False
    worker.join(timeout=60)
    assert not worker.is_alive()
    assert len(errors) == 1
    assert isinstance(errors[0], NotLeaderError), errors
    assert children_running(stack_name=stack.name) == []
    assert all(start_time(pid) != started for pid, started in plugins)  # reaped, not left
    assert locks(env), "a killed pulumi leaves its lock"

    new = leader_engine(env, Lease())  # the next leader (here: the same host, a new engine)
    result = new.stack(service=spec.service).ensure(spec)
    assert result.changed
    assert result.outputs["lb_id"] == only(env.cloud.lbs())["id"]  # adopted, not made twice
    assert locks(env) == []
    new.stack(service=spec.service).delete()
    assert env.cloud.lbs() == []


def test_a_command_leaves_a_controller_s_lock_and_the_leader_clears_it(env: Env) -> None:
    """The previous leader's pod (a holder of the Lease) left a lock: a command leaves it, the
    leader removes it. A stranger's lock (a person's laptop) the leader leaves too, and says
    whose it is."""
    leader = leader_engine(env, Lease("lb-reconciler-5c7d-pod"))
    spec = spec_for(stored_service("shared-backend"), env.config())
    assert leader.stack(service=spec.service).ensure(spec).changed
    name = leader.stack(service=spec.service).name
    folder = backend(env) / ".pulumi" / "locks" / "organization" / "lb-reconciler" / name
    folder.mkdir(parents=True, exist_ok=True)  # the leader's own up made it
    lock = folder / "0b7e1c9e-controller.json"
    owner = {"pid": os.getpid(), "username": "root", "hostname": "lb-reconciler-5c7d-pod"}
    lock.write_text(json.dumps({**owner, "timestamp": datetime.now(UTC).isoformat()}))

    # a person's or CI's command on the same backend (no Lease): the lock is not its to take
    command = Engine(settings=leader.settings)
    assert command.take_over() == Cleared()
    assert only([s for s in command.stacks() if s.stack == name]).locked is True
    command.stack(service=spec.service).preview(spec)
    assert lock.exists()
    with pytest.raises(EngineError, match="is locked by root@lb-reconciler-5c7d-pod"):
        command.stack(service=spec.service).refresh()
    assert lock.exists()

    # the leader: a replica's, which holds nothing now, so it is stale
    assert only([s for s in leader.stacks() if s.stack == name]).locked is False
    assert [r.stack for r in leader.take_over().removed] == [name]
    assert not lock.exists()

    # a stranger's: kept, and named, by the leader too
    alice = {"pid": 4242, "username": "alice", "hostname": "alice-laptop"}
    lock.write_text(json.dumps({**alice, "timestamp": datetime.now(UTC).isoformat()}))
    taken = leader.take_over()
    assert (taken.removed, [r.hostname for r in taken.foreign]) == ([], ["alice-laptop"])
    assert only([s for s in leader.stacks() if s.stack == name]).locked is True
    with pytest.raises(StackLockedError, match="alice@alice-laptop"):
        leader.stack(service=spec.service).refresh()
    assert lock.exists()

    lock.write_text(json.dumps({**owner, "timestamp": datetime.now(UTC).isoformat()}))
    leader.stack(service=spec.service).delete()  # a replica's cleared before the operation
    assert env.cloud.lbs() == []
    assert locks(env) == []

"""Kill ``pulumi`` in the middle of an ``up``; the next ``ensure`` converges, nothing leaks.

The emulator gets a slow load-balancer create (the provider waits for ACTIVE), so the ``up`` is
caught while the state records a *pending create* of the load balancer: the request reached the
cloud but its ID never reached the state. The ``pulumi`` child is SIGKILLed (no chance to clean
up: the backend lock stays, the pending operation stays). The next ``ensure`` must clear the
stale lock, find the load balancer by name and import it, and finish: exactly one load balancer,
and ``delete`` leaves nothing.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from emulator.timing import TimingProfile
from reconciler.engine.errors import EngineError
from reconciler.engine.recovery import alive, children_running, descendants, start_time
from reconciler.engine.stack import ServiceStack
from reconciler.engine.state.folder import FileBucket
from reconciler.engine.state.store import BucketError, StateStore
from reconciler.model import LoadBalancerSpec
from reconciler.model.annotations import CONNECTION_LIMIT
from reconciler.toolchain import Toolchain
from tests.backends import Backend
from tests.builders import stored_service
from tests.emulated import connect, wait_until
from tests.integration.engine.conftest import Env, env_of_its_own, only, spec_for

# each test starts real pulumi runs or servers for many seconds: not in make test-fast
pytestmark = pytest.mark.slow

SLOW_CREATE = TimingProfile(name="slow-create", lb_create=4.0, lb_update=0, lb_delete=0, child=0)
SLOW_CHILD = TimingProfile(name="slow-child", lb_create=0, lb_update=0, lb_delete=0, child=4.0)


@pytest.fixture
def slow_env(toolchain: Toolchain, tmp_path: Path) -> Iterator[Env]:
    with env_of_its_own(toolchain, tmp_path, timing=SLOW_CREATE) as env:
        yield env


@pytest.fixture
def slow_child_env(toolchain: Toolchain, tmp_path: Path) -> Iterator[Env]:
    with env_of_its_own(toolchain, tmp_path, timing=SLOW_CHILD) as env:
        yield env


@pytest.fixture
def slow_backend_env(toolchain: Toolchain, tmp_path: Path, backend: Backend) -> Iterator[Env]:
    """``slow_env`` on a backend of its own, one run per kind (file, postgres, s3)."""
    with env_of_its_own(toolchain, tmp_path, timing=SLOW_CREATE) as env:
        yield dataclasses.replace(env, backend=backend)


def _store(stack: ServiceStack) -> StateStore:
    store = stack.engine.store
    assert store is not None
    return store


def _pending(stack: ServiceStack) -> list[dict[str, Any]]:
    try:
        state = _store(stack).checkpoint(stack.name) or {}
    except (BucketError, ValueError):
        return []
    ops: list[dict[str, Any]] = (state.get("checkpoint", {}).get("latest") or {}).get(
        "pending_operations"
    ) or []
    return ops


def _kill_mid_create(
    env: Env, stack: ServiceStack, spec: LoadBalancerSpec, kind: str = "LoadBalancer"
) -> None:
    """Run ``ensure`` and SIGKILL its ``pulumi`` while the create of the first ``kind`` (a
    type token's last part) is pending: the cloud has it, the state does not."""
    collection = {"LoadBalancer": "loadbalancers", "Listener": "listeners"}[kind]
    _kill_mid(env, stack, spec, kind, "creating", lambda: env.cloud.inventory()[collection])


def _kill_mid(
    env: Env,
    stack: ServiceStack,
    spec: LoadBalancerSpec | None,
    kind: str,
    op_type: str,
    in_cloud: Callable[[], object],
) -> None:
    """Run ``ensure`` (``delete`` when ``spec`` is None) and SIGKILL its ``pulumi`` while the
    state has a pending ``op_type`` (``creating``, ``updating``, ``deleting``) of a ``kind`` and
    ``in_cloud`` says the request reached the cloud."""
    errors: list[BaseException] = []

    def run() -> None:
        try:
            stack.ensure(spec) if spec is not None else stack.delete()
        except BaseException as exc:
            errors.append(exc)

    worker = threading.Thread(target=run)
    worker.start()
    ops = wait_until(
        lambda: [
            op
            for op in _pending(stack)
            if op["resource"]["type"].endswith(f":{kind}") and op["type"] == op_type
        ],
        timeout=60,
    )
    assert ops
    wait_until(in_cloud, timeout=10)  # it reached the cloud
    pids = wait_until(lambda: children_running(stack_name=stack.name), timeout=10)
    plugins = {p for pid in pids for p in descendants(pid)}
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    worker.join(timeout=120)
    # A SIGKILLed pulumi cannot stop its provider plugin; in a pod the runtime reaps it with the
    # container. Do the same here so the test leaves no process behind.
    for plugin, started in plugins:
        if alive(plugin) and start_time(plugin) == started:
            os.kill(plugin, signal.SIGKILL)
    assert not worker.is_alive()
    assert errors
    assert isinstance(errors[0], EngineError)
    assert _store(stack).list_locks(stack.name), "the killed pulumi left its lock"
    assert len(env.cloud.lbs()) == 1


def test_kill_pulumi_mid_up_then_ensure_converges(slow_backend_env: Env, starts: list[str]) -> None:
    env = slow_backend_env
    config = env.config()
    svc = stored_service("crash")
    spec = spec_for(svc, config)
    stack = env.engine(config).stack(service=spec.service)
    _kill_mid_create(env, stack, spec)

    starts.clear()
    result = stack.ensure(spec)
    assert result.changed
    # the pending create read, and dropped, in the backend by the store: no `pulumi stack
    # export` and `stack import` (reconciler.engine.recovery._read_state, _write_state)
    assert starts == ["up"]
    lb = only(env.cloud.lbs())  # imported, not duplicated
    assert result.outputs["lb_id"] == lb["id"]
    inv = env.cloud.inventory()
    assert len(inv["listeners"]) == 1
    assert len(inv["members"]) == 2
    assert not _pending(stack)
    assert _store(stack).list_locks(stack.name) == []
    assert not stack.ensure(spec).changed
    stack.delete()
    assert env.cloud.lbs() == []


def test_a_torn_checkpoint_sidecar_does_not_wedge_the_stack(env: Env) -> None:
    """A pulumi killed while writing `<stack>.json.attrs` leaves it empty; the next op repairs."""
    config = env.config()
    spec = spec_for(stored_service("torn"), config)
    stack = env.engine(config).stack(service=spec.service)
    assert stack.ensure(spec).changed
    store = _store(stack)
    assert isinstance(store.bucket, FileBucket)
    sidecar = store.bucket.root / f"{store.stacks_prefix()}{stack.name}.json.attrs"
    assert sidecar.exists()
    # What a SIGKILL left in a CI run; pulumi then failed with `failed to load checkpoint: EOF`.
    sidecar.write_text("")
    assert not stack.ensure(spec).changed
    stack.delete()
    assert env.cloud.lbs() == []


def test_kill_pulumi_mid_up_then_delete_leaves_nothing(slow_env: Env) -> None:
    """The Service is deleted while the controller is down: the restarted controller's first
    operation on the stack is ``delete``. The load balancer whose create was cut off is in the
    cloud but not in the state; ``destroy`` alone would leave it (found by the chaos run)."""
    env = slow_env
    config = env.config()
    spec = spec_for(stored_service("crash-then-delete"), config)
    _kill_mid_create(env, env.engine(config).stack(service=spec.service), spec)

    restarted = env.engine(config).stack(service=spec.service)  # a new process, no memory
    assert restarted.delete().existed

    assert env.cloud.lbs() == []
    env.cloud.wait_nothing_created(timeout=15)


def test_kill_mid_release_then_the_restarted_owner_and_sharer_converge(
    slow_child_env: Env,
) -> None:
    """The owner of a load balancer another Service shares is deleted: it releases the load
    balancer and its ``destroy`` takes its own listener, and ``pulumi`` is SIGKILLed while that
    listener's delete is pending (a controller killed mid-release). A restarted engine (no
    memory) deletes the owner again: the load balancer stays released to the sharer, whose
    listener, pool and name on the load balancer are untouched; then the sharer's delete, as the
    last Service on it, deletes the load balancer and its floating IP."""
    env = slow_child_env
    config = env.config("max-shared-lb = 5")
    owner_spec = spec_for(stored_service("rel-owner", ports=_ports(80)), config)
    owner = env.engine(config).stack(service=owner_spec.service)
    lb_id = str(owner.ensure(owner_spec).outputs["lb_id"])
    shares = {"loadbalancer.openstack.org/load-balancer-id": lb_id}
    sharer_body = stored_service("rel-sharer", ports=_ports(81), annotations=shares)
    sharer_spec = spec_for(sharer_body, config)
    env.engine(config).stack(service=sharer_spec.service).ensure(sharer_spec)

    def owners_listener_deleting() -> bool:
        return all(li["protocol_port"] != 80 for li in env.cloud.inventory()["listeners"]) or (
            any(
                li["protocol_port"] == 80 and li["provisioning_status"] == "PENDING_DELETE"
                for li in env.cloud.inventory()["listeners"]
            )
        )

    _kill_mid(env, owner, None, "Listener", "deleting", owners_listener_deleting)

    restarted = env.engine(config).stack(service=owner_spec.service)
    # As the controller retries. The first attempt may fail while Octavia still deletes the
    # listener the killed `destroy` asked to delete (the release's refresh read it before it
    # was gone); the next one reads it gone and converges. Before the release refreshed, every
    # attempt failed on the listener the state still held.
    failures: list[EngineError] = []
    while True:
        try:
            result = restarted.delete()
            break
        except EngineError as exc:
            failures.append(exc)
            assert len(failures) < 2, failures
    assert (result.existed, result.released_load_balancer) == (True, True)
    inv = env.cloud.inventory()
    lb = only(env.cloud.lbs())
    assert lb["id"] == lb_id
    assert [li["protocol_port"] for li in inv["listeners"]] == [81]
    assert len(inv["pools"]) == 1
    assert sharer_spec.name in lb["tags"]
    assert owner_spec.name not in lb["tags"]
    assert len(inv["floatingips"]) == 1  # the owner's, on the VIP the sharer still uses

    sharer = env.engine(config).stack(service=sharer_spec.service)
    assert sharer.delete().deleted_shared_load_balancer
    assert env.cloud.lbs() == []
    env.cloud.wait_nothing_created(timeout=15)


def _ports(*ports: int) -> list[dict[str, Any]]:
    return [{"name": f"p{p}", "port": p, "protocol": "TCP", "nodePort": 30000 + p} for p in ports]


def test_kill_mid_listener_create_then_the_port_is_removed(slow_child_env: Env) -> None:
    """The listener of a port whose create was cut off, when the next spec no longer has the
    port: the recovery finds it, but the next ``up`` does not declare it, so nothing adopted or
    deleted it (found by the chaos run: a listener left on a live load balancer)."""
    env = slow_child_env
    config = env.config()
    spec = spec_for(stored_service("port-gone", ports=_ports(5432)), config)
    _kill_mid_create(env, env.engine(config).stack(service=spec.service), spec, "Listener")

    changed = spec_for(stored_service("port-gone", ports=_ports(8080)), config)
    restarted = env.engine(config).stack(service=spec.service)
    assert restarted.ensure(changed).changed

    listener = only(env.cloud.inventory()["listeners"])
    assert listener["protocol_port"] == 8080
    assert restarted.delete().existed
    assert env.cloud.lbs() == []


def _recovered_then_failed(env: Env, name: str) -> tuple[LoadBalancerSpec, str]:
    """Kill ``pulumi`` mid listener create, then make the ``up`` that was to adopt the found
    listener fail on its import; returns the spec and the listener's ID."""
    config = env.config()
    spec = spec_for(stored_service(name, ports=_ports(80)), config)
    _kill_mid_create(env, env.engine(config).stack(service=spec.service), spec, "Listener")
    listener_id = only(env.cloud.inventory()["listeners"])["id"]
    rule = {"operation": "octavia.listener.show", "status": 404, "count": 1}
    env.cloud.post("/faults/rules", rule)  # the import finds no listener: the up fails
    with pytest.raises(EngineError):
        env.engine(config).stack(service=spec.service).ensure(spec)
    env.cloud.clear_faults()
    return spec, listener_id


def test_kill_mid_listener_create_then_the_next_up_fails_too(slow_child_env: Env) -> None:
    """The recovery found the listener of the cut-off create, and the ``up`` that was to adopt
    it failed before it could: the next ``ensure`` must still adopt it, not create a second
    listener on the port (which Octavia refuses: the Service would fail for ever)."""
    env = slow_child_env
    spec, listener_id = _recovered_then_failed(env, "adopt-fails")

    restarted = env.engine(env.config()).stack(service=spec.service)
    result = restarted.ensure(spec)
    assert only(env.cloud.inventory()["listeners"])["id"] == listener_id
    assert result.outputs["lb_id"] == only(env.cloud.lbs())["id"]
    assert restarted.delete().existed
    assert env.cloud.lbs() == []


def test_an_import_carried_over_is_dropped_when_its_object_is_gone(slow_child_env: Env) -> None:
    """As above, but the listener was deleted meanwhile (by an operator): importing it would
    fail on every ``up``; the next ``ensure`` must make a new one instead."""
    env = slow_child_env
    spec, listener_id = _recovered_then_failed(env, "import-gone")
    wait_until(lambda: only(env.cloud.lbs())["provisioning_status"] == "ACTIVE" or None, timeout=30)
    connect(env.topo).load_balancer.delete_listener(listener_id)
    wait_until(lambda: not env.cloud.inventory()["listeners"] or None, timeout=30)

    restarted = env.engine(env.config()).stack(service=spec.service)
    restarted.ensure(spec)
    assert only(env.cloud.inventory()["listeners"])["id"] != listener_id
    assert restarted.delete().existed
    assert env.cloud.lbs() == []


def _limit(env: Env) -> int:
    """The connection limit of the only listener in the cloud."""
    return int(only(env.cloud.inventory()["listeners"])["connection_limit"])


def _killed_mid_limit_update(env: Env, name: str) -> LoadBalancerSpec:
    """A Service applied without a connection limit, then an ``up`` with limit 5000 SIGKILLed
    while the listener's update is pending and the cloud already has 5000; returns the first
    spec."""
    config = env.config()
    plain = spec_for(stored_service(name), config)
    stack = env.engine(config).stack(service=plain.service)
    assert stack.ensure(plain).changed
    limited = spec_for(stored_service(name, annotations={CONNECTION_LIMIT: "5000"}), config)
    _kill_mid(env, stack, limited, "Listener", "updating", lambda: _limit(env) == 5000 or None)
    return plain


def test_kill_mid_listener_update_then_the_edit_is_undone(slow_child_env: Env) -> None:
    """An ``up`` cut off after the cloud took a listener's new value: the state still holds the
    old one, the pending update is all that says otherwise. The Service is edited back before
    the next ``ensure``; that ``up`` must put the cloud back too, not find "no change" between
    the state and the spec (found by the chaos run: a listener kept ``connection_limit`` 5000
    for ever after its Service's annotation was removed)."""
    env = slow_child_env
    config = env.config()
    plain = _killed_mid_limit_update(env, "edit-undone")

    restarted = env.engine(config).stack(service=plain.service)  # a new process, no memory
    restarted.ensure(plain)
    assert _limit(env) == -1
    assert not _pending(restarted)  # the refresh settled the cut-off update
    assert not restarted.ensure(plain).changed
    assert restarted.delete().existed
    assert env.cloud.lbs() == []


def test_kill_mid_listener_update_then_delete_leaves_nothing(slow_child_env: Env) -> None:
    """The pending update a cut-off ``up`` left stays in the state until an ``up --refresh``
    settles it; a delete of the Service first must still empty the cloud."""
    env = slow_child_env
    config = env.config()
    plain = _killed_mid_limit_update(env, "update-then-delete")

    restarted = env.engine(config).stack(service=plain.service)
    result = restarted.delete()
    assert result.existed
    assert not result.direct  # the last up did not finish: `destroy` after the recovery
    assert env.cloud.lbs() == []
    env.cloud.wait_nothing_created(timeout=15)

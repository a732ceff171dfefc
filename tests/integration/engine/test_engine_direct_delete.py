"""A Service's stack is deleted as OCCM deletes: one cascade ``DELETE`` of its load balancer and
the floating IP, no ``destroy`` (issue 16). On the real engine against the emulator.

The emulator counts operations through latency-only fault rules (``status: 200``: they add no
error, ``/admin/faults/fired`` says how often each matched). Whatever the path, the stack is gone
afterwards, the backend holds nothing of it and the cloud nothing it made; a crash at any step
of the new path converges on the next attempt (a fresh engine, as after a restart).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from reconciler.engine.delete import direct
from reconciler.engine.openstack.client import OpenStackRest
from reconciler.engine.stack import Engine, ServiceStack
from reconciler.engine.state.store import StateStore
from tests.builders import stored_service
from tests.emulated import connect
from tests.integration.engine.conftest import Env, only, spec_for

# each test starts real pulumi runs or servers for many seconds: not in make test-fast
pytestmark = pytest.mark.slow

A = "loadbalancer.openstack.org/"
COUNTED = [
    "octavia.loadbalancer.delete",
    "octavia.listener.delete",
    "octavia.pool.delete",
    "octavia.healthmonitor.delete",
    "octavia.member.*",
    "neutron.floatingip.delete",
]


class Crash(BaseException):
    """The process dies here: nothing after this step runs (not an Exception: no handler of
    the engine's catches it)."""


def _count(env: Env) -> Callable[[], dict[str, int]]:
    base = len(env.cloud.get("/faults")["rules"])
    for operation in COUNTED:
        env.cloud.post("/faults/rules", {"operation": operation, "status": 200})

    def fired() -> dict[str, int]:
        got = env.cloud.get("/faults/fired")
        return {op: got.get(f"rules[{base + i}]", 0) for i, op in enumerate(COUNTED)}

    return fired


def _made(env: Env, name: str, **annotations: str) -> tuple[ServiceStack, dict[str, Any]]:
    config = env.config()
    svc = stored_service(name, annotations={A + k: v for k, v in annotations.items()})
    stack = env.stack(config, svc)
    return stack, stack.ensure(spec_for(svc, config)).outputs


def _nothing_left_of(env: Env, stack: ServiceStack, outputs: dict[str, Any]) -> None:
    inv = env.cloud.inventory()
    assert [lb for lb in inv["loadbalancers"] if lb["id"] == outputs["lb_id"]] == []
    assert [x for x in inv["listeners"] if x["loadbalancers"][0]["id"] == outputs["lb_id"]] == []
    address = outputs["floating_ip"]
    assert [f for f in inv["floatingips"] if f["floating_ip_address"] == address] == []
    store = stack.engine.store
    assert store is not None
    assert store.objects_of(stack.name) == []
    assert not stack.work_dir.exists()


def test_delete_is_one_cascade_and_the_floating_ip(
    fault_env: tuple[Env, str], starts: list[str]
) -> None:
    env, _url = fault_env
    stack, outputs = _made(env, "direct", **{"keep-floatingip": "false"})
    fired = _count(env)
    starts.clear()
    result = stack.delete()
    assert "destroy" not in starts, starts
    assert "state" not in starts, starts  # no unprotect either
    assert result.existed
    assert result.direct  # counted as `direct-delete`, not `destroy`
    assert not result.released_load_balancer
    assert fired() == {
        "octavia.loadbalancer.delete": 1,
        "octavia.listener.delete": 0,
        "octavia.pool.delete": 0,
        "octavia.healthmonitor.delete": 0,
        "octavia.member.*": 0,
        "neutron.floatingip.delete": 1,
    }
    _nothing_left_of(env, stack, outputs)


@pytest.mark.parametrize("at_delete", [True, None])
def test_a_kept_floating_ip_stays_unattached(
    fault_env: tuple[Env, str], at_delete: bool | None
) -> None:
    """Kept as the Service says when it is deleted, or (None) as its last ``up`` recorded."""
    env, _url = fault_env
    stack, outputs = _made(env, "keptdirect", **{"keep-floatingip": "true"})
    fired = _count(env)
    stack.delete(keep_floating_ip=at_delete)
    assert fired()["neutron.floatingip.delete"] == 0
    assert fired()["octavia.listener.delete"] == 0
    inv = env.cloud.inventory()
    assert [lb for lb in inv["loadbalancers"] if lb["id"] == outputs["lb_id"]] == []
    address = outputs["floating_ip"]
    kept = only([f for f in inv["floatingips"] if f["floating_ip_address"] == address])
    assert kept["port_id"] is None
    connect(env.topo).network.delete_ip(kept["id"])


def _crash_after(
    monkeypatch: pytest.MonkeyPatch, owner: Any, method: str, *, before: bool = False
) -> None:
    real = getattr(owner, method)

    def dying(*args: Any, **kwargs: Any) -> Any:
        if before:
            raise Crash(method)
        real(*args, **kwargs)
        raise Crash(method)

    monkeypatch.setattr(owner, method, dying)


def _crash_halfway(monkeypatch: pytest.MonkeyPatch) -> None:
    """The stack's removal dies after its first object is gone (the tags, before the
    checkpoint), leaving its lock behind as a dead process would."""
    real = direct.remove_stack_objects

    def dying(store: StateStore, stack: str) -> Any:
        real_delete = store.bucket.delete

        def delete(key: str) -> None:
            if key.startswith(store.locks_prefix(stack)):
                return  # dead by now: its lock stays
            real_delete(key)
            raise Crash(key)

        monkeypatch.setattr(store.bucket, "delete", delete)
        return real(store, stack)

    monkeypatch.setattr(direct, "remove_stack_objects", dying)


CRASHES = {
    # the cascade asked, the load balancer still PENDING_DELETE or gone
    "cascade asked": (OpenStackRest, "delete_load_balancer", False),
    # the load balancer gone, the floating IP not yet deleted
    "floating IP not deleted": (OpenStackRest, "delete", True),
    # the floating IP deleted, the stack not yet removed
    "floating IP deleted": (OpenStackRest, "delete", False),
    # the cloud clean, the stack not removed
    "stack not removed": (direct, "remove_stack_objects", True),
    # the stack's tags gone, its checkpoint not yet
    "stack half removed": (direct, "remove_stack_objects", "half"),
}


@pytest.mark.parametrize("where", list(CRASHES))
def test_a_crash_at_any_step_converges(
    env: Env, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    stack, outputs = _made(env, "crashdel", **{"keep-floatingip": "false"})
    owner, method, before = CRASHES[where]
    with monkeypatch.context() as patched:
        if before == "half":
            _crash_halfway(patched)
        else:
            _crash_after(patched, owner, method, before=bool(before))
        with pytest.raises(Crash):
            stack.delete()
    stack.engine.close()
    config = env.config()
    # a fresh engine, as after a restart: the controller's leader (a lock the dead process
    # left is stale to it; this test's own process, which wrote it, is still alive)
    engine = env.engine(config)
    again = Engine(settings=engine.settings, leading=lambda: True).stack(service=stack.service)
    assert again.delete().existed
    _nothing_left_of(env, again, outputs)

"""Services on one load balancer that come and go at the same moment (issue 13: "the owner/sharer
bookkeeping stays correct when the owner goes first, when sharers come and go concurrently, and
across controller restarts; the release of an owned LB and its cascade can no longer take a
sharer's listener with it"), on the real engine and provider against the emulator.

The controller runs each Service on a worker of its own, all on one :class:`Engine`, so the
``ensure`` and ``delete`` of different Services really overlap (one Service never runs twice at
once). Here each operation has a thread, the threads share one engine, and a
:class:`threading.Barrier` starts them together. The emulator's Octavia takes its time
(:data:`CONTENDED`: a child change or a tag update keeps the load balancer ``PENDING_UPDATE``
for half a second) and answers 409 to what comes meanwhile; fault rules add 409s where the
timing alone might not produce one, and the tests check that they were answered. Where a case
needs one interleaving (a tag write that lands late, a delete that Octavia takes late), a fault
rule holds one request up on its way and the other side waits until it fired (polled, with a
deadline): no test sleeps or asserts on time.

What every case checks, on the cloud (the emulator's inventory) and on the stacks
(:func:`_books`): each listener on the load balancer is some Service's whose stack holds it, one
per port; each listener and pool a stack holds is in the cloud (nothing was taken from under a
Service); the ``kube_service_`` names among the load balancer's tags are exactly the Services
on it (none lost by a concurrent read-modify-write, none left behind by one that went).
"""

from __future__ import annotations

import json
import logging
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from emulator.cloud import EmulatorConfig
from emulator.server import EmulatorHandle, start
from emulator.timing import TimingProfile
from reconciler.engine.errors import EngineError, InvalidConfigError
from reconciler.engine.openstack.client import OpenStackRest
from reconciler.engine.stack import Engine, ServiceStack
from reconciler.model import LoadBalancerSpec
from reconciler.model.naming import services_tagged
from reconciler.toolchain import Toolchain
from tests.builders import stored_service
from tests.emulated import EmulatorAdmin, connect, wait_until
from tests.integration.engine.conftest import Env, only, spec_for

# each test starts real pulumi runs or servers for many seconds: not in make test-fast
pytestmark = pytest.mark.slow

A = "loadbalancer.openstack.org/"
# Octavia that takes its time: while a child or the load balancer's tags change, the load
# balancer is PENDING_UPDATE and every other change to it is answered 409.
CONTENDED = TimingProfile(name="contended", lb_create=0.3, lb_update=0.5, lb_delete=0.3, child=0.5)
TIMEOUT = 240.0  # any one operation; the engine's own deadline
CONFLICT = "Invalid state PENDING_UPDATE of loadbalancer resource"


@dataclass
class Shared:
    env: Env
    admin: EmulatorAdmin

    def engine(self, load_balancer: str = "max-shared-lb = 10", **overrides: Any) -> Engine:
        """One engine for every Service, as in the controller."""
        config = self.env.config(load_balancer)
        return self.env.engine(config, operation_timeout=TIMEOUT, **overrides)

    def fault(self, operation: str, *, count: int, status: int = 409) -> None:
        rule = {"operation": operation, "status": status, "count": count, "message": CONFLICT}
        self.admin.post("/faults/rules", rule)

    def fired(self) -> dict[str, int]:
        fired: dict[str, int] = self.admin.get("/faults/fired")
        return fired


@pytest.fixture
def shared(toolchain: Toolchain, tmp_path: Path) -> Iterator[Shared]:
    """An emulator of its own with :data:`CONTENDED` timing; nothing may be left at the end. Its
    request log (every call and its answer) is in the report of a test that fails."""
    handle: EmulatorHandle = start(config=EmulatorConfig(timing=CONTENDED))
    emulator_log = logging.getLogger("emulator")
    level = emulator_log.level
    emulator_log.setLevel(logging.INFO)
    try:
        admin = EmulatorAdmin(handle)
        env = Env(topo=handle.topology(), cloud=admin, toolchain=toolchain, state_dir=tmp_path)
        yield Shared(env=env, admin=admin)
        admin.clear_faults()
        admin.wait_nothing_created(timeout=30)
    finally:
        emulator_log.setLevel(level)
        handle.stop()


# --- Services and their stacks ---------------------------------------------------------------


@dataclass
class Svc:
    """A Service's spec and its stack on the shared engine."""

    spec: LoadBalancerSpec
    stack: ServiceStack

    @property
    def name(self) -> str:
        return self.spec.name  # kube_service_<cluster>_<namespace>_<name>

    def ensure(self) -> dict[str, Any]:
        return self.stack.ensure(self.spec).outputs


def _svc(
    s: Shared,
    engine: Engine,
    name: str,
    ports: tuple[int, ...],
    lb_id: str = "",
    annotations: dict[str, str] | None = None,
) -> Svc:
    config = s.env.config("max-shared-lb = 10")
    body = stored_service(
        name,
        ports=[{"port": p, "protocol": "TCP", "nodePort": 30000 + p} for p in ports],
        annotations={**({A + "load-balancer-id": lb_id} if lb_id else {}), **(annotations or {})},
    )
    spec = spec_for(body, config)
    return Svc(spec, engine.stack(service=spec.service))


# --- running at the same moment ----------------------------------------------------------------


def _at_once(**calls: Callable[[], Any]) -> dict[str, Any]:
    """Run each call on its own thread, released together by a barrier; the value or the
    exception of each, by name."""
    barrier = threading.Barrier(len(calls))
    results: dict[str, Any] = {}

    def run(name: str, call: Callable[[], Any]) -> None:
        barrier.wait(timeout=60)
        try:
            results[name] = call()
        except Exception as exc:  # reported to the test, which decides
            results[name] = exc

    threads = [threading.Thread(target=run, args=item, name=item[0]) for item in calls.items()]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=4 * TIMEOUT)
        assert not t.is_alive(), f"{t.name} did not finish"
    return results


def _ok(results: dict[str, Any]) -> dict[str, Any]:
    failed = {k: v for k, v in results.items() if isinstance(v, BaseException)}
    assert not failed, failed
    return results


def _as_controller(call: Callable[[], Any], *, final: type[EngineError] | None = None) -> Any:
    """Retry as the controller does (every engine error is retried, with backoff there) until
    ``call`` succeeds; an error of type ``final`` is returned instead (the Service's input is
    wrong now, e.g. its load balancer is gone)."""
    errors: list[EngineError] = []
    for _ in range(6):
        try:
            return call()
        except EngineError as exc:
            if final is not None and isinstance(exc, final):
                return exc
            errors.append(exc)
    raise AssertionError(f"still failing after {len(errors)} attempts: {errors}")


# --- the cloud and the stacks --------------------------------------------------------------------


def _state(env: Env, stack_name: str, kind: str) -> set[str]:
    """Cloud IDs of the resources of type ``...:<kind>`` in a stack's checkpoint."""
    path = env.state_dir / "backend" / ".pulumi" / "stacks" / "lb-reconciler" / f"{stack_name}.json"
    if not path.exists():
        return set()
    latest = json.loads(path.read_text())["checkpoint"].get("latest") or {}
    return {
        str(r["id"])
        for r in latest.get("resources") or ()
        if r["type"].endswith(f":{kind}") and r.get("id")
    }


def _books(s: Shared, engine: Engine, lb_id: str, services: list[Svc]) -> dict[str, Any]:
    """Check the bookkeeping of load balancer ``lb_id`` and the Services that ever were on it;
    return its inventory record."""
    inv = s.env.cloud.inventory()
    lb = only([x for x in inv["loadbalancers"] if x["id"] == lb_id])
    stacks = {info.stack for info in engine.stacks()}
    live = [svc for svc in services if svc.stack.name in stacks]
    listeners = [li for li in inv["listeners"] if li["loadbalancers"] == [{"id": lb_id}]]
    pools = {p["id"] for p in inv["pools"]}
    # nothing taken from under a Service: what its stack holds is in the cloud
    for svc in live:
        held = _state(s.env, svc.stack.name, "Listener")
        assert held, f"{svc.name} is on the load balancer with no listener in its stack"
        assert held <= {li["id"] for li in listeners}, f"a listener of {svc.name} is gone"
        assert _state(s.env, svc.stack.name, "Pool") <= pools, f"a pool of {svc.name} is gone"
    # no listener of nobody's, none twice
    owners = {li["id"]: only([svc for svc in live if svc.name in li["tags"]]) for li in listeners}
    for li in listeners:
        assert li["id"] in _state(s.env, owners[li["id"]].stack.name, "Listener"), li
    ports = [li["protocol_port"] for li in listeners]
    assert len(ports) == len(set(ports)), ports
    assert sorted(ports) == sorted(li.protocol_port for svc in live for li in svc.spec.listeners)
    # the load balancer's tags name exactly the Services on it
    assert services_tagged(lb["tags"]) == {svc.name for svc in live}, lb["tags"]
    return lb


def _all_gone(s: Shared) -> None:
    """Nothing made in the cloud is left (a load balancer deleted without waiting for Octavia
    is PENDING_DELETE for a moment)."""
    s.env.cloud.wait_nothing_created(timeout=30)


def _owner(s: Shared, engine: Engine, ports: tuple[int, ...] = (80,)) -> tuple[Svc, str]:
    owner = _svc(s, engine, "owner", ports)
    return owner, str(owner.ensure()["lb_id"])


def _sharers(s: Shared, engine: Engine, lb_id: str, names: list[str]) -> list[Svc]:
    """Services on load balancer ``lb_id``, one port each: 101, 102, ..."""
    return [_svc(s, engine, name, (101 + i,), lb_id) for i, name in enumerate(names)]


def _user_lb(env: Env, name: str) -> Any:
    """A load balancer made by a user with openstacksdk, outside any cluster."""
    conn = connect(env.topo)
    lb = conn.load_balancer.create_load_balancer(name=name, vip_subnet_id=env.topo["subnet_id"])
    conn.load_balancer.wait_for_load_balancer(lb.id, interval=0.2, wait=30)
    return lb


# --- 1. sharers joining, and leaving, together ---------------------------------------------------


def test_sharers_join_at_once(shared: Shared) -> None:
    """Three Services join the owner's load balancer at the same moment; Octavia answers 409
    to the first two listener creates and the first two tag updates besides what the
    contention gives. All three end up on it, once each, and among its tags."""
    engine = shared.engine()
    owner, lb_id = _owner(shared, engine)
    sharers = _sharers(shared, engine, lb_id, ["one", "two", "three"])
    shared.fault("octavia.listener.create", count=2)
    shared.fault("octavia.loadbalancer.update", count=2)
    try:
        outputs = _ok(_at_once(**{svc.spec.service.name: svc.ensure for svc in sharers}))
        assert shared.fired() == {"rules[0]": 2, "rules[1]": 2}
        assert all((o["lb_id"], o["shared"]) == (lb_id, True) for o in outputs.values())
        lb = _books(shared, engine, lb_id, [owner, *sharers])
        assert len(lb["listeners"]) == 4
        # the stacks say so too: a second ensure of each is a skip
        assert not any(svc.stack.ensure(svc.spec).changed for svc in sharers)
    finally:
        for svc in [*sharers, owner]:
            svc.stack.delete()
    _all_gone(shared)


def test_sharers_leave_at_once(shared: Shared) -> None:
    """Three sharers deleted at the same moment: only the owner's listener and name remain;
    then the owner deletes its load balancer."""
    engine = shared.engine()
    owner, lb_id = _owner(shared, engine)
    sharers = _sharers(shared, engine, lb_id, ["one", "two", "three"])
    try:
        for svc in sharers:
            svc.ensure()
        shared.fault("octavia.loadbalancer.update", count=2)
        shared.fault("octavia.listener.delete", count=2)
        results = _ok(_at_once(**{svc.spec.service.name: svc.stack.delete for svc in sharers}))
        assert not any(r.deleted_shared_load_balancer for r in results.values())
        assert shared.fired() == {"rules[0]": 2, "rules[1]": 2}
        _books(shared, engine, lb_id, [owner, *sharers])
        assert not owner.stack.delete().released_load_balancer
    finally:
        for svc in [*sharers, owner]:
            svc.stack.delete()
    _all_gone(shared)


# --- 2. one leaves while another joins -----------------------------------------------------------


def test_a_sharer_leaves_while_another_joins(shared: Shared) -> None:
    """One sharer is deleted while another joins; then the other way round (the first one
    comes back as the second goes)."""
    engine = shared.engine()
    owner, lb_id = _owner(shared, engine)
    first, second = _sharers(shared, engine, lb_id, ["first", "second"])
    everyone = [owner, first, second]
    try:
        first.ensure()
        shared.fault("octavia.loadbalancer.update", count=2)
        shared.fault("octavia.listener.create", count=1)
        shared.fault("octavia.listener.delete", count=1)
        _ok(_at_once(leave=first.stack.delete, join=second.ensure))
        assert shared.fired() == {"rules[0]": 2, "rules[1]": 1, "rules[2]": 1}
        _books(shared, engine, lb_id, everyone)
        assert not _state(shared.env, first.stack.name, "Listener")

        _ok(_at_once(leave=second.stack.delete, join=first.ensure))
        lb = _books(shared, engine, lb_id, everyone)
        assert second.name not in lb["tags"]
        assert {owner.name, first.name} <= set(lb["tags"])
    finally:
        for svc in [first, second, owner]:
            svc.stack.delete()
    _all_gone(shared)


def test_a_slow_tag_write_brings_no_leaver_back(shared: Shared) -> None:
    """A joiner's write of the load balancer's tags is slow to reach Octavia (8 s on its way);
    meanwhile a sharer leaves and takes its name off. The joiner's write, made of what it read
    before, must not put the leaver's name back: the load balancer would count a Service that
    is gone for ever, and the last Service on it would never delete it."""
    engine = shared.engine()
    owner, lb_id = _owner(shared, engine)
    leaver, joiner = _sharers(shared, engine, lb_id, ["leaver", "joiner"])
    try:
        leaver.ensure()
        shared.admin.post("/faults/rules", _slow("octavia.loadbalancer.update", 8.0))

        def leave() -> Any:  # once the joiner's write is on its way
            wait_until(lambda: shared.fired().get("rules[0]"), timeout=TIMEOUT)
            return leaver.stack.delete()

        _ok(_at_once(join=joiner.ensure, leave=leave))
        _books(shared, engine, lb_id, [owner, leaver, joiner])
    finally:
        for svc in (leaver, joiner, owner):
            svc.stack.delete()
    _all_gone(shared)


def test_a_slow_tag_write_loses_no_joiner(shared: Shared) -> None:
    """Two Services join; the first one's write of the load balancer's tags is slow to reach
    Octavia (25 s on its way), and the second one joins and writes its own meanwhile. The
    first write, made of what it read before, must not take the second one's name away."""
    engine = shared.engine()
    owner, lb_id = _owner(shared, engine)
    first, second = _sharers(shared, engine, lb_id, ["first", "second"])
    try:
        shared.admin.post("/faults/rules", _slow("octavia.loadbalancer.update", 25.0))

        def join_second() -> Any:  # once the first one's write is on its way
            wait_until(lambda: shared.fired().get("rules[0]"), timeout=TIMEOUT)
            return second.ensure()

        _ok(_at_once(first=first.ensure, second=join_second))
        _books(shared, engine, lb_id, [owner, first, second])
    finally:
        for svc in (first, second, owner):
            svc.stack.delete()
    _all_gone(shared)


# --- 3. the owner goes while sharers come and go -------------------------------------------------


def test_owner_deleted_while_a_sharer_joins(shared: Shared) -> None:
    """The owner is deleted while a Service joins its load balancer. Either the joiner got on
    it first, and the load balancer is released to it (never cascaded with the joiner's
    listener), or it was gone before the joiner's listener was made, and the joiner is told
    so. Then the joiner goes: as the last Service on a load balancer this cluster made, it
    deletes it."""
    engine = shared.engine()
    owner, lb_id = _owner(shared, engine)
    (joiner,) = _sharers(shared, engine, lb_id, ["joiner"])
    try:
        results = _at_once(
            owner=lambda: _as_controller(owner.stack.delete),
            joiner=lambda: _as_controller(joiner.ensure, final=InvalidConfigError),
        )
        assert not isinstance(results["owner"], BaseException), results
        if isinstance(results["joiner"], BaseException):  # too late: no load balancer left
            assert "does not exist" in str(results["joiner"]), results
            _all_gone(shared)
            # a listener the joiner made and a cascade of the owner's took would still be here
            assert not _state(shared.env, joiner.stack.name, "Listener")
        else:
            assert results["owner"].released_load_balancer
            lb = _books(shared, engine, lb_id, [owner, joiner])
            assert owner.name not in lb["tags"]
        result = joiner.stack.delete()
        assert result.deleted_shared_load_balancer == (not isinstance(results["joiner"], Exception))
    finally:
        joiner.stack.delete()
        owner.stack.delete()
    _all_gone(shared)


def test_owner_and_the_last_sharer_leave_at_once(shared: Shared) -> None:
    """The owner and the only other Service on its load balancer are deleted at the same
    moment: the owner sees the sharer still there and releases the load balancer, and is slow
    about it (Neutron takes 25 s to answer the subnet lookup of its release ``up``; the sharer
    looks nothing up when it leaves), so the sharer finishes first and finds the owner still
    on it. The owner is then the last one on it and deletes it with its floating IP: it is
    not left to nobody."""
    engine = shared.engine()
    owner, lb_id = _owner(shared, engine)
    (sharer,) = _sharers(shared, engine, lb_id, ["sharer"])
    try:
        sharer.ensure()
        shared.admin.post("/faults/rules", _slow("neutron.subnet.list", 25.0))
        results = _ok(_at_once(owner=owner.stack.delete, sharer=sharer.stack.delete))
        assert shared.fired() == {"rules[0]": 1}
        assert results["owner"].released_load_balancer
        assert [r.deleted_shared_load_balancer for r in results.values()].count(True) == 1
        _all_gone(shared)  # the load balancer and its floating IP
    finally:
        sharer.stack.delete()
        owner.stack.delete()


def _slow(operation: str, seconds: float) -> dict[str, Any]:
    """A fault rule: the emulator holds the first such request ``seconds`` before it serves it
    (an API slow to answer, or a request held up on its way)."""
    return {"operation": operation, "latency": seconds, "status": 200, "count": 1}


def test_owner_leaves_while_one_sharer_leaves_and_another_joins(shared: Shared) -> None:
    """Owner deleted, one sharer deleted, one joining, all at the same moment: the load
    balancer is released to whoever is still on it."""
    engine = shared.engine()
    owner, lb_id = _owner(shared, engine)
    leaver, stayer, joiner = _sharers(shared, engine, lb_id, ["leaver", "stayer", "joiner"])
    everyone = [owner, leaver, stayer, joiner]
    try:
        leaver.ensure()
        stayer.ensure()
        _ok(
            _at_once(
                owner=lambda: _as_controller(owner.stack.delete),
                leaver=lambda: _as_controller(leaver.stack.delete),
                joiner=lambda: _as_controller(joiner.ensure),
            )
        )
        lb = _books(shared, engine, lb_id, everyone)
        assert services_tagged(lb["tags"]) == {stayer.name, joiner.name}
        results = _ok(_at_once(stayer=stayer.stack.delete, joiner=joiner.stack.delete))
        assert [r.deleted_shared_load_balancer for r in results.values()].count(True) == 1
        _all_gone(shared)
    finally:
        for svc in everyone:
            svc.stack.delete()


def test_last_sharer_leaves_a_released_load_balancer_as_another_joins(shared: Shared) -> None:
    """The owner went (the load balancer is released to its one sharer); then that sharer is
    deleted while a Service joins, right as the leaver decides whether it is the last one
    (the joiner starts when the leaver's listener is gone; Octavia is slow to take the load
    balancer's delete). The joiner's listener must not go with the load balancer: either the
    load balancer stays for the joiner, or the joiner is told it is gone and holds nothing."""
    engine = shared.engine()
    owner, lb_id = _owner(shared, engine)
    leaver, joiner = _sharers(shared, engine, lb_id, ["leaver", "joiner"])
    try:
        leaver.ensure()
        assert owner.stack.delete().released_load_balancer
        shared.admin.post("/faults/rules", _slow("octavia.loadbalancer.delete", 6.0))

        def join() -> Any:
            wait_until(lambda: not _listeners_of(shared, leaver), timeout=TIMEOUT)
            return _as_controller(joiner.ensure, final=InvalidConfigError)

        results = _at_once(leave=leaver.stack.delete, join=join)
        assert not isinstance(results["leave"], BaseException), results
        if isinstance(results["join"], BaseException):
            assert "does not exist" in str(results["join"]), results
            _all_gone(shared)
            # a listener the joiner made and the leaver's delete took would still be here
            assert not _state(shared.env, joiner.stack.name, "Listener")
        else:
            assert not results["leave"].deleted_shared_load_balancer
            _books(shared, engine, lb_id, [owner, leaver, joiner])
            assert joiner.stack.delete().deleted_shared_load_balancer
    finally:
        joiner.stack.delete()
        leaver.stack.delete()
    _all_gone(shared)


def test_a_listener_made_while_destroy_falls_back_to_a_cascade_is_kept(
    shared: Shared, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The owner is deleted with ``destroy`` (``direct_delete=False``), which fails in a way
    only a cascade gets past (Octavia: the load balancer "has children"); as the engine starts
    the cascade (its first look at the load balancer), another Service's listener is made on
    it by another controller (as OCCM makes a sharer's: tagged with that Service's name; this
    engine's own joiners are refused once ``destroy`` took the owner's floating IP). The
    cascade must see it, checked under the load balancer's lock right before the ``DELETE``,
    and refuse: the next attempt releases the load balancer. (A check made only before the
    wait for the load balancer let the cascade take that listener.)"""
    engine = shared.engine(direct_delete=False)
    owner, lb_id = _owner(shared, engine)
    conn = connect(shared.env.topo)
    theirs = "kube_service_itest_default_theirs"
    made: list[str] = []
    look = OpenStackRest.load_balancer

    def looked_at(rest: OpenStackRest, ident: str) -> Any:
        if sys._getframe(1).f_code.co_name == "cascade_delete" and not made:
            listener = conn.load_balancer.create_listener(
                name=theirs, loadbalancer_id=lb_id, protocol="TCP", protocol_port=443, tags=[theirs]
            )
            made.append(listener.id)
            conn.load_balancer.wait_for_load_balancer(lb_id, interval=0.2, wait=30)
        return look(rest, ident)

    monkeypatch.setattr(OpenStackRest, "load_balancer", looked_at)
    children = f"Cannot delete Load Balancer {lb_id} - it has children"
    rule = {"operation": "octavia.loadbalancer.delete", "status": 400, "count": 1}
    shared.admin.post("/faults/rules", {**rule, "message": children})
    try:
        with pytest.raises(EngineError, match="got a listener of another Service"):
            owner.stack.delete()
        assert shared.fired() == {"rules[0]": 1}
        assert len(made) == 1
        monkeypatch.undo()
        assert _as_controller(owner.stack.delete).released_load_balancer
        inv = shared.env.cloud.inventory()
        assert [lb["id"] for lb in inv["loadbalancers"]] == [lb_id]
        assert [li["id"] for li in inv["listeners"]] == made  # theirs, and nothing of the owner's
        assert len(inv["floatingips"]) == 1  # released with the load balancer, not deleted
        assert engine.stacks() == []
    finally:
        monkeypatch.undo()
        owner.stack.delete()
        # released to the other controller's Service: its load balancer and floating IP now
        conn.load_balancer.delete_load_balancer(lb_id, cascade=True, ignore_missing=True)
        for fip in shared.env.cloud.inventory()["floatingips"]:
            conn.network.delete_ip(fip["id"])
    _all_gone(shared)


def _listeners_of(s: Shared, svc: Svc) -> list[dict[str, Any]]:
    return [li for li in s.env.cloud.inventory()["listeners"] if svc.name in li["tags"]]


def test_user_made_load_balancer_sharers_come_and_go_at_once(shared: Shared) -> None:
    """On a load balancer a user made: one Service leaves while another joins, then the last
    two leave together. The load balancer stays, with its VIP, and nothing of theirs."""
    user_lb = _user_lb(shared.env, "user-made-lb")
    engine = shared.engine()
    first, second, third = _sharers(shared, engine, user_lb.id, ["first", "second", "third"])
    try:
        first.ensure()
        second.ensure()
        _ok(_at_once(leave=first.stack.delete, join=third.ensure))
        _books(shared, engine, user_lb.id, [first, second, third])
        results = _ok(_at_once(second=second.stack.delete, third=third.stack.delete))
        assert not any(r.deleted_shared_load_balancer for r in results.values())
        inv = shared.env.cloud.inventory()
        kept = only(inv["loadbalancers"])
        assert (kept["id"], kept["name"], kept["vip_address"]) == (
            user_lb.id,
            "user-made-lb",
            user_lb.vip_address,
        )
        assert (inv["listeners"], inv["pools"], inv["members"]) == ([], [], [])
        assert services_tagged(kept["tags"]) == set()
    finally:
        for svc in (first, second, third):
            svc.stack.delete()
        connect(shared.env.topo).load_balancer.delete_load_balancer(user_lb.id, cascade=True)

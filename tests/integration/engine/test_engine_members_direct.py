"""A Node added or removed changes each Service's pool members without a ``pulumi`` start
(reconciler.engine.members_direct), and the stack's state stays the record.

What a user does: a Node joins the cluster (or leaves it); the controller ensures every
Service's spec with the new members. Checked against the real engine, provider and CLI: the
cloud has the new members, no ``pulumi`` ran, the state is the one ``up`` would have written
(``preview`` shows no change, a preview-only ``refresh`` finds nothing, the ``Members`` resource
equals the one a Service updated through ``up`` has), and a controller cut off at any step of it
converges on its next attempt, even when the Node went away again meanwhile.
"""

from __future__ import annotations

import json
import re
import subprocess
from typing import Any

import pytest

from reconciler.engine import members_direct
from reconciler.engine.plan import HASH_TAG
from reconciler.engine.stack import ServiceStack
from reconciler.engine.state import stacks as state_stacks
from reconciler.engine.state.store import StateStore
from reconciler.model import LoadBalancerSpec
from reconciler.model.annotations import CONNECTION_LIMIT
from stacks.vocabulary import MEMBERS_TYPE
from tests.builders import make_node, stored_service
from tests.integration.engine.conftest import NODES, Env, spec_for

# each test starts real pulumi runs or servers for many seconds: not in make test-fast
pytestmark = pytest.mark.slow

A = "loadbalancer.openstack.org/"
THIRD = make_node("worker-c", internal="10.0.0.13", hostname=False)
GROWN = [*NODES, THIRD]
ALL_ADDRESSES = ["10.0.0.11", "10.0.0.12", "10.0.0.13"]


def member_addresses(env: Env) -> list[str]:
    return sorted(m["address"] for m in env.cloud.inventory()["members"])


def store_of(stack: ServiceStack) -> StateStore:
    store = stack.engine.store
    assert store is not None
    return store


def members_resource(stack: ServiceStack) -> dict[str, Any]:
    """The stack's ``Members`` resource as the backend holds it, IDs, times, the stack's name
    and the program's source positions left out: what two stacks of the same spec share."""
    deployment = store_of(stack).deployment(stack.name)
    assert deployment is not None
    (res,) = [r for r in deployment["resources"] if r["type"] == MEMBERS_TYPE]
    res = {k: v for k, v in res.items() if k not in ("created", "modified", "stackTrace")}
    text = json.dumps(res, sort_keys=True).replace(stack.name, "STACK")
    text = re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "ID", text)
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def assert_state_is_the_record(stack: ServiceStack, spec: LoadBalancerSpec) -> None:
    """``preview`` would change nothing and the cloud has nothing the state does not say."""
    assert stack.check_drift().resources == ()
    outcome = stack.preview(spec)
    assert outcome.steps == (), outcome
    assert set(outcome.changes) == {"same"}


def test_a_node_added_then_removed_changes_members_without_pulumi(
    backend_env: Env, starts: list[str]
) -> None:
    env = backend_env
    config = env.config()
    svc = stored_service("grow")
    before = spec_for(svc, config)
    stack = env.engine(config).stack(service=before.service)
    stack.ensure(before)
    assert member_addresses(env) == ALL_ADDRESSES[:2]

    starts.clear()
    grown = spec_for(svc, config, GROWN)
    result = stack.ensure(grown)
    assert (result.changed, result.direct, starts) == (True, True, [])
    assert result.resource_changes == {"update": 1}
    assert member_addresses(env) == ALL_ADDRESSES
    assert result.outputs["lb_id"] == env.cloud.lbs()[0]["id"]
    assert not stack.ensure(grown).changed  # the spec hash recorded: a skip, still no pulumi
    assert starts == []
    assert_state_is_the_record(stack, grown)

    starts.clear()
    shrunk = stack.ensure(spec_for(svc, config, NODES[1:]))  # worker-a leaves
    assert (shrunk.direct, starts) == (True, [])
    assert member_addresses(env) == ["10.0.0.12"]
    assert_state_is_the_record(stack, spec_for(svc, config, NODES[1:]))
    assert stack.delete().existed
    assert env.cloud.lbs() == []


# A Node whose name sorts first and whose address sorts last as text: the inputs follow the spec
# (by Node name), the outputs the provider's set (by address as text, not as Octavia lists them)
FIRST = [make_node("aaa-first", internal="10.0.0.5", hostname=False), *NODES]


@pytest.mark.parametrize(
    ("policy", "nodes"),
    [
        ({}, GROWN),
        ({}, FIRST),
        (
            {
                "annotations": {A + "enable-health-monitor": "true"},
                "externalTrafficPolicy": "Local",
                "healthCheckNodePort": 32000,
            },
            GROWN,
        ),
    ],
    ids=["cluster", "a-node-that-sorts-first", "local-with-monitor-port"],
)
def test_the_state_written_is_the_one_up_writes(
    env: Env, policy: dict[str, Any], nodes: list[dict[str, Any]]
) -> None:
    """Two Services, the same Node added to both: one changed directly, one through ``up``
    (``direct_members=False``); their ``Members`` resources are the same but for IDs."""
    config = env.config()
    stacks: list[ServiceStack] = []
    for name, direct in (("direct", True), ("through-up", False)):
        svc = stored_service(name, **policy)
        stack = env.engine(config, direct_members=direct).stack(
            service=spec_for(svc, config).service
        )
        stack.ensure(spec_for(svc, config))
        result = stack.ensure(spec_for(svc, config, nodes))
        assert (result.changed, result.direct) == (True, direct)
        stacks.append(stack)
    direct_one, through_up = stacks
    assert members_resource(direct_one) == members_resource(through_up)
    if policy:
        ports = {m["monitor_port"] for m in env.cloud.inventory()["members"]}
        assert ports == {32000}
    # and what `up` wrote, the direct path takes next: the Node leaves again
    svc = stored_service("through-up", **policy)
    back = env.engine(config).stack(service=through_up.service).ensure(spec_for(svc, config))
    assert (back.changed, back.direct) == (True, True)
    for stack in stacks:
        stack.delete()


def test_changes_that_are_not_members_only_run_up(env: Env, starts: list[str]) -> None:
    """Members plus another field, and a pool whose last member goes (its ``Members``
    resource goes) or whose first comes: each is an ``up``."""
    config = env.config()
    svc = stored_service("mixed")
    stack = env.stack(config, svc)
    stack.ensure(spec_for(svc, config))

    limited = stored_service("mixed", annotations={CONNECTION_LIMIT: "100"})
    for nodes, addresses in ((GROWN, ALL_ADDRESSES), ([], []), (NODES, ALL_ADDRESSES[:2])):
        starts.clear()
        result = stack.ensure(spec_for(limited, config, nodes))
        assert (result.changed, result.direct, starts) == (True, False, ["up"])
        assert member_addresses(env) == addresses
    stack.delete()


class Crash(BaseException):
    """The controller stops here (a kill): no ``except Exception`` of the engine sees it."""


def dead_pid() -> int:
    """The pid of a process that has exited (what a killed controller's lock names)."""
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


STEPS = ["hash dropped", "update marked", "members put", "members recorded"]


@pytest.mark.parametrize("next_spec", ["same", "undone"])
@pytest.mark.parametrize("step", STEPS)
def test_cut_off_at_any_step_the_next_attempt_converges(
    env: Env, monkeypatch: pytest.MonkeyPatch, step: str, next_spec: str
) -> None:
    """The controller dies after ``step`` of a direct members change, its lock left on the
    stack (naming a process that is gone); the restarted controller ensures the same spec, or
    the spec before it (the Node left again meanwhile). The cloud ends with that spec's
    members, the state with nothing pending and nothing the cloud does not have."""
    config = env.config()
    svc = stored_service(f"cut-{STEPS.index(step)}-{next_spec}")
    before, grown = spec_for(svc, config), spec_for(svc, config, GROWN)
    stack = env.engine(config).stack(service=before.service)
    stack.ensure(before)
    store = store_of(stack)

    crashed = False

    def crash_after(real: Any) -> Any:
        def step_then_crash(*args: Any, **kwargs: Any) -> Any:
            nonlocal crashed
            real(*args, **kwargs)
            crashed = True
            raise Crash(step)

        return step_then_crash

    calls = {"update marked": 1, "members recorded": 2}
    real_write = members_direct._write
    seen = 0

    def write(*args: Any, **kwargs: Any) -> Any:
        nonlocal seen, crashed
        written = real_write(*args, **kwargs)
        seen += 1
        if calls.get(step) == seen:
            crashed = True
            raise Crash(step)
        return written

    if step == "hash dropped":
        # the first tags write takes the hash off (the last puts the new one on)
        monkeypatch.setattr(members_direct, "_write_tags", crash_after(members_direct._write_tags))
    elif step == "members put":
        monkeypatch.setattr(
            members_direct, "_put_members", crash_after(members_direct._put_members)
        )
    else:
        monkeypatch.setattr(members_direct, "_write", write)
    # a killed process leaves its lock, naming a pid that is gone
    real_delete = store.bucket.delete
    monkeypatch.setattr(
        store.bucket,
        "delete",
        lambda key: None if crashed and "/locks/" in key else real_delete(key),
    )
    real_content = state_stacks._lock_content
    monkeypatch.setattr(
        state_stacks, "_lock_content", lambda: {**real_content(), "pid": dead_pid()}
    )
    with pytest.raises(Crash):
        stack.ensure(grown)
    monkeypatch.undo()
    assert crashed
    assert store.list_locks(stack.name)  # left behind, as by a kill
    tags = store.tags(stack.name) or {}
    assert HASH_TAG not in tags  # never looks applied after a cut-off

    restarted = env.engine(config).stack(service=before.service)
    wanted = grown if next_spec == "same" else before
    result = restarted.ensure(wanted)
    assert (result.changed, result.direct) == (True, False)  # the CLI's recovery, then `up`
    expected = ALL_ADDRESSES if next_spec == "same" else ALL_ADDRESSES[:2]
    assert member_addresses(env) == expected
    deployment = store.deployment(restarted.name) or {}
    assert not deployment.get("pending_operations")
    assert not store.list_locks(restarted.name)
    assert_state_is_the_record(restarted, wanted)
    assert not restarted.ensure(wanted).changed
    assert restarted.delete().existed

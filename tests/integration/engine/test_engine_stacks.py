"""Engine.stacks(): this cluster's stacks as the housekeeper sees them, through the real CLI.

Two Services are ensured (the second, in another namespace, shares the first one's load
balancer), a third's stack exists but no ``up`` finished (as after an interrupted ``ensure``),
and a stack of another cluster shares the backend; the listing shows exactly this cluster's three
with the Service each belongs to, its load balancer, external IP and spec hash, and a stack found
by listing can be deleted through :meth:`Engine.stack_for`.
"""

from __future__ import annotations

import subprocess
import uuid
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from reconciler.engine.errors import InterruptedOperationError
from reconciler.engine.plan import CLUSTER_TAG, StackListing, parse_stack_ls
from reconciler.engine.stack import Engine
from reconciler.engine.state.store import StateStore
from reconciler.model import LoadBalancerSpec, ServiceRef
from reconciler.model.naming import lb_name
from stacks.vocabulary import PROJECT
from tests.builders import stored_service
from tests.integration.engine.conftest import Env, spec_for

# each test starts real pulumi runs or servers for many seconds: not in make test-fast
pytestmark = pytest.mark.slow


def test_stacks_lists_this_clusters_stacks(
    env: Env, monkeypatch: pytest.MonkeyPatch, starts: list[str]
) -> None:
    config = env.config()
    engine = env.engine(config)
    a = stored_service("list-a")
    c = stored_service("list-c")
    spec_a, spec_c = spec_for(a, config), spec_for(c, config)
    stack_a = engine.stack(service=spec_a.service)
    stack_c = engine.stack(service=spec_c.service)
    other = Engine(settings=replace(engine.settings, cluster_name="other"))
    stack_other = other.stack(service=spec_a.service)
    assert other.settings.backend == engine.settings.backend
    assert engine.stacks() == []
    try:
        started = datetime.now(UTC) - timedelta(seconds=5)
        ensured_a = stack_a.ensure(spec_a)
        lb_id = ensured_a.outputs["lb_id"]
        b = stored_service(
            "list-b",
            uid=str(uuid.uuid4()),
            ports=[{"port": 81, "protocol": "TCP", "nodePort": 30081}],
            annotations={"loadbalancer.openstack.org/load-balancer-id": lb_id},
        )
        b["metadata"]["namespace"] = "team-b"
        spec_b = spec_for(b, config)
        stack_b = engine.stack(service=spec_b.service)
        ensured_b = stack_b.ensure(spec_b)
        # the other cluster's spec of the same Service names its own load balancer
        spec_other = replace(
            spec_a, name=lb_name(cluster_name="other", namespace="default", name="list-a")
        )
        for stack, spec in ((stack_c, spec_c), (stack_other, spec_other)):
            _created_without_up(stack.engine, spec)

        # the `stacks` command's listing: from the store alone, no `pulumi` started, each
        # stack's last update and resource count as `pulumi stack ls` prints them
        starts.clear()
        listed = engine.stacks()
        assert starts == []
        assert {i.stack: (i.last_update, i.resource_count) for i in listed} == {
            i.name: (i.last_update, i.resource_count) for i in _cli_stack_ls(engine)
        }
        starts.clear()
        with monkeypatch.context() as m:  # a checkpoint the store does not read: the CLI's list
            m.setattr(StateStore, "read_checkpoint", lambda _self, _stack, key=None: None)
            assert engine.stacks() == listed
            assert starts == ["stack ls"]
        all_tags = StateStore.all_tags
        with monkeypatch.context() as m:  # tags in a format the store does not know: CLI per stack
            m.setattr(StateStore, "all_tags", lambda self: dict.fromkeys(all_tags(self)))
            assert engine.stacks() == listed
        assert [i.stack for i in listed] == sorted([stack_a.name, stack_b.name, stack_c.name])
        by_name = {i.stack: i for i in listed}
        for stack, svc, ensured, shared in (
            (stack_a, a, ensured_a, False),
            (stack_b, b, ensured_b, True),
        ):
            info = by_name[stack.name]
            meta = svc["metadata"]
            assert (info.namespace, info.name, info.uid) == (
                meta["namespace"],
                meta["name"],
                meta["uid"],
            )
            assert info.key == f"{meta['namespace']}/{meta['name']}"
            assert info.lb_id == ensured.outputs["lb_id"] == lb_id
            assert (
                info.external_ip
                == ensured.outputs["floating_ip"]
                == ensured_a.outputs["floating_ip"]
            )
            assert info.shared is shared
            assert info.owns_lb == (None if shared else lb_id)
            assert info.spec_hash == ensured.spec_hash  # of the spec as the stack applies it
            assert info.last_update is not None
            assert info.last_update >= started
            assert info.resource_count is not None
            assert info.resource_count > 0
            assert info.update_in_progress is False
            assert info.locked is False
            assert not info.busy
        previewed = by_name[stack_c.name]
        assert (previewed.namespace, previewed.name) == ("default", "list-c")
        assert previewed.spec_hash is None  # no up finished: the next ensure runs up
        assert previewed.lb_id is None

        assert [i.stack for i in other.stacks()] == [stack_other.name]

        # the controller's scan: the same stacks from the store alone, no `pulumi` started;
        # no last update or resource count (only the `stacks` command shows them)
        starts.clear()
        light = engine.stacks(detail=False)
        assert starts == []
        assert light == [replace(i, last_update=None, resource_count=None) for i in listed]
        assert [i.stack for i in other.stacks(detail=False)] == [stack_other.name]

        found = engine.stack_for(by_name[stack_b.name])
        assert found.name == stack_b.name
        assert found.service == spec_b.service
        assert found.delete().existed
        assert [i.stack for i in engine.stacks()] == sorted([stack_a.name, stack_c.name])
        assert [i.stack for i in engine.stacks(detail=False)] == sorted(
            [stack_a.name, stack_c.name]
        )
    finally:
        for name in ("list-b", "list-a", "list-c"):
            ref = ServiceRef(
                namespace="team-b" if name == "list-b" else "default", name=name, uid=""
            )
            engine.stack(service=ref).delete()
        stack_other.delete()
    assert engine.stacks() == []
    assert engine.stacks(detail=False) == []
    assert [i.stack for i in other.stacks()] == []


def _cli_stack_ls(engine: Engine) -> list[StackListing]:
    """What ``pulumi stack ls --json --all`` prints of this cluster's stacks."""
    done = subprocess.run(
        [
            str(engine.settings.toolchain.path("pulumi")),
            *("stack", "ls", "--json", "--all", "--project", PROJECT),
            *("--tag", f"{CLUSTER_TAG}={engine.settings.cluster_name}"),
        ],
        capture_output=True,
        text=True,
        cwd=engine.settings.state_dir,
        env=engine.env(),
        check=True,
    )
    return parse_stack_ls(done.stdout)


def _created_without_up(engine: Engine, spec: LoadBalancerSpec) -> None:
    """The stack of ``spec`` created and tagged, with no ``up`` run (an engine stopping)."""
    stopping = Engine(settings=engine.settings)
    stopping.cancel()
    with pytest.raises(InterruptedOperationError):
        stopping.stack(service=spec.service).ensure(spec)


def test_a_cancelled_engine_starts_no_operation(env: Env) -> None:
    """After ``cancel()`` (the controller stopping) no operation starts; the stack is left as a
    new one, which another engine (the next process) lists and deletes."""
    config = env.config()
    engine = env.engine(config)
    spec = spec_for(stored_service("cancelled"), config)
    engine.cancel()
    with pytest.raises(InterruptedOperationError, match="not started"):
        engine.stack(service=spec.service).ensure(spec)
    assert env.cloud.lbs() == []
    (info,) = env.engine(config).stacks()
    assert (info.name, info.spec_hash, info.lb_id) == ("cancelled", None, None)
    assert env.engine(config).stack_for(info).delete().existed

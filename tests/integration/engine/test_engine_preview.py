"""``ServiceStack.preview``: Pulumi's steps as data, and nothing changed by looking.

A new Service previews as creates and leaves no stack and no work folder. An existing stack's
preview reports the property that changes (old -> new, an unset input read from the cloud's
value), leaves the config file byte for byte as it was, and does not touch the state: a pending
operation a crash left there is still there afterwards, for the next ``ensure`` to recover.
"""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from reconciler.engine.plan import HASH_TAG
from reconciler.engine.preview import PropertyChange
from reconciler.engine.state.folder import FileBucket
from reconciler.engine.state.store import StateStore, open_state_store
from reconciler.toolchain import REPO_ROOT
from tests.builders import stored_service
from tests.integration.engine.conftest import CLUSTER, Env, spec_for

# each test starts real pulumi runs or servers for many seconds: not in make test-fast
pytestmark = pytest.mark.slow

A = "loadbalancer.openstack.org/"


def store(env: Env) -> StateStore:
    found = open_state_store((env.state_dir / "backend").as_uri())
    assert found is not None
    return found


def checkpoint(env: Env, stack_name: str) -> Path:
    """The checkpoint file of a stack of the file:// backend (to write a crash's leftovers)."""
    bucket = store(env).bucket
    assert isinstance(bucket, FileBucket)
    return bucket.root / f"{store(env).stacks_prefix()}{stack_name}.json"


def pending(env: Env, stack_name: str) -> list[dict[str, Any]]:
    latest = (store(env).checkpoint(stack_name) or {})["checkpoint"]["latest"]
    ops: list[dict[str, Any]] = latest.get("pending_operations") or []
    return ops


def leave_a_pending_create(env: Env, stack_name: str) -> None:
    """What a SIGKILLed ``up`` leaves (see test_engine_crash): a create the state never saw
    finish, here of a second listener that the cloud does not have, and no spec hash (removed
    before every ``up``; here with the plain CLI)."""
    done = subprocess.run(
        [str(env.toolchain.path("pulumi")), "stack", "tag", "rm", HASH_TAG, "--stack", stack_name],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=False,
        env={**env.toolchain.env(), "PULUMI_BACKEND_URL": (env.state_dir / "backend").as_uri()},
    )
    assert done.returncode == 0, done.stderr
    path = checkpoint(env, stack_name)
    doc = json.loads(path.read_text())
    latest = doc["checkpoint"]["latest"]
    listener = next(r for r in latest["resources"] if r["urn"].endswith("::listener-tcp-80"))
    ghost = copy.deepcopy(listener)
    ghost["urn"] = ghost["urn"].replace("listener-tcp-80", "listener-tcp-443")
    ghost["inputs"].update(protocolPort=443, name="listener_1_ghost")
    for key in ("id", "outputs"):
        ghost.pop(key, None)
    latest["pending_operations"] = [{"resource": ghost, "type": "creating"}]
    path.write_text(json.dumps(doc))


def test_preview_of_a_new_service_leaves_nothing_behind(env: Env) -> None:
    config = env.config()
    spec = spec_for(stored_service("fresh"), config)
    engine = env.engine(config)
    stack = engine.stack(service=spec.service)
    outcome = stack.preview(spec)
    assert outcome.changed
    creates = {
        s.name for s in outcome.steps if s.op == "create" and not s.type.startswith("pulumi")
    }
    assert creates == {
        "lb", "listener-tcp-80", "pool-tcp-80", "members-tcp-80", "fip", "fip-association"
    }  # fmt: skip
    assert engine.stacks() == []
    assert not stack.work_dir.exists()
    assert not store(env).stack_exists(f"{CLUSTER}.default.fresh")
    assert stack.applied_spec() is None
    assert env.cloud.lbs() == []


def test_preview_of_an_existing_stack_changes_neither_config_nor_state(
    env: Env, starts: list[str]
) -> None:
    config = env.config()
    spec = spec_for(stored_service("kept"), config)
    engine = env.engine(config)
    stack = engine.stack(service=spec.service)
    fip = stack.ensure(spec).outputs["floating_ip"]
    try:
        assert stack.applied_spec() == spec
        config_file = stack.work_dir / f"Pulumi.{stack.name}.yaml"
        before = config_file.read_bytes()
        leave_a_pending_create(env, stack.name)

        limited = spec_for(
            stored_service("kept", annotations={A + "connection-limit": "10"}), config
        )
        starts.clear()
        outcome = stack.preview(limited)
        assert starts == ["preview"]  # the tags read by the store, not `pulumi stack tag ls`
        (step,) = outcome.steps
        assert (step.name, step.op) == ("listener-tcp-80", "update")
        assert step.changes == (PropertyChange("connectionLimit", "update", -1, 10),)
        assert outcome.changes == {"update": 1, "same": 6}

        # loadBalancerIP is create-only (OCCM keeps the floating IP on the VIP port): no
        # replacement is previewed, the field is reported as not applied
        moved = spec_for(stored_service("kept", loadBalancerIP="172.24.4.99"), config)
        previewed = stack.preview(moved)
        assert [s.name for s in previewed.steps] == []
        (frozen,) = previewed.frozen
        assert frozen.startswith("floating_ip.address (spec.loadBalancerIP) is create-only")
        assert env.cloud.inventory()["floatingips"][0]["floating_ip_address"] == fip

        assert config_file.read_bytes() == before
        assert len(pending(env, stack.name)) == 1  # looked at, not repaired
        assert [i.key for i in engine.stacks()] == ["default/kept"]

        # the next ensure recovers the crash as always, and applies the change
        assert stack.ensure(limited).changed
        assert pending(env, stack.name) == []
        assert [li["connection_limit"] for li in env.cloud.inventory()["listeners"]] == [10]
    finally:
        stack.delete()

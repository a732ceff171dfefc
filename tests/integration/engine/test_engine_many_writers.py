"""Many writers on one backend: the direct paths never write over what they did not read, leave
what a person reads (``pulumi stack export``, ``stack history``, the stack config) as an ``up``
would, run only with the CLI and provider they were tested with, and write only while the
controller holds the Lease long enough.

Real engine, provider and CLI against the emulator; the person is the plain ``pulumi`` CLI with
the backend URL and the passphrase.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from reconciler.engine import members_direct
from reconciler.engine.errors import NotLeaderError
from reconciler.engine.plan import HASH_TAG
from reconciler.engine.stack import Engine, ServiceStack
from reconciler.engine.state.store import StateStore
from reconciler.local.toolchain import TOOLS, Toolchain
from stacks.vocabulary import PROJECT
from tests.builders import make_node, stored_service
from tests.integration.engine.conftest import NODES, PASSPHRASE, Env, spec_for

# each test starts real pulumi runs or servers for many seconds: not in make test-fast
pytestmark = pytest.mark.slow

GROWN = [*NODES, make_node("worker-c", internal="10.0.0.13", hostname=False)]
ALL_ADDRESSES = ["10.0.0.11", "10.0.0.12", "10.0.0.13"]


def person(env: Env, stack: ServiceStack, *args: str) -> str:
    """What ``pulumi <args>`` prints for a person with the backend URL, the passphrase and the
    cloud's password (a refresh starts the provider; the stacks hold no credential), in a
    folder of their own (a project file, no program)."""
    folder = env.state_dir.parent / "person"
    folder.mkdir(exist_ok=True)
    (folder / "Pulumi.yaml").write_text(f"name: {PROJECT}\nruntime: yaml\n")
    done = subprocess.run(
        [str(env.toolchain.path("pulumi")), "--non-interactive", *args],
        cwd=folder,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
        env={
            **env.toolchain.env(),
            **stack.engine.settings.extra_env,
            "OS_PASSWORD": env.topo["password"],
            "PULUMI_BACKEND_URL": stack.engine.settings.backend,
            "PULUMI_CONFIG_PASSPHRASE": PASSPHRASE,
            "PULUMI_DIY_BACKEND_PARALLEL": "1",
        },
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def qualified(stack: ServiceStack) -> str:
    return f"organization/{PROJECT}/{stack.name}"


def store_of(stack: ServiceStack) -> StateStore:
    store = stack.engine.store
    assert store is not None
    return store


def member_addresses(env: Env) -> list[str]:
    return sorted(m["address"] for m in env.cloud.inventory()["members"])


def settled(stack: ServiceStack, spec: Any) -> None:
    """The cloud and the state agree, and ``spec`` is what they hold: a preview-only refresh
    finds nothing, a preview of ``spec`` changes nothing."""
    assert stack.check_drift().resources == ()
    outcome = stack.preview(spec)
    assert outcome.steps == (), outcome


def test_a_refresh_between_the_plan_and_the_lock_makes_the_change_an_up(
    backend_env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A person's ``pulumi refresh`` finishes after the members change was planned from the
    checkpoint and before the stack's lock was taken: the direct write gives up (it would roll
    the refresh back) and ``up --refresh`` makes the change; the refresh stays in the history."""
    env = backend_env
    config = env.config()
    svc = stored_service("cas")
    before, grown = spec_for(svc, config), spec_for(svc, config, GROWN)
    stack = env.engine(config).stack(service=before.service)
    stack.ensure(before)

    real_locked = members_direct.locked
    refreshed: list[str] = []

    def person_first(store: StateStore, name: str) -> Any:
        person(env, stack, "refresh", "--yes", "--skip-preview", "--stack", qualified(stack))
        refreshed.append(name)
        return real_locked(store, name)

    ups: list[bool] = []
    real_up = ServiceStack._up

    def up(self: ServiceStack, opened: Any, *, refresh: bool) -> Any:
        ups.append(refresh)
        return real_up(self, opened, refresh=refresh)

    monkeypatch.setattr(members_direct, "locked", person_first)
    monkeypatch.setattr(ServiceStack, "_up", up)
    result = stack.ensure(grown)
    monkeypatch.undo()
    assert refreshed == [stack.name]
    assert (result.changed, result.direct) == (True, False)
    assert ups == [True]  # the cloud read first
    assert member_addresses(env) == ALL_ADDRESSES
    kinds = [
        e["kind"]
        for e in json.loads(
            person(env, stack, "stack", "history", "--json", "-s", qualified(stack))
        )
    ]
    assert kinds[:2] == ["update", "refresh"]  # newest first: the refresh was not rolled back
    settled(stack, grown)
    assert stack.delete().existed


def _normalized(export: dict[str, Any]) -> dict[str, Any]:
    """A ``pulumi stack export`` without what differs between two writes of the same state:
    times, secrets' ciphertexts (a new nonce at every encryption), the order of resources that do
    not depend on each other (an ``up`` writes them in the order its steps end), the order of
    a resource's dependencies (a set, listed in the order the program's outputs resolved: the
    floating IP's association lists the load balancer and the floating IP either way round), and
    the stack's output ``lookups`` (what the cloud answered the program's lookups in the last run
    of the program: the direct path runs none and keeps the record as it was, while an ``up`` of
    a stack whose floating network is known by then does not look it up again)."""

    def resource(r: dict[str, Any]) -> dict[str, Any]:
        kept = {k: v for k, v in r.items() if k not in ("created", "modified")}
        if r.get("type") == "pulumi:pulumi:Stack":
            kept["outputs"] = {k: v for k, v in kept.get("outputs", {}).items() if k != "lookups"}
        if "dependencies" in kept:
            kept["dependencies"] = sorted(kept["dependencies"])
        if "propertyDependencies" in kept:
            kept["propertyDependencies"] = {
                k: sorted(v) for k, v in kept["propertyDependencies"].items()
            }
        return kept

    deployment = dict(export["deployment"])
    deployment["manifest"] = {k: v for k, v in deployment["manifest"].items() if k != "time"}
    deployment["resources"] = sorted(
        (resource(r) for r in deployment["resources"]), key=lambda r: str(r["urn"])
    )
    text = re.sub(r'"ciphertext": ?"[^"]*"', '"ciphertext": "SECRET"', json.dumps(deployment))
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def test_what_a_person_reads_after_a_direct_change_is_what_an_up_leaves(
    backend_env: Env,
) -> None:
    """After a Node joins through the direct path: ``pulumi stack export`` is the export of an
    ``up`` of the same change from the same state (apart from times), ``pulumi stack history``
    lists the change as an update, the stack config holds the new spec, and the newest
    checkpoint in the history (what a restore takes) has the new members."""
    env = backend_env
    config = env.config()
    svc = stored_service("record")
    before, grown = spec_for(svc, config), spec_for(svc, config, GROWN)
    stack = env.engine(config, writer="lb-reconciler run, replica r1").stack(service=before.service)
    stack.ensure(before)
    store = store_of(stack)
    start = person(env, stack, "stack", "export", "-s", qualified(stack))
    start_tags = store.tags(stack.name)

    result = stack.ensure(grown)
    assert (result.changed, result.direct) == (True, True)
    direct = json.loads(person(env, stack, "stack", "export", "-s", qualified(stack)))

    history = json.loads(person(env, stack, "stack", "history", "--json", "-s", qualified(stack)))
    newest = history[0]
    assert newest["kind"] == "update"
    assert newest["result"] == "succeeded"
    assert newest["message"] == "lb-reconciler run, replica r1: pool members updated directly"
    assert newest["resourceChanges"]["update"] == 1
    config_file = stack.work_dir / f"Pulumi.{stack.name}.yaml"
    spec_config = yaml.safe_load(config_file.read_text())["config"]["lb-reconciler:spec"]
    (root,) = [r for r in direct["deployment"]["resources"] if r["type"] == "pulumi:pulumi:Stack"]
    assert json.loads(spec_config) == json.loads(root["outputs"]["spec"])  # what up would write
    newest_copy = max(
        (o.key for o in store.objects(store.history_prefix(stack.name))),
        key=lambda k: (k.endswith(".checkpoint.json"), k),
    )
    copied = json.loads(store.bucket.read(newest_copy) or b"{}")
    assert copied["checkpoint"]["latest"] == store.deployment(stack.name)  # restore keeps it

    # the same change through `up`, from the same state: the state and the tags put back as
    # the first `up` left them (its spec hash: a finished `up`, so no refresh before this one)
    (tmp := env.state_dir.parent / "start.json").write_text(start)
    person(env, stack, "stack", "import", "--file", str(tmp), "-s", qualified(stack))
    assert start_tags is not None
    assert HASH_TAG in start_tags
    store.write_tags(stack.name, start_tags)
    through_up = env.engine(config, direct_members=False).stack(service=before.service)
    redone = through_up.ensure(grown)
    assert (redone.changed, redone.direct) == (True, False)
    up_export = json.loads(person(env, stack, "stack", "export", "-s", qualified(stack)))
    assert _normalized(direct) == _normalized(up_export)
    assert through_up.delete().existed


def test_another_pulumi_version_sends_every_change_through_the_cli(
    env: Env, tmp_path: Path, starts: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    """The direct paths write what pulumi v3.259 and the provider 5.5.1 write; a CLI that
    reports another version turns them off, said once, and the same changes go through ``up``
    and ``destroy``."""
    wrapped = tmp_path / "tools"
    wrapped.mkdir()
    for tool in TOOLS:
        if tool != "pulumi":
            (wrapped / tool).symlink_to(env.toolchain.path(tool).resolve())
    real = env.toolchain.path("pulumi").resolve()
    fake = wrapped / "pulumi"
    fake.write_text(
        f'#!/bin/sh\nif [ "$1" = version ]; then echo v3.260.0; exit 0; fi\nexec {real} "$@"\n'
    )
    fake.chmod(0o755)
    config = env.config()
    svc = stored_service("versions")
    before, grown = spec_for(svc, config), spec_for(svc, config, GROWN)
    engine = dataclasses.replace(env, toolchain=Toolchain(bin_dir=wrapped)).engine(config)
    with caplog.at_level(logging.WARNING, logger="reconciler.engine.context"):
        engine.warm_up()
    said = [
        r.__dict__.get("why", "") for r in caplog.records if r.getMessage() == "direct paths off"
    ]
    assert said == [
        "pulumi reports v3.260.0 (tested with v3.259.0): the engine changes pool members and "
        "deletes stacks through the pulumi CLI only"
    ]
    stack = engine.stack(service=before.service)
    stack.ensure(before)
    starts.clear()
    result = stack.ensure(grown)
    assert (result.changed, result.direct) == (True, False)
    assert "up" in starts
    assert member_addresses(env) == ALL_ADDRESSES
    starts.clear()
    assert not stack.delete().direct
    assert "destroy" in starts
    assert engine.direct_refusal() == said[0]  # read once


class ShortLease:
    """A controller's Lease with ``left`` seconds to go (the runner's Leadership)."""

    def __init__(self, left: float) -> None:
        self.left = left

    def __call__(self) -> bool:
        return True

    def remaining(self) -> float:
        return self.left

    def epoch(self) -> int:
        return 7

    def replica_hosts(self) -> frozenset[str]:
        return frozenset()


def test_no_backend_write_starts_that_could_end_after_the_lease(
    backend_env: Env, caplog: pytest.LogCaptureFixture
) -> None:
    """A controller whose Lease ends before a backend write could (its bound: the backend
    timeout) writes nothing: the members change is refused before its first write, and the
    state and the cloud are left as they were. With the Lease renewed, the same change goes
    through, each write logged with the Lease's term."""
    env = backend_env
    config = env.config()
    svc = stored_service("fenced")
    before, grown = spec_for(svc, config), spec_for(svc, config, GROWN)
    env.engine(config).stack(service=before.service).ensure(before)
    lease = ShortLease(left=0.5)  # less than any write may take (file://: 1 s)
    engine = Engine(settings=env.engine(config, backend_timeout=2.0).settings, leading=lease)
    stack = engine.stack(service=before.service)
    store = store_of(stack)
    tags, checkpoint = store.tags(stack.name), store.read_checkpoint(stack.name)
    with pytest.raises(NotLeaderError, match=r"holds the Lease for 0\.5s more"):
        stack.ensure(grown)
    assert (store.tags(stack.name), store.read_checkpoint(stack.name)) == (tags, checkpoint)
    assert member_addresses(env) == ALL_ADDRESSES[:2]
    assert store.list_locks(stack.name) == []  # not even a lock was written

    lease.left = 10.0
    with caplog.at_level(logging.DEBUG, logger="reconciler.engine.context"):
        result = stack.ensure(grown)
    assert (result.changed, result.direct) == (True, True)
    writes = [r for r in caplog.records if r.getMessage() == "backend write"]
    assert len(writes) >= 5  # the lock, the tags twice, the state twice, the history...
    assert {r.__dict__["epoch"] for r in writes} == {7}
    assert stack.delete().existed

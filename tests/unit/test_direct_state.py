"""reconciler.engine.direct_state on a file:// backend: protection lifted and an emptied stack
removed in the checkpoint, never over another writer's lock, and left to the CLI where the
store may not edit (the engine tests do the same against the real CLI)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from reconciler.engine.direct_state import remove_emptied_stack, unprotect_in_state
from reconciler.engine.errors import StackLockedError
from reconciler.engine.state.store import StateStore, open_state_store
from stacks.vocabulary import PROJECT
from tests.backends import persons_lock

STACK = "c.ns.web"
ROOT = {
    "urn": f"urn:pulumi:{STACK}::{PROJECT}::pulumi:pulumi:Stack::x",
    "type": "pulumi:pulumi:Stack",
}
PROVIDER = {"urn": "urn:p", "type": "pulumi:providers:openstack"}
LB = {
    "urn": "urn:lb",
    "type": "openstack:loadbalancer/loadBalancerV2:LoadBalancerV2",
    "protect": True,
}
FIP = {"urn": "urn:fip", "type": "openstack:networking/floatingIp:FloatingIp", "protect": True}


class Engine:
    def __init__(self, store: StateStore) -> None:
        self.store, self.fenced = store, []

    def store_or_none(self) -> StateStore:
        return self.store

    def fence(self, doing: str, *, stack: str) -> None:
        self.fenced.append(doing)


def backend(tmp_path: Path, resources: list[dict[str, Any]], version: int = 3) -> StateStore:
    store = open_state_store(tmp_path.as_uri())
    assert store is not None
    assert store.set_up()
    latest = {"manifest": {}, "resources": resources}
    checkpoint = {"version": version, "checkpoint": {"stack": STACK, "latest": latest}}
    store.bucket.write(f"{store.stacks_prefix()}{STACK}.json", json.dumps(checkpoint).encode())
    return store


def resources(store: StateStore) -> list[dict[str, Any]]:
    return list((store.deployment(STACK) or {}).get("resources") or [])


def test_protection_is_lifted_from_the_urns_asked(tmp_path: Path) -> None:
    store = backend(tmp_path, [ROOT, PROVIDER, LB, FIP])
    assert unprotect_in_state(Engine(store), STACK, ["urn:lb", "urn:not-there"])  # type: ignore[arg-type]
    by_urn = {r["urn"]: r for r in resources(store)}
    assert "protect" not in by_urn["urn:lb"]  # as the CLI writes it: left out when false
    assert by_urn["urn:fip"]["protect"] is True
    assert unprotect_in_state(Engine(store), STACK)  # type: ignore[arg-type]
    assert not any(r.get("protect") for r in resources(store))
    assert store.list_locks(STACK) == []


def test_nothing_protected_writes_nothing(tmp_path: Path) -> None:
    store = backend(tmp_path, [ROOT, {**LB, "protect": False}])
    engine = Engine(store)
    assert unprotect_in_state(engine, STACK)  # type: ignore[arg-type]
    assert engine.fenced == []
    assert store.bucket.read(f"{store.stacks_prefix()}{STACK}.json.bak") is None


def test_another_writer_s_lock_refuses_both_and_nothing_changes(tmp_path: Path) -> None:
    store = backend(tmp_path, [ROOT, PROVIDER, LB])
    persons_lock(store, STACK)
    before = store.bucket.read(f"{store.stacks_prefix()}{STACK}.json")
    with pytest.raises(StackLockedError, match="alice@laptop"):
        unprotect_in_state(Engine(store), STACK)  # type: ignore[arg-type]
    assert store.bucket.read(f"{store.stacks_prefix()}{STACK}.json") == before
    emptied = backend(tmp_path / "other", [ROOT, PROVIDER])
    persons_lock(emptied, STACK)
    with pytest.raises(StackLockedError, match="alice@laptop"):
        remove_emptied_stack(Engine(emptied), STACK)  # type: ignore[arg-type]
    assert emptied.stack_exists(STACK)


def test_only_an_emptied_stack_is_removed(tmp_path: Path) -> None:
    store = backend(tmp_path, [ROOT, PROVIDER, LB])
    assert not remove_emptied_stack(Engine(store), STACK)  # type: ignore[arg-type]
    assert store.stack_exists(STACK)  # the CLI refuses it, and says which resources
    emptied = backend(tmp_path / "emptied", [ROOT, PROVIDER])
    assert remove_emptied_stack(Engine(emptied), STACK)  # type: ignore[arg-type]
    assert emptied.objects_of(STACK) == []


def test_a_checkpoint_format_the_direct_paths_refuse_is_left_to_the_cli(tmp_path: Path) -> None:
    store = backend(tmp_path, [ROOT, LB], version=4)
    assert not unprotect_in_state(Engine(store), STACK)  # type: ignore[arg-type]
    assert not remove_emptied_stack(Engine(store), STACK)  # type: ignore[arg-type]
    assert resources(store)[1]["protect"] is True

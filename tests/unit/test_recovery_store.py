"""What a crash left, read and repaired in the checkpoint by the store (reconciler.engine.recovery):
no ``pulumi stack export`` or ``stack import``, never over another writer's lock or write. The
crash tests (tests/integration/engine/test_engine_crash.py) do the same with a killed ``pulumi``
on each backend; here the cases the real runs rarely reach."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from pulumi import automation as auto

from reconciler.engine.errors import StackLockedError
from reconciler.engine.recovery import recover_pending
from reconciler.engine.state.store import StateStore, open_state_store
from stacks.vocabulary import PROJECT
from tests.backends import persons_lock

STACK = "c.ns.web"
LB_TYPE = "openstack:loadbalancer/loadBalancerV2:LoadBalancerV2"
URN = f"urn:pulumi:{STACK}::{PROJECT}::{LB_TYPE}::lb"
SEALED = {
    "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270",
    "ciphertext": "v1:a:b",
}


class Cloud:
    """The lookups recovery makes: one load balancer of that name, made by the killed up."""

    def find_ids(self, *, type_token: str, find_by: Mapping[str, str]) -> Sequence[str]:
        return ["lb-1"] if find_by.get("name") == "web" else []

    def show(self, kind: str, ident: str) -> Any:
        return None


class CliStack:
    """The Automation API's stack, for the path that still asks the CLI."""

    def __init__(self, deployment: dict[str, Any]) -> None:
        self.deployment, self.imported = deployment, None

    def export_stack(self) -> auto.Deployment:
        return auto.Deployment(version=3, deployment=self.deployment)

    def import_stack(self, state: auto.Deployment) -> None:
        self.imported = state.deployment


def pending(name: Any = "web") -> dict[str, Any]:
    return {
        "resources": [],
        "pending_operations": [
            {
                "type": "creating",
                "resource": {"urn": URN, "type": LB_TYPE, "inputs": {"name": name}},
            }
        ],
    }


def store_with(tmp_path: Path, deployment: dict[str, Any]) -> StateStore:
    store = open_state_store(tmp_path.as_uri())
    assert store is not None
    assert store.set_up()
    checkpoint = {"version": 3, "checkpoint": {"stack": STACK, "latest": deployment}}
    store.bucket.write(f"{store.stacks_prefix()}{STACK}.json", json.dumps(checkpoint).encode())
    return store


def recover(stack: Any, store: StateStore) -> dict[str, str]:
    found = recover_pending(stack=stack, stack_name=STACK, rest=Cloud(), store=store)  # type: ignore[arg-type]
    return found.imports


def test_a_pending_create_is_found_and_dropped_in_the_checkpoint(tmp_path: Path) -> None:
    store = store_with(tmp_path, pending())
    cli = CliStack(pending())
    assert recover(cli, store) == {"lb": "lb-1"}
    assert cli.imported is None  # no `stack import`
    assert (store.deployment(STACK) or {})["pending_operations"] == []
    assert store.list_locks(STACK) == []  # its own lock, taken and removed
    assert store.bucket.read(f"{store.stacks_prefix()}{STACK}.json.bak") is not None  # as the CLI


def test_another_writer_s_lock_refuses_the_repair_and_nothing_is_written(tmp_path: Path) -> None:
    store = store_with(tmp_path, pending())
    persons_lock(store, STACK)
    before = store.bucket.read(f"{store.stacks_prefix()}{STACK}.json")
    with pytest.raises(StackLockedError, match="alice@laptop"):
        recover(CliStack(pending()), store)
    assert store.bucket.read(f"{store.stacks_prefix()}{STACK}.json") == before


def test_a_pending_operation_with_a_secret_is_left_to_the_cli(tmp_path: Path) -> None:
    """Only its ciphertext is in the checkpoint; the CLI's export shows the value."""
    store = store_with(tmp_path, pending(name=SEALED))
    cli = CliStack(pending())  # what `stack export --show-secrets` prints
    assert recover(cli, store) == {"lb": "lb-1"}
    assert cli.imported is not None
    assert cli.imported["pending_operations"] == []

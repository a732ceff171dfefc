"""When a members-only change may skip ``up``, and the state it writes
(reconciler.engine.members_plan). The state's layout is pinned to what the provider (openstack
5.5.1) writes; tests/integration/engine/test_engine_members_direct.py checks it against the
real engine."""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

from reconciler.engine.members_plan import (
    applied_spec_in,
    members_changes,
    members_update,
    pending_deployment,
    request_members,
    updated_deployment,
)
from reconciler.model.spec import LoadBalancerSpec, MemberSpec
from stacks.vocabulary import MEMBERS_TYPE
from tests.builders import make_node
from tests.unit.model_helpers import NODES, spec_of

STACK = "urn:pulumi:s::lb-reconciler::pulumi:pulumi:Stack::lb-reconciler-s"
MEMBERS = "urn:pulumi:s::lb-reconciler::openstack:loadbalancer/members:Members::members-tcp-8765"
POOL_ID = "2a637ee2-b60f-45ad-8135-2a918458483c"
TWO = NODES[:2]
THREE = [*TWO, make_node("worker-c", internal="10.0.0.13")]


def provider_members(spec: LoadBalancerSpec) -> dict[str, Any]:
    """The ``Members`` resource as openstack 5.5.1 writes it after an ``up`` of ``spec``."""
    members = spec.listeners[0].pool.members
    return {
        "urn": MEMBERS,
        "custom": True,
        "id": POOL_ID,
        "type": MEMBERS_TYPE,
        "inputs": {
            "__defaults": [],
            "members": [
                {
                    "__defaults": ["adminStateUp", "weight"],
                    "address": m.address,
                    "adminStateUp": True,
                    "name": m.name,
                    "protocolPort": m.protocol_port,
                    "weight": 1,
                }
                for m in members
            ],
            "poolId": POOL_ID,
        },
        "outputs": {
            "__meta": '{"e2bfb730-ecaa-11e6-8f88-34363bc7c4c0":{"create":600000000000}}',
            "__pulumi_raw_state_delta": {
                "obj": {
                    "ps": {
                        "members": {
                            "arr": {"el": {str(i): {"obj": {}} for i in range(len(members))}}
                        }
                    },
                    "renamed": {"members": "member"},
                }
            },
            "id": POOL_ID,
            # a Terraform set: by address as text, whatever the order of the inputs
            "members": [
                cloud_member(m, f"id-{m.name}", as_output=True)
                for m in sorted(members, key=lambda m: m.address)
            ],
            "poolId": POOL_ID,
            "region": "RegionOne",
        },
        "modified": "2026-11-26T09:45:28.650410275Z",
    }


def cloud_member(m: MemberSpec, ident: str, *, as_output: bool = False) -> dict[str, Any]:
    if as_output:
        return {
            "address": m.address,
            "adminStateUp": True,
            "backup": False,
            "id": ident,
            "monitorAddress": "",
            "monitorPort": 0,
            "name": m.name,
            "protocolPort": m.protocol_port,
            "subnetId": "",
            "weight": 1,
        }
    return {
        "id": ident,
        "name": m.name,
        "address": m.address,
        "protocol_port": m.protocol_port,
        "weight": 1,
        "admin_state_up": True,
        "backup": False,
        "subnet_id": None,
        "monitor_address": None,
        "monitor_port": None,
        "provisioning_status": "ACTIVE",
    }


def deployment_of(spec: LoadBalancerSpec, **top: Any) -> dict[str, Any]:
    stack = {
        "urn": STACK,
        "type": "pulumi:pulumi:Stack",
        "outputs": {"spec": spec.canonical_json()},
    }
    return {"manifest": {}, "resources": [stack, provider_members(spec)], **top}


def update_of(
    deployment: dict[str, Any] | None, applied: LoadBalancerSpec, wanted: LoadBalancerSpec
):  # type: ignore[no-untyped-def]
    return members_update(deployment, applied=applied, wanted=wanted, applied_as_stack=applied)


def test_a_node_added_is_a_members_only_change_of_each_pool() -> None:
    before, after = spec_of(nodes=TWO), spec_of(nodes=THREE)
    changes = members_changes(before, after)
    assert changes == {"members-tcp-8765": after.listeners[0].pool.members}
    assert members_changes(before, before) is None  # nothing to do is not a change


def test_anything_else_that_differs_is_not_members_only() -> None:
    before = spec_of(nodes=TWO)
    other = spec_of({"loadbalancer.openstack.org/connection-limit": "5"}, nodes=THREE)
    assert members_changes(before, other) is None


def test_a_pool_losing_its_last_member_or_gaining_its_first_is_not_members_only() -> None:
    with_members = spec_of(nodes=TWO)
    listener = with_members.listeners[0]
    without = replace(
        with_members, listeners=(replace(listener, pool=replace(listener.pool, members=())),)
    )
    assert members_changes(with_members, without) is None
    assert members_changes(without, with_members) is None


def test_a_state_as_the_provider_writes_it_is_updated_directly() -> None:
    before, after = spec_of(nodes=TWO), spec_of(nodes=THREE)
    deployment = deployment_of(before)
    update = update_of(deployment, before, after)
    assert update is not None
    (pool,) = update.pools
    assert (pool.urn, pool.pool_id, pool.members) == (
        MEMBERS,
        POOL_ID,
        after.listeners[0].pool.members,
    )
    assert update.outputs == {"spec": after.canonical_json(), "spec_hash": after.spec_hash()}
    assert applied_spec_in(deployment) == before
    assert [m["address"] for m in request_members(pool.members)] == [
        "10.0.0.11",
        "10.0.0.12",
        "10.0.0.13",
    ]

    # after a `refresh` the top-level `__defaults` is gone; still the provider's layout
    refreshed = copy.deepcopy(deployment)
    del refreshed["resources"][1]["inputs"]["__defaults"]
    assert update_of(refreshed, before, after) is not None


def test_a_state_not_as_this_module_writes_it_goes_through_up() -> None:
    before, after = spec_of(nodes=TWO), spec_of(nodes=THREE)

    def changed(edit: Any) -> dict[str, Any]:
        deployment = deployment_of(before)
        edit(deployment, deployment["resources"][1])
        return deployment

    refused = [
        None,
        changed(lambda d, r: d.update(pending_operations=[{"type": "updating", "resource": r}])),
        changed(lambda d, r: r.update(external=True)),  # read, not made
        changed(lambda d, r: r["inputs"]["members"][0].update(weight=5)),  # edited meanwhile
        changed(
            lambda d, r: r["outputs"]["members"][0].update(vnicType="normal")
        ),  # a newer provider
        changed(lambda d, r: r["outputs"].update(__pulumi_raw_state_delta={})),
        changed(lambda d, r: d["resources"].remove(r)),  # no Members resource
        changed(
            lambda d, r: d["resources"][0]["outputs"].update(spec="{}")
        ),  # another spec applied
    ]
    for deployment in refused:
        assert update_of(deployment, before, after) is None, deployment


def test_the_update_is_marked_pending_then_recorded() -> None:
    before, after = spec_of(nodes=TWO), spec_of(nodes=THREE)
    deployment = deployment_of(before)
    update = update_of(deployment, before, after)
    assert update is not None

    pending = pending_deployment(deployment, update)
    (op,) = pending["pending_operations"]
    assert op["type"] == "updating"
    assert [m["address"] for m in op["resource"]["inputs"]["members"]] == [
        "10.0.0.11",
        "10.0.0.12",
        "10.0.0.13",
    ]
    assert deployment_of(before) == deployment  # the input is not changed

    wanted = after.listeners[0].pool.members
    read = {POOL_ID: [cloud_member(m, f"id-{m.name}") for m in reversed(wanted)]}
    as_read = copy.deepcopy(pending)
    done = updated_deployment(pending, update, read, now="2026-11-26T10:00:00.000000Z")
    assert done is not None
    assert pending == as_read  # the input is not changed (nested objects are shared, not copied)
    assert "pending_operations" not in done
    assert done["resources"][1] == {
        **provider_members(after),
        "modified": "2026-11-26T10:00:00.000000Z",
    }
    assert done["resources"][0]["outputs"] == update.outputs


def test_members_the_cloud_shows_otherwise_leave_the_update_pending() -> None:
    before, after = spec_of(nodes=TWO), spec_of(nodes=THREE)
    update = update_of(deployment_of(before), before, after)
    assert update is not None
    wanted = after.listeners[0].pool.members
    extra = replace(wanted[0], address="10.0.0.99")
    for members in (wanted[:2], (*wanted, extra)):
        read = {POOL_ID: [cloud_member(m, f"id-{m.name}") for m in members]}
        assert updated_deployment(deployment_of(before), update, read, now="t") is None


def test_the_outputs_are_in_the_providers_order_not_the_inputs_nor_octavias() -> None:
    """A Node whose name sorts first and whose address sorts last as text: the inputs follow
    the spec (by Node name), the outputs the provider's set (by address as text)."""
    before = spec_of(nodes=TWO)
    after = spec_of(nodes=[make_node("aaa-first", internal="10.0.0.5"), *TWO])
    # the VIP subnet stays the one detected first (as the stack applies it: stack_spec)
    after = replace(after, vip_autodetect_address=before.vip_autodetect_address)
    wanted = after.listeners[0].pool.members
    assert [m.address for m in wanted] == ["10.0.0.5", "10.0.0.11", "10.0.0.12"]
    update = update_of(deployment_of(before), before, after)
    assert update is not None
    read = {POOL_ID: [cloud_member(m, f"id-{m.name}") for m in reversed(wanted)]}
    done = updated_deployment(deployment_of(before), update, read, now="t")
    assert done is not None
    res = done["resources"][1]
    assert [m["address"] for m in res["inputs"]["members"]] == [
        "10.0.0.5",
        "10.0.0.11",
        "10.0.0.12",
    ]
    assert [m["address"] for m in res["outputs"]["members"]] == [
        "10.0.0.11",
        "10.0.0.12",
        "10.0.0.5",
    ]
    # a state whose outputs are in another order is still the provider's layout (a set)
    shuffled = copy.deepcopy(done)
    shuffled["resources"][1]["outputs"]["members"].reverse()
    shuffled["resources"][0]["outputs"]["spec"] = after.canonical_json()
    assert update_of(shuffled, after, before) is not None

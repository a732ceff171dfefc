"""bench/clone_plan.py, the pure part of scenario 3's clone: the rewrite of a template's
values, the spec hash stamped again, which objects are the template's, a create body's fields."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from bench.clone_plan import Rewrite, body, restamp, template_objects

LB, LB2 = "9e23e799-b29e-4e97-aef8-7e40a09722ef", "11111111-2222-3333-4444-555555555555"
UID, UID2 = "d4932825-5b89-4d4d-a2e2-8bf8556646c8", "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


REWRITE = Rewrite(
    tokens={LB: LB2, UID: UID2, "10.0.0.2": "10.0.0.7", "172.24.0.10": "172.24.0.99"},
    names={"steady-000": "steady-123"},
    ints={30646: 30001},
)


def test_names_are_replaced_anywhere_in_a_string_ids_and_addresses_only_as_whole_tokens() -> None:
    assert REWRITE.apply("urn:pulumi:bench.bench.steady-000::lb-reconciler::x::lb") == (
        "urn:pulumi:bench.bench.steady-123::lb-reconciler::x::lb"
    )
    assert (
        REWRITE.apply("kube_service_bench_bench_steady-000")
        == "kube_service_bench_bench_steady-123"
    )
    assert REWRITE.apply(f"octavia-lb-{LB}") == f"octavia-lb-{LB2}"
    message = f"load balancer {LB} at 172.24.0.10 is up to date"
    assert REWRITE.apply(message) == f"load balancer {LB2} at 172.24.0.99 is up to date"
    # a longer address that begins with a mapped one is another address
    assert REWRITE.apply(["10.0.0.2", "10.0.0.20", "10.0.0.21/32", "110.0.0.2"]) == [
        "10.0.0.7",
        "10.0.0.20",
        "10.0.0.21/32",
        "110.0.0.2",
    ]


def test_the_node_port_is_replaced_as_a_whole_integer_and_booleans_are_left_alone() -> None:
    value = {"protocolPort": 30646, "port": 80, "weight": 1, "backup": True, "text": "30646"}
    assert REWRITE.apply(value) == {
        "protocolPort": 30001,
        "port": 80,
        "weight": 1,
        "backup": True,
        "text": "30646",
    }
    assert REWRITE.apply(None) is None


def test_a_string_of_canonical_json_is_rewritten_inside_and_stays_canonical() -> None:
    spec = {
        "name": "kube_service_bench_bench_steady-000",
        "service": {"uid": UID, "name": "steady-000"},
        "listeners": [{"node_port": 30646, "pool": {"members": [{"protocol_port": 30646}]}}],
    }
    out = REWRITE.apply({"spec": canonical(spec)})
    assert json.loads(out["spec"]) == {
        "name": "kube_service_bench_bench_steady-123",
        "service": {"uid": UID2, "name": "steady-123"},
        "listeners": [{"node_port": 30001, "pool": {"members": [{"protocol_port": 30001}]}}],
    }
    assert out["spec"] == canonical(json.loads(out["spec"]))
    # JSON that is not canonical is plain text: its numbers are not the node port
    assert REWRITE.apply('{"b": 30646, "a": 1}') == '{"b": 30646, "a": 1}'


def test_with_tokens_adds_to_the_mapping_without_changing_the_rewrite_it_came_from() -> None:
    more = REWRITE.with_tokens({"x-1": "y-1"})
    assert more.apply("x-1 10.0.0.2") == "y-1 10.0.0.7"
    assert REWRITE.apply("x-1") == "x-1"


def checkpoint(spec: str, spec_hash: str) -> dict[str, Any]:
    stack = {"type": "pulumi:pulumi:Stack", "outputs": {"spec": spec, "spec_hash": spec_hash}}
    return {"checkpoint": {"stack": "s", "latest": {"resources": [{"type": "p"}, stack]}}}


def test_restamp_sets_the_spec_hash_output_to_the_sha256_of_the_spec_output() -> None:
    doc = checkpoint('{"a":1}', "old")
    digest = restamp(doc)
    assert digest == hashlib.sha256(b'{"a":1}').hexdigest()
    assert doc["checkpoint"]["latest"]["resources"][1]["outputs"]["spec_hash"] == digest


def test_restamp_refuses_a_checkpoint_without_the_program_s_outputs() -> None:
    doc = checkpoint('{"a":1}', "old")
    del doc["checkpoint"]["latest"]["resources"][1]["outputs"]["spec"]
    with pytest.raises(ValueError, match="no stack outputs spec"):
        restamp(doc)


def test_template_objects_are_those_of_the_named_load_balancer_and_its_floating_ip() -> None:
    def ref(*ids: str) -> list[dict[str, str]]:
        return [{"id": i} for i in ids]

    inventory = {
        "loadbalancers": [
            {"id": "lb1", "name": "mine", "vip_port_id": "port1"},
            {"id": "lb2", "name": "other", "vip_port_id": "port2"},
        ],
        "listeners": [
            {"id": "l1", "loadbalancers": ref("lb1")},
            {"id": "l2", "loadbalancers": ref("lb2")},
        ],
        "pools": [
            {"id": "p1", "loadbalancers": ref("lb1"), "members": ref("m1")},
            {"id": "p2", "loadbalancers": ref("lb2"), "members": ref("m2")},
        ],
        "members": [{"id": "m1"}, {"id": "m2"}],
        "healthmonitors": [{"id": "h1", "pools": ref("p1")}, {"id": "h2", "pools": ref("p2")}],
        "floatingips": [{"id": "f1", "port_id": "port1"}, {"id": "f2", "port_id": "port2"}],
    }
    found = template_objects(inventory, "mine")
    assert {k: [o["id"] for o in v] for k, v in found.by_kind.items()} == {
        "loadbalancers": ["lb1"],
        "listeners": ["l1"],
        "pools": ["p1"],
        "members": ["m1"],
        "healthmonitors": ["h1"],
        "floatingips": ["f1"],
    }


def test_a_create_body_has_the_writable_fields_that_are_set_rewritten() -> None:
    listener = {
        "id": "l1",
        "name": "listener_0_kube_service_bench_bench_steady-000",
        "protocol": "TCP",
        "protocol_port": 80,
        "connection_limit": -1,
        "sni_container_refs": [],
        "insert_headers": {},
        "default_tls_container_ref": None,
        "provisioning_status": "ACTIVE",
        "tags": ["kube_service_bench_bench_steady-000"],
    }
    assert body("listeners", listener, REWRITE) == {
        "name": "listener_0_kube_service_bench_bench_steady-123",
        "protocol": "TCP",
        "protocol_port": 80,
        "connection_limit": -1,
        "tags": ["kube_service_bench_bench_steady-123"],
    }

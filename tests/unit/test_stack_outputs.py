"""reconciler.engine.stack_meta.outputs_in: a stack's outputs read from its checkpoint, as
``pulumi stack output`` prints them (the engine tests compare it with the real CLI)."""

from __future__ import annotations

from typing import Any

from reconciler.engine.deployment import STACK_TYPE
from reconciler.engine.stack_meta import OUTPUT_KEYS, outputs_in

LB_TYPE = "openstack:loadbalancer/loadBalancer:LoadBalancer"
ROOT_URN = "urn:pulumi:c.ns.web::lb-reconciler::pulumi:pulumi:Stack::lb-reconciler-c.ns.web"


def deployment(outputs: dict[str, Any]) -> dict[str, Any]:
    return {
        "manifest": {},
        "resources": [
            {"urn": ROOT_URN, "type": STACK_TYPE, "custom": False, "outputs": outputs},
            {"urn": "urn:lb", "type": LB_TYPE, "outputs": {"id": "not-a-stack-output"}},
        ],
    }


def test_the_root_stack_s_outputs_with_every_known_key() -> None:
    got = outputs_in(deployment({"lb_id": "lb-1", "ports": [80, 443]}))
    assert got is not None
    assert got["lb_id"] == "lb-1"
    assert got["ports"] == [80, 443]
    assert set(OUTPUT_KEYS) <= set(got)  # the ones Pulumi dropped come back as None
    assert all(got[k] is None for k in OUTPUT_KEYS if k not in ("lb_id", "ports"))


def test_a_stack_never_updated_has_no_outputs() -> None:
    for empty in (None, {}, {"resources": []}, deployment({})):
        got = outputs_in(empty)
        assert got is not None
        assert set(got) == set(OUTPUT_KEYS)
        assert all(v is None for v in got.values())


def test_a_secret_output_is_left_to_the_cli() -> None:
    sealed = {"4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270",
              "ciphertext": "v1:abc:def"}  # fmt: skip
    assert outputs_in(deployment({"lb_id": "lb-1", "token": sealed})) is None
    assert outputs_in(deployment({"nested": {"deep": [sealed]}})) is None

"""Create-only fields and protection, on the real engine and provider against the emulator.

What a user did (issue 13): a Service with an IP, then ``availability-zone`` edited to a zone the
cloud does not have; the next ``up`` replaced the load balancer, deleted the old one and failed
to make the new one. And a cloud.conf line plus a restart did the same to every Service. Here an
edit of a create-only field changes nothing in the cloud (same load balancer, same floating IP,
no ``up``) and is reported; and should freezing ever miss a field, the program's protection
makes the engine refuse the ``up`` and leave the cloud as it was.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from reconciler.engine import stack as engine_module
from reconciler.engine.errors import EngineError, InvalidConfigError
from reconciler.engine.stack_spec import StackSpec
from tests.builders import stored_service
from tests.integration.engine.conftest import Env, only, spec_for

# each test starts real pulumi runs or servers for many seconds: not in make test-fast
pytestmark = pytest.mark.slow

A = "loadbalancer.openstack.org/"
OTHER_ID = "0b0b0b0b-0b0b-4b0b-8b0b-0b0b0b0b0b0b"


def _cloud(env: Env) -> tuple[dict[str, Any], dict[str, Any]]:
    """The one load balancer and the floating IPs on its VIP port."""
    inv = env.cloud.inventory()
    lb = only(inv["loadbalancers"])
    fip = only([f for f in inv["floatingips"] if f["port_id"] == lb["vip_port_id"]])
    return lb, fip


@pytest.mark.parametrize(
    ("annotation", "value", "field"),
    [
        ("availability-zone", "az-2", "availability_zone"),
        ("flavor-id", OTHER_ID, "flavor_id"),
        ("subnet-id", OTHER_ID, "vip_subnet_id"),
        ("network-id", OTHER_ID, "vip_network_id"),
        # a port replaces the subnet (OCCM): both are reported
        ("port-id", OTHER_ID, "vip_subnet_id,vip_port_id"),
        ("floating-network-id", OTHER_ID, "floating_ip.network_id"),
        ("floating-subnet-id", OTHER_ID, "floating_ip.subnet_id"),
        ("load-balancer-id", OTHER_ID, "existing_lb_id"),
    ],
)
def test_edit_of_a_create_only_annotation_changes_nothing(
    env: Env, annotation: str, value: str, field: str
) -> None:
    config = env.config()
    svc = stored_service("frozen")
    spec = spec_for(svc, config)
    stack = env.engine(config).stack(service=spec.service)
    first = stack.ensure(spec)
    lb, fip = _cloud(env)
    try:
        edited = stored_service("frozen", annotations={A + annotation: value})
        result = stack.ensure(spec_for(edited, config))
        assert not result.changed  # no up ran
        assert [f.field for f in result.frozen] == field.split(",")
        assert result.frozen[-1].asked == value
        assert result.outputs["lb_id"] == first.outputs["lb_id"] == lb["id"]
        assert _cloud(env) == (lb, fip)
        # and again (a resync): still nothing, still reported
        again = stack.ensure(spec_for(edited, config))
        assert not again.changed
        assert again.frozen == result.frozen
    finally:
        stack.delete()


def test_cloud_conf_edit_and_restart_keep_every_load_balancer(env: Env) -> None:
    """Three Services with IPs; `availability-zone = az-other` added to [LoadBalancer]; a new
    engine (the restarted controller) ensures them all: nothing is replaced or deleted."""
    config = env.config()
    names = ("one", "two", "three")
    stacks = {}
    for name in names:
        spec = spec_for(stored_service(name), config)
        stacks[name] = env.engine(config).stack(service=spec.service)
        stacks[name].ensure(spec)
    before = env.cloud.inventory()
    try:
        edited = env.config("availability-zone = az-other\n")
        restarted = env.engine(edited)
        for name in names:
            spec = spec_for(stored_service(name), edited)
            assert spec.availability_zone == "az-other"
            result = restarted.stack(service=spec.service).ensure(spec)
            assert not result.changed
            assert [(f.field, f.asked) for f in result.frozen] == [
                ("availability_zone", "az-other")
            ]
        after = env.cloud.inventory()
        for kind in ("loadbalancers", "floatingips", "listeners", "pools"):
            assert after[kind] == before[kind], kind
    finally:
        for stack in stacks.values():
            stack.delete()


def test_protection_refuses_an_up_that_would_replace_the_load_balancer(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Belt and braces: with freezing switched off (a stand-in for a bug, or a property that
    becomes replace-on-change in a provider upgrade), the real engine refuses the plan and the
    cloud stays as it was; the Service's next ensure, frozen again, is fine; delete works."""
    config = env.config()
    spec = spec_for(stored_service("braces"), config)
    stack = env.engine(config).stack(service=spec.service)
    first = stack.ensure(spec)
    lb, fip = _cloud(env)
    real = engine_module.stack_spec

    def unfrozen(desired: Any, *, tags: Any) -> StackSpec:
        got = real(desired, tags=tags)
        asked = dataclasses.replace(got.spec, availability_zone=desired.availability_zone)
        return StackSpec(asked, got.requested, ())

    try:
        edited = spec_for(
            stored_service("braces", annotations={A + "availability-zone": "az-2"}), config
        )
        monkeypatch.setattr(engine_module, "stack_spec", unfrozen)
        with pytest.raises(EngineError) as failed:
            stack.ensure(edited)
        assert "refused: the plan would replace the load balancer (lb)" in str(failed.value)
        assert isinstance(failed.value, InvalidConfigError)
        assert _cloud(env) == (lb, fip)
        monkeypatch.setattr(engine_module, "stack_spec", real)
        result = stack.ensure(edited)
        assert result.outputs["lb_id"] == first.outputs["lb_id"]
        assert _cloud(env) == (lb, fip)
    finally:
        monkeypatch.setattr(engine_module, "stack_spec", real)
        stack.delete()
    assert env.cloud.inventory()["loadbalancers"] == []


def test_internal_toggle_removes_and_adds_the_floating_ip(env: Env) -> None:
    """Not create-only (OCCM follows it): made internal, the Service's floating IP is deleted
    (its protection lifted for that); made external again, it gets a new one. The load
    balancer stays throughout."""
    config = env.config()
    spec = spec_for(stored_service("toggle"), config)
    stack = env.engine(config).stack(service=spec.service)
    stack.ensure(spec)
    lb, fip = _cloud(env)
    try:
        internal = spec_for(
            stored_service(
                "toggle",
                annotations={"service.beta.kubernetes.io/openstack-internal-load-balancer": "true"},
            ),
            config,
        )
        result = stack.ensure(internal)
        assert result.changed
        assert result.frozen == ()
        inv = env.cloud.inventory()
        assert only(inv["loadbalancers"])["id"] == lb["id"]
        assert [f for f in inv["floatingips"] if f["id"] == fip["id"]] == []
        assert result.outputs["floating_ip"] is None
        back = stack.ensure(spec)
        assert back.changed
        new_lb, new_fip = _cloud(env)
        assert new_lb["id"] == lb["id"]
        assert back.outputs["floating_ip"] == new_fip["floating_ip_address"]
    finally:
        stack.delete()

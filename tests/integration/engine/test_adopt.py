"""``lb-reconciler adopt`` at the engine level: a load balancer made in the emulator the way OCCM
makes one (tests/occm.py, openstacksdk) is found, previewed, imported into the Service's stack,
and the following ``up`` changes nothing in it (same ids, same floating IP). A Service that
differs from OCCM's objects is refused with the property named, and the cloud and the backend
are left as they were; an import that fails half-way is undone.

The CLI itself, with a real kube-apiserver, is tests/e2e/test_adopt_cli.py.
"""

from __future__ import annotations

import subprocess
from typing import Any

import pytest

from reconciler.engine.adopt.cloud import find_occm_objects
from reconciler.engine.adopt.plan import AdoptionPlan, plan_adoption
from reconciler.engine.adopt.preview import judge_preview
from reconciler.engine.adopt.stack import AdoptionFailedError, adopt, held_resources
from reconciler.engine.plan import HASH_TAG
from reconciler.engine.stack import Engine, ServiceStack
from reconciler.model import LoadBalancerSpec
from tests import occm
from tests.builders import stored_service
from tests.emulated import connect
from tests.integration.engine.conftest import Env, occm_made, only, spec_for

# each test starts real pulumi runs or servers for many seconds: not in make test-fast
pytestmark = pytest.mark.slow

A = "loadbalancer.openstack.org/"


def planned(engine: Engine, spec: LoadBalancerSpec) -> AdoptionPlan:
    found, problems = find_occm_objects(engine.rest(), spec)
    plan = plan_adoption(spec, found)
    assert problems == [], problems
    assert plan.problems == (), plan.problems
    return plan


def cloud_ops(outcome: Any) -> dict[str, str]:
    return {s.name: s.op for s in outcome.steps if not s.type.startswith("pulumi:")}


def untouched(env: Env, stack: ServiceStack, engine: Engine) -> None:
    """No stack on the backend, no work folder."""
    assert engine.stacks() == []
    assert held_resources(stack) is None
    assert not stack.work_dir.exists()


def test_occm_load_balancer_is_adopted_and_the_next_up_changes_nothing(env: Env) -> None:
    conn = connect(env.topo)
    made = occm_made(env, conn, "web", [occm.Port("TCP", 80, 30080), occm.Port("TCP", 8080, 30808)])
    config = env.config()
    svc = stored_service(
        "web",
        ports=[
            {"name": "http", "port": 80, "protocol": "TCP", "nodePort": 30080},
            {"name": "https", "port": 443, "protocol": "TCP", "nodePort": 30443},
        ],
        # OCCM wrote the id back; the Service also turned on monitors, as OCCM had them
        annotations={A + "load-balancer-id": made.lb_id, A + "enable-health-monitor": "true"},
    )
    spec = spec_for(svc, config)
    engine = env.engine(config)
    stack = engine.stack(service=spec.service)
    try:
        assert spec.existing_lb_id == made.lb_id
        plan = planned(engine, spec)
        assert plan.imports == {
            "lb": made.lb_id,
            "listener-tcp-80": made.listeners[80],
            "pool-tcp-80": made.pools[80],
            "members-tcp-80": made.pools[80],
            "monitor-tcp-80": made.monitors[80],
            "fip": made.fip_id,
            "fip-association": made.fip_id,
        }
        assert plan.spec.existing_lb_id is None  # its own load balancer, not a shared one
        assert any("TCP/443: no listener" in n for n in plan.notes), plan.notes
        assert any("TCP/8080 is left as it is" in n for n in plan.notes), plan.notes

        # the dry run: a preview of the import, nothing changed in the cloud or the backend
        before = occm.snapshot(env.cloud.inventory())
        outcome = stack.preview(plan.spec, imports=plan.imports)
        assert judge_preview(plan, outcome) == []
        assert cloud_ops(outcome) == {
            **dict.fromkeys(plan.imports, "import"),
            "listener-tcp-443": "create",
            "pool-tcp-443": "create",
            "members-tcp-443": "create",
            "monitor-tcp-443": "create",
        }
        assert occm.snapshot(env.cloud.inventory()) == before
        untouched(env, stack, engine)

        result = adopt(stack, plan.spec, imports=plan.imports)
        assert result.changed
        assert result.outputs["lb_id"] == made.lb_id
        assert result.outputs["floating_ip"] == made.fip_address

        # the controller's next sync builds the Service's spec (annotation and all): a skip
        assert not stack.ensure(spec).changed
        assert not stack.preview(spec).changed
        # and an up that does run changes nothing
        subprocess.run(
            ["pulumi", "stack", "tag", "rm", HASH_TAG, "--stack", stack.name],
            cwd=stack.work_dir,
            env=engine.env(),
            check=True,
            capture_output=True,
        )
        forced = stack.ensure(spec)
        assert forced.changed
        assert {op for op, n in forced.resource_changes.items() if n} == {"same"}, forced

        inv = env.cloud.inventory()
        lb = only(inv["loadbalancers"])
        assert lb["id"] == made.lb_id
        fip = only([f for f in inv["floatingips"] if f["port_id"] == made.vip_port_id])
        assert (fip["id"], fip["floating_ip_address"]) == (made.fip_id, made.fip_address)
        listeners = {li["protocol_port"]: li["id"] for li in inv["listeners"]}
        assert listeners[80] == made.listeners[80]
        assert listeners[8080] == made.listeners[8080]  # left alone
        assert 443 in listeners
        pools = {p["id"]: p for p in inv["pools"]}
        assert pools[made.pools[80]]["healthmonitor_id"] == made.monitors[80]
        kept = {m["id"] for m in inv["members"] if m["protocol_port"] == 30080}
        assert kept == set(made.members[80])
    finally:
        # the listener the Service does not have stays OCCM's: remove it by hand, as the
        # adopt notes say, before the stack deletes its load balancer
        conn.load_balancer.delete_pool(made.pools[8080])
        occm.wait_active(conn, made.lb_id)
        conn.load_balancer.delete_listener(made.listeners[8080])
        occm.wait_active(conn, made.lb_id)
        stack.delete()
        occm.remove(conn, made)


def test_a_service_that_differs_is_refused_and_nothing_changes(env: Env) -> None:
    conn = connect(env.topo)
    least = occm_made(
        env,
        conn,
        "least",
        [occm.Port("TCP", 80, 30080, monitor=False, lb_algorithm="LEAST_CONNECTIONS")],
    )
    http = occm_made(env, conn, "http", [occm.Port("HTTP", 80, 30081, monitor=False)])
    try:
        config = env.config()
        engine = env.engine(config)
        before = occm.snapshot(env.cloud.inventory())

        # another algorithm: an in-place update of the pool, refused unless allowed
        spec = spec_for(stored_service("least"), config)
        stack = engine.stack(service=spec.service)
        plan = planned(engine, spec)
        outcome = stack.preview(plan.spec, imports=plan.imports)
        problems = judge_preview(plan, outcome)
        assert len(problems) == 1, problems
        assert problems[0].startswith("pool-tcp-80 (pool pool_0_kube_service_itest_default_least)")
        assert "lbMethod 'LEAST_CONNECTIONS' -> 'ROUND_ROBIN'" in problems[0]
        assert "--allow-updates" in problems[0]
        assert judge_preview(plan, outcome, allow_updates=True) == []

        # an HTTP listener where the Service wants TCP: a replacement, always refused
        spec = spec_for(stored_service("http", ports=[{"port": 80, "nodePort": 30081}]), config)
        other = engine.stack(service=spec.service)
        plan = planned(engine, spec)
        outcome = other.preview(plan.spec, imports=plan.imports)
        problems = judge_preview(plan, outcome, allow_updates=True)
        assert any(
            p.startswith("listener-tcp-80 (") and "would be replaced" in p and "protocol" in p
            for p in problems
        ), problems

        assert occm.snapshot(env.cloud.inventory()) == before
        untouched(env, stack, engine)
        untouched(env, other, engine)
    finally:
        occm.remove(conn, least)
        occm.remove(conn, http)


def test_an_import_that_fails_half_way_is_undone(env: Env) -> None:
    conn = connect(env.topo)
    made = occm_made(
        env,
        conn,
        "flaky",
        [occm.Port("TCP", 80, 30080)],
        floating_ip=False,  # the adoption creates one, and must destroy it when undone
    )
    config = env.config()
    svc = stored_service("flaky", annotations={A + "enable-health-monitor": "true"})
    spec = spec_for(svc, config)
    engine = env.engine(config)
    stack = engine.stack(service=spec.service)
    try:
        plan = planned(engine, spec)
        assert "fip" not in plan.imports
        before = occm.snapshot(env.cloud.inventory())
        created_before = env.cloud.created()
        # the monitor's import (the last of the chain) cannot read it: the others are in
        env.cloud.post("/faults/rules", {"operation": "octavia.healthmonitor.show", "status": 500})
        try:
            with pytest.raises(AdoptionFailedError, match="undone") as failed:
                adopt(stack, plan.spec, imports=plan.imports)
        finally:
            env.cloud.clear_faults()
        assert failed.value.rolled_back
        untouched(env, stack, engine)
        assert occm.snapshot(env.cloud.inventory()) == before
        assert env.cloud.created() == created_before  # no floating IP left behind

        # the same adoption, now that the cloud answers, goes through
        result = adopt(stack, plan.spec, imports=plan.imports)
        assert result.outputs["lb_id"] == made.lb_id
        assert not stack.ensure(spec).changed
    finally:
        env.cloud.clear_faults()
        stack.delete()
        occm.remove(conn, made)

"""Moving from OCCM without ``lb-reconciler adopt`` (issue 13: "the Service got a second load
balancer and a new IP"), on the real engine against the emulator.

An OCCM-made load balancer (tests/occm.py) serves a Service; the controller sees the Service for
the first time and calls ``ensure``: the load balancer is taken over (imported, as ``adopt``
would), keeping its id and floating IP. One that is not safe to take over (another cluster's,
or one whose adoption would replace something) is refused, naming it and the command to run,
and nothing is created.
"""

from __future__ import annotations

import pytest

from reconciler.engine.adopt.stack import ExistingLoadBalancerError
from tests import occm
from tests.builders import stored_service
from tests.emulated import connect
from tests.integration.engine.conftest import Env, occm_made, only, spec_for

# each test starts real pulumi runs or servers for many seconds: not in make test-fast
pytestmark = pytest.mark.slow

A = "loadbalancer.openstack.org/"
PORT = [occm.Port("TCP", 80, 30080, monitor=False)]  # what OCCM made: one TCP port, a floating IP


@pytest.mark.parametrize("annotated", [False, True], ids=["plain", "id-annotation"])
def test_occm_load_balancer_is_taken_over_not_duplicated(env: Env, annotated: bool) -> None:
    conn = connect(env.topo)
    made = occm_made(env, conn, "moved", PORT)
    config = env.config()
    annotations = {A + "load-balancer-id": made.lb_id} if annotated else {}
    spec = spec_for(stored_service("moved", annotations=annotations), config)
    stack = env.engine(config).stack(service=spec.service)
    try:
        result = stack.ensure(spec)
        assert result.outputs["lb_id"] == made.lb_id
        assert result.outputs["floating_ip"] == made.fip_address
        inv = env.cloud.inventory()
        assert only(inv["loadbalancers"])["id"] == made.lb_id
        assert only(inv["floatingips"])["id"] == made.fip_id
        assert only(inv["listeners"])["id"] == made.listeners[80]
        assert not stack.ensure(spec).changed  # the controller's next sync: a skip
    finally:
        stack.delete()
        occm.remove(conn, made)
    assert env.cloud.inventory()["loadbalancers"] == []


def test_a_floating_ip_detached_from_the_vip_keeps_its_address(env: Env) -> None:
    """OCCM's floating IP was detached from the VIP port (by hand, or a half-done migration):
    the takeover finds it by OCCM's description, imports it and associates it again. The
    Service keeps its address; no new floating IP is made."""
    conn = connect(env.topo)
    made = occm_made(env, conn, "detached", PORT)
    conn.network.update_ip(made.fip_id, port_id=None)
    config = env.config()
    spec = spec_for(stored_service("detached"), config)
    stack = env.engine(config).stack(service=spec.service)
    try:
        result = stack.ensure(spec)
        assert result.outputs["lb_id"] == made.lb_id
        assert result.outputs["floating_ip"] == made.fip_address
        kept = only(env.cloud.inventory()["floatingips"])
        assert kept["id"] == made.fip_id
        vip_port = only(env.cloud.inventory()["loadbalancers"])["vip_port_id"]
        assert kept["port_id"] == vip_port
        assert not stack.ensure(spec).changed
    finally:
        stack.delete()
        occm.remove(conn, made)
    assert env.cloud.inventory()["loadbalancers"] == []


def test_another_clusters_load_balancer_is_refused(env: Env) -> None:
    """Same --cluster-name, another cluster (OCCM #3102): its load balancer carries another
    cluster identity tag. Nothing is created, the error names it and the way out."""
    conn = connect(env.topo)
    made = occm_made(env, conn, "theirs", PORT)
    conn.load_balancer.update_load_balancer(
        made.lb_id, tags=[made.name, "kube_cluster_id_00000000-0000-4000-8000-0000000000aa"]
    )
    occm.wait_active(conn, made.lb_id)
    config = env.config()
    spec = spec_for(stored_service("theirs"), config)
    engine = env.engine(config)
    stack = engine.stack(service=spec.service)
    try:
        before = env.cloud.inventory()
        for _ in range(2):  # and again on the retry: the refusal left nothing behind
            with pytest.raises(ExistingLoadBalancerError) as refused:
                stack.ensure(spec)
            text = str(refused.value)
            assert made.lb_id in text
            assert "was not made by this cluster" in text
            assert "kube_cluster_id_" in text
            assert "lb-reconciler adopt --cluster-name itest" in text
            assert engine.stacks() == []
            assert env.cloud.inventory() == before
    finally:
        occm.remove(conn, made)

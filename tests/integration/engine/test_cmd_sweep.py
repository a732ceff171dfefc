"""`lb-reconciler sweep` with a real kube-apiserver, the real engine and the emulator.

The cluster has one Service; the cloud and the backend hold, besides its load balancer:
a stack whose Service is gone, a load balancer named for a gone Service of this cluster (with the
floating IP OCCM would give it), one named for the existing Service without a stack (OCCM's, to
adopt), and one of another cluster. The dry run lists exactly the two orphans and changes
nothing; ``--delete`` removes them (the floating IP too) and a second sweep finds nothing.

Across clusters (issue 13, OCCM #3102): two clusters named alike in one project make load
balancers with the same OCCM names; only those proven this cluster's (OCCM's description, and
this cluster's identity tag when there is one) are swept.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from reconciler.cli.main import main
from reconciler.controller.kubeapi import KubeApi
from reconciler.controller.kubeconfig import api_client
from reconciler.local.plane import LocalControlPlane
from reconciler.model import naming
from tests import occm
from tests.builders import make_service, stored_service
from tests.emulated import connect
from tests.integration.engine.conftest import CLUSTER, Env, kube_fixture, occm_made, spec_for

# each test starts real pulumi runs or servers for many seconds: not in make test-fast
pytestmark = pytest.mark.slow

NS = "sweep-test"


kube = kube_fixture(NS)


def sweep(env: Env, plane: LocalControlPlane, capsys: pytest.CaptureFixture[str], *extra: str):  # type: ignore[no-untyped-def]
    conf = env.cloud_conf_file(env.state_dir.parent / "cloud.conf")
    code = main(
        [
            "sweep",
            "--cloud-config", str(conf),
            "--state-dir", str(env.state_dir),
            "--cluster-name", CLUSTER,
            "--kubeconfig", str(plane.kubeconfig),
            "--min-age", "0",
            *extra,
        ]
    )  # fmt: skip
    out, err = capsys.readouterr()
    return code, out, err


def lb_named(conn: Any, env: Env, name: str, description: str = "") -> Any:
    return conn.load_balancer.create_load_balancer(
        name=name, description=description, vip_subnet_id=env.topo["subnet_id"]
    )


def occm_lb(conn: Any, env: Env, namespace: str, name: str) -> Any:
    """Named and described as OCCM does for a Service of this cluster."""
    lb_name = naming.lb_name(cluster_name=CLUSTER, namespace=namespace, name=name)
    description = naming.lb_description(cluster_name=CLUSTER, namespace=namespace, name=name)
    return lb_named(conn, env, lb_name, description)


def test_sweep_lists_then_deletes_orphans_both_ways(
    env: Env,
    kube: KubeApi,
    control_plane: LocalControlPlane,
    capsys: pytest.CaptureFixture[str],
    commands_env: pytest.MonkeyPatch,
) -> None:
    config = env.config()
    engine = env.engine(config)
    conn = connect(env.topo)

    for name in ("live", "occm-web"):
        body = make_service(
            name, namespace=NS, selector=None, ports=[{"port": 80, "protocol": "TCP"}], header=False
        )
        kube.create(f"/api/v1/namespaces/{NS}/services", body)
    live = stored_service("live")
    live["metadata"]["namespace"] = NS
    gone = stored_service("gone")
    gone["metadata"]["namespace"] = NS
    live_stack = engine.stack(service=spec_for(live, config).service)
    gone_stack = engine.stack(service=spec_for(gone, config).service)
    made: list[str] = []
    try:
        live_stack.ensure(spec_for(live, config))
        gone_lb_of_stack = gone_stack.ensure(spec_for(gone, config)).outputs["lb_id"]

        leaked = occm_lb(conn, env, NS, "deleted-long-ago")
        made.append(leaked.id)
        fip = conn.network.create_ip(
            floating_network_id=env.topo["external_network_id"],
            port_id=leaked.vip_port_id,
            description=naming.floating_ip_description(
                cluster_name=CLUSTER, namespace=NS, name="deleted-long-ago"
            ),
        )
        # OCCM's, for a Service deleted while OCCM was not running
        occm_gone = occm_lb(conn, env, "other-ns", "web")
        made.append(occm_gone.id)
        # OCCM's, for a Service that exists: to adopt, never to sweep
        adoptable = occm_lb(conn, env, NS, "occm-web")
        made.append(adoptable.id)
        foreign = lb_named(conn, env, f"kube_service_{CLUSTER}_eu_{NS}_web")  # cluster itest_eu
        made.append(foreign.id)
        before_ids = sorted(lb.id for lb in conn.load_balancer.load_balancers())

        code, out, _ = sweep(env, control_plane, capsys, "--output", "json")
        assert code == 2, out
        found = json.loads(out)
        assert [s["service"] for s in found["stacks"]] == [f"{NS}/gone"]
        assert [lb["id"] for lb in found["loadBalancers"]] == [leaked.id, occm_gone.id]
        assert all(not item["deleted"] for item in found["stacks"] + found["loadBalancers"])
        kept = {k["id"]: k["reason"] for k in found["kept"]}
        assert "adopt it" in kept[adoptable.id]
        assert found["errors"] == []
        assert sorted(lb.id for lb in conn.load_balancer.load_balancers()) == before_ids

        code, out, _ = sweep(env, control_plane, capsys)
        assert code == 2
        assert f"stack {gone_stack.name} (Service {NS}/gone): orphaned" in out
        assert "dry run: nothing was changed" in out
        assert (
            f"load balancer {adoptable.name} ({adoptable.id}, Service {NS}/occm-web): kept, "
            "its Service exists and has no stack: adopt it with `lb-reconciler adopt`"
        ) in out

        code, out, _ = sweep(env, control_plane, capsys, "--delete")
        assert code == 0, out
        assert f"stack {gone_stack.name} (Service {NS}/gone): deleted" in out
        remaining = {lb.id for lb in conn.load_balancer.load_balancers()}
        assert gone_lb_of_stack not in remaining
        assert leaked.id not in remaining
        assert occm_gone.id not in remaining
        assert {adoptable.id, foreign.id} <= remaining
        assert conn.network.find_ip(fip.id) is None
        assert [i.key for i in engine.stacks()] == [f"{NS}/live"]

        code, out, _ = sweep(env, control_plane, capsys)
        assert code == 0, out
        assert "nothing orphaned" in out
    finally:
        live_stack.delete()
        gone_stack.delete()
        for lb_id in made:
            if conn.load_balancer.find_load_balancer(lb_id) is not None:
                conn.load_balancer.delete_load_balancer(lb_id, cascade=True)
        for ip in conn.network.ips():
            if "deleted-long-ago" in (ip.description or ""):
                conn.network.delete_ip(ip)


def test_sweep_deletes_only_load_balancers_proven_this_clusters(
    env: Env,
    control_plane: LocalControlPlane,
    capsys: pytest.CaptureFixture[str],
    commands_env: pytest.MonkeyPatch,
) -> None:
    """Issue 13, across clusters: another cluster with the same --cluster-name ("itest") in
    this project has Service ids-test/web, which this cluster does not have. Its load balancer
    has the very name of one this cluster leaked; only the identity tag (kube_cluster_id_ + the
    kube-system UID) tells them apart. A third with the name but not OCCM's description was
    made by hand. ``--delete`` deletes this cluster's (and its floating IP) and keeps the others,
    each with the reason."""
    kube = KubeApi(api_client=api_client(kubeconfig=control_plane.kubeconfig))
    try:
        ours_id = kube.get("/api/v1/namespaces/kube-system")["metadata"]["uid"]
    finally:
        kube.close()
    theirs_id = "0d7e9c1a-5b8f-4e0b-9a3c-2f4d6e8a0b1c"
    conn = connect(env.topo)
    made: list[occm.OccmLoadBalancer] = []
    by_hand = None
    try:
        for identity in (ours_id, theirs_id):
            lb = occm_made(env, conn, "web", [], namespace="ids-test", nodes=[])
            made.append(lb)
            conn.load_balancer.update_load_balancer(
                lb.lb_id, tags=[lb.name, naming.cluster_id_tag(identity)]
            )
            occm.wait_active(conn, lb.lb_id)
        ours, theirs = made
        assert ours.name == theirs.name == "kube_service_itest_ids-test_web"
        by_hand = lb_named(conn, env, ours.name, "my own load balancer")
        occm.wait_active(conn, by_hand.id)

        code, out, _ = sweep(env, control_plane, capsys, "--output", "json")
        assert code == 2, out
        found = json.loads(out)
        assert found["clusterId"] == ours_id
        assert [lb["id"] for lb in found["loadBalancers"]] == [ours.lb_id]
        kept = {k["id"]: k["reason"] for k in found["kept"]}
        assert kept == {
            theirs.lb_id: (
                "not made by this cluster: it carries another cluster's identity tag "
                f"kube_cluster_id_{theirs_id} (this cluster's is kube_cluster_id_{ours_id}): "
                "another cluster with the same --cluster-name in this project"
            ),
            by_hand.id: (
                "not made by this cluster: its description 'my own load balancer' is not "
                "OCCM's for cluster itest ('Kubernetes external service <namespace>/<name> from "
                "cluster itest'): made by hand, by another tool or for another cluster"
            ),
        }

        code, out, _ = sweep(env, control_plane, capsys, "--delete")
        assert code == 0, out
        assert f"load balancer {ours.name} ({ours.lb_id}, Service ids-test/web): deleted" in out
        assert (
            f"load balancer {theirs.name} ({theirs.lb_id}, Service ids-test/web): kept, not "
            "made by this cluster: it carries another cluster's identity tag"
        ) in out
        remaining = {lb.id for lb in conn.load_balancer.load_balancers()}
        assert ours.lb_id not in remaining
        assert {theirs.lb_id, by_hand.id} <= remaining
        assert conn.network.find_ip(ours.fip_id) is None  # OCCM's floating IP went with it
        assert conn.network.find_ip(theirs.fip_id) is not None
    finally:
        for lb in made:
            occm.remove(conn, lb)
        if by_hand is not None and conn.load_balancer.find_load_balancer(by_hand.id):
            conn.load_balancer.delete_load_balancer(by_hand.id, cascade=True)

"""`lb-reconciler sweep` with a real kube-apiserver, the real engine and the emulator.

The cluster has one Service; the cloud and the backend hold, besides its load balancer:
a stack whose Service is gone, a load balancer named for a gone Service of this cluster (with the
floating IP OCCM would give it), one named for the existing Service without a stack (OCCM's, to
adopt), and one of another cluster. The dry run lists exactly the two orphans and changes
nothing; ``--delete`` removes them (the floating IP too) and a second sweep finds nothing.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from reconciler.cli import main
from reconciler.kube import api_client
from reconciler.kubeio import KubeApi
from reconciler.localplane import LocalControlPlane
from reconciler.model import naming
from tests.emulated import cloud_conf_text
from tests.integration.engine.conftest import CLUSTER, PASSPHRASE, Env, service, spec_for
from tests.integration.engine.test_engine_cases import sdk

NS = "sweep-test"


@pytest.fixture
def kube(control_plane: LocalControlPlane) -> Iterator[KubeApi]:
    api = KubeApi(api_client=api_client(kubeconfig=control_plane.kubeconfig))
    api.create("/api/v1/namespaces", {"metadata": {"name": NS}})
    yield api
    api.request(method="DELETE", path=f"/api/v1/namespaces/{NS}")
    api.close()


def sweep(env: Env, plane: LocalControlPlane, capsys: pytest.CaptureFixture[str], *extra: str):  # type: ignore[no-untyped-def]
    conf = env.state_dir.parent / "cloud.conf"
    conf.write_text(cloud_conf_text(env.topo, f"subnet-id = {env.topo['subnet_id']}\n"))
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


def lb_named(conn: Any, env: Env, name: str) -> Any:
    return conn.load_balancer.create_load_balancer(name=name, vip_subnet_id=env.topo["subnet_id"])


def test_sweep_lists_then_deletes_orphans_both_ways(
    env: Env,
    kube: KubeApi,
    control_plane: LocalControlPlane,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE", PASSPHRASE)
    monkeypatch.delenv("PULUMI_BACKEND_URL", raising=False)
    config = env.config()
    engine = env.engine(config)
    conn = sdk(env)

    lb_spec = {"type": "LoadBalancer", "ports": [{"port": 80, "protocol": "TCP"}]}
    for name in ("live", "occm-web"):
        body = {"metadata": {"name": name, "namespace": NS}, "spec": lb_spec}
        kube.create(f"/api/v1/namespaces/{NS}/services", body)
    live = service("live")
    live["metadata"]["namespace"] = NS
    gone = service("gone")
    gone["metadata"]["namespace"] = NS
    live_stack = engine.stack(service=spec_for(live, config).service)
    gone_stack = engine.stack(service=spec_for(gone, config).service)
    made: list[str] = []
    try:
        live_stack.ensure(spec_for(live, config))
        gone_lb_of_stack = gone_stack.ensure(spec_for(gone, config)).outputs["lb_id"]

        leaked_name = naming.lb_name(cluster_name=CLUSTER, namespace=NS, name="deleted-long-ago")
        leaked = lb_named(conn, env, leaked_name)
        made.append(leaked.id)
        fip = conn.network.create_ip(
            floating_network_id=env.topo["external_network_id"],
            port_id=leaked.vip_port_id,
            description=naming.floating_ip_description(
                cluster_name=CLUSTER, namespace=NS, name="deleted-long-ago"
            ),
        )
        # OCCM's, for a Service deleted while OCCM was not running
        occm_gone = lb_named(
            conn, env, naming.lb_name(cluster_name=CLUSTER, namespace="other-ns", name="web")
        )
        made.append(occm_gone.id)
        # OCCM's, for a Service that exists: to adopt, never to sweep
        adoptable = lb_named(
            conn, env, naming.lb_name(cluster_name=CLUSTER, namespace=NS, name="occm-web")
        )
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

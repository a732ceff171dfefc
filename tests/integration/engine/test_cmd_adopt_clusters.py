"""`lb-reconciler adopt` across clusters (issue 13, OCCM #3102), with a real kube-apiserver, the
real engine and the emulator.

Two clusters with the same ``--cluster-name`` ("itest") in one project both have a Service
ids-adopt/web-<n>: their OCCM load balancers have the same names, and only the cluster identity
tag (``kube_cluster_id_`` + the kube-system namespace's UID, OCCM's PR #3103) tells them apart.
The one tagged with this cluster's identity is adoptable; the one tagged with another's is
refused, naming it and the reason, and nothing is adopted; one without an identity tag (OCCM
before #3103) is adopted and tagged with this cluster's. ``--apply`` without an explicit
``--cluster-name`` is refused before anything is read.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from reconciler.cli.main import main
from reconciler.controller.kubeapi import KubeApi
from reconciler.local.plane import LocalControlPlane
from reconciler.model import naming
from tests import occm
from tests.builders import make_service
from tests.emulated import connect
from tests.integration.engine.conftest import CLUSTER, Env, kube_fixture, occm_made

# each test starts real pulumi runs or servers for many seconds: not in make test-fast
pytestmark = pytest.mark.slow

NS = "ids-adopt"
THEIRS = "0d7e9c1a-5b8f-4e0b-9a3c-2f4d6e8a0b1c"


kube = kube_fixture(NS)


def adopt(
    env: Env,
    plane: LocalControlPlane,
    capsys: pytest.CaptureFixture[str],
    *extra: str,
    cluster_name: bool = True,
) -> tuple[int, str, str]:
    conf = env.cloud_conf_file(env.state_dir.parent / "cloud.conf")
    argv = ["adopt", "--cloud-config", str(conf), "--state-dir", str(env.state_dir)]
    argv += ["--kubeconfig", str(plane.kubeconfig)]
    argv += ["--cluster-name", CLUSTER] if cluster_name else []
    code = main([*argv, *extra])
    out, err = capsys.readouterr()
    return code, out, err


def cluster_nodes(kube: KubeApi) -> list[tuple[str, str]]:
    """The Nodes OCCM would have made members of (other tests of the session may have added
    some to the shared control plane): name and InternalIP."""
    return sorted(
        (str(n["metadata"]["name"]), str(a["address"]))
        for n in kube.list("/api/v1/nodes").get("items") or []
        for a in n.get("status", {}).get("addresses") or []
        if a.get("type") == "InternalIP"
    )


def make_tagged(conn: Any, env: Env, kube: KubeApi, name: str, identity: str) -> Any:
    """Service NS/<name> and the load balancer OCCM made for it, tagged with ``identity``."""
    body = make_service(
        name, namespace=NS, selector=None, ports=[{"port": 80, "protocol": "TCP"}], header=False
    )
    svc = kube.create(f"/api/v1/namespaces/{NS}/services", body)
    port = occm.Port("TCP", 80, svc["spec"]["ports"][0]["nodePort"], monitor=False)
    made = occm_made(env, conn, name, [port], namespace=NS, nodes=cluster_nodes(kube))
    if identity:
        conn.load_balancer.update_load_balancer(
            made.lb_id, tags=[made.name, naming.cluster_id_tag(identity)]
        )
        occm.wait_active(conn, made.lb_id)
    return made


def test_adopt_takes_only_this_clusters_load_balancers(
    env: Env,
    kube: KubeApi,
    control_plane: LocalControlPlane,
    capsys: pytest.CaptureFixture[str],
    commands_env: pytest.MonkeyPatch,
) -> None:
    ours_id = kube.get("/api/v1/namespaces/kube-system")["metadata"]["uid"]
    conn = connect(env.topo)
    made = []
    try:
        made.append(make_tagged(conn, env, kube, "web-1", ours_id))
        made.append(make_tagged(conn, env, kube, "web-2", THEIRS))
        made.append(make_tagged(conn, env, kube, "web-3", ""))
        _ours, theirs, untagged = made
        before = occm.snapshot(env.cloud.inventory())

        code, out, err = adopt(env, control_plane, capsys, "--apply", cluster_name=False)
        assert code == 1
        assert err.startswith("error: --apply needs --cluster-name given explicitly")

        code, out, _ = adopt(env, control_plane, capsys, "--namespace", NS, "--output", "json")
        assert code == 1, out  # one refused
        results = {r["service"]: r for r in json.loads(out)}
        statuses = {key: r["status"] for key, r in results.items()}
        assert statuses == {
            f"{NS}/web-1": "adoptable",
            f"{NS}/web-2": "refused",
            f"{NS}/web-3": "adoptable",
        }
        assert results[f"{NS}/web-2"]["problems"] == [
            f"load balancer {theirs.name} ({theirs.lb_id}) was not made by this cluster: it "
            f"carries another cluster's identity tag kube_cluster_id_{THEIRS} (this cluster's "
            f"is kube_cluster_id_{ours_id}): another cluster with the same --cluster-name in "
            "this project; it is not adopted (a cluster adopts only its own). If it is another "
            "cluster's, give this cluster a --cluster-name of its own; if nobody uses it, "
            "delete it by hand"
        ]

        # not even when in-place updates are allowed (the old refusal was only the tag's update)
        code, out, _ = adopt(
            env, control_plane, capsys, f"{NS}/web-2", "--apply", "--allow-updates"
        )
        assert code == 1, out
        assert f"{NS}/web-2: refused" in out
        assert occm.snapshot(env.cloud.inventory()) == before
        engine = env.engine(env.config())
        assert engine.stacks() == []  # nothing adopted

        # OCCM before PR #3103 tagged none: adopting it tags it with this cluster's identity
        code, out, _ = adopt(env, control_plane, capsys, f"{NS}/web-3", "--apply")
        assert code == 0, out
        assert f"{NS}/web-3: adopted" in out
        assert f"note    the load balancer is tagged kube_cluster_id_{ours_id}" in out
        assert "the controller's next sync skips it" in out
        tags = conn.load_balancer.get_load_balancer(untagged.lb_id).tags
        assert sorted(tags) == sorted([untagged.name, f"kube_cluster_id_{ours_id}"])
        (adopted,) = engine.stacks()
        assert adopted.lb_id == untagged.lb_id
        engine.stack_for(adopted).delete()
    finally:
        for lb in made:
            occm.remove(conn, lb)

"""The commands a person or CI runs, on each kind of backend: file://, postgres://, s3://.

One cluster, two Service stacks on the backend (one whose Service exists, one whose Service is
gone), a load balancer changed behind its stack's back. On each backend, with only the backend's
URL (and, for s3://, its keys) and a state folder of their own, as CI has them:
``lb-reconciler stacks`` lists both; the drift check in report mode names the change and writes
nothing; ``lb-reconciler preview`` of an edited manifest says what would change (exit 2);
``lb-reconciler sweep --delete`` deletes the orphaned stack and its load balancer and keeps the
other; ``lb-reconciler adopt --apply`` takes an OCCM load balancer into a stack on the backend,
which the engine then finds there. (The controller's own flow and failover on each backend:
tests/e2e/.)
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from reconciler.cli.main import main
from reconciler.controller.kubeapi import KubeApi
from reconciler.controller.kubeconfig import api_client
from reconciler.local.plane import LocalControlPlane
from tests import occm
from tests.builders import make_service, stored_service
from tests.emulated import connect
from tests.integration.engine.conftest import CLUSTER, NODES, Env, occm_made, spec_for
from tests.integration.engine.test_cmd_adopt_clusters import cluster_nodes

# each test starts real pulumi runs or servers for many seconds: not in make test-fast
pytestmark = pytest.mark.slow

_RUNS = itertools.count()


@pytest.fixture
def kube_ns(backend_env: Env, control_plane: LocalControlPlane) -> Iterator[tuple[KubeApi, str]]:
    """The admin's client and a namespace of this test's own. No namespace controller runs on
    the local control plane, so a deleted namespace stays Terminating and its name cannot be
    reused by the next test or parameter."""
    assert backend_env.backend is not None
    namespace = f"backend-cmds-{next(_RUNS)}-{backend_env.backend.kind}"
    api = KubeApi(api_client=api_client(kubeconfig=control_plane.kubeconfig))
    api.create("/api/v1/namespaces", {"metadata": {"name": namespace}})
    yield api, namespace
    api.request(method="DELETE", path=f"/api/v1/namespaces/{namespace}")
    api.close()


@pytest.fixture
def backend_commands_env(backend_env: Env, commands_env: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """The commands' environment with what ``pulumi`` needs beside the backend's URL (the
    keys of s3://), as CI would have it."""
    assert backend_env.backend is not None
    for key, value in backend_env.backend.env.items():
        commands_env.setenv(key, value)
    return commands_env


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    out, _err = capsys.readouterr()
    return code, out


def test_stacks_drift_preview_and_sweep_on_each_backend(
    backend_env: Env,
    kube_ns: tuple[KubeApi, str],
    control_plane: LocalControlPlane,
    capsys: pytest.CaptureFixture[str],
    backend_commands_env: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    env = backend_env
    kube, ns = kube_ns
    assert env.backend is not None
    url = env.backend.url
    config = env.config()
    engine = env.engine(config)
    ci = tmp_path / "ci"  # a state folder of the commands' own: only the URL is shared
    conf = env.cloud_conf_file(tmp_path / "cloud.conf")
    common = ["--state-dir", str(ci), "--backend-url", url, "--cluster-name", CLUSTER]

    kube.create(
        f"/api/v1/namespaces/{ns}/services",
        make_service("live", namespace=ns, selector=None, ports=[{"port": 80, "protocol": "TCP"}]),
    )
    live, gone = stored_service("live"), stored_service("gone")
    live["metadata"]["namespace"] = gone["metadata"]["namespace"] = ns
    live_stack = engine.stack(service=spec_for(live, config).service)
    gone_stack = engine.stack(service=spec_for(gone, config).service)
    try:
        lb_id = live_stack.ensure(spec_for(live, config)).outputs["lb_id"]
        gone_lb = gone_stack.ensure(spec_for(gone, config)).outputs["lb_id"]

        code, out = _run(capsys, "stacks", *common, "--output", "json")
        assert code == 0, out
        assert sorted(r["service"] for r in json.loads(out)) == [f"{ns}/gone", f"{ns}/live"]

        conn = connect(env.topo)
        (listener,) = conn.load_balancer.get_load_balancer(lb_id).listeners
        conn.load_balancer.update_listener(listener["id"], connection_limit=7)
        store = engine.store
        assert store is not None
        before = {o.key: o.size for o in store.objects_of(live_stack.name)}
        report = live_stack.check_drift()
        (drifted,) = report.resources
        assert (drifted.kind, drifted.cloud_id) == ("Listener", listener["id"])
        assert [p.name for p in drifted.properties] == ["connectionLimit"]
        assert {o.key: o.size for o in store.objects_of(live_stack.name)} == before

        nodes = tmp_path / "nodes.yaml"
        nodes.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": NODES}))
        edited = make_service(
            "live",
            namespace=ns,
            annotations={},
            ports=[{"name": "a", "port": 80}, {"name": "b", "port": 81}],
        )
        manifest = tmp_path / "live.yaml"
        manifest.write_text(yaml.safe_dump(edited, sort_keys=False))
        preview = ["preview", "--cloud-config", str(conf), "--nodes", str(nodes)]
        code, out = _run(capsys, *preview, *common, "-f", str(manifest), "--output", "json")
        assert code == 2, out  # changes
        assert json.loads(out), out

        sweep = [
            "sweep",
            "--cloud-config",
            str(conf),
            "--kubeconfig",
            str(control_plane.kubeconfig),
        ]
        code, out = _run(capsys, *sweep, *common, "--min-age", "0", "--delete")
        assert code == 0, out
        assert f"stack {gone_stack.name} (Service {ns}/gone): deleted" in out
        remaining: set[Any] = {lb.id for lb in conn.load_balancer.load_balancers()}
        assert gone_lb not in remaining
        assert lb_id in remaining
        assert [i.key for i in engine.stacks()] == [f"{ns}/live"]
    finally:
        live_stack.delete()
        gone_stack.delete()
        engine.close()


def test_adopt_on_each_backend(
    backend_env: Env,
    kube_ns: tuple[KubeApi, str],
    control_plane: LocalControlPlane,
    capsys: pytest.CaptureFixture[str],
    backend_commands_env: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    env = backend_env
    kube, ns = kube_ns
    assert env.backend is not None
    conf = env.cloud_conf_file(tmp_path / "cloud.conf")
    body = make_service(
        "moved", namespace=ns, selector=None, ports=[{"port": 80, "protocol": "TCP"}], header=False
    )
    svc = kube.create(f"/api/v1/namespaces/{ns}/services", body)
    conn = connect(env.topo)
    port = occm.Port("TCP", 80, svc["spec"]["ports"][0]["nodePort"], monitor=False)
    made = occm_made(env, conn, "moved", [port], namespace=ns, nodes=cluster_nodes(kube))
    engine = env.engine(env.config())
    try:
        code = main(
            [
                "adopt",
                f"{ns}/moved",
                "--apply",
                "--cloud-config",
                str(conf),
                "--kubeconfig",
                str(control_plane.kubeconfig),
                "--state-dir",
                str(tmp_path / "ci"),
                "--backend-url",
                env.backend.url,
                "--cluster-name",
                CLUSTER,
            ]
        )
        out, _err = capsys.readouterr()
        assert code == 0, out
        assert f"{ns}/moved: adopted" in out
        (adopted,) = engine.stacks()  # on the backend, seen by another process's engine
        assert adopted.lb_id == made.lb_id
        engine.stack_for(adopted).delete()
        assert engine.stacks() == []
        assert [lb for lb in env.cloud.lbs() if lb["id"] == made.lb_id] == []
    except BaseException:
        occm.remove(conn, made)
        raise
    finally:
        engine.close()

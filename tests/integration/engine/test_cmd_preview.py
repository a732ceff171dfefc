"""`lb-reconciler preview` end to end: real engine, real Pulumi previews, the emulator.

A Service is brought up by the engine as the controller would (with its uid and node port), then
manifests as they sit in git (no uid, no nodePort, no namespace) are previewed through
``reconciler.cli.main.main``: unchanged (exit 0), a port added (creates, exit 2, in text, JSON and
Markdown), a ``loadBalancerIP`` and a zone (create-only: not applied, said so), an invalid
annotation (exit 1, file and field named, nothing touched), and a new Service next to skipped
documents (creates, no stack left behind). Throughout, the existing stack's config file stays
byte for byte the same. CI's case, a state dir of its own on the controller's backend, previews
the same.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from reconciler.cli.main import main
from reconciler.engine.stack import Engine, ServiceStack
from tests import occm
from tests.builders import make_service, stored_service
from tests.emulated import connect
from tests.integration.engine.conftest import CLUSTER, NODES, Env, occm_made, spec_for

# each test starts real pulumi runs or servers for many seconds: not in make test-fast
pytestmark = pytest.mark.slow

A = "loadbalancer.openstack.org/"
MONITOR = {A + "enable-health-monitor": "true"}


def manifest(name: str, *, ports: list[dict[str, Any]] | None = None, **spec: Any) -> str:
    """A Service as written by hand: no uid, no namespace, no nodePort."""
    body = make_service(
        name,
        annotations=spec.pop("annotations", MONITOR),
        ports=ports or [{"name": "http", "port": 80, "targetPort": 8080}],
        **spec,
    )
    return yaml.safe_dump(body, sort_keys=False)


class Preview:
    def __init__(self, env: Env, capsys: pytest.CaptureFixture[str], folder: Path) -> None:
        self.env, self.capsys, self.folder = env, capsys, folder
        conf = env.cloud_conf_file(folder / "cloud.conf")
        nodes = folder / "nodes.yaml"
        nodes.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": NODES}))
        self.base = [
            "preview",
            "--cloud-config",
            str(conf),
            "--state-dir",
            str(env.state_dir),
            "--cluster-name",
            CLUSTER,
            "--nodes",
            str(nodes),
        ]

    def __call__(self, text: str, *extra: str, file: str = "svc.yaml") -> tuple[int, str, str]:
        path = self.folder / file
        path.write_text(text)
        code = main([*self.base, "-f", str(path), *extra])
        out, err = self.capsys.readouterr()
        return code, out, err


@pytest.fixture
def preview(
    env: Env,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    commands_env: pytest.MonkeyPatch,
) -> Preview:
    commands_env.delenv("KUBECONFIG", raising=False)
    folder = tmp_path / "manifests"
    folder.mkdir()
    return Preview(env, capsys, folder)


def brought_up(env: Env) -> tuple[Engine, ServiceStack, dict[str, Any]]:
    """default/web as the controller has it: one port, node port 30080, a health monitor."""
    config = env.config()
    live = stored_service("web", annotations=MONITOR)
    spec = spec_for(live, config)
    engine = env.engine(config)
    stack = engine.stack(service=spec.service)
    outputs = stack.ensure(spec).outputs
    return engine, stack, outputs


def config_file(stack: ServiceStack) -> Path:
    return stack.work_dir / f"Pulumi.{stack.name}.yaml"


def test_preview_of_changes_to_an_existing_service(env: Env, preview: Preview) -> None:
    engine, stack, outputs = brought_up(env)
    try:
        config_before = config_file(stack).read_bytes()
        spec_before = yaml.safe_load(config_before)["config"]["lb-reconciler:spec"]
        inventory_before = env.cloud.inventory()

        # (4) the manifest as in git: uid and node port come from the stack, nothing changes
        code, out, err = preview(manifest("web"))
        assert code == 0, out + err
        assert "default/web" in out
        assert "no changes" in out
        assert "previewing default/web" in err  # progress on stderr

        # in CI: a state dir of its own, the controller's backend
        ci = preview.folder.parent / "ci-state"
        backend = engine.settings.backend
        code, out, _ = preview(manifest("web"), "--state-dir", str(ci), "--backend-url", backend)
        assert code == 0, out
        assert "no changes" in out

        # --refresh reads the cloud first; a cloud as the stack holds it is no change (each
        # resource's refresh step was counted as one: "7 to refresh", exit 2, for every Service)
        code, out, _ = preview(manifest("web"), "--refresh")
        assert code == 0, out
        assert "no changes" in out

        # (1) a second port: its listener, pool, members and monitor are created
        two = [{"name": "http", "port": 80}, {"name": "https", "port": 443}]
        code, out, _ = preview(manifest("web", ports=two))
        assert code == 2, out
        for name in ("listener-tcp-443", "pool-tcp-443", "members-tcp-443", "monitor-tcp-443"):
            assert any(line.split()[:2] == ["+", name] for line in out.splitlines()), out
        assert "tcp-80" not in out  # the first port's chain is unchanged
        assert "4 to create" in out
        assert "has no nodePort yet" in out  # 443's node port is a placeholder, said so
        assert "\033[" not in out  # not a terminal: no colour

        code, out, err = preview(manifest("web", ports=two), "-o", "json")
        assert code == 2
        doc = json.loads(out)  # stdout is only the JSON document
        (web,) = doc["services"]
        assert (web["service"], web["status"], web["new"]) == ("default/web", "changes", False)
        assert web["summary"] == {"create": 4}
        assert [r["name"] for r in web["resources"]] == [
            "listener-tcp-443",
            "pool-tcp-443",
            "members-tcp-443",
            "monitor-tcp-443",
        ]
        assert web["externalIPChanges"] == []
        assert web["externalIP"] == outputs["floating_ip"]
        assert doc["exitCode"] == 2
        assert "previewing default/web" in err

        code, out, _ = preview(manifest("web", ports=two), "-o", "markdown")
        assert code == 2
        assert out.startswith("### lb-reconciler preview: 1 Service: 1 with changes")
        assert "#### `default/web`: 4 to create" in out
        assert "| `+` | `monitor-tcp-443` | Monitor | create |" in out

        # (2) create-only fields: loadBalancerIP of an external Service (OCCM keeps the
        # floating IP on the VIP port) and the availability zone. Nothing is replaced; each
        # is said to be not applied, with the value in use and the value asked for
        edited = manifest(
            "web",
            loadBalancerIP="172.24.4.99",
            annotations={**MONITOR, A + "availability-zone": "az-2"},
        )
        code, out, _ = preview(edited)
        assert code == 0, out
        assert "no changes" in out
        assert "replace" not in out
        assert (
            "! not applied: floating_ip.address (spec.loadBalancerIP) is create-only: the "
            "floating IP keeps the cloud's choice, not '172.24.4.99' as asked" in out
        )
        assert "! not applied: availability_zone (annotation " in out
        assert "ip_family" not in out  # not in the manifest: the API server fills it in
        code, out, _ = preview(edited, "-o", "markdown")
        assert "⚠️ **Not applied**: availability_zone" in out
        code, out, _ = preview(edited, "-o", "json")
        (web,) = json.loads(out)["services"]
        assert [t.split(" ")[0] for t in web["notApplied"]] == [
            "availability_zone",
            "floating_ip.address",
        ]

        # (3) an invalid annotation: exit 1, file, Service and field named, nothing previewed
        bad = manifest("web", annotations={A + "connection-limit": "abc"})
        code, out, err = preview(bad, file="bad.yaml")
        assert code == 1
        bad_path = str(preview.folder / "bad.yaml")
        line = next(line for line in out.splitlines() if "connection-limit" in line)
        assert line.strip().startswith(f"{bad_path}:1: Service default/web: ")
        assert 'metadata.annotations["loadbalancer.openstack.org/connection-limit"]' in line
        assert "'abc' is not an integer; fix: write a whole number" in line
        assert "nothing was previewed" in err
        assert "previewing" not in err

        # nothing was touched: the cloud, the stacks, the stack's config file
        assert env.cloud.inventory() == inventory_before
        assert [i.key for i in engine.stacks()] == ["default/web"]
        after = config_file(stack).read_bytes()
        assert after == config_before
        assert yaml.safe_load(after)["config"]["lb-reconciler:spec"] == spec_before
        assert not stack.ensure(
            spec_for(stored_service("web", annotations=MONITOR), env.config())
        ).changed

        # a listener changed by hand: only --refresh sees it, as the update that puts it back
        conn = connect(env.topo)
        (listener,) = conn.load_balancer.listeners(loadbalancer_id=outputs["lb_id"])
        conn.load_balancer.update_listener(listener.id, connection_limit=7)
        code, out, _ = preview(manifest("web"))
        assert code == 0, out
        code, out, _ = preview(manifest("web"), "--refresh")
        assert code == 2, out
        assert "1 to update" in out
        assert "connectionLimit: 7 -> -1" in out
    finally:
        stack.delete()


def test_preview_of_a_new_service_among_skipped_documents(env: Env, preview: Preview) -> None:
    engine, stack, _ = brought_up(env)
    try:
        config_before = config_file(stack).read_bytes()
        deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}}
        internal = manifest("cache", type="ClusterIP")
        other = manifest("edge", loadBalancerClass="example.com/other")
        docs = [
            "# Source: chart/templates/deployment.yaml",
            yaml.safe_dump(deployment),
            "---\n---\n# Source: chart/templates/fresh.yaml",
            manifest("fresh"),
            "---",
            internal,
            "---",
            other,
            "---",
            manifest("web", type="ClusterIP"),  # was a load balancer: applying deletes it
        ]
        code, out, err = preview("\n".join(docs), "-o", "json", file="chart.yaml")
        assert code == 2, out + err
        doc = json.loads(out)
        by_key = {s["service"]: s for s in doc["services"]}
        assert set(by_key) == {"default/fresh", "default/web"}
        fresh = by_key["default/fresh"]
        assert (fresh["status"], fresh["new"]) == ("changes", True)
        assert fresh["summary"] == {"create": 7}
        assert {r["name"] for r in fresh["resources"]} == {
            "lb",
            "listener-tcp-80",
            "pool-tcp-80",
            "members-tcp-80",
            "monitor-tcp-80",
            "fip",
            "fip-association",
        }
        web = by_key["default/web"]
        assert web["status"] == "deleted"
        assert web["externalIPChanges"]
        skipped = sorted((s["kind"], s["name"], s["reason"]) for s in doc["skipped"])
        assert skipped == [
            ("Deployment", "web", "not a Service (Deployment)"),
            ("Service", "default/cache", "type ClusterIP, not LoadBalancer"),
            (
                "Service",
                "default/edge",
                "loadBalancerClass example.com/other is not served "
                "(add --load-balancer-class example.com/other to serve it)",
            ),
            ("Service", "default/web", "type ClusterIP, not LoadBalancer"),
        ]

        # (5) nothing left behind by the new Service's preview: no stack, no work folder
        assert [i.key for i in engine.stacks()] == ["default/web"]
        assert not (env.state_dir / "work" / f"{CLUSTER}.default.fresh").exists()
        assert config_file(stack).read_bytes() == config_before
        assert len(env.cloud.lbs()) == 1  # only web's
    finally:
        stack.delete()


def test_preview_of_a_new_service_whose_occm_load_balancer_exists(
    env: Env, preview: Preview
) -> None:
    """Issue 13 ("never duplicate"): the controller takes OCCM's load balancer over instead of
    creating a second one, so the preview must say so, not show a create; and one it would
    refuse (another cluster's) is a failure naming it and the command to run."""
    conn = connect(env.topo)
    port = [occm.Port("TCP", 80, 30080, monitor=False)]
    ours = occm_made(env, conn, "moved", port)
    theirs = occm_made(env, conn, "theirs", port)
    conn.load_balancer.update_load_balancer(
        theirs.lb_id, tags=[theirs.name, "kube_cluster_id_00000000-0000-4000-8000-0000000000aa"]
    )
    occm.wait_active(conn, theirs.lb_id)
    try:
        before = occm.snapshot(env.cloud.inventory())
        docs = [manifest("moved", annotations={}), "---", manifest("theirs", annotations={})]
        code, out, err = preview("\n".join(docs), "-o", "json")
        assert code == 1, out + err  # a Service failed
        by_key = {s["service"]: s for s in json.loads(out)["services"]}
        moved = by_key["default/moved"]
        assert moved["status"] == "changes", moved
        ops = {r["name"]: r["op"] for r in moved["resources"]}
        assert (ops["lb"], ops["fip"], ops["listener-tcp-80"]) == ("import", "import", "import")
        assert "create" not in ops.values()
        assert any(
            f"takes over load balancer {ours.name} ({ours.lb_id})" in n for n in moved["notes"]
        ), moved["notes"]
        failed = by_key["default/theirs"]
        assert failed["status"] == "failed"
        assert theirs.lb_id in failed["error"]
        assert "was not made by this cluster" in failed["error"]
        assert "lb-reconciler adopt --cluster-name itest" in failed["error"]
        # nothing changed, nothing left behind
        assert occm.snapshot(env.cloud.inventory()) == before
        assert env.engine(env.config()).stacks() == []
    finally:
        occm.remove(conn, ours)
        occm.remove(conn, theirs)

"""``lb-reconciler adopt`` end to end: the command as a user runs it, against a real
kube-apiserver and the emulator, then the real controller on the adopted stacks.

Two Services as OCCM leaves them (its load balancer made the OCCM way with openstacksdk, the
``load-balancer-id`` annotation, the finalizer, the status with the floating IP): ``web``
matches its Service, ``legacy`` has another lb-method than the Service asks for. The dry run
shows the imports (and the cluster identity tag the load balancers get), refuses ``legacy`` and
changes nothing; ``--apply`` adopts ``web`` (and
``legacy`` with ``--allow-updates``); the controller then syncs both without changing the
cloud (same load balancers, floating IPs, listeners). The way back to OCCM (docs/adopt.md): the
controller stopped and the stacks removed with ``pulumi stack rm --force``, the cloud is as the
adoption left it and each load balancer is found by its OCCM name, with OCCM's description and
its floating IP on the VIP; a controller started again takes them over once more, and deleting
the Services deletes them.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import uuid
from pathlib import Path

import pytest

from emulator.server import EmulatorHandle
from reconciler.cli.main import main
from reconciler.config import Secret, parse_cloud_conf
from reconciler.controller.backend import PulumiEngine
from reconciler.controller.kubeapi import KubeApi, KubeError
from reconciler.controller.kubeconfig import api_client
from reconciler.controller.loop import Controller
from reconciler.controller.queue import Backoff
from reconciler.controller.sync_plan import ControllerSettings
from reconciler.engine.stack import Engine, EngineSettings
from reconciler.local.plane import LocalControlPlane
from reconciler.local.toolchain import Toolchain
from reconciler.model import naming
from reconciler.model.annotations import LOAD_BALANCER_ID
from stacks.vocabulary import PROJECT
from tests import occm
from tests.e2e.occm_left import service_as_occm_left_it
from tests.e2e.test_controller import ensure_nodes, wait_for
from tests.emulated import EmulatorAdmin, cloud_conf_text, connect, subnet_line

pytestmark = pytest.mark.e2e
CLUSTER = "e2e"
PASSPHRASE = "adopt-e2e-passphrase"


def test_adopt_command_then_the_controller(
    control_plane: LocalControlPlane,
    toolchain: Toolchain,
    emu: EmulatorHandle,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    topo = emu.topology()
    cloud = EmulatorAdmin(emu)
    conf_text = cloud_conf_text(topo, subnet_line(topo))
    conf_file = tmp_path / "cloud.conf"
    conf_file.write_text(conf_text)
    parsed = parse_cloud_conf(text=conf_text)
    assert parsed.config is not None
    config = parsed.config
    state = tmp_path / "state"
    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE", PASSPHRASE)
    monkeypatch.delenv("PULUMI_BACKEND_URL", raising=False)
    monkeypatch.delenv("KUBECONFIG", raising=False)
    kube = KubeApi(api_client=api_client(kubeconfig=control_plane.kubeconfig))
    ensure_nodes(kube)
    ns = f"adopt-{uuid.uuid4().hex[:6]}"
    kube.create("/api/v1/namespaces", {"metadata": {"name": ns}})
    conn = connect(topo)

    # -- the cluster as OCCM left it ---------------------------------------------------------
    made = {
        name: service_as_occm_left_it(
            kube, conn, topo, config, namespace=ns, name=name, cluster=CLUSTER, lb_algorithm=method
        )
        for name, method in (("web", "ROUND_ROBIN"), ("legacy", "LEAST_CONNECTIONS"))
    }

    def adopt(*extra: str) -> tuple[int, str]:
        code = main(
            [
                "adopt",
                "--kubeconfig",
                str(control_plane.kubeconfig),
                "--cloud-config",
                str(conf_file),
                "--state-dir",
                str(state),
                "--cluster-name",
                CLUSTER,
                *extra,
            ]
        )
        out, _err = capsys.readouterr()
        (tmp_path / "outputs.txt").open("a").write(f"$ adopt {' '.join(extra)}\n{out}\n")
        return code, out

    engine = Engine(
        settings=EngineSettings(
            cluster_name=CLUSTER,
            state_dir=state,
            auth=config.auth,
            toolchain=toolchain,
            passphrase=Secret(PASSPHRASE),
            # the cluster's identity, as `lb-reconciler run` reads it: the take-over of a load
            # balancer that carries one needs it
            cluster_id=kube.get("/api/v1/namespaces/kube-system")["metadata"]["uid"],
        )
    )
    controller: Controller | None = None

    def start_controller() -> Controller:
        started = Controller(
            kube=kube,
            engine=PulumiEngine(engine=engine),
            config=config,
            settings=ControllerSettings(cluster_name=CLUSTER),
            workers=2,
            backoff=Backoff(base=1.0, cap=5.0, soon=0.5),
            namespace=ns,
            watch_timeout=60,
        )
        started.start(sync_timeout=30)
        return started

    try:
        before = occm.snapshot(cloud.inventory())

        # -- dry run: web adoptable, legacy refused (exit 1), nothing changed ---------------
        code, out = adopt("--namespace", ns)
        assert code == 1, out
        assert f"{ns}/web: adoptable  load balancer kube_service_e2e_{ns}_web" in out
        assert f"{ns}/legacy: refused" in out
        assert "lbMethod 'LEAST_CONNECTIONS' -> 'ROUND_ROBIN'" in out
        assert "1 adoptable, 1 refused" in out
        code, out = adopt(f"{ns}/web", "--output", "json")
        assert code == 2, out
        (web,) = json.loads(out)
        assert {i["name"]: i["id"] for i in web["imports"]} == {
            "lb": made["web"].lb_id,
            "listener-tcp-80": made["web"].listeners[80],
            "pool-tcp-80": made["web"].pools[80],
            "members-tcp-80": made["web"].pools[80],
            "fip": made["web"].fip_id,
            "fip-association": made["web"].fip_id,
        }
        # OCCM's load balancer had no cluster identity tag: adopting it adds this cluster's
        identity = naming.cluster_id_tag(
            kube.get("/api/v1/namespaces/kube-system")["metadata"]["uid"]
        )
        # (after the import's `up`: the program leaves the load balancer's tags alone)
        assert web["preview"] == {"import": 6}
        assert web["updates"] == []
        assert any(f"the load balancer is tagged {identity}" in n for n in web["notes"])
        assert occm.snapshot(cloud.inventory()) == before
        assert engine.stacks() == []

        # -- apply: web as it is; legacy once updates are allowed ---------------------------
        code, out = adopt(f"{ns}/web", "--apply")
        assert code == 0, out
        assert f"{ns}/web: adopted" in out
        assert "the controller's next sync skips it" in out
        code, out = adopt(f"{ns}/legacy", "--apply", "--allow-updates")
        assert code == 0, out
        assert "update  pool-tcp-80: lbMethod 'LEAST_CONNECTIONS' -> 'ROUND_ROBIN'" in out
        code, out = adopt("--namespace", ns)
        assert code == 0, out
        assert out.count(": managed") == 2, out
        assert {i.name: i.lb_id for i in engine.stacks()} == {
            name: m.lb_id for name, m in made.items()
        }
        adopted = occm.snapshot(cloud.inventory())
        web_lb = next(
            lb for lb in cloud.inventory()["loadbalancers"] if lb["id"] == made["web"].lb_id
        )
        assert identity in web_lb["tags"]
        legacy_pool = next(p for p in adopted["pools"] if p[0] == made["legacy"].pools[80])
        assert legacy_pool[2] == "ROUND_ROBIN"

        # -- the controller takes over without touching the cloud ---------------------------
        controller = start_controller()

        def ensured(name: str) -> bool:
            events = kube.list(
                f"/api/v1/namespaces/{ns}/events",
                query={"fieldSelector": f"involvedObject.name={name}"},
            )["items"]
            reasons = [e["reason"] for e in events]
            assert "SyncLoadBalancerFailed" not in reasons, events
            return "EnsuredLoadBalancer" in reasons

        for name in made:
            wait_for(lambda name=name: ensured(name), what=f"{name} synced", timeout=120)
        assert occm.snapshot(cloud.inventory()) == adopted
        for name, m in made.items():
            svc = kube.get(f"/api/v1/namespaces/{ns}/services/{name}")
            assert svc["metadata"]["annotations"][LOAD_BALANCER_ID] == m.lb_id
            assert svc["status"]["loadBalancer"]["ingress"][0]["ip"] == m.fip_address

        # -- the way back to OCCM (docs/adopt.md, "Back to OCCM") ----------------------------
        # the controller stops; the stacks are removed as the doc says, without touching the
        # cloud; OCCM then finds each load balancer by its name as it left it
        controller.stop(timeout=60)
        controller = None
        pulumi_env = {
            **os.environ,
            **toolchain.env(),
            "PULUMI_BACKEND_URL": (state / "backend").as_uri(),
            "PULUMI_CONFIG_PASSPHRASE": PASSPHRASE,
        }
        for info in engine.stacks():
            subprocess.run(
                [str(toolchain.path("pulumi")), "stack", "rm", "--force", "--yes", "-s",
                 f"organization/{PROJECT}/{info.stack}"],
                env=pulumi_env, cwd=tmp_path, check=True, capture_output=True, timeout=120,
            )  # fmt: skip
        assert engine.stacks() == []
        assert occm.snapshot(cloud.inventory()) == adopted  # nothing deleted, nothing changed
        inventory = cloud.inventory()
        for name, m in made.items():
            named = [lb for lb in inventory["loadbalancers"] if lb["name"] == m.name]
            assert [lb["id"] for lb in named] == [m.lb_id]  # OCCM's lookup: by name
            assert (
                named[0]["description"]
                == f"Kubernetes external service {ns}/{name} from cluster {CLUSTER}"
            )
            (fip,) = [f for f in inventory["floatingips"] if f["id"] == m.fip_id]
            assert fip["port_id"] == m.vip_port_id  # the address stays on the VIP
        # and back again: a controller takes them over once more (no stack: by their names)
        controller = start_controller()
        try:
            wait_for(
                lambda: (
                    {i.name: i.lb_id for i in engine.stacks() if i.spec_hash}
                    == {name: m.lb_id for name, m in made.items()}
                ),
                what="both taken over again",
                timeout=180,
            )
        except AssertionError as exc:
            warnings = [
                f"{e['involvedObject']['name']}: {e['reason']}: {e['message']}"
                for e in kube.list(f"/api/v1/namespaces/{ns}/events")["items"]
                if e["type"] == "Warning"
            ]
            raise AssertionError(f"{exc}; Warning Events: {warnings}") from None
        assert occm.snapshot(cloud.inventory()) == adopted

        # -- deleting the Services deletes what was adopted ---------------------------------
        for name in made:
            kube.request(method="DELETE", path=f"/api/v1/namespaces/{ns}/services/{name}")

        def gone(name: str) -> bool:
            try:
                kube.get(f"/api/v1/namespaces/{ns}/services/{name}")
            except KubeError as exc:
                return exc.not_found
            return False

        for name in made:
            wait_for(lambda name=name: gone(name), what=f"{name} deleted", timeout=180)
        assert cloud.lbs() == []
        assert not [f for f in cloud.inventory()["floatingips"] if f["port_id"]]
    finally:
        if controller is not None:
            controller.stop(timeout=60)
        for name in made:  # a failed run must not leave Services held by our finalizer
            path = f"/api/v1/namespaces/{ns}/services/{name}"
            with contextlib.suppress(KubeError):
                kube.patch(path, {"metadata": {"finalizers": None}})
        kube.close()

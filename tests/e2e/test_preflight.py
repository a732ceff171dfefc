"""``lb-reconciler preflight``, the shadow mode of a move from OCCM, as a user runs it beside a
live OCCM: a real kube-apiserver, the emulator holding OCCM's load balancers (made the OCCM way,
tests/occm.py) for four Services, each with OCCM's finalizer, annotation and status:

* ``same`` matches its load balancer: taken over as is;
* ``method`` asks for another lb-method than OCCM's load balancer has: taken over and updated
  in place, the property named;
* ``other``'s load balancer was made under another cluster name, and the Service has no
  ``load-balancer-id`` annotation: the controller would make a second one, with a new IP (the
  exit code says 1);
* ``other-annotated`` likewise, with the annotation: the controller would take it for a shared
  load balancer and refuse the listener; the verdict says so, and names the load balancer and
  the ``--cluster-name`` it carries.

Nothing is written: the backend's files, the cloud's objects, the Services (resourceVersions)
and the namespace's Events are the same before and after. And ``lb-reconciler run`` with a
``--cluster-name`` none of these load balancers carry refuses to start (exit 2), naming the one
they do carry.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from emulator.server import EmulatorHandle
from reconciler.cli.main import main
from reconciler.config import CloudConfig, parse_cloud_conf
from reconciler.controller.kubeapi import KubeApi
from reconciler.controller.kubeconfig import api_client
from reconciler.local.plane import LocalControlPlane
from tests import occm
from tests.e2e.occm_left import service_as_occm_left_it
from tests.e2e.test_controller import ensure_nodes
from tests.emulated import EmulatorAdmin, cloud_conf_text, connect, subnet_line

pytestmark = pytest.mark.e2e
CLUSTER = "e2e"


def tree_hash(folder: Path) -> str:
    """Every file under ``folder`` (its path and bytes), as one digest; "" when it is absent."""
    if not folder.exists():
        return ""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*")):
        digest.update(str(path.relative_to(folder)).encode())
        if path.is_file():
            digest.update(path.read_bytes())
    return digest.hexdigest()


@dataclass(frozen=True)
class BesideOccm:
    """A namespace of a real kube-apiserver beside the emulator, as OCCM's cluster is when
    ``preflight`` is run: its cloud.conf, an empty ``file://`` backend, a client of each."""

    topo: dict[str, Any]
    conf: Path
    config: CloudConfig
    kube: KubeApi
    conn: Any
    ns: str
    state: Path

    def preflight(self, *args: str) -> int:
        return main(
            ["preflight", "--kubeconfig", os.environ["LBR_TEST_KUBECONFIG"], "--cloud-config",
             str(self.conf), "--state-dir", str(self.state), "--cluster-name", CLUSTER,
             "--namespace", self.ns, *args]
        )  # fmt: skip


@pytest.fixture
def beside(
    control_plane: LocalControlPlane,
    emu: EmulatorHandle,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> BesideOccm:
    topo = emu.topology()
    conf_text = cloud_conf_text(topo, subnet_line(topo))
    conf = tmp_path / "cloud.conf"
    conf.write_text(conf_text)
    parsed = parse_cloud_conf(text=conf_text)
    assert parsed.config is not None
    monkeypatch.delenv("PULUMI_CONFIG_PASSPHRASE", raising=False)  # not needed: nothing opened
    monkeypatch.delenv("PULUMI_BACKEND_URL", raising=False)
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("LBR_TEST_KUBECONFIG", str(control_plane.kubeconfig))
    kube = KubeApi(api_client=api_client(kubeconfig=control_plane.kubeconfig))
    ensure_nodes(kube)
    ns = f"pre-{uuid.uuid4().hex[:6]}"
    kube.create("/api/v1/namespaces", {"metadata": {"name": ns}})
    state = tmp_path / "state"
    (state / "backend").mkdir(parents=True)  # the controller's (empty) file:// backend
    return BesideOccm(topo, conf, parsed.config, kube, connect(topo), ns, state)


def test_preflight_beside_occm_says_three_verdicts_and_writes_nothing(
    beside: BesideOccm,
    control_plane: LocalControlPlane,
    emu: EmulatorHandle,
    capsys: pytest.CaptureFixture[str],
) -> None:
    topo, conf, kube, conn, ns, state = (
        beside.topo, beside.conf, beside.kube, beside.conn, beside.ns, beside.state
    )  # fmt: skip
    cloud = EmulatorAdmin(emu)
    made = {
        name: service_as_occm_left_it(
            kube, conn, topo, beside.config, namespace=ns, name=name, cluster=cluster,
            lb_algorithm=method, annotate=annotate,
        )
        for name, method, cluster, annotate in (
            ("same", "ROUND_ROBIN", CLUSTER, True),
            ("method", "LEAST_CONNECTIONS", CLUSTER, True),
            # OCCM ran with another --cluster-name: without the load-balancer-id annotation
            # (older OCCMs), a second load balancer would be made; with it, the controller
            # takes the annotation for a shared load balancer and refuses the listener
            ("other", "ROUND_ROBIN", "occm-cluster", False),
            ("other-annotated", "ROUND_ROBIN", "occm-cluster", True),
        )
    }  # fmt: skip

    def services() -> dict[str, str]:
        items = kube.list(f"/api/v1/namespaces/{ns}/services")["items"]
        return {s["metadata"]["name"]: s["metadata"]["resourceVersion"] for s in items}

    def events() -> list[Any]:
        return kube.list(f"/api/v1/namespaces/{ns}/events")["items"]

    before = (tree_hash(state), json.dumps(cloud.inventory(), sort_keys=True), services())
    events_before = len(events())
    code = beside.preflight("--output", "json")
    out = capsys.readouterr().out
    verdicts = {v["service"].split("/")[1]: v for v in json.loads(out)}
    assert {n: v["verdict"] for n, v in verdicts.items()} == {
        "same": "take-over",
        "method": "update",
        "other": "second-lb",
        "other-annotated": "refuse",
    }, out
    assert code == 1  # a second load balancer (and a new IP) for "other"
    assert verdicts["same"]["load_balancer"].endswith(f"({made['same'].lb_id})")
    assert verdicts["same"]["external_ip"] == made["same"].fip_address
    assert any("ROUND_ROBIN" in u for u in verdicts["method"]["updates"]), out
    assert f"kube_service_occm-cluster_{ns}_other" in verdicts["other"]["reasons"][0], out
    hint = verdicts["other-annotated"]["reasons"][-1]
    assert f"kube_service_occm-cluster_{ns}_other-annotated" in hint, out
    assert "--cluster-name" in hint, out

    after = (tree_hash(state), json.dumps(cloud.inventory(), sort_keys=True), services())
    assert after == before  # no stack, lock or folder; no cloud object; no Service written
    assert len(events()) == events_before  # no Event

    # the same as text, and as Prometheus' text format
    beside.preflight("--output", "prometheus")
    metrics = capsys.readouterr().out
    counts = (("take-over", 1), ("update", 1), ("second-lb", 1), ("refuse", 1), ("new-ip", 0))
    for verdict, count in counts:
        assert f'lbr_preflight_services{{verdict="{verdict}"}} {count}' in metrics, metrics
    assert "lbr_preflight_exit_code 1" in metrics
    assert tree_hash(state) == before[0]
    assert services() == before[2]

    # the controller itself, started with a --cluster-name that none of these load balancers
    # carry, refuses to start (it would give every Service a new load balancer and IP)
    env = {**os.environ, "PULUMI_CONFIG_PASSPHRASE": "x"}
    started = subprocess.run(
        [sys.executable, "-m", "reconciler.cli.main", "run", "--kubeconfig",
         str(control_plane.kubeconfig), "--cloud-config", str(conf), "--state-dir", str(state),
         "--cluster-name", "wrong", "--namespace", ns, "--http-address", "",
         "--log-format", "text"],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )  # fmt: skip
    assert started.returncode == 2, started.stderr
    assert "--cluster-name 'wrong' names none of the load balancers" in started.stderr
    assert "Start with --cluster-name e2e" in started.stderr, started.stderr
    assert "--skip-cluster-name-check" in started.stderr
    assert (tree_hash(state), services()) == (before[0], before[2])
    for made_lb in made.values():
        occm.remove(conn, made_lb)


def test_a_take_over_that_adds_a_listener_is_an_update_with_what_it_creates(
    beside: BesideOccm, emu: EmulatorHandle, capsys: pytest.CaptureFixture[str]
) -> None:
    """A Service with ports 80 and 443 whose OCCM load balancer has only the listener on 80:
    taking it over creates the listener on 443 (with its pool and members), so it is not taken
    over "as is": the verdict is ``update``, the creates are listed and the exit code is 2."""
    cloud = EmulatorAdmin(emu)
    made = service_as_occm_left_it(
        beside.kube, beside.conn, beside.topo, beside.config, namespace=beside.ns,
        name="added-port", cluster=CLUSTER, unserved=(443,),
    )  # fmt: skip
    before = json.dumps(cloud.inventory(), sort_keys=True)

    code = beside.preflight("--output", "json")
    out = capsys.readouterr().out
    (verdict,) = json.loads(out)
    assert verdict["verdict"] == "update", out
    assert code == 2, out
    assert verdict["load_balancer"].endswith(f"({made.lb_id})"), out
    assert verdict["external_ip"] == made.fip_address
    assert verdict["updates"] == [], out
    assert verdict["creates"] == [
        "listener-tcp-443 (Listener)",
        "pool-tcp-443 (Pool)",
        "members-tcp-443 (Members)",
    ], out

    code = beside.preflight("--output", "text")
    text = capsys.readouterr().out
    assert code == 2
    assert f"{beside.ns}/added-port: update" in text, text
    assert "    create  listener-tcp-443 (Listener)" in text, text
    assert text.endswith("1 update\n"), text
    assert json.dumps(cloud.inventory(), sort_keys=True) == before  # nothing made
    occm.remove(beside.conn, made)


def test_a_credential_that_can_only_read_is_named_with_the_role_it_lacks(
    beside: BesideOccm, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 41: preflight says what the controller would say at start (exit 2), once, naming
    the role, rather than a verdict per Service that its writes would all be refused."""
    b = beside
    b.conf.write_text(
        b.conf.read_text()
        .replace(f"username = {b.topo['username']}", "username = viewer")
        .replace(f"password = {b.topo['password']}", "password = viewer-password")
    )
    before = tree_hash(b.state)
    assert b.preflight() == 2
    err = capsys.readouterr().err
    assert "the OpenStack credential's roles on project 'demo' are reader" in err
    assert "it needs the role 'member' on the project" in err
    assert "the controller would not start with this credential" in err
    assert tree_hash(b.state) == before

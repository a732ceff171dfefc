"""The controller with the real engine (Pulumi Automation API + OpenStack provider) against the
emulator and the real kube-apiserver: a Service gets a load balancer and an IP; deleting it
destroys the load balancer before the finalizer goes."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from emulator.server import EmulatorHandle
from reconciler.config import Secret
from reconciler.controller.backend import PulumiEngine
from reconciler.controller.housekeeping import HousekeepingSettings
from reconciler.controller.kubeapi import KubeApi
from reconciler.controller.kubeconfig import api_client
from reconciler.controller.loop import Controller
from reconciler.controller.queue import Backoff
from reconciler.controller.sync_plan import ControllerSettings
from reconciler.engine.stack import Engine, EngineSettings
from reconciler.local.plane import LocalControlPlane
from reconciler.local.toolchain import Toolchain
from reconciler.model import FINALIZER
from reconciler.model.annotations import LOAD_BALANCER_ID
from tests.e2e.test_controller import Running, ensure_nodes, wait_for
from tests.emulated import EmulatorAdmin, cloud_config, subnet_line

pytestmark = pytest.mark.e2e


@contextlib.contextmanager
def real_controller(
    control_plane: LocalControlPlane,
    toolchain: Toolchain,
    emu: EmulatorHandle,
    state_dir: Path,
    *,
    backoff: Backoff | None = None,
    housekeeping: HousekeepingSettings | None = None,
) -> Iterator[Running]:
    """The controller with the real engine on ``emu``, scoped to a namespace of its own
    (``housekeeping``: its orphan and drift scans; None: none)."""
    topo = emu.topology()
    config = cloud_config(topo, subnet_line(topo))
    engine = Engine(
        settings=EngineSettings(
            cluster_name="e2e",
            state_dir=state_dir,
            auth=config.auth,
            toolchain=toolchain,
            passphrase=Secret("e2e-passphrase"),
        )
    )
    kube = KubeApi(api_client=api_client(kubeconfig=control_plane.kubeconfig))
    ns = f"real-{uuid.uuid4().hex[:6]}"
    kube.create("/api/v1/namespaces", {"metadata": {"name": ns}})
    ensure_nodes(kube)
    controller = Controller(
        kube=kube,
        engine=PulumiEngine(engine=engine),
        config=config,
        settings=ControllerSettings(cluster_name="e2e"),
        workers=2,
        backoff=backoff or Backoff(base=1.0, cap=5.0, soon=0.5),
        namespace=ns,
        watch_timeout=60,
        housekeeping=housekeeping,
    )
    controller.start(sync_timeout=30)
    try:
        yield Running(controller, None, kube, ns)  # type: ignore[arg-type]
    finally:
        controller.stop(timeout=60)
        kube.close()


def wait_with_events(r: Running, name: str, fn: Any, *, what: str, timeout: float = 240) -> Any:
    """``wait_for``, failing with the Service's Events in the message."""
    try:
        return wait_for(fn, what=what, timeout=timeout)
    except AssertionError as exc:
        messages = [f"{e['reason']}: {e['message']}" for e in r.events(name)]
        raise AssertionError(f"{exc}; events: {messages}") from None


def test_real_engine_create_and_delete(
    control_plane: LocalControlPlane, toolchain: Toolchain, emu: EmulatorHandle, tmp_path: Path
) -> None:
    with real_controller(control_plane, toolchain, emu, tmp_path / "state") as r:
        r.create("web")
        ingress = wait_with_events(r, "web", lambda: r.ingress("web"), what="an EXTERNAL-IP")
        lbs = EmulatorAdmin(emu).lbs()
        assert len(lbs) == 1
        svc = r.get("web")
        assert svc["metadata"]["annotations"][LOAD_BALANCER_ID] == lbs[0]["id"]
        assert ingress[0]["ip"]
        assert svc["metadata"]["finalizers"] == [FINALIZER]

        r.kube.request(method="DELETE", path=r.svc_path("web"))
        wait_with_events(r, "web", lambda: r.gone("web"), what="the Service to be deleted")
        assert EmulatorAdmin(emu).lbs() == []
        # the Event follows the finalizer's removal, which is what makes the Service gone: a
        # busy machine lets a test see the one before the other
        wait_with_events(
            r, "web", lambda: r.event("web", "DeletedLoadBalancer"), what="DeletedLoadBalancer"
        )

"""Pausing one Service (``lb-reconciler.io/reconcile: disabled``) end to end: the controller with
the real engine and its housekeeper (drift checks every second) against the emulator and a real
kube-apiserver.

While paused, the Service is changed (a port, an annotation) and then deleted: the cloud gets no
request at all (the emulator's request log, ``GET /admin/requests``, has nothing after the mark
taken once the pause was in effect), the Service keeps its finalizer with a Warning
``DeletionPaused`` and its condition says ``Paused``; the housekeeper's scans go on and check
nothing. Removing the annotation resumes: the load balancer is deleted and the Service goes.

That the log can show a request is shown first: the drift checks of the Service before it is
paused are in it. What the test waits for is polled: the condition, the Event, the housekeeper's
scans (counted), never a fixed time.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from emulator.server import EmulatorHandle
from reconciler.controller.drift_plan import DriftMode
from reconciler.controller.housekeeping import Housekeeper, HousekeepingSettings
from reconciler.controller.queue import Backoff
from reconciler.local.plane import LocalControlPlane
from reconciler.local.toolchain import Toolchain
from reconciler.model import FINALIZER
from reconciler.model.predicates import RECONCILE
from tests.e2e.test_conditions import says
from tests.e2e.test_controller import Running, wait_for
from tests.e2e.test_controller_engine import real_controller, wait_with_events
from tests.emulated import EmulatorAdmin

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

# a drift check of every stack each second, scans twice as often; every check a full refresh
# (the sweep as often: no fleet comparison), so that the request log shows the Service's own
HOUSEKEEPING = HousekeepingSettings(
    interval=0.5,
    orphan_grace=1.0,
    drift_interval=1.0,
    drift=DriftMode.REPAIR,
    drift_sweep_interval=1.0,
)
LIMIT = "loadbalancer.openstack.org/connection-limit"


class ScanCount:
    """Counts the housekeeper's finished scans."""

    def __init__(self, housekeeper: Housekeeper) -> None:
        self.lock = threading.Lock()
        self.count = 0
        scan = housekeeper.scan

        def counted() -> None:
            scan()
            with self.lock:
                self.count += 1

        housekeeper.scan = counted  # type: ignore[method-assign]

    def now(self) -> int:
        with self.lock:
            return self.count


def syncs(r: Running) -> float:
    """The controller's successful syncs so far (``lbr_reconciles_total{result="success"}``)."""
    value = r.controller.metrics.registry.get_sample_value(
        "lbr_reconciles_total", {"result": "success"}
    )
    return value or 0.0


def requests_since(cloud: EmulatorAdmin, mark: int) -> list[dict[str, Any]]:
    return list(cloud.get(f"/requests?since={mark}")["requests"])


def test_a_paused_service_is_changed_and_deleted_without_a_cloud_call(
    control_plane: LocalControlPlane,
    toolchain: Toolchain,
    emu: EmulatorHandle,
    tmp_path: Path,
) -> None:
    cloud = EmulatorAdmin(emu)
    backoff = Backoff(base=0.5, cap=2.0, soon=0.5)
    with real_controller(
        control_plane,
        toolchain,
        emu,
        tmp_path / "state",
        backoff=backoff,
        housekeeping=HOUSEKEEPING,
    ) as r:
        assert r.controller.housekeeper is not None
        scans = ScanCount(r.controller.housekeeper)
        r.create("web")
        says(r, "web", "True", "Provisioned")
        lb_id = cloud.lbs()[0]["id"]
        mark = cloud.get("/requests")["next"]

        # the log shows the Service's requests while it is not paused: its drift checks
        wait_for(
            lambda: any(lb_id in q["path"] for q in requests_since(cloud, mark)) or None,
            what="a drift check of the load balancer in the request log",
            timeout=120,
        )

        r.kube.patch(r.svc_path("web"), {"metadata": {"annotations": {RECONCILE: "disabled"}}})
        says(r, "web", "Unknown", "Paused")
        wait_for(lambda: r.controller.queue.idle() or None, what="the queue idle")
        mark = cloud.get("/requests")["next"]
        synced = syncs(r)

        # changed while paused: a port and an annotation, and synced (a paused sync succeeds)
        r.kube.patch(
            r.svc_path("web"),
            {
                "metadata": {"annotations": {LIMIT: "100"}},
                "spec": {"ports": [{"port": 81, "targetPort": 8080, "protocol": "TCP"}]},
            },
        )
        wait_for(
            lambda: (syncs(r) > synced and r.controller.queue.idle()) or None,
            what="the change synced",
        )
        says(r, "web", "Unknown", "Paused")

        # deleted while paused: the finalizer stays, a Warning says why and how to resume
        r.kube.request(method="DELETE", path=r.svc_path("web"))
        warning = wait_with_events(
            r, "web", lambda: r.event("web", "DeletionPaused"), what="a DeletionPaused Warning"
        )
        assert warning["type"] == "Warning"
        assert warning["message"].startswith(
            "The Service is being deleted but reconciling is paused (lb-reconciler.io/reconcile:"
            " disabled): the load balancer is not deleted and the finalizer "
            f"{FINALIZER} is kept while paused; remove the annotation {RECONCILE}"
        )
        condition = says(r, "web", "Unknown", "Paused")
        assert "is not deleted" in condition["message"]
        held = r.get("web")
        assert held["metadata"]["deletionTimestamp"]
        assert held["metadata"]["finalizers"] == [FINALIZER]

        # the housekeeper goes on (each scan lists the stacks) and checks nothing: with a
        # check due every second, four scans (two seconds) would have run one
        seen = scans.now()
        wait_for(lambda: scans.now() >= seen + 4 or None, what="four more scans", timeout=60)
        assert r.get("web")["metadata"]["finalizers"] == [FINALIZER]
        asked = requests_since(cloud, mark)
        assert [q for q in asked if lb_id in q["path"]] == []
        assert asked == [], "no request to the cloud at all while the Service is paused"
        assert [lb["id"] for lb in cloud.lbs()] == [lb_id]

        # resumed: the deletion completes, the load balancer goes first
        r.kube.patch(r.svc_path("web"), {"metadata": {"annotations": {RECONCILE: None}}})
        wait_with_events(r, "web", lambda: r.gone("web"), what="the Service to be deleted")
        assert cloud.lbs() == []
        deletes = [q for q in requests_since(cloud, mark) if q["method"] == "DELETE"]
        assert any(lb_id in q["path"] for q in deletes), deletes

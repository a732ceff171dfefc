"""The Service's condition ``lb-reconciler.io/LoadBalancerReady`` end to end: the controller with
the real engine against the emulator and a real kube-apiserver, through create, an update, a
failure of the cloud, recovery and pause, while another controller's condition on the same
Service stays as that controller wrote it.

No step depends on timing: the update is held inside the cloud (a ``hold`` fault on the listener
create it needs) while the test looks at ``Updating``; the failure is a 400 the cloud answers
to the next port's listener create until the fault is cleared (a refused listener *update*
is tests/integration/engine/test_engine_errored_lb.py's). ``lastTransitionTime`` has a
resolution of one second, so before each transition the test waits (polling) until the clock
has left the second of the last one: a transition then shows as a later time, and a
non-transition as the same one.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from emulator.server import EmulatorHandle
from reconciler.cli.main import main
from reconciler.controller.conditions import CONDITION_TYPE
from reconciler.controller.queue import Backoff
from reconciler.local.plane import LocalControlPlane
from reconciler.local.toolchain import Toolchain
from reconciler.model.predicates import RECONCILE
from tests.e2e.test_controller import Running, wait_for
from tests.e2e.test_controller_engine import real_controller, wait_with_events
from tests.emulated import EmulatorAdmin

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

OTHER = {
    "type": "example.com/PortsReachable",
    "status": "True",
    "reason": "Probed",
    "message": "another controller's condition",
    "observedGeneration": 1,
    "lastTransitionTime": "2026-01-02T03:04:05Z",
}
REFUSAL = "Listener port refused by the operator's policy."


def conditions(r: Running, name: str) -> list[dict[str, Any]]:
    return list(r.get(name).get("status", {}).get("conditions") or [])


def theirs_untouched(r: Running, name: str) -> None:
    mine = [c for c in conditions(r, name) if c["type"] != CONDITION_TYPE]
    assert mine == [OTHER], mine


def when(condition: dict[str, Any]) -> datetime:
    return datetime.strptime(condition["lastTransitionTime"], "%Y-%m-%dT%H:%M:%SZ").replace(
        tzinfo=UTC
    )


def leave_the_second_of(condition: dict[str, Any]) -> None:
    """Poll until the wall clock is past the second of ``condition``'s transition."""
    edge = when(condition)
    wait_for(
        lambda: datetime.now(UTC).replace(microsecond=0) > edge or None,
        what="the next second",
        timeout=5,
    )


def says(r: Running, name: str, status: str, reason: str) -> Any:
    """Wait until our condition is ``status``/``reason``; it is, and its ``observedGeneration``
    is the Service's ``metadata.generation`` (the kube-apiserver sets none on Services: both
    are then absent, 0)."""

    def check() -> dict[str, Any] | None:
        service = r.get(name)
        items = service.get("status", {}).get("conditions") or []
        c = next((c for c in items if c["type"] == CONDITION_TYPE), None)
        if c is None or (c["status"], c["reason"]) != (status, reason):
            return None
        generation = service["metadata"].get("generation", 0)
        return c if c.get("observedGeneration", 0) == generation else None

    return wait_with_events(r, name, check, what=f"{status}/{reason}")


def ready_column(control_plane: LocalControlPlane, state: Path, namespace: str, capsys: Any) -> str:
    """``lb-reconciler stacks --conditions``' READY cell of the namespace's one Service."""
    where = ["--state-dir", str(state), "--cluster-name", "e2e", "--namespace", namespace]
    code = main(["stacks", *where, "--conditions", "--kubeconfig", str(control_plane.kubeconfig)])
    out = capsys.readouterr().out
    assert code == 0, out
    header, line = out.splitlines()
    start = header.index("READY")
    return line[start : header.index("STACK")].strip()


def test_the_condition_through_create_update_failure_recovery_and_pause(
    control_plane: LocalControlPlane,
    toolchain: Toolchain,
    emu: EmulatorHandle,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("PULUMI_BACKEND_URL", raising=False)
    cloud = EmulatorAdmin(emu)
    backoff = Backoff(base=0.5, cap=2.0, soon=0.5)
    with real_controller(control_plane, toolchain, emu, tmp_path / "state", backoff=backoff) as r:
        r.create("web")
        # another controller's condition, written as such a controller would (by its type)
        r.kube.patch(
            r.svc_path("web") + "/status", {"status": {"conditions": [OTHER]}}, kind="strategic"
        )

        # create: Provisioned, True, for generation 1
        created = says(r, "web", "True", "Provisioned")
        lb_id = cloud.lbs()[0]["id"]
        address = r.ingress("web")[0]["ip"]
        assert created["message"] == f"load balancer {lb_id} at {address} is up to date"
        theirs_untouched(r, "web")

        # an update (a new port: a listener to create), held inside the cloud meanwhile
        leave_the_second_of(created)
        cloud.post(
            "/faults/rules", {"operation": "octavia.listener.create", "hold": True, "status": 200}
        )
        r.kube.patch(
            r.svc_path("web"),
            {"spec": {"ports": [{"port": 81, "targetPort": 8080, "protocol": "TCP"}]}},
            kind="merge",
        )
        updating = says(r, "web", "True", "Updating")
        assert updating["lastTransitionTime"] == created["lastTransitionTime"]  # still True
        wait_for(
            lambda: cloud.get("/faults/fired").get("rules[0]") or None,
            what="the listener create held",
        )
        theirs_untouched(r, "web")
        cloud.clear_faults()
        updated = says(r, "web", "True", "Provisioned")
        assert updated["lastTransitionTime"] == created["lastTransitionTime"]
        theirs_untouched(r, "web")

        # a failure of the cloud: its own message, False, a transition
        leave_the_second_of(updated)
        cloud.post(
            "/faults/rules",
            {"operation": "octavia.listener.create", "status": 400, "message": REFUSAL},
        )
        r.kube.patch(
            r.svc_path("web"),
            {"spec": {"ports": [{"port": 82, "targetPort": 8080, "protocol": "TCP"}]}},
            kind="merge",
        )
        failed = says(r, "web", "False", "CloudError")
        assert failed["message"].startswith("failed to ensure the load balancer: up of stack ")
        assert REFUSAL in failed["message"]
        assert "retrying" not in failed["message"]  # the same at every attempt: no rewrite
        assert when(failed) > when(updated)
        theirs_untouched(r, "web")
        state, namespace = tmp_path / "state", r.namespace
        assert ready_column(control_plane, state, namespace, capsys) == "False CloudError"

        # recovery: the cloud accepts again; the next attempt makes it True again
        leave_the_second_of(failed)
        cloud.clear_faults()
        recovered = says(r, "web", "True", "Provisioned")
        assert when(recovered) > when(failed)
        assert [lst["protocol_port"] for lst in cloud.inventory()["listeners"]] == [82]
        theirs_untouched(r, "web")
        assert ready_column(control_plane, state, namespace, capsys) == "True Provisioned"

        # pause: Unknown, Paused, a transition
        leave_the_second_of(recovered)
        r.kube.patch(r.svc_path("web"), {"metadata": {"annotations": {RECONCILE: "disabled"}}})
        paused = says(r, "web", "Unknown", "Paused")
        assert "remove the annotation lb-reconciler.io/reconcile" in paused["message"]
        assert when(paused) > when(recovered)
        theirs_untouched(r, "web")

        # resumed, then deleted: the load balancer goes with the Service
        r.kube.patch(r.svc_path("web"), {"metadata": {"annotations": {RECONCILE: None}}})
        says(r, "web", "True", "Provisioned")
        theirs_untouched(r, "web")
        r.kube.request(method="DELETE", path=r.svc_path("web"))
        wait_with_events(r, "web", lambda: r.gone("web"), what="the Service to be deleted")
        assert cloud.lbs() == []

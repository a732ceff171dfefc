"""Failures are visible and paced, end to end: the controller with the real engine (Pulumi
Automation API + OpenStack provider) against the emulator and a real kube-apiserver.

* A Service whose first ``up`` fails with the cloud's 400 (an availability zone the cloud does
  not have) gets a Warning ``SyncLoadBalancerFailed`` in the cloud's own words at the first
  failure, and the retries back off (growing delays, never the 2 s retry-soon); fixing the
  Service makes the next sync succeed.
* A Service being deleted whose ``destroy`` the cloud refuses keeps its finalizer, gets a
  Warning saying why, and is deleted once the cloud accepts.

Delays are read from the controller's own "sync failed" log records (in order, with
``retry_in``) and from the Events' "retrying in Ns"; no wall-clock speed is asserted.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from emulator.server import EmulatorHandle
from reconciler.controller.queue import Backoff
from reconciler.local.plane import LocalControlPlane
from reconciler.local.toolchain import Toolchain
from reconciler.model import FINALIZER
from tests.e2e.test_controller import Running
from tests.e2e.test_controller_engine import real_controller, wait_with_events
from tests.emulated import EmulatorAdmin

pytestmark = pytest.mark.e2e

ZONE = "loadbalancer.openstack.org/availability-zone"
FAILED = "SyncLoadBalancerFailed"
# short delays so that several retries fit in the test's deadlines; the growth is the point
BACKOFF = Backoff(base=1.0, cap=16.0, soon=0.5)


class RetryLog(logging.Handler):
    """The controller's "sync failed" records: (service key, retry_in), in order."""

    def __init__(self) -> None:
        super().__init__(level=logging.INFO)
        self.guard = threading.Lock()  # not `lock`: logging.Handler holds that one in emit
        self.records: list[tuple[str, float | None]] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage() in ("sync failed", "sync will retry soon"):
            with self.guard:
                self.records.append((getattr(record, "service", ""), record.retry_in))  # type: ignore[attr-defined]

    def delays(self, key: str) -> list[float | None]:
        with self.guard:
            return [delay for k, delay in self.records if k == key]


@pytest.fixture
def retry_log() -> Iterator[RetryLog]:
    handler = RetryLog()
    logger = logging.getLogger("reconciler.controller.loop")
    old_level = logger.level
    logger.setLevel(logging.INFO)
    logger.addHandler(handler)
    yield handler
    logger.removeHandler(handler)
    logger.setLevel(old_level)


def failures(r: Running, name: str) -> list[dict[str, Any]]:
    return [e for e in r.events(name) if e["reason"] == FAILED]


def event_delays(events: list[dict[str, Any]]) -> set[float]:
    return {float(d) for e in events for d in re.findall(r"retrying in ([\d.]+)s$", e["message"])}


def first_failure(r: Running, name: str, contains: str) -> dict[str, Any] | None:
    """The Warning of the first failure: the one that says "retrying in 1s" (the backoff's
    base). A repeated failure makes one Event per delay, and the API lists them in no order of
    time, so "a" matching Warning may be the second one when the test looks late."""
    for e in failures(r, name):
        if contains in e["message"] and e["message"].endswith("; retrying in 1s"):
            return e
    return None


def test_a_cloud_400_on_create_warns_at_the_first_failure_and_backs_off(
    control_plane: LocalControlPlane,
    toolchain: Toolchain,
    emu: EmulatorHandle,
    tmp_path: Path,
    retry_log: RetryLog,
) -> None:
    with real_controller(control_plane, toolchain, emu, tmp_path / "state", backoff=BACKOFF) as r:
        key = f"{r.namespace}/zone"
        r.create("zone", annotations={ZONE: "az-2"})  # a zone the emulated cloud does not have

        first = wait_with_events(
            r,
            "zone",
            lambda: first_failure(r, "zone", "failed to ensure load balancer"),
            what="the first failure's SyncLoadBalancerFailed Warning",
        )
        assert first["type"] == "Warning"
        assert first["message"] == (
            "Error syncing load balancer: failed to ensure load balancer: up of stack "
            f"e2e.{r.namespace}.zone failed: the cloud answered 400 to POST "
            "/load-balancer/v2.0/lbaas/loadbalancers: Validation failure: Invalid "
            "availability zone.; retrying in 1s"
        ), "the first failure's Warning: the cloud's words and the first backoff delay"
        assert "[secret]" not in first["message"]

        # the retries back off: each failure waits longer than the one before
        wait_with_events(
            r,
            "zone",
            lambda: len(retry_log.delays(key)) >= 4 or None,
            what="four failed attempts",
        )
        delays = retry_log.delays(key)[:4]
        assert delays == [1.0, 2.0, 4.0, 8.0], retry_log.delays(key)
        wait_with_events(
            r,
            "zone",
            lambda: {1.0, 2.0, 4.0, 8.0} <= event_delays(failures(r, "zone")) or None,
            what="a Warning for each of those failures",
        )
        assert 0.5 not in event_delays(failures(r, "zone")), "a 400 is never retried soon"
        assert EmulatorAdmin(emu).lbs() == []

        # fixing the Service: its watch event brings the sync at once, and it succeeds
        r.kube.patch(r.svc_path("zone"), {"metadata": {"annotations": {ZONE: None}}})
        wait_with_events(r, "zone", lambda: r.ingress("zone"), what="an EXTERNAL-IP once fixed")
        assert len(EmulatorAdmin(emu).lbs()) == 1

        r.kube.request(method="DELETE", path=r.svc_path("zone"))
        wait_with_events(r, "zone", lambda: r.gone("zone"), what="the Service to be deleted")
        assert EmulatorAdmin(emu).lbs() == []


def test_a_refused_destroy_keeps_the_finalizer_and_says_why(
    control_plane: LocalControlPlane,
    toolchain: Toolchain,
    emu: EmulatorHandle,
    tmp_path: Path,
    retry_log: RetryLog,
) -> None:
    cloud = EmulatorAdmin(emu)
    with real_controller(control_plane, toolchain, emu, tmp_path / "state", backoff=BACKOFF) as r:
        key = f"{r.namespace}/web"
        r.create("web")
        wait_with_events(r, "web", lambda: r.ingress("web"), what="an EXTERNAL-IP")
        lb_id = cloud.lbs()[0]["id"]
        # refused until the test lifts it: the Service is held for as long as the test looks,
        # however late it looks on a busy machine
        cloud.post(
            "/faults/rules",
            {
                "operation": "octavia.loadbalancer.delete",
                "status": 403,
                "message": "Policy does not allow this request to be performed.",
            },
        )
        r.kube.request(method="DELETE", path=r.svc_path("web"))

        warning = wait_with_events(
            r,
            "web",
            lambda: first_failure(r, "web", "failed to delete load balancer"),
            what="the Warning for the first refused destroy",
        )
        assert warning["type"] == "Warning"
        assert warning["message"] == (
            "Error syncing load balancer: failed to delete load balancer: delete of stack "
            f"e2e.{r.namespace}.web failed: the cloud answered 403 to DELETE "
            f"/v2/lbaas/loadbalancers/{lb_id}: Policy does not allow this "
            "request to be performed.; the credential holds load-balancer_member, member on "
            "project 'demo', which Octavia's default and advanced policies let make load "
            "balancers; this cloud's policy refused it all the same: ask its administrator "
            "which role this needs; retrying in 1s"
        )
        # the second refusal waits longer, and says so
        wait_with_events(
            r,
            "web",
            lambda: 2.0 in event_delays(failures(r, "web")) or None,
            what="the Warning for the second refused destroy",
        )
        held = r.get("web")
        assert held["metadata"]["deletionTimestamp"]
        assert held["metadata"]["finalizers"] == [FINALIZER]
        assert len(cloud.lbs()) == 1

        # the cloud accepts again: the Service goes, and so does its load balancer
        cloud.clear_faults()
        wait_with_events(r, "web", lambda: r.gone("web"), what="the Service to be deleted")
        assert cloud.lbs() == []
        assert retry_log.delays(key)[:2] == [1.0, 2.0]

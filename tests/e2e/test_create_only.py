"""Create-only annotations edited on a live Service, with the controller, the real engine, the
real kube-apiserver and the emulator (issue 13: one annotation edit took a Service offline).

Each edit leaves the same load balancer and the same external IP, and the Service gets a Warning
``CreateOnlyFieldChanged`` naming the field, the value in use and the value asked for.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from emulator.server import EmulatorHandle
from reconciler.controller.sync_plan import CREATE_ONLY_REASON
from reconciler.local.plane import LocalControlPlane
from reconciler.local.toolchain import Toolchain
from reconciler.model.annotations import LOAD_BALANCER_ID
from tests.e2e.test_controller_engine import real_controller, wait_with_events
from tests.emulated import EmulatorAdmin

pytestmark = pytest.mark.e2e
A = "loadbalancer.openstack.org/"
OTHER = str(uuid.UUID(int=0xB0B))

EDITS = [
    ("availability-zone", "az-2", "availability_zone"),
    ("flavor-id", OTHER, "flavor_id"),
    ("subnet-id", OTHER, "vip_subnet_id"),
    ("network-id", OTHER, "vip_network_id"),
    ("port-id", OTHER, "vip_port_id"),
    ("floating-network-id", OTHER, "floating_ip.network_id"),
    ("floating-subnet-id", OTHER, "floating_ip.subnet_id"),
    ("floating-subnet", "other-*", "floating_ip.subnet_name_pattern"),
    ("floating-subnet-tags", "other", "floating_ip.subnet_tags"),
]


def test_create_only_edits_keep_the_load_balancer_and_ip(
    control_plane: LocalControlPlane, toolchain: Toolchain, emu: EmulatorHandle, tmp_path: Path
) -> None:
    cloud = EmulatorAdmin(emu)
    with real_controller(control_plane, toolchain, emu, tmp_path / "state") as r:
        r.create("frozen")
        ingress = wait_with_events(r, "frozen", lambda: r.ingress("frozen"), what="an IP")
        (lb,) = cloud.lbs()
        ip = ingress[0]["ip"]
        for annotation, value, field in EDITS:
            r.kube.patch(
                r.svc_path("frozen"), {"metadata": {"annotations": {A + annotation: value}}}
            )
            warning = wait_with_events(
                r,
                "frozen",
                lambda f=field, v=value: (
                    r.event("frozen", CREATE_ONLY_REASON, f"{f} (")
                    and r.event("frozen", CREATE_ONLY_REASON, f"not {v!r} as asked")
                ),
                what=f"a {CREATE_ONLY_REASON} Warning for {field}",
            )
            assert warning["type"] == "Warning"
            assert "delete and re-create the Service" in warning["message"]
            assert [x["id"] for x in cloud.lbs()] == [lb["id"]]
            assert r.ingress("frozen")[0]["ip"] == ip
            assert r.get("frozen")["metadata"]["annotations"][LOAD_BALANCER_ID] == lb["id"]
            # put it back, so the next edit is reported on its own
            r.kube.patch(
                r.svc_path("frozen"), {"metadata": {"annotations": {A + annotation: None}}}
            )
        inventory = cloud.inventory()
        assert [x["id"] for x in inventory["loadbalancers"]] == [lb["id"]]
        assert [f["floating_ip_address"] for f in inventory["floatingips"] if f["port_id"]] == [ip]
        r.kube.request(method="DELETE", path=r.svc_path("frozen"))
        wait_with_events(r, "frozen", lambda: r.gone("frozen"), what="the Service to be deleted")
        assert cloud.lbs() == []

"""A load balancer the user made, shared by two Services, with the controller, the real engine,
the real kube-apiserver and the emulator (issue 13: "a user's own load balancer was deleted").

Both Services are deleted, in either order: the load balancer and its VIP remain, and none of
their listeners, pools or members does.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from emulator.server import EmulatorHandle
from reconciler.local.plane import LocalControlPlane
from reconciler.local.toolchain import Toolchain
from tests.e2e.test_controller_engine import real_controller, wait_with_events
from tests.emulated import EmulatorAdmin, connect

pytestmark = pytest.mark.e2e
A = "loadbalancer.openstack.org/"


@pytest.mark.parametrize("order", [("one", "two"), ("two", "one")])
def test_user_made_load_balancer_shared_by_two_services_outlives_both(
    control_plane: LocalControlPlane,
    toolchain: Toolchain,
    emu: EmulatorHandle,
    tmp_path: Path,
    order: tuple[str, str],
) -> None:
    t = emu.topology()
    conn = connect(t)
    made = conn.load_balancer.create_load_balancer(
        name="user-made-lb", vip_subnet_id=t["subnet_id"]
    )
    conn.load_balancer.wait_for_load_balancer(made.id, interval=0.2, wait=30)
    cloud = EmulatorAdmin(emu)
    with real_controller(control_plane, toolchain, emu, tmp_path / "state") as r:
        for name, port in (("one", 81), ("two", 82)):
            r.create(
                name,
                annotations={A + "load-balancer-id": made.id},
                ports=[{"port": port, "targetPort": 8080, "protocol": "TCP"}],
            )
        for name in ("one", "two"):
            wait_with_events(r, name, lambda n=name: r.ingress(n), what=f"{name}'s address")
        assert sorted(li["protocol_port"] for li in cloud.inventory()["listeners"]) == [81, 82]
        for name in order:
            r.kube.request(method="DELETE", path=r.svc_path(name))
            wait_with_events(r, name, lambda n=name: r.gone(n), what=f"{name} deleted")
        inv = cloud.inventory()
        (lb,) = inv["loadbalancers"]
        assert (lb["id"], lb["name"], lb["vip_address"]) == (
            made.id,
            "user-made-lb",
            made.vip_address,
        )
        assert (inv["listeners"], inv["pools"], inv["members"]) == ([], [], [])
    conn.load_balancer.delete_load_balancer(made.id, cascade=True)

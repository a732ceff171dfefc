"""The real pulumi-openstack provider creates, updates and destroys an LB against the emulator.

An inline Automation API program declares what a Service of type LoadBalancer needs: an Octavia
load balancer on the tenant subnet, a listener, a pool, its members (the batch ``Members``
resource), a health monitor, and a Neutron floating IP on the external network associated with
the LB's VIP port. The provider is an explicit ``openstack.Provider`` with the emulator's
Keystone URL and the demo user's credentials (the values the emulator writes to clouds.yaml).

Each test checks the cloud through the emulator's admin inventory, not through Pulumi's own
outputs: after ``up`` the resources exist with the declared values; after a change (a member
added, the monitor's delay and the listener's connection limit changed) they were updated in
place (same IDs); a second ``up`` changes nothing; after ``destroy`` nothing the test created is
left. The ``cloudlike`` timing profile makes every call leave the LB ``PENDING_*`` for a while,
so the provider's waits (and the 409s it must not provoke) are exercised; ``instant`` keeps the
other run short.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pulumi
import pulumi_openstack as openstack
import pytest
import requests
from pulumi import automation as auto

from emulator.server import EmulatorHandle
from emulator.timing import CLOUDLIKE, INSTANT, TimingProfile
from reconciler.toolchain import Toolchain
from tests.emulated import running_emulator

# each test starts real pulumi runs or servers for many seconds: not in make test-fast
pytestmark = pytest.mark.slow


@dataclass(frozen=True)
class Desired:
    """What the program declares; tests change it between runs."""

    members: tuple[str, ...] = ("10.0.0.11", "10.0.0.12")
    monitor_delay: int = 5
    connection_limit: int = 1000


def make_program(*, topo: dict[str, Any], desired: Desired) -> Callable[[], None]:
    def program() -> None:
        provider = openstack.Provider(
            "emulator",
            auth_url=topo["auth_url"],
            user_name=topo["username"],
            password=topo["password"],
            tenant_name=topo["project_name"],
            user_domain_name=topo["user_domain_name"],
            project_domain_name=topo["project_domain_name"],
            region=topo["region_name"],
        )
        opts = pulumi.ResourceOptions(provider=provider)
        lb = openstack.loadbalancer.LoadBalancer(
            "lb",
            name="kube_service_test_default_web",
            vip_subnet_id=topo["subnet_id"],
            description="pulumi provider test",
            tags=["kube_service"],
            opts=opts,
        )
        listener = openstack.loadbalancer.Listener(
            "listener",
            name="listener_0_kube_service_test_default_web",
            loadbalancer_id=lb.id,
            protocol="TCP",
            protocol_port=80,
            connection_limit=desired.connection_limit,
            allowed_cidrs=["0.0.0.0/0"],
            opts=opts,
        )
        pool = openstack.loadbalancer.Pool(
            "pool",
            name="pool_0_kube_service_test_default_web",
            listener_id=listener.id,
            protocol="TCP",
            lb_method="ROUND_ROBIN",
            opts=opts,
        )
        openstack.loadbalancer.Members(
            "members",
            pool_id=pool.id,
            members=[
                openstack.loadbalancer.MembersMemberArgs(
                    address=address, protocol_port=30080, subnet_id=topo["subnet_id"]
                )
                for address in desired.members
            ],
            opts=opts,
        )
        openstack.loadbalancer.Monitor(
            "monitor",
            name="monitor_0_kube_service_test_default_web",
            pool_id=pool.id,
            type="TCP",
            delay=desired.monitor_delay,
            timeout=3,
            max_retries=3,
            opts=opts,
        )
        fip = openstack.networking.FloatingIp(
            "fip",
            pool="public",
            description="Floating IP for Kubernetes external service default/web",
            opts=opts,
        )
        openstack.networking.FloatingIpAssociate(
            "fip-assoc", floating_ip=fip.address, port_id=lb.vip_port_id, opts=opts
        )
        pulumi.export("lb_id", lb.id)
        pulumi.export("vip_address", lb.vip_address)
        pulumi.export("floating_ip", fip.address)

    return program


@dataclass
class Run:
    emu: EmulatorHandle
    topo: dict[str, Any]
    stack: auto.Stack

    def up(self, desired: Desired) -> auto.UpResult:
        self.stack.workspace.program = make_program(topo=self.topo, desired=desired)
        return self.stack.up(on_output=lambda line: None)

    def inventory(self) -> dict[str, list[dict[str, Any]]]:
        response = requests.get(f"{self.emu.url}/admin/inventory", timeout=10)
        response.raise_for_status()
        resources: dict[str, list[dict[str, Any]]] = response.json()["resources"]
        return resources

    def created(self) -> dict[str, list[str]]:
        response = requests.get(f"{self.emu.url}/admin/inventory", timeout=10)
        response.raise_for_status()
        created: dict[str, list[str]] = response.json()["created"]
        return created


def open_run(
    *, timing: TimingProfile, toolchain: Toolchain, tmp_path: Path, name: str
) -> Iterator[Run]:
    with running_emulator(timing=timing) as emu:
        topo = emu.topology()
        backend = tmp_path / "state"
        backend.mkdir()
        stack = auto.create_stack(
            stack_name=name,
            project_name="lbr-emulator",
            program=make_program(topo=topo, desired=Desired()),
            opts=auto.LocalWorkspaceOptions(
                work_dir=str(tmp_path),
                env_vars={
                    **toolchain.env(),
                    "PULUMI_BACKEND_URL": backend.as_uri(),
                    "PULUMI_CONFIG_PASSPHRASE": "",
                },
            ),
        )
        yield Run(emu=emu, topo=topo, stack=stack)


@pytest.fixture
def instant_run(toolchain: Toolchain, tmp_path: Path) -> Iterator[Run]:
    yield from open_run(timing=INSTANT, toolchain=toolchain, tmp_path=tmp_path, name="instant")


@pytest.fixture
def cloudlike_run(toolchain: Toolchain, tmp_path: Path) -> Iterator[Run]:
    yield from open_run(timing=CLOUDLIKE, toolchain=toolchain, tmp_path=tmp_path, name="cloudlike")


def only(records: list[dict[str, Any]]) -> dict[str, Any]:
    assert len(records) == 1, records
    return records[0]


def assert_cloud_matches(run: Run, desired: Desired, outputs: dict[str, Any]) -> dict[str, str]:
    """The inventory holds exactly what ``desired`` declares; returns the IDs by kind."""
    inv = run.inventory()
    lb = only(inv["loadbalancers"])
    assert lb["id"] == outputs["lb_id"].value
    assert lb["vip_subnet_id"] == run.topo["subnet_id"]
    assert lb["vip_address"] == outputs["vip_address"].value
    assert lb["provisioning_status"] == "ACTIVE"
    assert lb["tags"] == ["kube_service"]
    listener = only(inv["listeners"])
    assert (listener["protocol"], listener["protocol_port"]) == ("TCP", 80)
    assert listener["connection_limit"] == desired.connection_limit
    assert listener["allowed_cidrs"] == ["0.0.0.0/0"]
    pool = only(inv["pools"])
    assert pool["listeners"] == [{"id": listener["id"]}]
    assert pool["lb_algorithm"] == "ROUND_ROBIN"
    members = inv["members"]
    assert sorted(m["address"] for m in members) == sorted(desired.members)
    assert sorted(m["id"] for m in members) == sorted(m["id"] for m in pool["members"])
    assert {m["protocol_port"] for m in members} == {30080}
    monitor = only(inv["healthmonitors"])
    assert monitor["pools"] == [{"id": pool["id"]}]
    assert (monitor["type"], monitor["delay"], monitor["timeout"], monitor["max_retries"]) == (
        "TCP",
        desired.monitor_delay,
        3,
        3,
    )
    fip = only(
        [f for f in inv["floatingips"] if f["floating_ip_address"] == outputs["floating_ip"].value]
    )
    assert fip["floating_network_id"] == run.topo["external_network_id"]
    assert fip["port_id"] == lb["vip_port_id"]
    assert fip["fixed_ip_address"] == lb["vip_address"]
    return {
        "lb": lb["id"],
        "listener": listener["id"],
        "pool": pool["id"],
        "monitor": monitor["id"],
        "fip": fip["id"],
        **{f"member:{m['address']}": m["id"] for m in members},
    }


def lifecycle(run: Run, *, changed: Desired) -> None:
    first = run.up(Desired())
    assert first.summary.result == "succeeded"
    assert first.summary.resource_changes == {"create": 9}
    ids = assert_cloud_matches(run, Desired(), first.outputs)

    second = run.up(changed)
    assert second.summary.result == "succeeded"
    assert second.summary.resource_changes == {"update": 3, "same": 6}
    new_ids = assert_cloud_matches(run, changed, second.outputs)
    assert {k: v for k, v in new_ids.items() if k in ids} == ids  # updated in place

    again = run.up(changed)
    assert again.summary.resource_changes == {"same": 9}
    assert assert_cloud_matches(run, changed, again.outputs) == new_ids

    down = run.stack.destroy(on_output=lambda line: None)
    assert down.summary.result == "succeeded"
    assert down.summary.resource_changes == {"delete": 9}
    assert run.created() == {}
    run.stack.workspace.remove_stack(run.stack.name)


CHANGED = Desired(
    members=("10.0.0.11", "10.0.0.12", "10.0.0.13"), monitor_delay=7, connection_limit=2000
)


def test_create_update_noop_destroy_instant(instant_run: Run) -> None:
    lifecycle(instant_run, changed=CHANGED)


def test_create_update_noop_destroy_cloudlike(cloudlike_run: Run) -> None:
    lifecycle(cloudlike_run, changed=replace(CHANGED, monitor_delay=9))

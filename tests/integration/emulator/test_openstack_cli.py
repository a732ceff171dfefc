"""The emulator driven by the real ``openstack`` CLI (python-openstackclient + octaviaclient)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from emulator.server import EmulatorHandle
from emulator.timing import INSTANT
from tests.emulated import emulator_fixture
from tests.integration.emulator.conftest import Admin

# each test starts real pulumi runs or servers for many seconds: not in make test-fast
pytestmark = pytest.mark.slow

OPENSTACK = Path(sys.executable).parent / "openstack"


# an emulator with the ``instant`` profile: ``--wait`` sees ACTIVE on its first poll
instant = emulator_fixture(name="instant", scope="module", timing=INSTANT)


@pytest.fixture
def cli_admin(instant: EmulatorHandle) -> Iterator[Admin]:
    admin = Admin(instant.url)
    yield admin
    admin.clear_faults()
    assert admin.created() == {}


@pytest.fixture
def osc(instant: EmulatorHandle, cli_admin: Admin) -> Any:
    emu = instant
    topo = emu.topology()
    auth = [
        "--os-auth-url",
        emu.auth_url,
        "--os-username",
        topo["username"],
        "--os-password",
        topo["password"],
        "--os-project-name",
        topo["project_name"],
        "--os-user-domain-name",
        "Default",
        "--os-project-domain-name",
        "Default",
        "--os-region-name",
        topo["region_name"],
        "--os-identity-api-version",
        "3",
    ]

    def run(*args: str, ok: bool = True) -> Any:
        proc = subprocess.run(
            [str(OPENSTACK), *auth, *args],
            capture_output=True,
            text=True,
            timeout=60,
            env={"PATH": "/usr/bin:/bin", "HOME": str(Path.home())},
        )
        if ok:
            assert proc.returncode == 0, proc.stderr
            return json.loads(proc.stdout) if "json" in args and proc.stdout.strip() else proc
        assert proc.returncode != 0, proc.stdout
        return proc

    return run


def test_loadbalancer_commands(osc: Any, topo: dict[str, Any]) -> None:
    lb = osc(
        "loadbalancer",
        "create",
        "--name",
        "cli-lb",
        "--vip-subnet-id",
        topo["subnet_id"],
        "--wait",
        "-f",
        "json",
    )
    assert lb["provisioning_status"] == "ACTIVE"
    listener = osc(
        "loadbalancer",
        "listener",
        "create",
        "--name",
        "cli-l",
        "--protocol",
        "TCP",
        "--protocol-port",
        "443",
        "--wait",
        "-f",
        "json",
        lb["id"],
    )
    failed = osc(
        "loadbalancer",
        "listener",
        "create",
        "--protocol",
        "TCP",
        "--protocol-port",
        "443",
        lb["id"],
        ok=False,
    )
    assert "already using" in failed.stderr
    pool = osc(
        "loadbalancer",
        "pool",
        "create",
        "--listener",
        listener["id"],
        "--protocol",
        "TCP",
        "--lb-algorithm",
        "ROUND_ROBIN",
        "--wait",
        "-f",
        "json",
    )
    osc(
        "loadbalancer",
        "member",
        "create",
        "--address",
        "10.0.0.41",
        "--protocol-port",
        "30443",
        "--subnet-id",
        topo["subnet_id"],
        "--wait",
        pool["id"],
    )
    osc(
        "loadbalancer",
        "healthmonitor",
        "create",
        "--type",
        "TCP",
        "--delay",
        "5",
        "--timeout",
        "3",
        "--max-retries",
        "3",
        "--wait",
        pool["id"],
    )
    members = osc("loadbalancer", "member", "list", "-f", "json", pool["id"])
    assert [m["address"] for m in members] == ["10.0.0.41"]
    status = osc("loadbalancer", "status", "show", lb["id"])
    assert "health_monitor" in status.stdout
    listed = osc("loadbalancer", "list", "-f", "json")
    assert [(x["name"], x["provisioning_status"]) for x in listed] == [("cli-lb", "ACTIVE")]
    osc("loadbalancer", "delete", "--cascade", "--wait", lb["id"])
    assert osc("loadbalancer", "list", "-f", "json") == []


def test_conflict_while_pending_and_error_path(
    osc: Any, topo: dict[str, Any], cli_admin: Admin
) -> None:
    admin = cli_admin
    admin.post("/faults/loadbalancers", {"name": "stuck-*", "outcome": "stuck"})
    admin.post("/faults/loadbalancers", {"name": "broken-*", "outcome": "error"})
    stuck = osc(
        "loadbalancer",
        "create",
        "--name",
        "stuck-1",
        "--vip-subnet-id",
        topo["subnet_id"],
        "-f",
        "json",
    )
    failed = osc(
        "loadbalancer",
        "listener",
        "create",
        "--protocol",
        "TCP",
        "--protocol-port",
        "80",
        stuck["id"],
        ok=False,
    )
    assert f"Load Balancer {stuck['id']} is immutable and cannot be updated." in failed.stderr
    admin.put(f"/loadbalancers/{stuck['id']}/status", {"provisioning_status": "ACTIVE"})
    osc("loadbalancer", "delete", "--wait", stuck["id"])

    osc(
        "loadbalancer",
        "create",
        "--name",
        "broken-1",
        "--vip-subnet-id",
        topo["subnet_id"],
        "--wait",
        ok=False,
    )
    shown = osc("loadbalancer", "show", "broken-1", "-f", "json")
    assert shown["provisioning_status"] == "ERROR"
    osc("loadbalancer", "delete", "--wait", shown["id"])


def test_floating_ip_commands(osc: Any, topo: dict[str, Any]) -> None:
    port = osc("port", "create", "--network", "private", "-f", "json", "cli-port")
    fip = osc("floating", "ip", "create", "--description", "cli", "-f", "json", "public")
    assert fip["floating_network_id"] == topo["external_network_id"]
    osc("floating", "ip", "set", "--port", port["id"], fip["id"])
    shown = osc("floating", "ip", "show", "-f", "json", fip["floating_ip_address"])
    assert shown["port_id"] == port["id"]
    assert shown["status"] == "ACTIVE"
    listed = osc("floating", "ip", "list", "--port", port["id"], "-f", "json")
    assert [x["ID"] for x in listed] == [fip["id"]]
    osc("floating", "ip", "unset", "--port", fip["id"])
    assert osc("floating", "ip", "show", "-f", "json", fip["id"])["port_id"] is None
    osc("floating", "ip", "delete", fip["id"])
    osc("port", "delete", port["id"])
    assert osc("floating", "ip", "list", "-f", "json") == []

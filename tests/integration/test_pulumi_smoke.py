"""The real Pulumi engine runs a real stack with the real OpenStack plugin loaded.

No cloud is needed yet: the stack declares an explicit OpenStack provider (which makes the engine
load, check and diff the plugin) and outputs; `up`, a no-op second `up`, and `destroy` must all work
on a file:// backend, and `pulumi plugin ls` must list the plugin the SDK asks for.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pulumi
import pulumi_openstack as openstack
import pytest
from pulumi import automation as auto

from reconciler.toolchain import Toolchain

# each test starts real pulumi runs or servers for many seconds: not in make test-fast
pytestmark = pytest.mark.slow

PLUGIN_VERSION = json.loads((Path(openstack.__file__).parent / "pulumi-plugin.json").read_text())[
    "version"
]


def _program() -> None:
    provider = openstack.Provider(
        "os",
        auth_url="http://127.0.0.1:9/v3",
        user_name="demo",
        password="not-a-real-secret",
        tenant_name="demo",
        region="RegionOne",
    )
    pulumi.export("provider_urn", provider.urn)
    pulumi.export("greeting", "hello")


def test_plugin_is_installed_at_the_sdk_version(toolchain: Toolchain) -> None:
    out = subprocess.run(
        [str(toolchain.path("pulumi")), "plugin", "ls", "--json"],
        capture_output=True,
        text=True,
        check=True,
        env=toolchain.env(),
    ).stdout
    plugins = {(p["name"], p["kind"], p["version"]) for p in json.loads(out)}
    assert ("openstack", "resource", PLUGIN_VERSION) in plugins


def test_cli_reports_the_sdk_version(toolchain: Toolchain) -> None:
    out = subprocess.run(
        [str(toolchain.path("pulumi")), "version"],
        capture_output=True,
        text=True,
        check=True,
        env=toolchain.env(),
    ).stdout.strip()
    from importlib.metadata import version

    assert out == f"v{version('pulumi')}"


def test_up_noop_and_destroy_with_the_openstack_plugin(
    toolchain: Toolchain, tmp_path: Path
) -> None:
    backend = tmp_path / "state"
    backend.mkdir()
    stack = auto.create_stack(
        stack_name="smoke",
        project_name="lbr-smoke",
        program=_program,
        opts=auto.LocalWorkspaceOptions(
            work_dir=str(tmp_path),
            env_vars={
                **toolchain.env(),
                "PULUMI_BACKEND_URL": backend.as_uri(),
                "PULUMI_CONFIG_PASSPHRASE": "",
            },
        ),
    )
    up = stack.up()
    assert up.summary.result == "succeeded"
    assert up.outputs["greeting"].value == "hello"
    assert up.outputs["provider_urn"].value.endswith("pulumi:providers:openstack::os")
    assert up.summary.resource_changes == {"create": 2}

    again = stack.up()
    assert again.summary.resource_changes == {"same": 2}

    state = stack.export_stack().deployment
    providers = [r for r in state["resources"] if r["type"] == "pulumi:providers:openstack"]
    assert len(providers) == 1
    assert providers[0]["inputs"]["version"] == PLUGIN_VERSION

    down = stack.destroy()
    assert down.summary.result == "succeeded"
    assert down.summary.resource_changes == {"delete": 2}
    assert stack.export_stack().deployment.get("resources") in (None, [])
    stack.workspace.remove_stack("smoke")

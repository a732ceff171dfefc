"""Finding the toolchain: the runtime needs only ``pulumi`` and the OpenStack plugin, at exactly the
pinned versions; the demo's and the tests' folder must hold every tool; each error names the gap
and the fix."""

from __future__ import annotations

import os
import re
import stat
import tomllib
from pathlib import Path

import pytest

from reconciler.local.toolchain import TOOLS, WITH_MINIO, find_toolchain
from reconciler.toolchain import (
    OPENSTACK_PLUGIN_VERSION,
    PULUMI_VERSION,
    REPO_ROOT,
    Toolchain,
    ToolchainError,
    find_runtime,
)


def _fake_tools(folder: Path, names: tuple[str, ...]) -> None:
    for name in names:
        tool = folder / name
        tool.write_text("#!/bin/sh\n")
        tool.chmod(tool.stat().st_mode | stat.S_IXUSR)


def test_explicit_folder_with_every_tool_is_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_tools(tmp_path, TOOLS)
    monkeypatch.setenv("LBR_TOOLS_BIN", str(tmp_path))
    assert find_toolchain().bin_dir == tmp_path


def test_explicit_folder_missing_a_tool_names_it_and_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_tools(tmp_path, ("pulumi", "etcd"))
    monkeypatch.setenv("LBR_TOOLS_BIN", str(tmp_path))
    with pytest.raises(ToolchainError) as err:
        find_toolchain()
    message = str(err.value)
    assert "pulumi-resource-openstack" in message
    assert "kube-apiserver" in message
    assert "make -s tools-path" in message


def test_path_lookup_without_a_build_reports_missing_tools(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LBR_TOOLS_BIN", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ToolchainError, match="not found on PATH: pulumi"):
        find_toolchain(build=False)


def test_env_puts_the_tools_first_and_disables_plugin_downloads(tmp_path: Path) -> None:
    env = Toolchain(bin_dir=tmp_path).env({"PATH": "/usr/bin"})
    assert env["PATH"].split(os.pathsep)[0] == str(tmp_path)
    assert env["PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION"] == "true"


def test_pulumi_root_is_the_parent_of_a_bin_folder(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    assert Toolchain(bin_dir=bin_dir).pulumi_root() == tmp_path


def test_pulumi_root_links_a_bin_folder_for_other_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LBR_TOOLS_CACHE", str(tmp_path / "cache"))
    tools = tmp_path / "bin-abc"
    tools.mkdir()
    _fake_tools(tools, ("pulumi",))
    root = Toolchain(bin_dir=tools).pulumi_root()
    assert (root / "bin" / "pulumi").resolve() == (tools / "pulumi").resolve()
    assert Toolchain(bin_dir=tools).pulumi_root() == root  # stable, idempotent


def test_explicit_folder_without_minio_says_how_to_get_a_folder_with_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_tools(tmp_path, TOOLS)
    monkeypatch.setenv("LBR_TOOLS_BIN", str(tmp_path))
    with pytest.raises(ToolchainError, match=r"lacks minio; .*tools/build.sh --with-minio --path"):
        find_toolchain(tools=WITH_MINIO)
    assert find_toolchain().bin_dir == tmp_path  # the demo's and the controller's tools are there


def _runtime_tools(
    folder: Path, *, pulumi: str = PULUMI_VERSION, plugin: str | None = None
) -> None:
    """A ``pulumi`` and (unless ``plugin`` is "") an OpenStack plugin that print these versions
    as the real ones do (``pulumi version``: ``v3...``; the plugin's ``-version``: bare)."""
    folder.mkdir(parents=True, exist_ok=True)
    scripts = {"pulumi": f"echo run >> {folder}/runs; echo v{pulumi}"}
    if plugin != "":
        scripts["pulumi-resource-openstack"] = f"echo {plugin or OPENSTACK_PLUGIN_VERSION}"
    for name, body in scripts.items():
        tool = folder / name
        tool.write_text(f"#!/bin/sh\n{body}\n")
        tool.chmod(tool.stat().st_mode | stat.S_IXUSR)


def test_the_runtime_needs_only_pulumi_and_the_plugin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder with the two runtime tools and no etcd, kube-apiserver or kubectl serves the
    controller and the user commands; the demo's lookup still asks for those."""
    _runtime_tools(tmp_path)
    monkeypatch.setenv("LBR_TOOLS_BIN", str(tmp_path))
    assert find_runtime().bin_dir == tmp_path
    with pytest.raises(ToolchainError, match="lacks etcd, kube-apiserver, kubectl"):
        find_toolchain()


def test_the_runtime_tools_on_path_outside_a_checkout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _runtime_tools(tmp_path / "bin")
    monkeypatch.delenv("LBR_TOOLS_BIN", raising=False)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}/usr/bin{os.pathsep}/bin")
    assert find_runtime(build=False).bin_dir == tmp_path / "bin"


def test_another_pulumi_version_is_refused_naming_both_and_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _runtime_tools(tmp_path, pulumi="3.100.0")
    monkeypatch.setenv("LBR_TOOLS_BIN", str(tmp_path))
    with pytest.raises(ToolchainError) as err:
        find_runtime()
    message = str(err.value)
    assert f"{tmp_path / 'pulumi'} is 3.100.0, not {PULUMI_VERSION}" in message
    assert "pulumi-resource-openstack" not in message.split(":")[0]  # the plugin is right
    assert f"pulumi plugin install resource openstack {OPENSTACK_PLUGIN_VERSION}" in message


def test_another_plugin_version_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _runtime_tools(tmp_path, plugin="5.4.0")
    monkeypatch.setenv("LBR_TOOLS_BIN", str(tmp_path))
    with pytest.raises(
        ToolchainError,
        match=rf"pulumi-resource-openstack is 5\.4\.0, not "
        rf"{re.escape(OPENSTACK_PLUGIN_VERSION)}",
    ):
        find_runtime()


def test_a_missing_plugin_says_where_it_was_looked_for_and_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _runtime_tools(tmp_path / "bin", plugin="")
    monkeypatch.setenv("LBR_TOOLS_BIN", str(tmp_path / "bin"))
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.setenv("PULUMI_HOME", str(tmp_path / "home"))
    with pytest.raises(ToolchainError) as err:
        find_runtime()
    message = str(err.value)
    assert f"plugin v{OPENSTACK_PLUGIN_VERSION} is not installed" in message
    assert "$PULUMI_HOME/plugins" in message
    assert f"pulumi plugin install resource openstack {OPENSTACK_PLUGIN_VERSION}" in message


def test_a_plugin_installed_by_pulumi_plugin_install_is_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where ``pulumi plugin install resource openstack V`` puts it: ``$PULUMI_HOME/plugins/
    resource-openstack-vV/``; the CLI runs that one when none is on PATH."""
    _runtime_tools(tmp_path / "bin", plugin="")
    _runtime_tools(tmp_path / "plugin")
    installed = tmp_path / "home" / "plugins" / f"resource-openstack-v{OPENSTACK_PLUGIN_VERSION}"
    installed.mkdir(parents=True)
    (tmp_path / "plugin" / "pulumi-resource-openstack").rename(
        installed / "pulumi-resource-openstack"
    )
    monkeypatch.setenv("LBR_TOOLS_BIN", str(tmp_path / "bin"))
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.setenv("PULUMI_HOME", str(tmp_path / "home"))
    assert find_runtime().bin_dir == tmp_path / "bin"


def test_the_pins_agree_with_the_build_script_and_the_sdks() -> None:
    """One pair of versions: what tools/build.sh builds, what the runtime checks, what the Python
    SDKs in pyproject.toml are (``pulumi`` talks to the CLI, ``pulumi-openstack`` to the
    plugin)."""
    script = (REPO_ROOT / "tools" / "build.sh").read_text()
    built = dict(re.findall(r"^(PULUMI_VERSION|OPENSTACK_PLUGIN_VERSION)=(\S+)", script, re.M))
    assert built == {
        "PULUMI_VERSION": PULUMI_VERSION,
        "OPENSTACK_PLUGIN_VERSION": OPENSTACK_PLUGIN_VERSION,
    }
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    assert f"pulumi>={PULUMI_VERSION}," in {d.split("<")[0] for d in project["dependencies"]}
    assert f"pulumi-openstack>={OPENSTACK_PLUGIN_VERSION}," in {
        d.split("<")[0] for d in project["dependencies"]
    }


def test_a_check_passed_is_remembered_until_the_binary_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A user command does not start ``pulumi version`` each time; another binary in the same
    place (an upgrade) is checked again, and refused when it is not the pinned version."""
    _runtime_tools(tmp_path / "bin")
    monkeypatch.setenv("LBR_TOOLS_BIN", str(tmp_path / "bin"))
    runs = tmp_path / "bin" / "runs"
    find_runtime()
    find_runtime()
    assert runs.read_text().splitlines() == ["run"]  # one check for two starts
    _runtime_tools(tmp_path / "bin", pulumi="3.300.0")  # replaced: another size and time
    with pytest.raises(ToolchainError, match=r"is 3\.300\.0, not"):
        find_runtime()

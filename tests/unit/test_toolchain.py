"""Finding the toolchain: an explicit folder must hold every tool, and the error names the gap."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from reconciler.local.toolchain import TOOLS, WITH_MINIO, Toolchain, ToolchainError, find_toolchain


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

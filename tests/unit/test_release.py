"""A release: one version (pyproject.toml's), the chart's version and appVersion the same, a
CHANGELOG entry for it, and ``--version`` saying the version, the commit and the pins."""

from __future__ import annotations

import subprocess
import tomllib
from pathlib import Path

import pytest
import yaml

from reconciler.cli.main import main
from reconciler.cli.version import REVISION_FILE, revision
from reconciler.toolchain import OPENSTACK_PLUGIN_VERSION, PULUMI_VERSION, REPO_ROOT


def _version() -> str:
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    return str(project["version"])


def test_the_chart_follows_the_package_version() -> None:
    chart = yaml.safe_load((REPO_ROOT / "charts" / "lb-reconciler" / "Chart.yaml").read_text())
    assert (chart["version"], chart["appVersion"]) == (_version(), _version())


def test_the_changelog_has_an_entry_for_the_version() -> None:
    text = (REPO_ROOT / "CHANGELOG.md").read_text()
    assert f"## [{_version()}]" in text


def test_version_says_the_commit_and_the_tools_it_needs(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    first, second = capsys.readouterr().out.splitlines()
    head = subprocess.run(
        ["git", "-C", str(REPO_ROOT), "describe", "--always", "--dirty", "--abbrev=12"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert first == f"lb-reconciler {_version()} (commit {head})"
    assert second == (
        f"needs pulumi v{PULUMI_VERSION} and pulumi-resource-openstack v{OPENSTACK_PLUGIN_VERSION}"
    )


def test_outside_a_checkout_the_commit_is_the_one_an_image_build_recorded(tmp_path: Path) -> None:
    assert revision(prefix=tmp_path, checkout=tmp_path) == "unknown"
    (tmp_path / REVISION_FILE).parent.mkdir(parents=True)
    (tmp_path / REVISION_FILE).write_text("0123456789ab\n")
    assert revision(prefix=tmp_path, checkout=tmp_path) == "0123456789ab"

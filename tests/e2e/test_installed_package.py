"""The package as a user installs it: a wheel of this tree in a virtualenv of its own, outside any
source checkout, with only the two runtime binaries (``pulumi`` and the OpenStack plugin) on
``PATH``: no etcd, kube-apiserver, kubectl or MinIO, no ``$LBR_TOOLS_BIN``, an empty
``$HOME``. ``--version``, ``stacks``, ``preview`` (against the emulator) and ``run`` (against a
real kube-apiserver, until it has synced and is stopped with SIGTERM) start and work; without the
plugin, each command says which version is missing and how to install it.

The virtualenv gets this wheel with ``pip install --no-deps``; its Python dependencies come from
the test run's own environment through a ``.pth`` line (a second download of them would test
PyPI, not the package). The wheel is built from a copy of the sources, so nothing is written
into the checkout.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from emulator.server import EmulatorHandle
from reconciler.controller.kubeapi import KubeApi
from reconciler.local.plane import LocalControlPlane
from reconciler.toolchain import (
    OPENSTACK_PLUGIN_VERSION,
    PLUGIN,
    PULUMI_VERSION,
    REPO_ROOT,
    Toolchain,
)
from tests.builders import make_node, make_service
from tests.emulated import cloud_conf_text, wait_until

pytestmark = pytest.mark.e2e

SOURCES = ("pyproject.toml", "README.md", "reconciler", "stacks", "emulator")
TEST_TOOLS = ("etcd", "kube-apiserver", "kubectl", "minio")


@dataclass(frozen=True)
class Installed:
    """A virtualenv holding the wheel, and a folder with only the runtime binaries."""

    venv: Path
    runtime_bin: Path
    home: Path

    def env(self, *, plugin: bool = True) -> dict[str, str]:
        """A user's environment: the runtime binaries (without the plugin: ``plugin=False``),
        the virtualenv, the system; nothing of the test run's."""
        folders = [str(self.runtime_bin)] if plugin else [str(self.runtime_bin.parent / "cli")]
        path = os.pathsep.join([*folders, str(self.venv / "bin"), "/usr/bin", "/bin"])
        return {
            "PATH": path,
            "HOME": str(self.home),
            "LANG": "C.UTF-8",
            "PULUMI_CONFIG_PASSPHRASE": "installed-package",
        }

    def command(
        self, *args: str, cwd: Path, plugin: bool = True, timeout: float = 300
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.venv / "bin" / "lb-reconciler"), *args],
            capture_output=True,
            text=True,
            env=self.env(plugin=plugin),
            cwd=cwd,
            timeout=timeout,
            check=False,
        )


@pytest.fixture(scope="module")
def installed(toolchain: Toolchain, tmp_path_factory: pytest.TempPathFactory) -> Installed:
    root = tmp_path_factory.mktemp("installed")
    src = root / "src"
    src.mkdir()
    for name in SOURCES:
        path = REPO_ROOT / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(path, src / name)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    wheels = root / "wheels"
    subprocess.run(
        [*pip, "wheel", "--no-deps", "-w", str(wheels), str(src)],  # as `pip install .` builds
        check=True,
        cwd=root,
    )
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    (wheel,) = wheels.glob("lb_reconciler-*.whl")
    python = venv / "bin" / "python"
    subprocess.run(
        [*pip, "--python", str(python), "install", "--no-deps", "--no-index", str(wheel)],
        check=True,
        cwd=root,
    )
    # the dependencies: this run's site-packages, after the virtualenv's own (which holds the
    # wheel: the checkout's editable install is not on this path)
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    (Path(purelib) / "deps-of-the-test-run.pth").write_text(sysconfig.get_paths()["purelib"])
    runtime_bin = root / "runtime"  # the two binaries, as an image or a laptop has them
    cli_only = root / "cli"  # the CLI without the plugin
    for folder, tools in ((runtime_bin, ("pulumi", PLUGIN)), (cli_only, ("pulumi",))):
        folder.mkdir()
        for tool in tools:
            (folder / tool).symlink_to(toolchain.path(tool).resolve())
    home = root / "home"
    home.mkdir()
    return Installed(venv=venv, runtime_bin=runtime_bin, home=home)


def test_it_runs_from_its_own_venv_not_the_checkout(installed: Installed, tmp_path: Path) -> None:
    where = subprocess.run(
        [
            str(installed.venv / "bin" / "python"),
            "-c",
            "import reconciler; print(reconciler.__file__)",
        ],
        capture_output=True,
        text=True,
        env=installed.env(),
        cwd=tmp_path,
        check=True,
    ).stdout.strip()
    assert Path(where).is_relative_to(installed.venv), where
    done = installed.command("--version", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "lb-reconciler 0.1.0 (commit unknown)",  # no checkout, no REVISION file of an image
        f"needs pulumi v{PULUMI_VERSION} and pulumi-resource-openstack v{OPENSTACK_PLUGIN_VERSION}",
    ]


def _conf(emu: EmulatorHandle, folder: Path) -> Path:
    topo = emu.topology()
    conf = folder / "cloud.conf"
    conf.write_text(
        cloud_conf_text(
            topo,
            f"subnet-id = {topo['subnet_id']}\nfloating-network-id = {topo['external_network_id']}",
        )
    )
    return conf


def _no_test_tool_named(text: str) -> None:
    for tool in TEST_TOOLS:
        assert tool not in text, text


def test_stacks_and_preview_need_only_the_runtime_binaries(
    installed: Installed, emu: EmulatorHandle, tmp_path: Path
) -> None:
    conf = _conf(emu, tmp_path)
    state = ["--state-dir", str(tmp_path / "state"), "--cluster-name", "installed"]
    listed = installed.command("stacks", *state, "--output", "json", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout) == []
    _no_test_tool_named(listed.stderr)

    svc = make_service("web", ports=[{"name": "http", "port": 80, "targetPort": 8080}])
    (tmp_path / "svc.yaml").write_text(yaml.safe_dump(svc))
    nodes = {"apiVersion": "v1", "kind": "List", "items": [make_node("n1", internal="10.0.0.11")]}
    (tmp_path / "nodes.yaml").write_text(yaml.safe_dump(nodes))
    previewed = installed.command(
        "preview",
        "--cloud-config",
        str(conf),
        *state,
        "--nodes",
        str(tmp_path / "nodes.yaml"),
        "-f",
        str(tmp_path / "svc.yaml"),
        cwd=tmp_path,
    )
    assert previewed.returncode == 2, previewed.stdout + previewed.stderr  # 2: it would create
    assert "loadbalancer" in previewed.stdout.lower(), previewed.stdout
    _no_test_tool_named(previewed.stderr)


def test_without_the_plugin_each_command_says_which_and_how_to_get_it(
    installed: Installed, tmp_path: Path
) -> None:
    done = installed.command(
        "stacks", "--state-dir", str(tmp_path / "state"), cwd=tmp_path, plugin=False
    )
    assert done.returncode != 0
    assert f"plugin v{OPENSTACK_PLUGIN_VERSION} is not installed" in done.stderr, done.stderr
    assert f"pulumi plugin install resource openstack {OPENSTACK_PLUGIN_VERSION}" in done.stderr
    _no_test_tool_named(done.stderr)


@pytest.fixture
def namespace(control_plane: LocalControlPlane) -> Iterator[tuple[KubeApi, str]]:
    from reconciler.controller.kubeconfig import api_client

    kube = KubeApi(api_client=api_client(kubeconfig=control_plane.kubeconfig))
    ns = f"inst-{uuid.uuid4().hex[:6]}"
    kube.create("/api/v1/namespaces", {"metadata": {"name": ns}})
    try:
        yield kube, ns
    finally:
        kube.request(method="DELETE", path=f"/api/v1/namespaces/{ns}")
        kube.close()


def _records(log: Path) -> list[dict[str, Any]]:
    out = []
    for line in log.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def test_run_starts_and_stops_with_only_the_runtime_binaries(
    installed: Installed,
    emu: EmulatorHandle,
    control_plane: LocalControlPlane,
    namespace: tuple[KubeApi, str],
    tmp_path: Path,
) -> None:
    _kube, ns = namespace
    log = tmp_path / "run.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [
                str(installed.venv / "bin" / "lb-reconciler"),
                "run",
                "--cloud-config",
                str(_conf(emu, tmp_path)),
                "--kubeconfig",
                str(control_plane.kubeconfig),
                "--state-dir",
                str(tmp_path / "state"),
                "--cluster-name",
                "installed",
                "--namespace",
                ns,
                "--http-address",
                "",
                "--log-format",
                "json",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=installed.env(),
            cwd=tmp_path,
        )
    try:
        wait_until(
            lambda: (
                proc.poll() is not None
                or any(r.get("msg") == "controller started" for r in _records(log))
            ),
            timeout=120,
            interval=0.2,
        )
        assert proc.poll() is None, log.read_text()
        proc.send_signal(signal.SIGTERM)
        started = time.monotonic()
        assert proc.wait(timeout=60) == 0, log.read_text()
        print(f"stopped {time.monotonic() - started:.1f}s after SIGTERM")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    _no_test_tool_named(log.read_text())

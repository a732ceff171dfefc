"""The local PostgreSQL and MinIO servers (reconciler/local/backends.py) and `backend serve`.

Each starts in a folder on a free port, keeps its data across a restart, and leaves no process
behind when stopped; `lb-reconciler backend serve` prints the lines that point the plain `pulumi`
CLI at it, and stops the server on SIGTERM.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from reconciler.local.backends import BackendServer, start_server
from reconciler.toolchain import Toolchain
from tests.backends import Backend

# each test starts real pulumi runs or servers for many seconds: not in make test-fast
pytestmark = pytest.mark.slow


def processes_in(folder: Path) -> list[str]:
    """The command lines of the live processes that name ``folder`` (a server and its
    children, e.g. PostgreSQL's background workers, which keep the postmaster's arguments)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if str(folder) in cmdline and state != "Z":
            found.append(f"{entry.name}: {cmdline}")
    return found


@pytest.mark.parametrize("kind", ["postgres", "s3"])
def test_a_server_keeps_its_data_and_leaves_nothing_running(
    toolchain: Toolchain, tmp_path: Path, kind: str
) -> None:
    folder = tmp_path / kind
    with start_server(kind, folder=folder, toolchain=toolchain) as server:  # type: ignore[arg-type]
        assert server.running()
        assert processes_in(folder)
        url = server.new_backend("kept")
        init_stack(toolchain, tmp_path, Backend(kind, url, server.env, server), "c.ns.kept")
    assert processes_in(folder) == []  # the server and every child of it are gone
    with start_server(kind, folder=folder, toolchain=toolchain) as again:  # type: ignore[arg-type]
        assert again.url("kept") == url.replace(f":{server.port}", f":{again.port}")
        store = Backend(kind, again.url("kept"), again.env, again).store()
        assert store.tags("c.ns.kept") == {"lbr:cluster": "c"}
        store.close()
    assert processes_in(folder) == []


def init_stack(toolchain: Toolchain, tmp_path: Path, backend: Backend, stack: str) -> str:
    """``pulumi stack init`` and one tag, with the real CLI; its ``stack ls --json``."""
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    (project / "Pulumi.yaml").write_text("name: lb-reconciler\nruntime: python\n")
    env = {
        **toolchain.env(),
        **backend.cli_env(),
        "PULUMI_CONFIG_PASSPHRASE": "x",
        "PULUMI_SKIP_UPDATE_CHECK": "true",
    }
    out = ""
    for args in (
        ["stack", "init", stack],
        ["stack", "tag", "set", "lbr:cluster", "c"],
        ["stack", "ls", "--json"],
    ):
        done = subprocess.run(
            [str(toolchain.path("pulumi")), *args],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        out = done.stdout
    return out


def _serve(tmp_path: Path, kind: str) -> tuple[subprocess.Popen[str], dict[str, str]]:
    """``lb-reconciler backend serve <kind>`` running, and the variables it printed."""
    folder = str(tmp_path / "served")
    proc = subprocess.Popen(
        [sys.executable, "-m", "reconciler.cli", "backend", "serve", kind, "--folder", folder],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    exports: dict[str, str] = {}
    assert proc.stdout is not None
    # postgres: the URL and PULUMI_DIY_BACKEND_PARALLEL; s3: the URL and the two AWS keys
    while len(exports) < {"postgres": 2, "s3": 3}[kind]:
        line = proc.stdout.readline()  # the server prints its lines within seconds, or exits
        assert line, f"backend serve exited with {proc.wait()}"
        name, _, value = line.strip().removeprefix("export ").partition("=")
        exports[name] = value.strip("'")
    return proc, exports


@pytest.mark.parametrize("kind", ["postgres", "s3"])
def test_backend_serve_prints_what_pulumi_needs(
    toolchain: Toolchain, tmp_path: Path, kind: str
) -> None:
    proc, exports = _serve(tmp_path, kind)
    try:
        env_file = (tmp_path / "served" / "env").read_text()
        assert env_file.splitlines()[0].startswith("export PULUMI_BACKEND_URL=")
        assert exports["PULUMI_BACKEND_URL"].startswith(f"{kind}://")
        backend = Backend(kind, exports.pop("PULUMI_BACKEND_URL"), exports)
        assert '"c.ns.served"' in init_stack(toolchain, tmp_path, backend, "c.ns.served")
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
    assert processes_in(tmp_path / "served") == []


def test_start_up_times_are_reported(toolchain: Toolchain, tmp_path: Path) -> None:
    """Not a timing assert: the numbers the docs quote come from here (``-s`` shows them)."""
    for kind in ("postgres", "s3"):
        for attempt in ("first", "again"):
            started = time.monotonic()
            server: BackendServer
            with start_server(kind, folder=tmp_path / kind, toolchain=toolchain) as server:  # type: ignore[arg-type]
                print(f"{kind} ({attempt} start in its folder): ready in {server.started_in:.2f}s")
            print(f"{kind}: start and stop {time.monotonic() - started:.2f}s")
    assert os.listdir(tmp_path / "postgres")

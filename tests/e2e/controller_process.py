"""``lb-reconciler run`` as a separate process, the way a pod runs it, for end-to-end tests.

The process authenticates with a ServiceAccount token bound to the RBAC of ``deploy/rbac.yaml``
(never the admin certificate), talks to the emulator through a cloud.conf, keeps its stacks in a
``file://`` backend under a state folder shared by every replica of a test, and serves
``/healthz``, ``/readyz`` and ``/metrics`` on a loopback port. It runs in a session of its own, so
:meth:`ControllerProcess.kill` can SIGKILL the whole process group at once (the controller, its
``pulumi`` children and their provider plugins), as a container runtime does to a pod.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests

from reconciler.controller import thread_dump
from reconciler.engine.recovery import kill_tree, start_time
from reconciler.local.plane import free_port
from reconciler.local.toolchain import Toolchain

PASSPHRASE = "e2e-process-passphrase"


@dataclass
class ControllerSetup:
    """What every replica of one test shares."""

    toolchain: Toolchain
    kubeconfig: Path  # the ServiceAccount's, not the admin's
    cloud_conf: Path
    state_dir: Path
    logs: Path
    cluster_name: str = "e2e"
    extra_args: list[str] = field(default_factory=list)
    # the state backend ("" : run's default, file://<state_dir>/backend) and what pulumi needs
    # beside its URL (s3://: the AWS keys)
    backend_url: str = ""
    backend_env: dict[str, str] = field(default_factory=dict)

    @property
    def backend(self) -> str:
        return self.backend_url or (self.state_dir / "backend").absolute().as_uri()


def other_hostname(hostname: str) -> list[str]:
    """The command prefix that runs a process under ``hostname``, in a UTS namespace of its own
    (as a pod has: its hostname is its name), so the ``pulumi`` it starts writes that hostname in
    its stack locks. ``unshare --uts`` needs CAP_SYS_ADMIN; without it, a user namespace gives
    it (``unshare --user --map-root-user``). The prefix execs the command: same PID."""
    for prefix in (["unshare", "--uts"], ["unshare", "--user", "--map-root-user", "--uts"]):
        probe = subprocess.run(
            [*prefix, "hostname", hostname], capture_output=True, text=True, check=False
        )
        if probe.returncode == 0:
            return [*prefix, "sh", "-c", f'hostname {hostname} && exec "$@"', "sh"]
    raise RuntimeError(f"cannot run a process under another hostname here: {probe.stderr}")


class ControllerProcess:
    def __init__(
        self,
        setup: ControllerSetup,
        *,
        identity: str,
        args: list[str] | None = None,
        hostname: str | None = None,
    ):
        """``hostname``: run under this hostname (:func:`other_hostname`), as another pod would;
        None: this machine's."""
        self.setup = setup
        self.identity = identity
        self.port = free_port()
        self.log_path = setup.logs / f"{identity}.log"
        self.argv = [
            *(other_hostname(hostname) if hostname else []),
            sys.executable,
            "-m",
            "reconciler.cli.main",
            "run",
            "--kubeconfig",
            str(setup.kubeconfig),
            "--cloud-config",
            str(setup.cloud_conf),
            "--state-dir",
            str(setup.state_dir),
            "--cluster-name",
            setup.cluster_name,
            "--http-address",
            f"127.0.0.1:{self.port}",
            "--log-format",
            "json",
            *(["--backend-url", setup.backend_url] if setup.backend_url else []),
            *setup.extra_args,
            *(args or []),
        ]
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> ControllerProcess:
        env = dict(os.environ)
        env.update(self.setup.toolchain.env())
        env["PULUMI_CONFIG_PASSPHRASE"] = PASSPHRASE
        env["POD_NAME"] = self.identity
        env.pop("KUBECONFIG", None)
        env.pop("PULUMI_BACKEND_URL", None)  # run's default backend: the state folder's file://
        env.update(self.setup.backend_env)
        self.setup.logs.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                self.argv,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,  # its own process group: kill() takes the children too
            )
        return self

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def http(self, path: str) -> tuple[int, str]:
        try:
            response = requests.get(self.url + path, timeout=5)
        except requests.RequestException:
            return 0, ""  # not listening (yet, or any more)
        return response.status_code, response.text

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def metric(self, name: str, **labels: str) -> float:
        """The value of one sample of ``/metrics`` (0 when absent)."""
        _status, body = self.http("/metrics")
        want = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
        for line in body.splitlines():
            if line.startswith("#"):
                continue
            sample, _, value = line.rpartition(" ")
            metric, _, rest = sample.partition("{")
            got = ",".join(sorted(p for p in rest.rstrip("}").split(",") if p))
            if metric == name and got == want:
                return float(value)
        return 0.0

    def log_records(self) -> list[dict[str, Any]]:
        out = []
        for line in self.log_path.read_text(errors="replace").splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                continue
        return out

    def log_tail(self, lines: int = 40) -> str:
        if not self.log_path.exists():
            return ""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def kill(self) -> None:
        """SIGKILL the controller, its pulumi children and their plugins (each plugin leads a
        process group of its own: the controller's group alone would leave them running)."""
        if self.proc is None:
            return
        tree = kill_tree(self.proc.pid)
        self.proc.wait(timeout=30)
        _wait_group_gone(self.proc.pid)
        _wait_gone(tree)

    def terminate(self, *, timeout: float = 60.0) -> int:
        """SIGTERM (a pod deletion) and wait; returns the exit code."""
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(
                f"{self.identity} did not stop within {timeout}s of SIGTERM; its threads:\n"
                + self.stacks()
            ) from None
        finally:
            self.kill()  # whatever is left of the group
        return code

    def stacks(self) -> str:
        """Every thread's stack of the running controller: its SIGUSR1 log record
        (:mod:`reconciler.controller.thread_dump`), as text; "" if none came within 10 s."""
        assert self.proc is not None
        before = self.log_path.stat().st_size
        self.proc.send_signal(signal.SIGUSR1)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            for record in records_after(self.log_path, before):
                if record.get("msg") == thread_dump.MESSAGE:
                    threads: dict[str, str] = record["threads"]
                    return "\n".join(f"Thread {name}:\n{stack}" for name, stack in threads.items())
            time.sleep(0.2)
        return ""


def records_after(path: Path, offset: int) -> list[dict[str, Any]]:
    """The JSON log records written to ``path`` after byte ``offset`` (whole lines only)."""
    with path.open("rb") as log:
        log.seek(offset)
        text = log.read().decode(errors="replace")
    out = []
    for line in text.splitlines(keepends=True):
        if not line.endswith("\n"):
            break  # being written
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes of process group ``pgid``, from /proc."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] != "Z" and int(fields[2]) == pgid:
            found.append(int(entry.name))
    return found


def _wait_gone(tree: set[tuple[int, str]], timeout: float = 30.0) -> None:
    """Until none of these processes (PID, start time) is alive; a leak fails the test."""
    deadline = time.monotonic() + timeout
    while left := [pid for pid, started in tree if start_time(pid) == started]:
        if time.monotonic() > deadline:
            raise AssertionError(f"processes {left} of the controller still run after SIGKILL")
        time.sleep(0.1)


def _wait_group_gone(pgid: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while group_members(pgid):
        if time.monotonic() > deadline:
            raise AssertionError(f"process group {pgid} still has members after SIGKILL")
        time.sleep(0.1)

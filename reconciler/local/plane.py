"""A local Kubernetes control plane: a real etcd and a real kube-apiserver on loopback.

Used by the tests (through a pytest fixture) and by ``lb-reconciler demo``. There are no nodes,
kubelets or controller-manager: the controller under test is the only controller, and Nodes are
plain API objects the tests create. That is all a load-balancer controller talks to.

    with LocalControlPlane.start(toolchain=find_toolchain()) as plane:
        plane.kubeconfig   # a kubeconfig file for an admin (system:masters) client cert

Each plane gets a fresh folder (PKI, etcd data, logs, kubeconfig) and free loopback ports, so
several can run side by side. ``stop()`` terminates both processes (SIGTERM, then SIGKILL after a
grace period) and removes the folder unless ``keep=True``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

import yaml

from reconciler.local.pki import PkiFiles, write_pki
from reconciler.local.toolchain import Toolchain

SERVICE_CIDR = "10.96.0.0/16"


class ControlPlaneError(RuntimeError):
    """The control plane did not come up; the message names the process and its log."""


# The ports of this process's own, when it is one of several test workers on one machine: a
# range "LOW-HIGH" below the kernel's ephemeral ports (which are 32768-60999 by default), and no
# other worker's. A port the kernel hands out (bind to 0) is free only until the process it was
# chosen for binds it, seconds later for a server that imports Python first; meanwhile another
# worker's bind to 0 may take it. Ports from a range of one's own are nobody else's.
PORT_RANGE_ENV = "LBR_PORT_RANGE"


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


class _PortCursor:
    """Hands out the ports of :data:`PORT_RANGE_ENV`'s range in turn, each once before any comes
    again (a port just handed out may not be bound by its server yet), skipping those in use.
    The process has one (:data:`_PORTS`): the ports it hands out are the host's, not an
    object's."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._next: dict[tuple[int, int], int] = {}

    def take(self, low: int, high: int) -> int:
        with self._lock:
            start = self._next.get((low, high), low)
            for step in range(high - low):
                port = low + (start - low + step) % (high - low)
                if _bindable(port):
                    self._next[(low, high)] = port + 1
                    return port
        raise ControlPlaneError(f"no free port left in {PORT_RANGE_ENV}={low}-{high}")


_PORTS = _PortCursor()


def free_port() -> int:
    """A currently free TCP port on 127.0.0.1: the next of this process's own range when
    :data:`PORT_RANGE_ENV` names one (a test worker's), else one the kernel picks."""
    span = os.environ.get(PORT_RANGE_ENV, "")
    if span:
        low, _, high = span.partition("-")
        return _PORTS.take(int(low), int(high))
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def tail_of(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


@dataclass
class LocalControlPlane:
    """A running etcd + kube-apiserver pair. Create it with :meth:`start`."""

    folder: Path
    server: str
    kubeconfig: Path
    pki: PkiFiles
    keep: bool = False
    _procs: list[tuple[str, subprocess.Popen[bytes], Path]] = field(default_factory=list)

    @classmethod
    def start(
        cls,
        *,
        toolchain: Toolchain,
        folder: Path | None = None,
        keep: bool = False,
        timeout: float = 90.0,
    ) -> LocalControlPlane:
        """Start etcd and kube-apiserver; return once ``/readyz`` answers ok."""
        base = folder or Path(tempfile.mkdtemp(prefix="lbr-plane-"))
        base.mkdir(parents=True, exist_ok=True)
        pki = write_pki(base / "pki")
        api_port = free_port()
        plane = cls(
            folder=base,
            server=f"https://127.0.0.1:{api_port}",
            kubeconfig=base / "kubeconfig",
            pki=pki,
            keep=keep,
        )
        try:
            etcd_url = plane._start_etcd(toolchain, timeout=timeout)
            plane._start_apiserver(toolchain, etcd_url=etcd_url, port=api_port, timeout=timeout)
            plane._write_kubeconfig()
        except BaseException:
            plane.stop()
            raise
        return plane

    def _spawn(self, name: str, argv: list[str]) -> subprocess.Popen[bytes]:
        log = self.folder / f"{name}.log"
        with log.open("wb") as out:
            proc = subprocess.Popen(
                argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )
        self._procs.append((name, proc, log))
        return proc

    def _wait(self, name: str, probe_url: str, *, timeout: float) -> None:
        proc, log = next((p, lg) for n, p, lg in self._procs if n == name)
        ctx = ssl.create_default_context(cafile=str(self.pki.ca_cert))
        ctx.load_cert_chain(str(self.pki.admin_cert), str(self.pki.admin_key))
        deadline = time.monotonic() + timeout
        last = "no answer yet"
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise ControlPlaneError(
                    f"{name} exited with {proc.returncode} while starting; "
                    f"log {log}:\n{tail_of(log)}"
                )
            try:
                https = probe_url.startswith("https")
                with urllib.request.urlopen(  # noqa: S310 (fixed loopback URL)
                    probe_url, timeout=2, context=ctx if https else None
                ) as resp:
                    if resp.status == 200:
                        return
                    last = f"HTTP {resp.status}"
            except (urllib.error.URLError, OSError) as exc:
                last = str(exc)
            time.sleep(0.2)
        raise ControlPlaneError(
            f"{name} not ready after {timeout:.0f}s ({last}); log {log}:\n{tail_of(log)}"
        )

    def _start_etcd(self, toolchain: Toolchain, *, timeout: float) -> str:
        client, peer = free_port(), free_port()
        url = f"http://127.0.0.1:{client}"
        self._spawn(
            "etcd",
            [
                str(toolchain.path("etcd")),
                "--name=default",
                f"--data-dir={self.folder / 'etcd'}",
                f"--listen-client-urls={url}",
                f"--advertise-client-urls={url}",
                f"--listen-peer-urls=http://127.0.0.1:{peer}",
                f"--initial-advertise-peer-urls=http://127.0.0.1:{peer}",
                f"--initial-cluster=default=http://127.0.0.1:{peer}",
                "--listen-metrics-urls=",
                "--unsafe-no-fsync",  # throw-away data: fsync would cost seconds and buy nothing
                "--log-level=warn",
                # one member, nobody to elect: Raft ticks ten times less often (idle, half
                # the CPU: 0.44 s in two minutes instead of 0.87)
                "--heartbeat-interval=1000",
                "--election-timeout=5000",
            ],
        )
        self._wait("etcd", f"{url}/health", timeout=timeout)
        return url

    def _start_apiserver(
        self, toolchain: Toolchain, *, etcd_url: str, port: int, timeout: float
    ) -> None:
        pki = self.pki
        self._spawn(
            "kube-apiserver",
            [
                str(toolchain.path("kube-apiserver")),
                f"--etcd-servers={etcd_url}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--secure-port={port}",
                f"--tls-cert-file={pki.serving_cert}",
                f"--tls-private-key-file={pki.serving_key}",
                f"--client-ca-file={pki.ca_cert}",
                f"--service-account-key-file={pki.sa_public}",
                f"--service-account-signing-key-file={pki.sa_private}",
                "--service-account-issuer=https://kubernetes.default.svc",
                f"--service-cluster-ip-range={SERVICE_CIDR}",
                "--authorization-mode=RBAC",
                "--enable-priority-and-fairness=false",
                "--profiling=false",
                # one server: no lease for the `kubernetes` Service's endpoints, no identity
                # lease to renew every 10 s (idle, 1.56 CPU s in two minutes instead of 2.16)
                "--endpoint-reconciler-type=none",
                "--feature-gates=APIServerIdentity=false,UnknownVersionInteroperabilityProxy=false",
                f"--cert-dir={self.folder / 'apiserver-certs'}",
                "--v=1",
            ],
        )
        self._wait("kube-apiserver", f"{self.server}/readyz", timeout=timeout)

    def _write_kubeconfig(self) -> None:
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "local",
                    "cluster": {
                        "server": self.server,
                        "certificate-authority": str(self.pki.ca_cert),
                    },
                }
            ],
            "users": [
                {
                    "name": "admin",
                    "user": {
                        "client-certificate": str(self.pki.admin_cert),
                        "client-key": str(self.pki.admin_key),
                    },
                }
            ],
            "contexts": [{"name": "local", "context": {"cluster": "local", "user": "admin"}}],
            "current-context": "local",
        }
        self.kubeconfig.write_text(yaml.safe_dump(config))

    def stop(self, *, grace: float = 10.0) -> None:
        """Stop kube-apiserver, then etcd; remove the folder unless ``keep``."""
        for _name, proc, _log in reversed(self._procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=grace)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        self._procs.clear()
        if not self.keep:
            with contextlib.suppress(OSError):
                shutil.rmtree(self.folder)

    def __enter__(self) -> LocalControlPlane:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

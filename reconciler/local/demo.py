"""``lb-reconciler demo``: the whole thing on one machine, from a fresh clone.

The real toolchain (built on first use), a local etcd + kube-apiserver, the OpenStack emulator,
and ``lb-reconciler run`` as a separate process with the ServiceAccount and RBAC of ``deploy/``.
Then the flow of the Kubernetes docs: ``example-service`` goes from ``<pending>`` to an
EXTERNAL-IP, its stack shows in ``pulumi stack ls``, and ``kubectl delete service`` returns once
the finalizer is released, with the cloud empty. Everything it started is stopped on exit,
Ctrl-C included.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from reconciler.cli.terminal import Spinner
from reconciler.controller.kubeapi import KubeApi, KubeError
from reconciler.controller.kubeconfig import service_account_kubeconfig
from reconciler.local.plane import LocalControlPlane
from reconciler.local.toolchain import Toolchain

# ../shared/seeds/002: the Kubernetes docs' example
EXAMPLE_SERVICE = """\
apiVersion: v1
kind: Service
metadata:
  name: example-service
spec:
  selector:
    app: example
  ports:
    - port: 8765
      targetPort: 9376
  type: LoadBalancer
"""
NODES = (("demo-worker-1", "10.0.0.11"), ("demo-worker-2", "10.0.0.12"))
CLUSTER = "demo"
PASSPHRASE = "lb-reconciler-demo"  # noqa: S105 (a local, throw-away backend)
DEPLOY = Path(__file__).resolve().parents[2] / "deploy"


def say(message: str) -> None:
    print(f"==> {message}", flush=True)


def wait(
    what: str, probe: Callable[[], str | None], *, timeout: float = 300.0, detail: str = ""
) -> str:
    spinner = Spinner(what)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            value = probe()
        except KubeError:
            value = None
        if value:
            spinner.done(value)
            return value
        spinner.tick(detail)
        time.sleep(0.25)
    raise TimeoutError(f"{what}: nothing after {timeout:.0f}s")


class Demo:
    def __init__(
        self,
        *,
        toolchain: Toolchain,
        plane: LocalControlPlane,
        emulator_topo: dict[str, str],
        cluster: str = CLUSTER,
        load_balancer_options: Sequence[str] = (),
    ):
        """``load_balancer_options``: extra ``[LoadBalancer]`` lines of cloud.conf
        (``create-monitor = true``); ``cluster``: ``--cluster-name`` (bench/ reuses this)."""
        self.toolchain = toolchain
        self.plane = plane
        self.topo = emulator_topo
        self.cluster = cluster
        self.load_balancer_options = tuple(load_balancer_options)
        self.folder = plane.folder / "demo"
        self.folder.mkdir(parents=True, exist_ok=True)
        self.state = self.folder / "state"
        self.env = toolchain.env()
        self.env["PULUMI_CONFIG_PASSPHRASE"] = PASSPHRASE
        self.controller: subprocess.Popen[bytes] | None = None

    def kubectl(self, *args: str, stdin: str | None = None, show: bool = True) -> str:
        argv = [str(self.toolchain.path("kubectl")), "--kubeconfig", str(self.plane.kubeconfig)]
        if show:
            print(f"$ kubectl {' '.join(args)}", flush=True)
        done = subprocess.run(
            [*argv, *args], input=stdin, capture_output=True, text=True, env=self.env, timeout=600
        )
        if done.returncode != 0:
            raise RuntimeError(f"kubectl {' '.join(args)}: {done.stderr.strip()}")
        if show and done.stdout.strip():
            print(done.stdout.rstrip(), flush=True)
        return done.stdout

    def pulumi(self, *args: str) -> str:
        print(f"$ pulumi {' '.join(args)}", flush=True)
        env = dict(self.env, PULUMI_BACKEND_URL=(self.state / "backend").as_uri())
        done = subprocess.run(
            [str(self.toolchain.path("pulumi")), *args],
            capture_output=True,
            text=True,
            env=env,
            cwd=DEPLOY.parent,  # the project's Pulumi.yaml: plain stack names work
            timeout=120,
        )
        out = (done.stdout or done.stderr).rstrip()
        print(out, flush=True)
        return out

    def add_nodes(self, kube: KubeApi) -> None:
        for name, ip in NODES:
            with contextlib.suppress(KubeError):
                kube.create(
                    "/api/v1/nodes",
                    {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}}},
                )
            kube.patch(
                f"/api/v1/nodes/{name}/status",
                {
                    "status": {
                        "addresses": [{"type": "InternalIP", "address": ip}],
                        "conditions": [{"type": "Ready", "status": "True"}],
                    }
                },
            )

    def cloud_conf(self) -> Path:
        t = self.topo
        path = self.folder / "cloud.conf"
        path.write_text(
            "[Global]\n"
            f"auth-url = {t['auth_url']}\nusername = {t['username']}\n"
            f"password = {t['password']}\ntenant-name = {t['project_name']}\n"
            f"user-domain-name = {t['user_domain_name']}\n"
            f"tenant-domain-name = {t['project_domain_name']}\nregion = {t['region_name']}\n"
            "\n[LoadBalancer]\n"
            f"subnet-id = {t['subnet_id']}\nfloating-network-id = {t['external_network_id']}\n"
            + "".join(f"{line}\n" for line in self.load_balancer_options)
        )
        path.chmod(0o600)
        return path

    def start_controller(
        self, kube: KubeApi, *, extra_args: Sequence[str] = ()
    ) -> subprocess.Popen[bytes]:
        """``lb-reconciler run`` as ServiceAccount lb-reconciler (deploy/), logs to a file;
        ``extra_args`` are appended to its command line (``--workers 8``)."""
        self.add_nodes(kube)
        self.kubectl("apply", "-f", str(DEPLOY / "rbac.yaml"), show=False)
        kubeconfig = service_account_kubeconfig(
            admin_kubeconfig=self.plane.kubeconfig,
            server=self.plane.server,
            ca_cert=self.plane.pki.ca_cert,
            out=self.folder / "controller.kubeconfig",
            seconds=86400,
        )
        cloud_conf = self.cloud_conf()
        log = (self.folder / "controller.log").open("ab")
        self.controller = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "reconciler.cli.main",
                "run",
                "--kubeconfig",
                str(kubeconfig),
                "--cloud-config",
                str(cloud_conf),
                "--state-dir",
                str(self.state),
                # the demo's own backend, whatever PULUMI_BACKEND_URL this shell exports
                "--backend-url",
                (self.state / "backend").as_uri(),
                "--cluster-name",
                self.cluster,
                "--leader-elect",
                "--http-address",
                "127.0.0.1:0",
                "--log-format",
                "json",
                *extra_args,
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=self.env,
            start_new_session=True,
        )
        return self.controller


def stop_process(proc: subprocess.Popen[bytes], *, grace: float = 60.0) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=grace)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)


def run_flow(demo: Demo, kube: KubeApi, lbs: Callable[[], list[str]]) -> None:
    """The docs' flow, shown step by step; the controller keeps running afterwards."""
    path = "/api/v1/namespaces/default/services/example-service"
    proc = demo.controller
    assert proc is not None
    say("applying example-service (type: LoadBalancer) from the Kubernetes docs")
    demo.kubectl("apply", "-f", "-", stdin=EXAMPLE_SERVICE)
    demo.kubectl("get", "service", "example-service")

    def ip() -> str | None:
        if proc.poll() is not None:
            raise RuntimeError(f"the controller exited ({proc.returncode}); see its log")
        ingress = (kube.get(path).get("status", {}).get("loadBalancer") or {}).get("ingress")
        return str(ingress[0].get("ip")) if ingress else None

    wait("EXTERNAL-IP", ip, detail="(pulumi up: load balancer, listener, pool, members)")
    demo.kubectl("get", "service", "example-service")
    say("the Service's Pulumi stack, with the plain pulumi CLI on the same backend")
    demo.pulumi("stack", "ls", "--tag", f"lbr:cluster={demo.cluster}")
    for output in ("lb_id", "floating_ip", "vip_address"):
        demo.pulumi("stack", "output", "-s", f"{demo.cluster}.default.example-service", output)
    say(f"load balancers in the cloud: {lbs()}")
    say("deleting the Service: kubectl waits while the finalizer holds it")
    started = time.monotonic()
    demo.kubectl("delete", "service", "example-service")
    say(f"deleted after {time.monotonic() - started:.1f}s; load balancers left: {lbs()}")

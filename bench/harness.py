"""One benchmark environment: a local kube-apiserver, the emulator, the controller as a process.

The pieces are the project's own: :class:`reconciler.local.plane.LocalControlPlane` (etcd and
kube-apiserver), :func:`emulator.server.start` with a timing profile, and
:class:`reconciler.local.demo.Demo` to run ``lb-reconciler run`` as the ServiceAccount of
``deploy/rbac.yaml`` (two Nodes, leader election, JSON logs; here with ``create-monitor = true``
so that the controller and the baseline build the same objects). The harness adds what
measuring needs:

* :class:`bench.watch.ServiceWatch`: one watch on the benchmark namespace; the monotonic time at
  which each Service first showed an ingress IP, and at which it was deleted;
* the controller's ``/metrics`` (its port is read from its log), its pid for
  :class:`bench.procfs.Sampler`, stop and restart;
* the cloud's leftovers (the emulator's inventory ``created``) and the stack listing
  (``lb-reconciler stacks -o json``), for orphan counts;
* :meth:`Environment.run_baseline`: :mod:`bench.baseline_job` as a child process, sampled;
* for the chaos run (:mod:`bench.chaos`): :meth:`Environment.kill_controller` (SIGKILL to the
  controller's process group, its ``pulumi`` children included, as when a pod dies) and
  :meth:`Environment.restart_emulator` (same port, the cloud kept in ``emulator.db`` when the
  environment was started with ``emulator_state=True``).

The emulator's cloud is sized for hundreds of load balancers, as an operator would size a real
project for them: the default topology with ``/20`` networks (the default ``/24`` holds 241
floating IPs and 253 VIPs) and, set by the admin user through the Neutron quota API, no limit on
the demo project's floating IPs, ports and security groups (Neutron's defaults: 50, 500, 10).
"""

from __future__ import annotations

import contextlib
import copy
import json
import logging
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import openstack
import requests

from bench.baseline import Port, ServiceShape
from bench.baseline_job import shape_json
from bench.procfs import Sampler
from bench.stats import metric_sum, parse_metrics, resources
from bench.watch import ServiceWatch
from emulator.cloud import EmulatorConfig
from emulator.server import EmulatorHandle
from emulator.server import start as start_emulator
from emulator.timing import TimingProfile
from emulator.topology import DEFAULT_TOPOLOGY, Topology, load_topology
from reconciler.controller.kubeapi import KubeApi, KubeError
from reconciler.controller.kubeconfig import api_client
from reconciler.engine.recovery import kill_tree
from reconciler.local.backends import start_server
from reconciler.local.demo import NODES, Demo, stop_process
from reconciler.local.plane import LocalControlPlane
from reconciler.local.toolchain import Toolchain, find_toolchain

NAMESPACE = "bench"
CLUSTER = "bench"
SERVICES = f"/api/v1/namespaces/{NAMESPACE}/services"
UNLIMITED = {"floatingip": -1, "port": -1, "security_group": -1, "security_group_rule": -1}


EMULATOR_LOG = "emulator.log"


@contextlib.contextmanager
def _request_log(path: Path) -> Iterator[None]:
    """Append the emulator's request log (logger ``emulator``, in this process) to ``path``
    while the environment runs: what a failed chaos run's evidence quotes."""
    handler = logging.FileHandler(path)
    handler.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
    logger = logging.getLogger("emulator")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
        handler.close()


def bench_topology() -> Topology:
    """The default topology with room for thousands of VIPs and floating IPs."""
    topology = load_topology()
    public, private = (copy.deepcopy(n) for n in DEFAULT_TOPOLOGY["networks"])
    public["subnets"][0].update(
        cidr="172.24.0.0/20",
        gateway_ip="172.24.0.1",
        allocation_pools=[{"start": "172.24.0.10", "end": "172.24.15.250"}],
    )
    private["subnets"][0]["cidr"] = "10.0.0.0/20"
    topology.data["networks"] = [public, private]
    return topology


def lift_quotas(emulator: EmulatorHandle) -> None:
    """As the admin: no Neutron quota limit on the demo project (see the module docstring)."""
    topo = emulator.topology()
    conn = openstack.connect(
        auth_url=topo["auth_url"],
        username="admin",
        password="admin-password",  # noqa: S106 (the emulator's default topology)
        project_name="admin",
        user_domain_name="Default",
        project_domain_name="Default",
        region_name=topo["region_name"],
    )
    try:
        conn.network.update_quota(topo["project_id"], **UNLIMITED)
    finally:
        conn.close()


def service_body(
    name: str,
    *,
    port: int = 80,
    target_port: int = 8080,
    ports: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A LoadBalancer Service in the benchmark's namespace: one TCP port, or ``ports``."""
    one = {"name": "tcp", "protocol": "TCP", "port": port, "targetPort": target_port}
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"type": "LoadBalancer", "selector": {"app": name}, "ports": ports or [one]},
    }


def wait_for(probe: Callable[[], bool], *, what: str, timeout: float, every: float = 0.1) -> None:
    deadline = time.monotonic() + timeout
    while not probe():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {timeout:.0f}s")
        time.sleep(every)


def _idle(metrics: Mapping[str, float]) -> bool:
    depth = metrics.get("lbr_workqueue_depth", 1)
    return depth == 0 and metrics.get("lbr_workqueue_in_flight", 1) == 0


@dataclass
class Environment:
    """Control plane, emulator, controller; :meth:`close` stops everything it started."""

    toolchain: Toolchain
    plane: LocalControlPlane
    emulator: EmulatorHandle
    kube: KubeApi
    demo: Demo
    watch: ServiceWatch
    profile: str
    workers: int
    controller_args: tuple[str, ...] = ()
    controller: subprocess.Popen[bytes] | None = None
    metrics_url: str = ""
    started_at: float = 0.0  # monotonic, just after the controller process was spawned
    _log_offset: int = 0

    @classmethod
    @contextlib.contextmanager
    def running(
        cls,
        *,
        profile: str,
        workers: int,
        folder: Path | None = None,
        emulator_state: bool = False,
        controller_args: Sequence[str] = (),
        backend: str = "file",
    ) -> Iterator[Environment]:
        """``emulator_state``: keep the cloud in ``<folder>/emulator.db`` (needed by
        :meth:`restart_emulator`); ``controller_args``: appended to ``lb-reconciler run``;
        ``backend``: the controller's state backend, ``file`` (the demo's folder) or a local
        ``postgres`` or ``s3`` server started here (:mod:`reconciler.local.backends`)."""
        toolchain = find_toolchain()
        base = folder or Path(tempfile.mkdtemp(prefix="lbr-bench-"))
        keep = folder is not None  # a folder given is kept, with the logs and the state
        with contextlib.ExitStack() as stack:
            if not keep:
                stack.callback(shutil.rmtree, base, ignore_errors=True)  # runs last
            plane = stack.enter_context(
                LocalControlPlane.start(toolchain=toolchain, folder=base / "plane", keep=keep)
            )
            stack.enter_context(_request_log(base / EMULATOR_LOG))
            emulator = start_emulator(
                config=EmulatorConfig(
                    timing=TimingProfile.named(profile),
                    topology=bench_topology(),
                    state_file=base / "emulator.db" if emulator_state else None,
                ),
                port=0,
            )
            stack.callback(emulator.stop)
            lift_quotas(emulator)
            kube = KubeApi(api_client=api_client(kubeconfig=plane.kubeconfig))
            stack.callback(kube.close)
            with contextlib.suppress(KubeError):  # already there on a reused plane
                kube.create("/api/v1/namespaces", {"metadata": {"name": NAMESPACE}})
            demo = Demo(
                toolchain=toolchain,
                plane=plane,
                emulator_topo=emulator.topology(),
                cluster=CLUSTER,
                load_balancer_options=["create-monitor = true"],
            )
            if backend != "file":
                server = stack.enter_context(
                    start_server(backend, folder=base / f"{backend}-server", toolchain=toolchain)  # type: ignore[arg-type]
                )
                url = server.new_backend("bench")
                controller_args = [*controller_args, "--backend-url", url]  # last one wins
                demo.env.update({**server.env, "PULUMI_BACKEND_URL": url})
            watch = ServiceWatch(
                KubeApi(api_client=api_client(kubeconfig=plane.kubeconfig)), path=SERVICES
            )
            watch.start()
            stack.callback(watch.stop)
            env = cls(
                toolchain=toolchain,
                plane=plane,
                emulator=emulator,
                kube=kube,
                demo=demo,
                watch=watch,
                profile=profile,
                workers=workers,
                controller_args=tuple(controller_args),
            )
            stack.callback(lambda: env.emulator.stop())  # the current one, after a restart
            stack.callback(env.stop_controller)  # runs first
            yield env

    # -- the controller ----------------------------------------------------------------------

    @property
    def log_path(self) -> Path:
        return self.demo.folder / "controller.log"

    @property
    def emulator_log_path(self) -> Path:
        """The emulator's request log (one line per request, a create's new ID in it)."""
        return self.plane.folder.parent / EMULATOR_LOG

    def start_controller(
        self, *, timeout: float = 120.0, extra_args: Sequence[str] = ()
    ) -> subprocess.Popen[bytes]:
        """Start ``lb-reconciler run`` (``extra_args`` after the environment's); return once its
        ``/metrics`` answers."""
        self._log_offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        args = ["--workers", str(self.workers), *self.controller_args, *extra_args]
        proc = self.demo.start_controller(self.kube, extra_args=args)
        self.started_at = time.monotonic()
        self.controller = proc
        wait_for(self._found_url, what="the controller's /metrics address", timeout=timeout)
        return proc

    def _found_url(self) -> bool:
        if self.controller is not None and self.controller.poll() is not None:
            raise RuntimeError(f"the controller exited; log: {self.log_path}")
        with self.log_path.open("rb") as log:
            log.seek(self._log_offset)
            for line in log:
                with contextlib.suppress(ValueError):
                    record = json.loads(line)
                    if isinstance(record, dict) and record.get("url"):
                        self.metrics_url = str(record["url"])
                        return True
        return False

    def wait_ready(self, *, timeout: float = 120.0) -> None:
        wait_for(lambda: self.http("/readyz")[0] == 200, what="controller /readyz", timeout=timeout)

    def wait_synced(self, services: int, *, timeout: float) -> None:
        """At least ``services`` syncs since the controller started, and its work queue idle."""

        def synced() -> bool:
            m = self.metrics()
            return metric_sum(m, "lbr_reconciles_total") >= services and _idle(m)

        wait_for(synced, what=f"{services} Services synced", timeout=timeout, every=0.2)

    def wait_idle(self, *, timeout: float) -> None:
        """No key queued or being synced (an ``up`` still finishing counts once it returns)."""
        wait_for(lambda: _idle(self.metrics()), what="an idle work queue", timeout=timeout)

    def stop_controller(self) -> None:
        if self.controller is not None:
            stop_process(self.controller)
            self.controller = None

    def kill_controller(self) -> None:
        """SIGKILL the controller and all its descendants, as a container's end kills every
        process in it. ``pulumi`` starts its plugins in process groups of their own, so
        signalling the controller's group alone would leave them running, re-parented."""
        if self.controller is not None:
            kill_tree(self.controller.pid)
            self.controller.wait(timeout=30)
            self.controller = None

    def restart_emulator(self) -> None:
        """Stop the emulator and serve its cloud again on the same port (see the docstring)."""
        self.emulator = self.emulator.restart()

    def http(self, path: str) -> tuple[int, str]:
        try:
            response = requests.get(self.metrics_url + path, timeout=5)
        except requests.RequestException:
            return 0, ""
        return response.status_code, response.text

    def metrics(self) -> dict[str, float]:
        status, body = self.http("/metrics")
        if status != 200:
            raise RuntimeError(f"/metrics answered {status}")
        return parse_metrics(body)

    # -- Kubernetes --------------------------------------------------------------------------

    def create_services(self, names: Iterable[str]) -> dict[str, float]:
        """Create each Service; the monotonic time just before each request."""
        started: dict[str, float] = {}
        for name in names:
            started[name] = time.monotonic()
            self.kube.create(SERVICES, service_body(name))
        return started

    def delete_services(self, names: Iterable[str]) -> dict[str, float]:
        started: dict[str, float] = {}
        for name in names:
            started[name] = time.monotonic()
            self.kube.request(method="DELETE", path=f"{SERVICES}/{name}")
        return started

    def wait_ips(self, names: Iterable[str], *, timeout: float) -> None:
        wanted = list(names)
        self.watch.wait(
            lambda: all(n in self.watch.ip_at for n in wanted),
            what=f"EXTERNAL-IP of {len(wanted)} Services",
            timeout=timeout,
        )

    def wait_gone(self, names: Iterable[str], *, timeout: float) -> None:
        wanted = list(names)
        self.watch.wait(
            lambda: all(n in self.watch.gone_at for n in wanted),
            what=f"deletion of {len(wanted)} Services",
            timeout=timeout,
        )

    def add_node(self, name: str, ip: str) -> None:
        self.kube.create(
            "/api/v1/nodes",
            {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}}},
        )
        status = {
            "status": {
                "addresses": [{"type": "InternalIP", "address": ip}],
                "conditions": [{"type": "Ready", "status": "True"}],
            }
        }
        self.kube.patch(f"/api/v1/nodes/{name}/status", status)

    def remove_node(self, name: str) -> None:
        with contextlib.suppress(KubeError):
            self.kube.request(method="DELETE", path=f"/api/v1/nodes/{name}")

    # -- the cloud and the stacks ------------------------------------------------------------

    def created(self) -> dict[str, list[str]]:
        """Cloud objects created since the topology was seeded and not deleted, by kind."""
        created: dict[str, list[str]] = self.emulator.cloud.inventory()["created"]
        return created

    def inventory(self) -> dict[str, list[dict[str, Any]]]:
        resources_: dict[str, list[dict[str, Any]]] = self.emulator.cloud.inventory()["resources"]
        return resources_

    def stacks(self) -> list[dict[str, Any]]:
        """``lb-reconciler stacks -o json`` on the controller's backend."""
        argv = [sys.executable, "-m", "reconciler.cli.main", "stacks", "--state-dir"]
        argv += [str(self.demo.state), "--cluster-name", CLUSTER, "-o", "json"]
        done = subprocess.run(
            argv, capture_output=True, text=True, env=self.demo.env, timeout=300, check=False
        )
        if done.returncode != 0:
            raise RuntimeError(f"lb-reconciler stacks failed: {done.stderr.strip()}")
        listed: list[dict[str, Any]] = json.loads(done.stdout or "[]")
        return listed

    # -- the baseline ------------------------------------------------------------------------

    def baseline_services(self, names: Iterable[str]) -> list[dict[str, Any]]:
        """The same Services as OCCM would see them: one TCP port, the two Nodes of Demo."""
        return [
            shape_json(ServiceShape(NAMESPACE, name, (Port("TCP", 80, 30000 + i),), NODES))
            for i, name in enumerate(names)
        ]

    def run_baseline(
        self, phases: list[dict[str, Any]], *, workers: int
    ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """Run :mod:`bench.baseline_job` with these phases; its phases and its resources."""
        topo = self.emulator.topology()
        job = {
            "topology": topo,
            "settings": {
                "cluster": CLUSTER,
                "subnet_id": topo["subnet_id"],
                "floating_network_id": topo["external_network_id"],
                "create_monitor": True,
            },
            "workers": workers,
            "phases": phases,
        }
        proc = subprocess.Popen(
            [sys.executable, "-m", "bench.baseline_job"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        sampler = Sampler(root=proc.pid).start()
        out, err = proc.communicate(json.dumps(job), timeout=3600)
        samples = sampler.stop()
        if proc.returncode != 0:
            raise RuntimeError(f"bench.baseline_job failed ({proc.returncode}): {err[-2000:]}")
        phases_out: list[dict[str, Any]] = json.loads(out)["phases"]
        return phases_out, resources(samples, root_hwm=sampler.root_hwm)

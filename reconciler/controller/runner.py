"""``lb-reconciler run``: one controller process, composed from its parts.

Nothing here decides anything about Services; it wires the pieces together and owns the order of
start and stop, which is where a controller process earns or loses trust:

start
    cloud.conf parsed (exit 2 with every problem named when it is unusable) -> the Pulumi engine
    -> its OpenStack client logs in (:func:`~.startup.cloud_login`; exit 2 when the login or the
    catalog fails, 1 when Keystone answers 5xx, each with the settings used and the cloud's
    answer; the Lease is not even asked for, so a replica that cannot delete anything never
    leads) -> ``--cluster-name`` is checked against the load balancers' names
    (:func:`~.startup.check_cluster_name`: exit 2 when it is not the one OCCM ran with) -> the
    HTTP server (``/healthz``, ``/readyz``, ``/metrics``) -> with ``--leader-elect``, the
    Lease loop, which starts the controller when it leads; without it, the controller at once.

stop (SIGTERM, SIGINT, or leadership lost)
    the controller stops taking work, interrupts running ``pulumi`` children (SIGINT, then SIGKILL
    after a grace) and waits for its workers -> only then is the Lease released, so a new leader
    never works on a stack this process still touches -> the HTTP server stops. Exit code 0 after
    a requested stop, 1 when leadership was lost (the Deployment restarts the process, as
    kube-controller-manager does).

A follower is ready (it is a healthy standby); a leader is ready once its caches are synced.

Leadership is checked at every write, not only when the elector's thread notices a loss:
:class:`~reconciler.controller.leadership.Leadership` is what the controller and the engine ask (the
Lease held and renewed within the renew deadline, by this process's own clock), so a process that
was frozen (SIGSTOP, a paused VM) and resumes after a new leader took over refuses to write from its
first instruction on, and kills a ``pulumi`` child it had running. When it takes the Lease, the
controller clears the stacks' locks that no operation of this process holds before its first
operation (:meth:`reconciler.controller.loop.Controller.start`). Every update it makes carries its
identity as the message (``pulumi stack history``).
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from reconciler.config import CloudConfig, Secret, parse_cloud_conf
from reconciler.controller import thread_dump
from reconciler.controller.backend import LoadBalancerEngine, PulumiEngine
from reconciler.controller.health import HealthServer
from reconciler.controller.housekeeping import HousekeepingSettings
from reconciler.controller.kubeapi import KubeApi
from reconciler.controller.kubeconfig import api_client
from reconciler.controller.leadership import Leadership, default_identity
from reconciler.controller.lease import LeaderElector
from reconciler.controller.loop import Controller
from reconciler.controller.metrics import Metrics
from reconciler.controller.startup import (
    EXIT_CONFIG,
    EXIT_FAILURE,
    check_cluster_name,
    cloud_login,
    cluster_identity,
)
from reconciler.controller.sync_plan import ControllerSettings
from reconciler.engine.state.retention import DEFAULT_KEEP
from reconciler.engine.state.store import DEFAULT_TIMEOUT
from reconciler.toolchain import ToolchainError, find_runtime

if TYPE_CHECKING:
    from reconciler.engine.stack import Engine

__all__ = ["RunOptions", "run"]

_log = logging.getLogger(__name__)

EXIT_OK = 0


@dataclass(frozen=True)
class RunOptions:
    cloud_config: Path
    kubeconfig: Path | None = None  # None: in-cluster service account
    state_dir: Path = Path("lbr-state")
    backend_url: str = ""  # default file://<state_dir>/backend
    cluster_name: str = "kubernetes"
    owned_classes: frozenset[str] = frozenset()
    serve_default: bool = True
    workers: int = 4
    namespace: str | None = None  # watch one namespace only (tests); None: all
    leader_elect: bool = False
    lease_namespace: str = "lb-reconciler"
    lease_name: str = "lb-reconciler"
    identity: str = ""  # default: $POD_NAME, else hostname_<random>
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    http_address: str = "0.0.0.0:8080"  # "" disables /healthz, /readyz, /metrics
    housekeeping: HousekeepingSettings = field(default_factory=HousekeepingSettings)
    shutdown_grace: float = 30.0
    keep_history: int = DEFAULT_KEEP  # history entries and backups kept per stack
    # remove a stack lock that is not this controller's once it is this old (None: never)
    foreign_lock_timeout: float | None = None
    # refuse to start when the cloud's load balancers carry another cluster name (startup.py)
    check_cluster_name: bool = True


def backend_timeout(options: RunOptions) -> float:
    """The most seconds one backend request may take: with leader election, at most half the
    renew deadline (5 s at the defaults), so that a write started while the Lease is held ends
    while it still is (the engine refuses one that could not: its fence); without, the
    engine's default (one replica, nobody to hand over to)."""
    if not options.leader_elect:
        return DEFAULT_TIMEOUT
    return min(DEFAULT_TIMEOUT, options.renew_deadline / 2)


def _split_address(address: str) -> tuple[str, int]:
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"--http-address {address!r}: expected HOST:PORT, e.g. 0.0.0.0:8080")
    return host or "0.0.0.0", int(port)


def load_cloud_config(path: Path) -> CloudConfig | None:
    """cloud.conf, with every warning and error logged; None when it is unusable."""
    try:
        text = path.read_text()
    except OSError as exc:
        _log.error("cloud.conf cannot be read", extra={"path": str(path), "error": str(exc)})
        return None
    parsed = parse_cloud_conf(text=text)
    for issue in parsed.warnings:
        _log.warning("cloud.conf", extra={"path": str(path), "issue": str(issue)})
    for issue in parsed.errors:
        _log.error("cloud.conf", extra={"path": str(path), "issue": str(issue)})
    return parsed.config


def pulumi_engine(
    *,
    config: CloudConfig,
    cluster_name: str,
    state_dir: Path,
    backend_url: str,
    cluster_id: str = "",
    leading: Leadership | None = None,
    writer: str = "",
    keep_history: int = DEFAULT_KEEP,
    foreign_lock_timeout: float | None = None,
    backend_timeout: float = DEFAULT_TIMEOUT,
) -> Engine:
    from reconciler.engine.stack import Engine, EngineSettings

    settings = EngineSettings(
        cluster_name=cluster_name,
        state_dir=state_dir,
        auth=config.auth,
        toolchain=find_runtime(),
        backend_url=backend_url,
        passphrase=Secret(os.environ.get("PULUMI_CONFIG_PASSPHRASE", "")),
        cluster_id=cluster_id,
        writer=writer,
        keep_history=keep_history,
        foreign_lock_timeout=foreign_lock_timeout,
        backend_timeout=backend_timeout,
    )
    return Engine(settings=settings, leading=leading)


def run(
    options: RunOptions,
    *,
    stop: threading.Event | None = None,
    engine: LoadBalancerEngine | None = None,
) -> int:
    """Run until ``stop`` is set, SIGTERM/SIGINT arrives (main thread only), or leadership is
    lost. Returns the process exit code."""
    config = load_cloud_config(options.cloud_config)
    if config is None:
        return EXIT_CONFIG
    if engine is None and "PULUMI_CONFIG_PASSPHRASE" not in os.environ:
        _log.error(
            "PULUMI_CONFIG_PASSPHRASE is not set: pulumi needs it for every operation on a "
            "stack (its secrets provider; the stacks hold no cloud credential); set it "
            "(deploy/ reads it from a Secret)"
        )
        return EXIT_CONFIG
    kube = KubeApi(api_client=api_client(kubeconfig=options.kubeconfig))
    identity = options.identity or default_identity()
    leadership = Leadership(elect=options.leader_elect)
    if engine is None:
        try:
            core = pulumi_engine(
                config=config,
                cluster_name=options.cluster_name,
                state_dir=options.state_dir,
                backend_url=options.backend_url,
                cluster_id=cluster_identity(kube),
                leading=leadership,
                writer=f"lb-reconciler run, replica {identity}",
                keep_history=options.keep_history,
                foreign_lock_timeout=options.foreign_lock_timeout,
                backend_timeout=backend_timeout(options),
            )
        except ToolchainError as exc:  # the image or the machine lacks the right pulumi or plugin
            _log.error("cannot run: %s", exc)
            kube.close()
            return EXIT_CONFIG
        failed = cloud_login(core)
        if failed is None and options.check_cluster_name:
            failed = check_cluster_name(
                core, kube, cluster_name=options.cluster_name, namespace=options.namespace
            )
        if failed is not None:
            kube.close()
            return failed
        engine = PulumiEngine(engine=core)
    done = stop or threading.Event()
    if stop is None and threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda _s, _f: done.set())
        thread_dump.install()  # `kill -USR1 <pid>`: every thread's stack in the log

    metrics = Metrics()
    controller = Controller(
        kube=kube,
        engine=engine,
        config=config,
        settings=ControllerSettings(
            cluster_name=options.cluster_name,
            owned_classes=options.owned_classes,
            serve_default=options.serve_default,
        ),
        workers=options.workers,
        namespace=options.namespace,
        metrics=metrics,
        housekeeping=options.housekeeping,
        leading=leadership,
    )
    process = _Process(
        options=options,
        controller=controller,
        metrics=metrics,
        done=done,
        identity=identity,
        leadership=leadership,
    )
    health = None
    if options.http_address:
        host, port = _split_address(options.http_address)
        health = HealthServer(host, port, metrics=metrics, live=process.live, ready=process.ready)
        health.start()
        _log.info("serving /healthz /readyz /metrics", extra={"url": health.url})
    try:
        return process.run()
    finally:
        if health is not None:
            health.stop()
        kube.close()


class _Process:
    """The start/stop order of one process (see the module docstring)."""

    def __init__(
        self,
        *,
        options: RunOptions,
        controller: Controller,
        metrics: Metrics,
        done: threading.Event,
        identity: str,
        leadership: Leadership,
    ) -> None:
        self._options = options
        self._identity = identity
        self._leadership = leadership
        self._controller = controller
        self._metrics = metrics
        self._done = done
        self._lost = threading.Event()
        self._leading = threading.Event()
        self._failed = ""

    def live(self) -> tuple[bool, str]:
        if self._failed:
            return False, self._failed
        return self._controller.live()

    def ready(self) -> tuple[bool, str]:
        if self._failed:
            return False, self._failed
        if self._options.leader_elect and not self._leading.is_set():
            return True, "standby: another replica leads"
        return self._controller.ready()

    def _start_controller(self) -> None:
        try:
            self._controller.start()
        except Exception as exc:  # caches never synced: the API server is unusable to us
            self._failed = f"controller did not start: {exc}"
            _log.exception("controller did not start")
            self._done.set()

    def _started_leading(self) -> None:
        self._leading.set()
        self._metrics.set_leader(True)
        # off the lease thread, so renewals go on while the caches fill
        threading.Thread(target=self._start_controller, name="start", daemon=True).start()

    def _stopped_leading(self) -> None:
        self._leading.clear()
        self._metrics.set_leader(False)
        if not self._done.is_set():
            _log.error("leadership lost; stopping so that the new leader works alone")
            self._lost.set()
            self._done.set()

    def run(self) -> int:
        options = self._options
        elector_stop = threading.Event()
        elector_thread = None
        lease_kube: KubeApi | None = None
        if options.leader_elect:
            identity = self._identity
            # its own connection, with requests that end well before the renew deadline
            lease_kube = KubeApi(
                api_client=api_client(kubeconfig=options.kubeconfig),
                request_timeout=max(1.0, options.renew_deadline / 2),
            )
            elector = LeaderElector(
                kube=lease_kube,
                namespace=options.lease_namespace,
                name=options.lease_name,
                identity=identity,
                lease_duration=options.lease_duration,
                renew_deadline=options.renew_deadline,
                retry_period=options.retry_period,
                on_started_leading=self._started_leading,
                on_stopped_leading=self._stopped_leading,
                hostname=socket.gethostname(),  # what this process's pulumi children write
            )
            self._leadership.elector = elector
            _log.info(
                "waiting for leadership",
                extra={
                    "lease": f"{options.lease_namespace}/{options.lease_name}",
                    "identity": identity,
                },
            )
            elector_thread = elector.start(elector_stop)
        else:
            self._metrics.set_leader(True)
            self._leading.set()
            self._start_controller()
        wait_until(self._done)
        lost = self._lost.is_set()
        _log.info("stopping: no new work", extra={"leadership_lost": lost})
        # lost: another replica may lead already, so interrupt at once instead of draining
        self._controller.stop(timeout=options.shutdown_grace, drain=not lost)
        elector_stop.set()
        if elector_thread is not None:
            elector_thread.join(options.retry_period + options.renew_deadline)
            if lease_kube is not None:
                lease_kube.close()
        return EXIT_FAILURE if self._failed or lost else EXIT_OK


def wait_until(event: threading.Event, *, every: float = 1.0) -> None:
    """Wait for ``event`` in the main thread, returning to Python code every ``every`` seconds:
    a process signal (SIGTERM) the kernel hands to another thread only marks its handler
    pending, and the main thread runs it when it next runs Python code, which a wait without a
    timeout never does (a pod's SIGTERM went unanswered until a later signal reached the main
    thread: tests/unit/test_runner_signals.py)."""
    while not event.wait(every):
        pass

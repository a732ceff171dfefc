"""The ``lb-reconciler`` command.

Subcommands are thin: they parse arguments, call into the package, and print. Each has ``--help``
with an example.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import signal
import sys
import threading
import time
from collections.abc import Sequence
from importlib.metadata import version

from reconciler.cli.common import (
    CommandError,
    backend_url,
    non_negative_int,
    positive_int,
    seconds,
    shown_url,
)
from reconciler.controller.kubeapi import KubeApi
from reconciler.controller.kubeconfig import api_client
from reconciler.engine.state.retention import DEFAULT_KEEP
from reconciler.local.demo import Demo, run_flow, stop_process
from reconciler.local.plane import ControlPlaneError, LocalControlPlane
from reconciler.local.toolchain import ToolchainError, find_toolchain

DEMO_HELP = """\
Bring up the local environment: the real toolchain (built from Go modules on first use, cached
afterwards) and a local Kubernetes control plane (etcd + kube-apiserver on 127.0.0.1).

Then the OpenStack API emulator (Keystone, Neutron, Octavia) and the controller (`lb-reconciler
run`, as the ServiceAccount of deploy/), and the Kubernetes docs' flow: example-service goes from
<pending> to an EXTERNAL-IP, `pulumi stack ls` shows its stack, `kubectl delete service` returns
once the load balancer is gone.

example:
  lb-reconciler demo            # runs until Ctrl-C, then stops everything it started
  lb-reconciler demo --once     # start, check, stop (for scripts and CI)
"""


def _say(message: str) -> None:
    print(f"==> {message}", flush=True)


def _wait_for_interrupt() -> None:
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        while not stop.wait(1.0):
            pass
    except KeyboardInterrupt:
        pass


def cmd_demo(args: argparse.Namespace) -> int:
    from kubernetes import client

    from emulator.server import start as start_emulator

    started = time.monotonic()
    _say("finding the toolchain (builds it on first use: tens of minutes cold, seconds warm)")
    try:
        toolchain = find_toolchain()
    except ToolchainError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    _say(f"toolchain: {toolchain.bin_dir}")
    with contextlib.ExitStack() as cleanup:
        _say("starting etcd and kube-apiserver on 127.0.0.1")
        try:
            plane = cleanup.enter_context(
                LocalControlPlane.start(toolchain=toolchain, keep=args.keep)
            )
        except ControlPlaneError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        with api_client(kubeconfig=plane.kubeconfig) as api:
            items = client.CoreV1Api(api).list_namespace().items
        namespaces = [str(ns.metadata.name) for ns in items if ns.metadata]
        _say(f"kube-apiserver ready at {plane.server} in {time.monotonic() - started:.1f}s")
        _say(f"namespaces: {', '.join(namespaces)}")
        cloud = start_emulator()
        cleanup.callback(cloud.stop)
        clouds_yaml = cloud.write_clouds_yaml(path=plane.folder / "clouds.yaml")
        _say(f"OpenStack emulator at {cloud.auth_url} (clouds.yaml: {clouds_yaml})")
        demo = Demo(toolchain=toolchain, plane=plane, emulator_topo=cloud.topology())
        kube = KubeApi(api_client=api_client(kubeconfig=plane.kubeconfig))
        cleanup.callback(kube.close)
        admin = cloud.cloud

        def lbs() -> list[str]:
            return [str(lb["name"]) for lb in admin.inventory()["resources"]["loadbalancers"]]

        _say("creating two Nodes (no kubelets here; their addresses are in the emulator's subnet)")
        _say("starting the controller: lb-reconciler run, as ServiceAccount lb-reconciler")
        proc = demo.start_controller(kube)
        cleanup.callback(stop_process, proc)
        try:
            run_flow(demo, kube, lbs)
        except (RuntimeError, TimeoutError) as exc:
            print(
                f"error: {exc}\ncontroller log: {demo.folder / 'controller.log'}", file=sys.stderr
            )
            return 1
        print(
            "\nTry it from another terminal:\n"
            f"  export PATH={toolchain.bin_dir}:$PATH KUBECONFIG={plane.kubeconfig}\n"
            "  kubectl apply -f - <<< '"
            '{"apiVersion":"v1","kind":"Service","metadata":{"name":"web"},'
            '"spec":{"type":"LoadBalancer","ports":[{"port":80}]}}'
            "'\n  kubectl get service web -w\n"
            f"  OS_CLIENT_CONFIG_FILE={clouds_yaml} openstack --os-cloud emulator "
            "loadbalancer list\n"
            f"  controller log: {demo.folder / 'controller.log'}\n",
            flush=True,
        )
        if args.once:
            _say("--once: stopping the controller, the emulator and the control plane")
            return 0
        _say("running; press Ctrl-C to stop and clean up")
        _wait_for_interrupt()
        _say("stopping the controller, the emulator and the control plane")
    return 0


RUN_HELP = """\
Run the controller: watch Services of type LoadBalancer and Nodes, and keep one Pulumi stack (an
Octavia load balancer with its listeners, pools, members, monitors and floating IP) per Service.

Credentials: --kubeconfig (default $KUBECONFIG, else the in-cluster service account) and the
OpenStack cloud.conf (OCCM's format). PULUMI_CONFIG_PASSPHRASE must be set: it encrypts the
OpenStack credentials kept in the stacks' config and state.

State: the stacks live in the Pulumi backend of --backend-url, else $PULUMI_BACKEND_URL (as for
the pulumi CLI), else file://<state-dir>/backend. Replicas that take turns through the Lease
need one backend they all reach (postgres://, s3://, ...; or a file:// on a ReadWriteMany
volume); people's `pulumi stack ls` and CI previews use the same URL and passphrase. An empty
value, or a scheme Pulumi has no backend for, stops the start with exit code 2.

examples:
  # in a cluster (deploy/deployment.yaml): two replicas, one leads; PULUMI_BACKEND_URL and
  # PULUMI_CONFIG_PASSPHRASE come from the Secret lb-reconciler-state
  lb-reconciler run --cloud-config /etc/lb-reconciler/cloud.conf \\
      --state-dir /var/lib/lb-reconciler --leader-elect

  # from a workstation against a test cluster, text logs
  PULUMI_CONFIG_PASSPHRASE=... lb-reconciler run --kubeconfig ~/.kube/config \\
      --cloud-config cloud.conf --state-dir ./lbr-state --log-format text

drift (a load balancer changed by hand, behind the stack's back): each stack is compared with
the cloud once per --drift-interval (3600 s), staggered. --drift=repair (the default) refreshes
the stack and runs `up`, which puts the cloud back (Event DriftRepaired); --drift=report only
compares (`pulumi refresh --preview-only`: neither the state nor the cloud is written) and
reports each difference, resource, property, value in the cloud and in the stack, as a Warning
DriftDetected on the Service and in the gauge lbr_drifted_stacks (DriftResolved once it is
gone); --drift=off checks nothing (as --drift-interval 0 always did).
One writer: with --leader-elect only the replica holding the Lease writes (it stops writing
the moment its renewals lapse, and steps down); without it, run exactly one replica. The writer
removes every stack lock its own operations do not hold (a dead leader's), when it starts
leading and before each operation (docs/operations.md, "Failover").

exit codes: 0 stopped on SIGTERM/SIGINT; 1 leadership lost or the API server unusable;
2 unusable configuration (each problem is logged with the field and the fix).
"""


def cmd_run(args: argparse.Namespace) -> int:
    import os
    from pathlib import Path

    from reconciler.controller.drift_plan import drift_mode
    from reconciler.controller.housekeeping import HousekeepingSettings
    from reconciler.controller.logs import configure_logging
    from reconciler.controller.runner import RunOptions, run

    configure_logging(level=args.log_level, fmt=args.log_format)
    try:
        drift = drift_mode(args.drift, args.drift_interval)
        backend = backend_url(args.backend_url, os.environ)
    except ValueError as exc:
        raise CommandError(str(exc), code=2) from None
    logging.getLogger("reconciler.cli.main").info(
        "state backend",
        extra={"backend": shown_url(backend) if backend else f"file:// in {args.state_dir}"},
    )
    kubeconfig = args.kubeconfig or os.environ.get("KUBECONFIG") or None
    options = RunOptions(
        cloud_config=Path(args.cloud_config),
        kubeconfig=Path(kubeconfig) if kubeconfig else None,
        state_dir=Path(args.state_dir),
        backend_url=backend,
        cluster_name=args.cluster_name,
        owned_classes=frozenset(args.load_balancer_class),
        serve_default=not args.only_owned_classes,
        workers=args.workers,
        namespace=args.namespace,
        leader_elect=args.leader_elect,
        lease_namespace=args.leader_elect_namespace,
        lease_name=args.leader_elect_name,
        lease_duration=args.leader_elect_lease_duration,
        renew_deadline=args.leader_elect_renew_deadline,
        retry_period=args.leader_elect_retry_period,
        http_address=args.http_address,
        housekeeping=HousekeepingSettings(
            interval=args.housekeeping_interval,
            orphan_grace=args.orphan_grace,
            drift_interval=args.drift_interval,
            drift=drift,
        ),
        keep_history=args.keep_history,
    )
    return run(options)


def _add_run_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "run",
        help="run the controller (in a cluster or against a kubeconfig)",
        description=RUN_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--cloud-config", required=True, metavar="FILE", help="OCCM-style cloud.conf")
    p.add_argument("--kubeconfig", metavar="FILE", help="default: $KUBECONFIG, else in-cluster")
    p.add_argument(
        "--state-dir",
        default="lbr-state",
        metavar="DIR",
        help="work folders, and the file:// backend unless --backend-url (default: %(default)s)",
    )
    p.add_argument(
        "--backend-url",
        default=None,
        metavar="URL",
        help="Pulumi state backend: postgres://, s3://, gs://, azblob://, file://, https:// "
        "(default: $PULUMI_BACKEND_URL, else file://<state-dir>/backend)",
    )
    p.add_argument(
        "--cluster-name",
        default="kubernetes",
        help="names the load balancers kube_service_<cluster>_<ns>_<name> (default: %(default)s)",
    )
    p.add_argument(
        "--load-balancer-class",
        action="append",
        default=[],
        metavar="CLASS",
        help="also serve Services with this spec.loadBalancerClass (repeatable)",
    )
    p.add_argument(
        "--only-owned-classes",
        action="store_true",
        help="do not serve Services without a class (when OCCM runs beside us)",
    )
    p.add_argument("--workers", type=positive_int, default=4, help="parallel Services (4)")
    p.add_argument("--namespace", help="watch Services of this namespace only (default: all)")
    p.add_argument(
        "--leader-elect",
        action="store_true",
        help="run for a coordination Lease, so that several replicas can run (without it: one)",
    )
    p.add_argument("--leader-elect-namespace", default="lb-reconciler", metavar="NS")
    p.add_argument("--leader-elect-name", default="lb-reconciler", metavar="NAME")
    p.add_argument("--leader-elect-lease-duration", type=seconds, default=15.0, metavar="S")
    p.add_argument("--leader-elect-renew-deadline", type=seconds, default=10.0, metavar="S")
    p.add_argument("--leader-elect-retry-period", type=seconds, default=2.0, metavar="S")
    p.add_argument(
        "--http-address",
        default="0.0.0.0:8080",
        metavar="HOST:PORT",
        help="serve /healthz, /readyz, /metrics here; '' disables (default: %(default)s)",
    )
    p.add_argument(
        "--housekeeping-interval",
        type=seconds,
        default=30.0,
        metavar="S",
        help="how often stacks are listed for orphans and drift checks (default: %(default)s)",
    )
    p.add_argument(
        "--orphan-grace",
        type=seconds,
        default=120.0,
        metavar="S",
        help="a stack without its Service is destroyed after this long (default: %(default)s)",
    )
    p.add_argument(
        "--drift-interval",
        type=seconds,
        default=3600.0,
        metavar="S",
        help="compare each stack with the cloud this often, staggered; 0: no drift checks "
        "(--drift=off) (default: %(default)s)",
    )
    p.add_argument(
        "--drift",
        choices=("repair", "report", "off"),
        default=None,
        help="what a drift check does: repair (refresh, then up puts the cloud back), report "
        "(refresh --preview-only: nothing written; a Warning Event DriftDetected and the "
        "gauge lbr_drifted_stacks), off (default: repair; off with --drift-interval 0)",
    )
    p.add_argument(
        "--keep-history",
        type=non_negative_int,
        default=DEFAULT_KEEP,
        metavar="N",
        help="keep the newest N entries of each stack's history (`pulumi stack history`) and "
        "N checkpoint backups; older ones are removed after each operation, and a removed "
        "stack's backups with it (default: %(default)s)",
    )
    p.add_argument("--log-format", choices=("json", "text"), default="json")
    p.add_argument("--log-level", choices=("debug", "info", "warning", "error"), default="info")
    p.set_defaults(func=cmd_run)


def cmd_emulator(args: argparse.Namespace) -> int:
    from emulator.__main__ import main as emulator_main

    return emulator_main(list(args.args))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lb-reconciler",
        description="Kubernetes Services of type LoadBalancer on OpenStack, one Pulumi stack each.",
    )
    parser.add_argument("--version", action="version", version=version("lb-reconciler"))
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    demo = sub.add_parser(
        "demo",
        help="run the local demo: kube-apiserver, emulated OpenStack, the controller, a Service",
        description=DEMO_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    demo.add_argument("--once", action="store_true", help="start, check and stop; do not wait")
    demo.add_argument(
        "--keep", action="store_true", help="keep the control plane's folder (logs, PKI) on exit"
    )
    demo.set_defaults(func=cmd_demo)

    _add_run_parser(sub)

    emu = sub.add_parser(
        "emulator",
        help="run the OpenStack API emulator (same flags as `python -m emulator`)",
        add_help=False,
        description="Start the OpenStack API emulator (`--help` lists its flags).",
    )
    emu.add_argument("args", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    emu.set_defaults(func=cmd_emulator)

    # the user's side: each command's module adds its own parser
    from reconciler.cli import adopt as cmd_adopt
    from reconciler.cli import backend as cmd_backend
    from reconciler.cli import preview as cmd_preview
    from reconciler.cli import stacks as cmd_stacks
    from reconciler.cli import sweep as cmd_sweep

    cmd_stacks.register(sub)
    cmd_sweep.register(sub)
    cmd_adopt.register(sub)
    cmd_preview.register(sub)
    cmd_backend.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["emulator"]:  # every flag belongs to the emulator's own parser
        return cmd_emulator(argparse.Namespace(args=argv[1:]))
    args = build_parser().parse_args(argv)
    try:
        result: int = args.func(args)
    except CommandError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.code
    return result


if __name__ == "__main__":
    sys.exit(main())

"""The ``lb-reconciler`` command.

Subcommands are thin: they parse arguments, call into the package, and print. Each has ``--help``
with an example.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import signal
import sys
import threading
import time
from collections.abc import Sequence

from reconciler.cli.common import (
    EXIT_INVALID,
    CommandError,
)
from reconciler.cli.version import VersionAction

# The user's side: each command's module adds its own parser. Only the command asked for is
# imported: together they pull in the Kubernetes client and the Automation API, a second of CPU
# at every start (`lb-reconciler stacks` needs neither).
COMMANDS = {
    "run": "reconciler.cli.run",
    "stacks": "reconciler.cli.stacks",
    "sweep": "reconciler.cli.sweep",
    "adopt": "reconciler.cli.adopt",
    "preflight": "reconciler.cli.preflight",
    "preview": "reconciler.cli.preview",
    "backend": "reconciler.cli.backend",
}

# What `demo` and `emulator` need beyond the package's own dependencies: the OpenStack emulator's
# HTTP server, the optional extra `local` (pyproject.toml). The container image leaves it out: it
# runs the controller and the CLI only.
LOCAL_EXTRA = ("aiohttp",)

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


def require_local_extra(command: str) -> None:
    """Refuse ``command`` (``demo``, ``emulator``) up front, naming the extra to install, when
    the modules of the ``local`` extra are missing, instead of a traceback from an import."""
    missing = [name for name in LOCAL_EXTRA if importlib.util.find_spec(name) is None]
    if missing:
        raise CommandError(
            f"`lb-reconciler {command}` runs the OpenStack emulator, which needs "
            f"{', '.join(missing)}, not installed here (the container image holds only what the "
            "controller and the CLI need); install the optional extra `local`: "
            "pip install 'lb-reconciler[local]'",
            code=EXIT_INVALID,
        )


def cmd_demo(args: argparse.Namespace) -> int:
    require_local_extra("demo")
    from kubernetes import client

    from emulator.server import start as start_emulator
    from reconciler.controller.kubeapi import KubeApi
    from reconciler.controller.kubeconfig import api_client
    from reconciler.local.demo import Demo, run_flow, stop_process
    from reconciler.local.plane import ControlPlaneError, LocalControlPlane
    from reconciler.local.toolchain import ToolchainError, find_toolchain

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


def cmd_emulator(args: argparse.Namespace) -> int:
    require_local_extra("emulator")
    from emulator.__main__ import main as emulator_main

    return emulator_main(list(args.args))


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole command line; with ``command``, one of :data:`COMMANDS`, only that command's
    parser among them (what ``main`` runs). Any other ``command`` builds them all."""
    parser = argparse.ArgumentParser(
        prog="lb-reconciler",
        description="Kubernetes Services of type LoadBalancer on OpenStack, one Pulumi stack each.",
    )
    parser.add_argument(
        "--version",
        action=VersionAction,
        help="print the version, its commit and the pulumi and plugin versions it needs",
    )
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

    emu = sub.add_parser(
        "emulator",
        help="run the OpenStack API emulator (same flags as `python -m emulator`)",
        add_help=False,
        description="Start the OpenStack API emulator (`--help` lists its flags).",
    )
    emu.add_argument("args", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    emu.set_defaults(func=cmd_emulator)

    only = command if command in COMMANDS else None
    for name, module in COMMANDS.items():
        if only in (None, name):
            importlib.import_module(module).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["emulator"]:  # every flag belongs to the emulator's own parser
        args = argparse.Namespace(func=cmd_emulator, args=argv[1:])
    else:
        args = build_parser(argv[0] if argv else None).parse_args(argv)
    try:
        result: int = args.func(args)
    except CommandError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.code
    return result


if __name__ == "__main__":
    sys.exit(main())

"""The ``lb-reconciler`` command.

Subcommands are thin: they parse arguments, call into the package, and print. Each has ``--help``
with an example.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import time
from collections.abc import Sequence
from importlib.metadata import version

from reconciler.kube import api_client
from reconciler.localplane import ControlPlaneError, LocalControlPlane
from reconciler.toolchain import ToolchainError, find_toolchain

DEMO_HELP = """\
Bring up the local environment: the real toolchain (built from Go modules on first use, cached
afterwards) and a local Kubernetes control plane (etcd + kube-apiserver on 127.0.0.1).

This stage of the project starts the toolchain and the control plane and shows them working; the
OpenStack emulator and the controller join the demo as they land (see README.md).

example:
  lb-reconciler demo            # runs until Ctrl-C, then stops everything it started
  lb-reconciler demo --once     # start, check, stop (for scripts and CI)
"""


def _say(message: str) -> None:
    print(f"==> {message}", flush=True)


def cmd_demo(args: argparse.Namespace) -> int:
    started = time.monotonic()
    _say("finding the toolchain (builds it on first use: tens of minutes cold, seconds warm)")
    try:
        toolchain = find_toolchain()
    except ToolchainError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    _say(f"toolchain: {toolchain.bin_dir}")
    _say("starting etcd and kube-apiserver on 127.0.0.1")
    try:
        plane = LocalControlPlane.start(toolchain=toolchain, keep=args.keep)
    except ControlPlaneError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    with plane:
        from kubernetes import client

        with api_client(kubeconfig=plane.kubeconfig) as api:
            items = client.CoreV1Api(api).list_namespace().items
        namespaces = [str(ns.metadata.name) for ns in items if ns.metadata]
        _say(f"kube-apiserver ready at {plane.server} in {time.monotonic() - started:.1f}s")
        _say(f"namespaces: {', '.join(namespaces)}")
        print(
            "\nTry it from another terminal:\n"
            f"  export PATH={toolchain.bin_dir}:$PATH\n"
            f"  kubectl --kubeconfig {plane.kubeconfig} get namespaces\n"
            "  pulumi version && pulumi plugin ls\n",
            flush=True,
        )
        if args.once:
            _say("--once: stopping")
            return 0
        stop = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        _say("running; press Ctrl-C to stop and clean up")
        try:
            while not stop.wait(1.0):
                pass
        except KeyboardInterrupt:
            pass
        _say("stopping the control plane")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lb-reconciler",
        description="Kubernetes Services of type LoadBalancer on OpenStack, one Pulumi stack each.",
    )
    parser.add_argument("--version", action="version", version=version("lb-reconciler"))
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    demo = sub.add_parser(
        "demo",
        help="run the local demo (toolchain + local kube-apiserver; more as issues land)",
        description=DEMO_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    demo.add_argument("--once", action="store_true", help="start, check and stop; do not wait")
    demo.add_argument(
        "--keep", action="store_true", help="keep the control plane's folder (logs, PKI) on exit"
    )
    demo.set_defaults(func=cmd_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    result: int = args.func(args)
    return result


if __name__ == "__main__":
    sys.exit(main())

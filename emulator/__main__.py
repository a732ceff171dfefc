"""``python -m emulator``: run the OpenStack API emulator in the foreground.

Prints the auth URL and the default topology's IDs, writes ``clouds.yaml`` (and
``topology.json`` beside it) and serves until interrupted.
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import threading
from pathlib import Path
from types import FrameType

from emulator.cloud import EmulatorConfig
from emulator.faults import FaultConfig
from emulator.server import start, tls_context
from emulator.timing import PROFILES, TimingProfile
from emulator.topology import load_document, load_topology


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m emulator",
        description="OpenStack API emulator (Keystone v3, Neutron v2.0, Octavia v2) on loopback.",
    )
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)"
    )
    parser.add_argument("--port", type=int, default=0, help="port (default: 0 = a free port)")
    parser.add_argument(
        "--timing",
        choices=sorted(PROFILES),
        default="instant",
        help="provisioning delays: instant (none) or cloudlike (LB ACTIVE after "
        "~3 s, child changes ~0.3 s) (default: instant)",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=None,
        help="seed for fault draws (overrides the faults file's seed)",
    )
    parser.add_argument(
        "--state-file",
        type=Path,
        default=None,
        help="SQLite file that keeps the cloud across restarts (default: in memory)",
    )
    parser.add_argument(
        "--topology",
        type=Path,
        default=None,
        help="YAML/JSON file replacing parts of the default topology",
    )
    parser.add_argument(
        "--faults",
        type=Path,
        default=None,
        help="YAML/JSON fault configuration (seed, rules, loadbalancers)",
    )
    parser.add_argument(
        "--pagination-max-limit",
        type=int,
        default=None,
        metavar="N",
        help="largest page of a Neutron or Octavia list; longer lists are paged with "
        "*_links as the services' pagination_max_limit does (default: no limit)",
    )
    parser.add_argument(
        "--tls-cert",
        type=Path,
        default=None,
        help="serve HTTPS with this certificate (PEM; needs --tls-key)",
    )
    parser.add_argument("--tls-key", type=Path, default=None, help="the key of --tls-cert (PEM)")
    parser.add_argument(
        "--tls-client-ca",
        type=Path,
        default=None,
        help="with --tls-cert: require client certificates signed by this CA (PEM)",
    )
    parser.add_argument(
        "--clouds-yaml",
        type=Path,
        default=Path(".state/emulator/clouds.yaml"),
        help="where to write clouds.yaml (default: .state/emulator/clouds.yaml)",
    )
    parser.add_argument(
        "--cloud-name", default="emulator", help="cloud name in clouds.yaml (default: emulator)"
    )
    parser.add_argument(
        "--log-level",
        default="WARNING",
        help="Python log level (default: WARNING; INFO logs every request)",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=args.log_level.upper(),
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
    )
    try:
        faults = FaultConfig()
        if args.faults is not None:
            faults = FaultConfig.from_dict(load_document(path=args.faults))
        if args.seed is not None:
            faults = FaultConfig(
                seed=args.seed, rules=faults.rules, loadbalancers=faults.loadbalancers
            )
        config = EmulatorConfig(
            timing=TimingProfile.named(args.timing),
            faults=faults,
            topology=load_topology(path=args.topology),
            state_file=args.state_file,
            pagination_max_limit=args.pagination_max_limit,
        )
        if (args.tls_cert is None) != (args.tls_key is None):
            raise ValueError("--tls-cert and --tls-key go together")
        if args.tls_client_ca is not None and args.tls_cert is None:
            raise ValueError("--tls-client-ca needs --tls-cert and --tls-key")
        context = None
        if args.tls_cert is not None:
            context = tls_context(
                cert_file=args.tls_cert, key_file=args.tls_key, client_ca_file=args.tls_client_ca
            )
    except (ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    # Handled before anything is printed: a parent may stop us the moment it reads the URL.
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    try:
        handle = start(host=args.host, port=args.port, config=config, ssl_context=context)
    except ValueError as exc:  # a fault rule that names no operation (the app checks them)
        print(f"error: {exc}", file=sys.stderr)
        return 2
    clouds = handle.write_clouds_yaml(path=args.clouds_yaml, cloud_name=args.cloud_name)
    print(f"auth_url: {handle.auth_url}")
    print(f"clouds.yaml: {clouds} (cloud '{args.cloud_name}', OS_CLIENT_CONFIG_FILE={clouds})")
    print(json.dumps(handle.topology(), indent=2), flush=True)
    stop.wait()
    handle.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())

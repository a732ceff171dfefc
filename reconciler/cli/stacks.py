"""``lb-reconciler stacks``: this cluster's Service stacks, one line each (see
:mod:`reconciler.cli.stacks_report` for the columns and flags)."""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from typing import Any

from reconciler.cli.common import EXIT_OK, CommandError, add_stack_options, open_engine
from reconciler.cli.stacks_report import parse_history, render_json, render_text, row
from reconciler.cli.terminal import Style, progress
from reconciler.engine.errors import EngineError
from reconciler.engine.listing import last_operations

__all__ = ["register"]

HELP = """\
List this cluster's Service stacks: namespace/name, load balancer ID, external IP, when and how
the last operation ended, and flags: locked (an operation runs now), pending (the controller owes
the stack an up), drift (a refresh found the cloud changed; the next up repairs it), failed (the
last operation failed). Reads the backend only; no passphrase or cloud access needed.

The same with the plain pulumi CLI (PULUMI_BACKEND_URL set to the controller's backend):
  pulumi stack ls --all --tag lbr:cluster=prod
  pulumi stack ls --all --tag lbr:external-ip=203.0.113.7
  pulumi stack output -s organization/lb-reconciler/prod.default.web
  pulumi stack history -s organization/lb-reconciler/prod.default.web

examples:
  lb-reconciler stacks --state-dir /var/lib/lb-reconciler --cluster-name prod
  lb-reconciler stacks --backend-url s3://bucket/lbr --cluster-name prod --output json
"""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "stacks",
        help="list the Service stacks with LB ID, external IP, last result and flags",
        description=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_stack_options(p, cloud_required=False)
    p.add_argument("--namespace", help="only the stacks of Services in this namespace")
    p.add_argument("--output", "-o", choices=("text", "json"), default="text")
    p.set_defaults(func=cmd_stacks)


def cmd_stacks(args: argparse.Namespace) -> int:
    engine = open_engine(args, decrypts=False)
    try:
        with progress("listing stacks"):
            infos = [
                info
                for info in engine.stacks()
                if args.namespace is None or info.namespace == args.namespace
            ]
            histories = last_operations(engine, infos)
    except EngineError as exc:
        raise CommandError(str(exc)) from None
    rows = [row(info, parse_history(histories.get(info.stack, ""))) for info in infos]
    out: Any = sys.stdout
    if args.output == "json":
        out.write(render_json(rows))
    elif rows:
        out.write(render_text(rows, now=datetime.now(tz=UTC), style=Style(out)))
    else:
        print(f"no stacks of cluster {args.cluster_name} on {engine.settings.backend}", file=out)
    return EXIT_OK

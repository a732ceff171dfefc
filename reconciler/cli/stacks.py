"""``lb-reconciler stacks``: this cluster's Service stacks, one line each (see
:mod:`reconciler.cli.stacks_report` for the columns and flags)."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from reconciler.cli.common import (
    EXIT_OK,
    CommandError,
    add_kube_options,
    add_stack_options,
    list_cluster,
    open_engine,
    shown_url,
)
from reconciler.cli.stacks_history import (
    parse_entries,
    render_history_json,
    render_history_text,
)
from reconciler.cli.stacks_report import parse_history, ready_of, render_json, render_text, row
from reconciler.cli.terminal import Style, progress
from reconciler.controller.conditions import CONDITION_TYPE
from reconciler.controller.sync_plan import service_key
from reconciler.engine.errors import EngineError
from reconciler.engine.listing import last_operations, stack_history
from reconciler.engine.plan import stack_name

__all__ = ["register"]

HELP = """\
List this cluster's Service stacks: namespace/name, load balancer ID, external IP, when and how
the last operation ended, and flags: locked (an operation runs now), pending (the controller owes
the stack an up), drift (a refresh found the cloud changed; the next up repairs it), failed (the
last operation failed). Reads the backend only; no passphrase or cloud access needed. With
--conditions, also each Service's condition lb-reconciler.io/LoadBalancerReady from the cluster
(READY: status and reason, e.g. "False CloudError"; the message in --output json).

The same with the plain pulumi CLI (PULUMI_BACKEND_URL set to the controller's backend):
  pulumi stack ls --all --tag lbr:cluster=prod
  pulumi stack ls --all --tag lbr:external-ip=203.0.113.7
  pulumi stack output -s organization/lb-reconciler/prod.default.web
  pulumi stack history -s organization/lb-reconciler/prod.default.web

With --history NAMESPACE/NAME: that Service's stack operations, newest first: each update,
refresh or destroy, its result, when it started, how long it took, what it changed, and whether
the controller (auto.inline) or a person's pulumi (cli) ran it.

examples:
  lb-reconciler stacks --state-dir /var/lib/lb-reconciler --cluster-name prod
  lb-reconciler stacks --cluster-name prod --history shop/web --limit 5
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
    p.add_argument(
        "--conditions",
        action="store_true",
        help="also read each Service from the cluster (--kubeconfig) and show its condition "
        "lb-reconciler.io/LoadBalancerReady (status and reason; the message in --output json)",
    )
    add_kube_options(p)
    p.add_argument(
        "--history",
        metavar="NAMESPACE/NAME",
        help="instead of the list: that Service's stack operations, newest first (kind, "
        "result, start, duration, resource changes, who ran it)",
    )
    p.add_argument(
        "--limit",
        type=int,
        default=20,
        metavar="N",
        help="with --history: the newest N operations (default: %(default)s)",
    )
    p.set_defaults(func=cmd_stacks)


def _history(args: argparse.Namespace) -> int:
    namespace, _, name = str(args.history).partition("/")
    if not namespace or not name or "/" in name:
        raise CommandError(f"--history {args.history}: name the Service as NAMESPACE/NAME")
    if args.limit < 1:
        raise CommandError(f"--limit {args.limit}: give 1 or more")
    engine = open_engine(args, decrypts=False)
    stack = stack_name(cluster_name=args.cluster_name, namespace=namespace, name=name)
    with progress(f"reading the history of {stack}"):
        text = stack_history(engine, stack, limit=args.limit)
    entries = parse_entries(text) if text is not None else None
    if entries is None:
        raise CommandError(
            f"no history of stack {stack} on {shown_url(engine.settings.backend)} (is "
            f"--cluster-name {args.cluster_name} the controller's? `lb-reconciler stacks` "
            "lists its stacks)"
        )
    service = f"{namespace}/{name}"
    render = render_history_json if args.output == "json" else render_history_text
    sys.stdout.write(render(service, stack, entries))
    return EXIT_OK


def cmd_stacks(args: argparse.Namespace) -> int:
    if args.history:
        return _history(args)
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
    if args.conditions and rows:
        with progress("reading the Services"):
            services = {service_key(s): s for s in list_cluster(args, "/api/v1/services")}
        rows = [replace(r, ready=ready_of(services.get(r.service), CONDITION_TYPE)) for r in rows]
    out: Any = sys.stdout
    if args.output == "json":
        out.write(render_json(rows))
    elif rows:
        now = datetime.now(tz=UTC)
        out.write(render_text(rows, now=now, style=Style(out), conditions=args.conditions))
    else:
        backend = shown_url(engine.settings.backend)  # a read-only URL's password stays out
        print(f"no stacks of cluster {args.cluster_name} on {backend}", file=out)
    return EXIT_OK

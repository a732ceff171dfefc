"""``lb-reconciler sweep``: list orphans both ways and, with ``--delete``, remove them (the
decisions are :func:`reconciler.cli.sweep_plan.plan_sweep`; this module lists, prints and
deletes)."""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from typing import Any

from reconciler.cli.common import (
    EXIT_CHANGES,
    EXIT_INVALID,
    EXIT_OK,
    CommandError,
    add_class_options,
    add_kube_options,
    add_stack_options,
    cluster_id,
    controller_settings,
    list_cluster,
    load_cloud_config,
    logged_in,
    open_engine,
    require_cluster_name,
)
from reconciler.cli.sweep_plan import SweepPlan, plan_sweep
from reconciler.cli.terminal import Style, progress
from reconciler.engine.errors import EngineError
from reconciler.engine.openstack.client import OpenStackRestError

__all__ = ["register"]

HELP = """\
Find what no controller will clean up, both ways:
  stacks without a Service: the Service is gone (its finalizer removed by hand), or it wants
    none of our load balancers and holds none of our finalizers;
  load balancers named kube_service_<cluster>_<ns>_<name> without a stack: leaked by a crash,
    or left by OCCM for a Service that is gone.
A load balancer is swept only when it is proven this cluster's: its description is OCCM's for
--cluster-name and, when it carries cluster identity tags (kube_cluster_id_<uid>), this
cluster's (the kube-system namespace's UID) is among them; the name alone is no proof, since
two clusters with the same --cluster-name in one project name theirs alike. A load balancer
whose Service still exists is never deleted (adopt it, or leave it to whoever serves it), nor
one younger than --min-age or PENDING_*. Each one left alone is listed with the reason.
Without --delete nothing is changed; --delete needs --cluster-name given explicitly.

The same flags as `lb-reconciler run` say which stacks, cluster and cloud; the Services are
read with --kubeconfig. PULUMI_CONFIG_PASSPHRASE is needed for --delete (destroying a stack).

exit codes: 0 nothing orphaned (or all of it deleted), 2 orphans found (dry run), 1 an error.

examples:
  lb-reconciler sweep --cloud-config cloud.conf --state-dir ./lbr-state --cluster-name prod
  lb-reconciler sweep --cloud-config cloud.conf --cluster-name prod --delete
"""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "sweep",
        help="list (and with --delete remove) orphaned stacks and load balancers",
        description=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_stack_options(p)
    add_kube_options(p)
    add_class_options(p)
    p.add_argument(
        "--min-age",
        type=float,
        default=600.0,
        metavar="S",
        help="leave load balancers younger than this alone (default: %(default)s)",
    )
    p.add_argument("--delete", action="store_true", help="delete what is listed as orphaned")
    p.add_argument("--output", "-o", choices=("text", "json"), default="text")
    p.set_defaults(func=cmd_sweep)


def cmd_sweep(args: argparse.Namespace) -> int:
    if args.delete:
        require_cluster_name(args, flag="--delete")
    config = load_cloud_config(args.cloud_config)
    engine = open_engine(args, config, decrypts=args.delete)
    settings = controller_settings(args)
    rest = logged_in(engine)
    try:
        with progress("listing stacks, Services and load balancers"):
            stacks = engine.stacks()
            services = {
                f"{s['metadata'].get('namespace')}/{s['metadata'].get('name')}": s
                for s in list_cluster(args, "/api/v1/services")
            }
            lbs = rest.load_balancers()
    except (EngineError, OpenStackRestError) as exc:
        raise CommandError(str(exc)) from None
    identity = cluster_id(args)  # after the listing: a cluster that cannot be reached failed it
    plan = plan_sweep(
        stacks=stacks,
        services=services,
        load_balancers=lbs,
        settings=settings,
        now=datetime.now(tz=UTC),
        min_age=args.min_age,
        cluster_id=identity,
    )
    failures: list[str] = []
    deleted: list[str] = []
    if args.delete:
        for info in plan.stacks:
            try:
                with progress(f"destroying stack {info.stack}"):
                    engine.stack_for(info).delete()
                deleted.append(info.stack)
            except (EngineError, ValueError) as exc:
                failures.append(f"stack {info.stack}: {exc}")
        for lb in plan.load_balancers:
            try:
                with progress(f"deleting load balancer {lb.name}"):
                    rest.delete_with_floating_ips(
                        {"id": lb.lb_id, "vip_port_id": lb.vip_port_id},
                        cluster_name=args.cluster_name,
                    )
                deleted.append(lb.lb_id)
            except OpenStackRestError as exc:
                failures.append(f"load balancer {lb.name} ({lb.lb_id}): {exc}")
    out: Any = sys.stdout
    if args.output == "json":
        out.write(_json(plan, deleted, failures, cluster_id=identity))
    else:
        out.write(_text(plan, deleted, failures, delete=args.delete, style=Style(out)))
    if failures:
        return EXIT_INVALID
    if plan.empty or args.delete:
        return EXIT_OK
    return EXIT_CHANGES


def _json(plan: SweepPlan, deleted: list[str], failures: list[str], *, cluster_id: str) -> str:
    body = {
        "clusterId": cluster_id or None,
        "stacks": [
            {"stack": i.stack, "service": i.key, "lbId": i.lb_id, "deleted": i.stack in deleted}
            for i in plan.stacks
        ],
        "loadBalancers": [
            {
                "id": lb.lb_id,
                "name": lb.name,
                "service": lb.service,
                "vipAddress": lb.vip_address,
                "deleted": lb.lb_id in deleted,
            }
            for lb in plan.load_balancers
        ],
        "kept": [
            {
                "kind": k.kind,
                "name": k.what,
                "id": k.ident or None,
                "service": k.service,
                "reason": k.reason,
            }
            for k in plan.kept
        ],
        "errors": failures,
    }
    return json.dumps(body, indent=2) + "\n"


def _text(
    plan: SweepPlan, deleted: list[str], failures: list[str], *, delete: bool, style: Style
) -> str:
    lines = []
    gone = style("deleted", "green") if delete else style("orphaned", "yellow")
    for info in plan.stacks:
        state = gone if info.stack in deleted or not delete else style("NOT deleted", "red")
        lines.append(f"stack {info.stack} (Service {info.key}): {state}")
    for lb in plan.load_balancers:
        state = gone if lb.lb_id in deleted or not delete else style("NOT deleted", "red")
        lines.append(f"load balancer {lb.name} ({lb.lb_id}, Service {lb.service}): {state}")
    for k in plan.kept:
        if k.kind == "stack":
            lines.append(f"stack {k.what} (Service {k.service}): kept, {k.reason}")
        else:
            where = f"{k.ident}, Service {k.service}"
            lines.append(f"load balancer {k.what} ({where}): kept, {k.reason}")
    lines.extend(style(f"error: {f}", "red") for f in failures)
    if plan.empty:
        lines.append("nothing orphaned")
    elif not delete:
        lines.append("dry run: nothing was changed; --delete removes what is marked orphaned")
    return "\n".join(lines) + "\n"

"""``lb-reconciler preflight``: the shadow mode of a move from OCCM. Beside a live OCCM (or before
the controller starts), it reads every Service, the Nodes, the stacks and the cloud, and says per
Service what the controller would do at its first sync (:mod:`.preflight_plan`), writing nothing:
no stack, lock, status, finalizer or Event, and only GETs in the cloud. The import previews that
tell "as is" from "updated" run on a throw-away ``file://`` backend in a temporary folder, never
on the controller's.
"""

from __future__ import annotations

import argparse
import dataclasses
import secrets
import sys
import tempfile
from pathlib import Path
from typing import Any

from reconciler.cli.adopt import (
    AdoptRun,
    add_service_options,
    adopt_one,
    list_services_nodes_stacks,
)
from reconciler.cli.common import (
    EXIT_CHANGES,
    CommandError,
    cluster_id,
    controller_settings,
    load_cloud_config,
    logged_in,
    open_engine,
)
from reconciler.cli.preflight_plan import (
    Verdict,
    exit_code,
    render_json,
    render_prometheus,
    render_text,
    verdict_of,
)
from reconciler.cli.terminal import Style, progress
from reconciler.config import Secret
from reconciler.engine.openstack.client import OpenStackRest, OpenStackRestError
from reconciler.engine.openstack.roles import missing_write_role
from reconciler.engine.stack import Engine
from reconciler.model.naming import named_under_other_clusters
from reconciler.model.predicates import external_address

__all__ = ["register"]

HELP = """\
Shadow mode, for a move from OCCM: say for each Service of type LoadBalancer that this controller
would serve what it would do at its first sync, and write nothing: no stack, lock, status,
finalizer or Event, no cloud write (the previews run on a throw-away backend of their own). Run
it beside a live OCCM, with the flags the controller will run with, before you turn OCCM's
service controller off (docs/adopt.md, "Cutover").

verdicts:
  managed     a stack already holds it
  take-over   OCCM's load balancer is this cluster's and is taken over as is (same IP,
              nothing created, updated or deleted)
  update      taken over, then changed in place (same IP): the properties updated and the
              objects created (e.g. a listener for a port OCCM's LB lacks) are listed
  create      no load balancer and no external IP: a new one, as for any new Service
  refuse      the controller would refuse it (a Warning, retried) and change nothing: why
  invalid     the Service's spec is refused: the field and the fix
  new-ip      it has an external IP, but no load balancer is named for it: a new IP
  second-lb   a load balancer is named for it under another cluster name: a second one

exit codes: 0 every Service keeps its load balancer and IP (or is new); 2 some would be
updated, refused or are invalid, or the credential lacks a role that may make load balancers
(the controller would not start: the role is named); 1 some would get a new IP or a second
load balancer.

examples:
  lb-reconciler preflight --cloud-config cloud.conf --cluster-name kubernetes
  lb-reconciler preflight --cloud-config cloud.conf --cluster-name prod --output json
  lb-reconciler preflight ... --output prometheus > /var/lib/node_exporter/lbr_preflight.prom
"""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "preflight",
        help="shadow mode: what the controller would do with each Service, writing nothing",
        description=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_service_options(p)
    p.add_argument("--output", "-o", choices=("text", "json", "prometheus"), default="text")
    p.set_defaults(func=cmd_preflight)


def _throwaway_engine(real: Engine, folder: Path) -> Engine:
    """An engine like ``real`` on a ``file://`` backend in ``folder``, with a passphrase of its
    own: the previews of imports run there (a stack is made and removed per Service)."""
    return Engine(
        settings=dataclasses.replace(
            real.settings,
            state_dir=folder,
            backend_url=(folder / "backend").as_uri(),
            passphrase=Secret(secrets.token_urlsafe(24)),
        )
    )


def cmd_preflight(args: argparse.Namespace) -> int:
    config = load_cloud_config(args.cloud_config)
    settings = controller_settings(args)
    identity = cluster_id(args)
    # reads the controller's backend (the stacks' list) and nothing more: no passphrase needed
    engine = open_engine(args, config, decrypts=False, cluster_id=identity)
    with progress("listing Services, Nodes, stacks and load balancers"):
        services, skipped, nodes, stacks = list_services_nodes_stacks(args, settings, engine)
        rest = logged_in(engine)
        roles, project = _roles(rest)
        why = missing_write_role(roles, project=project)
        if why is not None:  # every Service would be refused: say so once, not per Service
            raise CommandError(
                f"{why}; the controller would not start with this credential", code=EXIT_CHANGES
            )
        try:
            lb_names = [str(lb.get("name") or "") for lb in rest.load_balancers()]
        except OpenStackRestError as exc:
            raise CommandError(f"listing the load balancers: {exc}") from None
    verdicts = [
        verdict_of(r, external_ip=None, elsewhere=[], cluster_name=args.cluster_name)
        for r in skipped
    ]
    with tempfile.TemporaryDirectory(prefix="lbr-preflight-") as folder:
        run = AdoptRun(
            engine,
            rest,
            config,
            settings,
            nodes,
            stacks,
            apply=False,
            allow_updates=True,  # as the controller's take-over: updates in place are made
            cluster_id=identity,
            preview_engine=_throwaway_engine(engine, Path(folder)),
        )
        for svc in services:
            meta = svc.get("metadata") or {}
            result = adopt_one(run, svc)
            elsewhere = named_under_other_clusters(
                lb_names,
                namespace=str(meta.get("namespace")),
                name=str(meta.get("name")),
                cluster_name=args.cluster_name,
            )
            verdicts.append(
                verdict_of(
                    result,
                    external_ip=external_address(svc),
                    elsewhere=list(elsewhere),
                    cluster_name=args.cluster_name,
                )
            )
    verdicts.sort(key=lambda v: v.service)
    _write(args.output, verdicts)
    return exit_code(verdicts)


def _roles(rest: OpenStackRest) -> tuple[list[str], str]:
    """The credential's roles and project (:meth:`OpenStackRest.roles`)."""
    try:
        roles, project = rest.roles()
    except OpenStackRestError as exc:
        raise CommandError(f"reading the credential's roles: {exc}") from None
    return roles, project


def _write(output: str, verdicts: list[Verdict]) -> None:
    out: Any = sys.stdout
    if output == "json":
        out.write(render_json(verdicts))
    elif output == "prometheus":
        out.write(render_prometheus(verdicts))
    else:
        out.write(render_text(verdicts, style=Style(out)))

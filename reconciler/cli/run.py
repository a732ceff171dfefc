"""``lb-reconciler run``: the controller, in a cluster or against a kubeconfig (its parts are
:mod:`reconciler.controller`'s; this module reads the flags into
:class:`~reconciler.controller.runner.RunOptions`)."""

from __future__ import annotations

import argparse
import logging

from reconciler.cli.common import (
    CommandError,
    backend_url,
    non_negative_int,
    positive_int,
    seconds,
    shown_url,
)
from reconciler.engine.state.retention import DEFAULT_KEEP

__all__ = ["register"]

RUN_HELP = """\
Run the controller: watch Services of type LoadBalancer and Nodes, and keep one Pulumi stack (an
Octavia load balancer with its listeners, pools, members, monitors and floating IP) per Service.

Credentials: --kubeconfig (default $KUBECONFIG, else the in-cluster service account) and the
OpenStack cloud.conf (OCCM's format), whose credentials reach the provider in its environment
only, never a stack. PULUMI_CONFIG_PASSPHRASE must be set: pulumi needs it for every operation
on a stack (the stacks' secrets provider).

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
the cloud once per --drift-interval (3600 s): one listing of the project's load balancers,
listeners, pools, members, monitors and floating IPs against every stack's checkpoint, and a
drift check only for the stacks that differ, plus one for each stack once per
--drift-sweep-interval (a week), staggered. --drift=repair (the default) refreshes
the stack and runs `up`, which puts the cloud back (Event DriftRepaired); --drift=report only
compares (`pulumi refresh --preview-only`: neither the state nor the cloud is written) and
reports each difference, resource, property, value in the cloud and in the stack, as a Warning
DriftDetected on the Service and in the gauge lbr_drifted_stacks (DriftResolved once it is
gone); --drift=off checks nothing (as --drift-interval 0 always did).
One writer: with --leader-elect only the replica holding the Lease writes (it stops writing
the moment its renewals lapse, and steps down); without it, run exactly one replica. The writer
removes the stack locks that are provably stale (a dead or deposed replica's, one of this host
whose process is gone), when it starts leading and before each operation. A lock it cannot
prove is its own (a person's or CI's `pulumi`, another host's) is never removed: the Service
gets a Warning StackLocked naming the holder and the `pulumi cancel` that frees a dead one, and
is retried with backoff; --foreign-lock-timeout S makes such locks expire after S seconds
(default: never) (docs/operations.md, "Who may hold a stack lock").

exit codes: 0 stopped on SIGTERM/SIGINT; 1 leadership lost or the API server unusable;
2 unusable configuration (each problem is logged with the field and the fix), a login that
cloud.conf must fix, or a credential whose token holds no role that may make load balancers
(the role to grant is named: member, or load-balancer_member). SIGUSR1 logs
every thread's stack as one record ("thread stacks") and changes nothing (a controller that
does not stop or progress).
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
            drift_sweep_interval=args.drift_sweep_interval,
        ),
        keep_history=args.keep_history,
        foreign_lock_timeout=args.foreign_lock_timeout or None,
        check_cluster_name=not args.skip_cluster_name_check,
    )
    return run(options)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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
        "--skip-cluster-name-check",
        action="store_true",
        help="start even when no Service with an external IP has a load balancer named with "
        "--cluster-name and some have one named with another (by default the controller "
        "refuses: OCCM's --cluster-name is probably that other one, and this one would give "
        "those Services new load balancers and IPs)",
    )
    p.add_argument(
        "--foreign-lock-timeout",
        type=seconds,
        default=0.0,
        metavar="S",
        help="remove a stack lock that is not this controller's (a person's or CI's pulumi) "
        "once it is S seconds old; 0: never, the Service waits and says who holds it "
        "(default: 0)",
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
        help="compare each stack with the cloud this often: one listing of the project's "
        "objects against every stack's checkpoint, and a pulumi refresh only for the stacks that "
        "differ; 0: no drift checks (--drift=off) (default: %(default)s)",
    )
    p.add_argument(
        "--drift-sweep-interval",
        type=seconds,
        default=604800.0,
        metavar="S",
        help="also refresh each stack in full (pulumi refresh, about 1 CPU s each) this often, "
        "staggered, for what the listing does not compare; not above --drift-interval: every "
        "check is a full refresh, no listing (default: %(default)s, a week)",
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

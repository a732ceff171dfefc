"""``lb-reconciler preview``: what applying Service manifests would do to the cloud, changing
nothing. Decisions are pure (:mod:`reconciler.cli.manifests` loads,
:mod:`reconciler.cli.preview_plan` selects and builds, :mod:`reconciler.cli.preview_report` folds
and renders); this module reads the files, the Nodes and the stacks, runs the previews and prints.

Order: every input is read and checked first (manifests, Nodes, cloud.conf, each Service's spec
with placeholders for what Kubernetes assigns); any problem ends the run with exit code 1 before
the backend is opened. Then each Service's stack is looked up (``engine.stacks()``), its last
applied spec read to fill in the ``uid`` and node ports, and a Pulumi preview run against it
(a stack made for a new Service is removed again).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, NoReturn

from reconciler.cli.common import (
    EXIT_INVALID,
    CommandError,
    add_class_options,
    add_kube_options,
    add_stack_options,
    controller_settings,
    list_cluster,
    load_cloud_config,
    open_engine,
)
from reconciler.cli.manifests import load
from reconciler.cli.preview_offline import (
    NO_CREDENTIALS_FOR_REFRESH,
    NODES_FROM_STATE_NOTE,
    TAKES_OVER_NOTE,
    has_credentials,
    new_service_nodes_note,
    offline_notes,
)
from reconciler.cli.preview_plan import (
    InputError,
    Target,
    build,
    complete,
    nodes_from_spec,
    nodes_of,
    select_services,
    selector_labels,
    stand_in_node,
)
from reconciler.cli.preview_report import (
    PreviewReport,
    ServiceReport,
    deleted,
    exit_code,
    external_ip_changes,
    render,
    rows_from_steps,
)
from reconciler.cli.terminal import Style, progress
from reconciler.config import CloudConfig
from reconciler.controller.sync_plan import ControllerSettings
from reconciler.engine.adopt.stack import examine_take_over
from reconciler.engine.errors import EngineError
from reconciler.engine.openstack.client import OpenStackRestError
from reconciler.engine.plan import StackInfo, applied_spec_from
from reconciler.engine.preview_offline import recorded_lookups
from reconciler.engine.sandbox import Sandbox, SandboxError
from reconciler.model import LoadBalancerSpec, ServiceRef

__all__ = ["register"]

HELP = """\
Preview what applying Service manifests would do to the cloud, without changing anything.

Each Service of type LoadBalancer that the controller would serve gets its spec built as the
controller builds it (annotations, cloud.conf, the Nodes), and a Pulumi preview runs against a
copy of its stack in a temporary folder: the backend is only read (read-only credentials are
enough), and a new Service's stack is made in that folder, never on the backend. Per Service:
the load balancer, listeners, pools, members, monitors and floating IP that would be created,
updated, replaced or deleted, with the properties that change, and a warning when the external
IP would change.

The cloud is asked only when cloud.conf holds cloud credentials (a password, application
credential secret or token), as the controller's does. Without them (CI: cloud.conf without them),
what the program looks up in the cloud (networks, subnets, ports) is what each stack's last
apply found, and each Service lists what could not be checked. With them, a new Service whose
load balancer already exists (made by OCCM) shows the import the controller would do, and
--refresh reads each load balancer from the cloud first.

Manifests (-f, repeatable): files, folders (*.yaml, *.yml, *.json below them) or - for stdin;
multi-document YAML, kind: List (kubectl get -o yaml), helm template output. Other documents,
Services of another type and Services of a class the controller does not serve are listed as
skipped. Nodes come from the cluster (--kubeconfig, default $KUBECONFIG), from --nodes FILE
(kubectl get nodes -o yaml), or from each stack (--nodes-from-state: only what the manifests
change shows). The stack flags are the controller's. PULUMI_CONFIG_PASSPHRASE is needed only
for a stack that still holds secrets (written before 0.2).

exit codes: 0 nothing would change; 2 something would change; 1 invalid input (each problem
names the file, the Service, the field and the fix) or a preview failed.

examples:
  lb-reconciler preview -f deploy/services/ --nodes-from-state --cloud-config cloud.conf \\
      --backend-url postgres://ci-reader@db/lbr --cluster-name prod -o markdown
  helm template ./chart | lb-reconciler preview -f - --nodes nodes.yaml \\
      --cloud-config cloud.conf --backend-url s3://bucket/lbr --cluster-name prod
"""


class _Parser(argparse.ArgumentParser):
    """Usage errors exit 1 (invalid input), not argparse's 2, which means "changes" here."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_INVALID, f"{self.prog}: error: {message}\n")

    def parse_known_args(self, *args: Any, **kwargs: Any) -> Any:
        parsed, extras = super().parse_known_args(*args, **kwargs)
        if extras:  # would reach the top-level parser, which exits 2
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed, extras


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    saved, sub._parser_class = sub._parser_class, _Parser
    try:
        p = sub.add_parser(
            "preview",
            help="preview what Service manifests would change in the cloud (for CI)",
            description=HELP,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
    finally:
        sub._parser_class = saved
    p.add_argument(
        "-f",
        "--filename",
        action="append",
        default=[],
        required=True,
        metavar="PATH",
        help="a manifest file, a folder of them, or - for stdin (repeatable)",
    )
    where = p.add_mutually_exclusive_group()
    where.add_argument(
        "--nodes", metavar="FILE", help="Node objects (YAML/JSON) instead of the cluster's Nodes"
    )
    where.add_argument(
        "--nodes-from-state",
        action="store_true",
        help="the Nodes each stack was last applied with (no cluster access; a new Service: "
        "those of the most recently updated stack)",
    )
    p.add_argument(
        "--refresh",
        action="store_true",
        help="read each load balancer's objects from the cloud first (needs cloud credentials; "
        "without them nothing is asked of the cloud)",
    )
    p.add_argument(
        "--namespace",
        "-n",
        default="default",
        help="for Services without metadata.namespace (default: %(default)s)",
    )
    p.add_argument("--output", "-o", choices=("text", "json", "markdown"), default="text")
    add_stack_options(p)
    add_kube_options(p)
    add_class_options(p)
    p.set_defaults(func=cmd_preview)


def _nodes(args: argparse.Namespace) -> tuple[list[Mapping[str, Any]], list[str]]:
    """The Nodes, from --nodes or the cluster; and the problems with --nodes."""
    if args.nodes:
        loaded = load([args.nodes], stdin=sys.stdin)
        nodes = nodes_of(loaded.documents)
        errors = [str(e) for e in loaded.errors]
        if not nodes and not errors:
            errors.append(f"{args.nodes}: has no Node objects (kubectl get nodes -o yaml)")
        return nodes, errors
    try:
        with progress("listing the cluster's Nodes"):
            return [*list_cluster(args, "/api/v1/nodes")], []
    except CommandError as exc:
        raise CommandError(f"{exc}\n(or give the Nodes with --nodes FILE)") from None


def _check(
    targets: Sequence[Target],
    *,
    nodes: Sequence[Mapping[str, Any]] | None,
    config: CloudConfig,
    settings: ControllerSettings,
) -> list[InputError]:
    """Every Service's spec, built with placeholders for what Kubernetes assigns (``nodes``
    None: --nodes-from-state, a stand-in Node the Service's node-selector matches)."""
    errors: list[InputError] = []
    for target in targets:
        service, _notes = complete(target.service, None)
        using = nodes if nodes is not None else [stand_in_node(selector_labels(service, config))]
        _spec, found, _notices = build(
            target, service, nodes=using, config=config, settings=settings
        )
        errors += found
    return errors


@dataclass
class _Run:
    """What every Service's preview shares."""

    sandbox: Sandbox
    config: CloudConfig
    settings: ControllerSettings
    nodes: Sequence[Mapping[str, Any]] | None  # None: each stack's own (--nodes-from-state)
    asks_cloud: bool
    refresh: bool
    stacks: Sequence[StackInfo] = ()
    _fleet: tuple[str, LoadBalancerSpec | None] | None = None

    def fleet_spec(self) -> tuple[str, LoadBalancerSpec | None]:
        """For a new Service with --nodes-from-state: a stack of the cluster (the newest one
        updated) and the spec it was last applied with, whose members are the cluster's
        eligible Nodes as the controller last saw them; ("", None) without one."""
        if self._fleet is None:
            self._fleet = ("", None)
            for info in sorted(self.stacks, key=_updated, reverse=True):
                stack = self.sandbox.stack(
                    ServiceRef(info.namespace, info.name, info.uid), copy=True
                )
                outputs, _ = self.sandbox.outputs_and_state(stack)
                applied = applied_spec_from(outputs) if outputs else None
                if applied is not None:
                    self._fleet = (info.key, applied)
                    break
        return self._fleet


def _updated(info: StackInfo) -> float:
    return info.last_update.timestamp() if info.last_update else 0.0


def _preview_one(run: _Run, target: Target, info: StackInfo | None) -> ServiceReport:
    meta = target.service["metadata"]
    ref = ServiceRef(meta["namespace"], meta["name"], info.uid if info else "")
    base = ServiceReport(target.key, target.where, "", "failed", new=info is None)
    try:
        stack = run.sandbox.stack(ref, copy=info is not None)
        base = replace(base, stack=stack.name)
        outputs, deployment = run.sandbox.outputs_and_state(stack)
        applied = applied_spec_from(outputs) if outputs else None
        service, notes = complete(target.service, applied)
        nodes = run.nodes
        if nodes is None:
            labels = selector_labels(target.service, run.config)
            if applied is None:  # a new Service: the Nodes another stack was applied with
                source, applied_there = run.fleet_spec()
                nodes = nodes_from_spec(applied_there, labels)
                notes = (*notes, new_service_nodes_note(source))
            else:
                nodes = nodes_from_spec(applied, labels)
                notes = (*notes, NODES_FROM_STATE_NOTE)
        spec, errors, notices = build(
            target, service, nodes=nodes, config=run.config, settings=run.settings
        )
        if spec is None:
            return replace(base, error="; ".join(str(e) for e in errors))
        stack = run.sandbox.engine.stack(service=spec.service)
        taken = examine_take_over(stack, spec) if info is None and run.asks_cloud else None
        if taken is not None and taken.refusal is not None:
            return replace(base, error=f"the controller would refuse it: {taken.refusal}")
        if taken is not None and taken.outcome is not None:
            outcome = taken.outcome
            notes = (*notes, TAKES_OVER_NOTE.format(what=taken.what))
        else:
            recorded = None if run.asks_cloud else recorded_lookups(outputs, deployment)
            outcome = stack.preview(spec, recorded=recorded, refresh=run.refresh)
    except (EngineError, OpenStackRestError, SandboxError) as exc:
        return replace(base, error=str(exc))  # this Service fails, the others go on
    if not run.asks_cloud:
        notes = (*notes, *offline_notes(outcome.unchecked, new=info is None, name=spec.name))
    rows = rows_from_steps(outcome.steps)
    current = info.external_ip if info else None
    return replace(
        base,
        status="changes" if rows else "no-changes",
        rows=rows,
        external_ip=external_ip_changes(rows, current=current) if info else (),
        current_ip=current,
        notes=(*notices, *notes),
        frozen=outcome.frozen,
    )


def _reading(args: argparse.Namespace, work: Path) -> argparse.Namespace:
    """``args`` with the work folders in ``work``: the backend is ``--backend-url``, else the
    ``file://`` one in ``--state-dir``, which is not written (nor made, if it is missing)."""
    backend = args.backend_url or (Path(args.state_dir) / "backend").absolute().as_uri()
    return argparse.Namespace(**{**vars(args), "state_dir": str(work), "backend_url": backend})


def cmd_preview(args: argparse.Namespace) -> int:
    settings = controller_settings(args)
    loaded = load(args.filename, stdin=sys.stdin)
    targets, skipped, selected = select_services(
        loaded.documents, settings=settings, namespace=args.namespace
    )
    errors = [str(e) for e in loaded.errors] + [str(e) for e in selected]
    config = load_cloud_config(args.cloud_config)
    nodes: list[Mapping[str, Any]] = []
    if targets:
        if not args.nodes_from_state:
            nodes, node_errors = _nodes(args)
            errors += node_errors
        checked = _check(
            targets,
            nodes=None if args.nodes_from_state else nodes,
            config=config,
            settings=settings,
        )
        errors += [str(e) for e in checked]
    out = sys.stdout
    if errors:
        report = PreviewReport(skipped=tuple(skipped), errors=tuple(errors))
        out.write(render(report, args.output, style=Style(out)))
        count = "1 problem" if len(errors) == 1 else f"{len(errors)} problems"
        print(f"error: {count} in the input; nothing was previewed", file=sys.stderr)
        return exit_code(report)
    services: list[ServiceReport] = []
    keys = {t.key for t in targets}
    gone = [s for s in skipped if s.key and s.key not in keys]
    if targets or gone:
        asks_cloud = has_credentials(config.auth)
        if args.refresh and not asks_cloud:
            raise CommandError(NO_CREDENTIALS_FOR_REFRESH)
        with tempfile.TemporaryDirectory(prefix="lbr-preview-") as folder:
            # the state dir is only read (its file:// backend): work folders go in the copy's
            engine = open_engine(_reading(args, Path(folder) / "source"), config, decrypts=False)
            try:
                with progress("listing stacks"):
                    stacks = {info.key: info for info in engine.stacks()}
            except EngineError as exc:
                raise CommandError(str(exc)) from None
            run = _Run(
                sandbox=Sandbox(
                    engine, Path(folder), passphrase=os.environ.get("PULUMI_CONFIG_PASSPHRASE")
                ),
                config=config,
                settings=settings,
                nodes=None if args.nodes_from_state else nodes,
                asks_cloud=asks_cloud,
                refresh=args.refresh,
                stacks=list(stacks.values()),
            )
            for target in targets:
                with progress(f"previewing {target.key}"):
                    services.append(_preview_one(run, target, stacks.get(target.key)))
        for skip in gone:
            info = stacks.get(str(skip.key))
            if info is not None:
                services.append(deleted(skip, stack=info.stack, current_ip=info.external_ip))
    report = PreviewReport(services=tuple(services), skipped=tuple(skipped))
    out.write(render(report, args.output, style=Style(out)))
    return exit_code(report)

"""``lb-reconciler adopt``: take OCCM's load balancers over into Service stacks, without
recreating anything. The decisions are :mod:`reconciler.engine.adopt.plan` (which object is which
resource), :mod:`reconciler.engine.adopt.ownership` (whether the load balancer is this cluster's)
and :mod:`reconciler.engine.adopt.preview` (whether a preview is acceptable); this module reads the
cluster and the cloud, runs the stack operations (:mod:`reconciler.engine.adopt.stack`) and prints
(:mod:`reconciler.cli.adopt_report`).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reconciler.cli.adopt_report import ServiceResult, exit_code, render_json, render_text
from reconciler.cli.common import (
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
from reconciler.cli.terminal import Style, progress
from reconciler.config import CloudConfig
from reconciler.controller.sync_plan import ControllerSettings
from reconciler.engine.adopt.cloud import find_occm_objects
from reconciler.engine.adopt.ownership import foreign_problem, records_identity
from reconciler.engine.adopt.plan import plan_adoption
from reconciler.engine.adopt.preview import judge_preview, unchanged_problems
from reconciler.engine.adopt.stack import AdoptionFailedError, adopt, held_resources
from reconciler.engine.errors import EngineError
from reconciler.engine.openstack.client import OpenStackRest, OpenStackRestError
from reconciler.engine.plan import StackInfo
from reconciler.engine.preview import PreviewOutcome
from reconciler.engine.stack import Engine, ServiceStack
from reconciler.model import build_spec, wants_load_balancer
from reconciler.model.naming import cluster_id_tag
from reconciler.model.spec import LoadBalancerSpec

__all__ = [
    "AdoptRun",
    "add_service_options",
    "adopt_one",
    "list_services_nodes_stacks",
    "register",
    "services_to_examine",
]

HELP = """\
Adopt the load balancers of openstack-cloud-controller-manager (OCCM): for each Service of type
LoadBalancer that this controller would serve, find OCCM's load balancer (named
kube_service_<cluster>_<namespace>_<name>), its listeners, pools, members, health monitors and
the floating IP on its VIP port, and import them into the Service's stack without recreating
anything: the load balancer, its id and its address stay. What the Service asks for and OCCM
never made (a new port, a monitor) is created; what OCCM made and the Service no longer asks for
is left alone and listed.

Dry run by default: shows what would be imported and created and runs a preview of the import;
nothing in the cloud or the backend is changed. A Service is refused when the preview would
replace or delete anything, or update anything (unless --allow-updates): the Service then
differs from what OCCM made (another lb-method, a Node added since), and "adopt" changes
nothing behind your back. --apply imports, then shows that a preview of the Service has no
change; the controller's next sync skips the stack. A failed import is undone.

Only a load balancer this cluster made is adopted: its description is OCCM's for
--cluster-name and, when it carries cluster identity tags (kube_cluster_id_<uid>), this
cluster's (the kube-system namespace's UID) is among them. Another cluster's with the same name
(two clusters with the same --cluster-name in one project) is refused, with the reason.

Use the controller's flags: --cloud-config, --cluster-name (OCCM's --cluster-name, default
"kubernetes"; --apply needs it given explicitly), --state-dir or --backend-url,
--load-balancer-class. PULUMI_CONFIG_PASSPHRASE must be the controller's. Stop OCCM's service
controller first.

exit codes: 0 adopted (or nothing to adopt), 2 dry run found Services to adopt, 1 a Service was
refused, invalid, or failed.

examples:
  lb-reconciler adopt --cloud-config cloud.conf --cluster-name prod --state-dir ./lbr-state
  lb-reconciler adopt --cloud-config cloud.conf --cluster-name prod default/web --apply
  lb-reconciler adopt --cloud-config cloud.conf --namespace shop --output json
"""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "adopt",
        help="import OCCM's load balancers into Service stacks (dry run unless --apply)",
        description=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_service_options(p)
    p.add_argument("--apply", action="store_true", help="import (default: dry run)")
    p.add_argument(
        "--allow-updates",
        action="store_true",
        help="accept in-place updates of imported objects to the Service's spec (never a "
        "replacement)",
    )
    p.add_argument("--output", "-o", choices=("text", "json"), default="text")
    p.set_defaults(func=cmd_adopt)


def add_service_options(p: argparse.ArgumentParser) -> None:
    """The flags of a command that looks at the cluster's Services as the controller would:
    its backend, cloud.conf and cluster name, the kubeconfig, which Services (NS/NAME
    arguments, ``--namespace``) and the class flags (``adopt``, ``preflight``)."""
    add_stack_options(p)
    add_kube_options(p)
    p.add_argument("services", nargs="*", metavar="NS/NAME", help="only these Services")
    p.add_argument("--namespace", help="only the Services of this namespace")
    add_class_options(p)


@dataclass(frozen=True)
class AdoptRun:
    """What examining one Service needs: ``engine`` reads the controller's backend (and
    ``--apply`` writes it); the import's preview runs on ``preview_engine`` (None: ``engine``),
    which ``preflight`` points at a throw-away backend so that nothing is written."""

    engine: Engine
    rest: OpenStackRest
    config: CloudConfig
    settings: ControllerSettings
    nodes: Sequence[Mapping[str, Any]]
    stacks: Mapping[str, StackInfo]
    apply: bool
    allow_updates: bool
    cluster_id: str = ""  # the kube-system namespace's UID, "" when it could not be read
    preview_engine: Engine | None = None


def _key(service: Mapping[str, Any]) -> str:
    meta = service.get("metadata") or {}
    return f"{meta.get('namespace')}/{meta.get('name')}"


def services_to_examine(
    args: argparse.Namespace, settings: ControllerSettings
) -> tuple[list[dict[str, Any]], list[ServiceResult]]:
    """The Services to look at, and a result for each named one that cannot be."""
    path = f"/api/v1/namespaces/{args.namespace}/services" if args.namespace else "/api/v1/services"
    wanted = list(dict.fromkeys(args.services))
    for name in wanted:
        if name.count("/") != 1:
            raise CommandError(f"{name}: name Services as NAMESPACE/NAME")
    if wanted and not args.namespace:
        items = []
        for ns in sorted({w.split("/")[0] for w in wanted}):
            items.extend(list_cluster(args, f"/api/v1/namespaces/{ns}/services"))
    else:
        items = list_cluster(args, path)
    by_key = {_key(s): s for s in items}
    skipped: list[ServiceResult] = []
    chosen = []
    for key in wanted or sorted(by_key):
        svc = by_key.get(key)
        served = svc is not None and wants_load_balancer(svc, settings.ownership)
        deleting = svc is not None and (svc.get("metadata") or {}).get("deletionTimestamp")
        if svc is not None and served and not deleting:
            chosen.append(svc)
        elif wanted:
            why = (
                "no such Service"
                if svc is None
                else "it is being deleted"
                if deleting
                else "this controller does not serve it (its type or loadBalancerClass)"
            )
            skipped.append(ServiceResult(key, "refused", problems=[why]))
    return chosen, skipped


def list_services_nodes_stacks(
    args: argparse.Namespace, settings: ControllerSettings, engine: Engine
) -> tuple[list[dict[str, Any]], list[ServiceResult], list[dict[str, Any]], dict[str, StackInfo]]:
    """What examining the Services needs: :func:`services_to_examine`, the Nodes (none are
    read when no Service is examined) and this cluster's stacks by ``namespace/name``."""
    services, skipped = services_to_examine(args, settings)
    nodes = list_cluster(args, "/api/v1/nodes") if services else []
    try:
        stacks = {info.key: info for info in engine.stacks()}
    except EngineError as exc:
        raise CommandError(str(exc)) from None
    return services, skipped, nodes, stacks


def cmd_adopt(args: argparse.Namespace) -> int:
    if args.apply:
        require_cluster_name(args, flag="--apply")
    config = load_cloud_config(args.cloud_config)
    settings = controller_settings(args)
    # as the controller: the adopted stacks record it and their load balancers keep its tag
    identity = cluster_id(args)
    engine = open_engine(args, config, cluster_id=identity)
    with progress("listing Services, Nodes and stacks"):
        services, results, nodes, stacks = list_services_nodes_stacks(args, settings, engine)
    run = AdoptRun(
        engine,
        logged_in(engine) if services else engine.rest(),
        config,
        settings,
        nodes,
        stacks,
        args.apply,
        args.allow_updates,
        cluster_id=identity,
    )
    for svc in services:
        results.append(adopt_one(run, svc))
    results.sort(key=lambda r: r.service)
    out: Any = sys.stdout
    if args.output == "json":
        out.write(render_json(results))
    else:
        out.write(render_text(results, apply=args.apply, style=Style(out)))
    return exit_code(results, apply=args.apply)


def adopt_one(run: AdoptRun, svc: Mapping[str, Any]) -> ServiceResult:
    """What adopting the Service would do (and, with ``run.apply``, does)."""
    key = _key(svc)
    built = build_spec(
        service=svc, nodes=run.nodes, config=run.config, cluster_name=run.settings.cluster_name
    )
    if built.spec is None:
        return ServiceResult(key, "invalid", problems=[str(e) for e in built.errors])
    spec = built.spec
    stack = run.engine.stack(service=spec.service)
    result = ServiceResult(key, stack=stack.name)
    try:
        if _managed(run, key, stack, result):
            return result
        with progress(f"{key}: looking for OCCM's load balancer {spec.name}"):
            found, problems = find_occm_objects(run.rest, spec)
    except (EngineError, OpenStackRestError) as exc:
        result.status, result.problems = "failed", [str(exc)]
        return result
    plan = plan_adoption(spec, found)
    result.lb_id = plan.lb_id
    result.lb_name = str(found.load_balancer.get("name")) if found.load_balancer else None
    result.imports, result.described = dict(plan.imports), dict(plan.described)
    result.notes = list(plan.notes)
    foreign = foreign_problem(
        found, cluster_name=run.settings.cluster_name, cluster_id=run.cluster_id
    )
    result.problems = [*problems, *([foreign] if foreign else []), *plan.problems]
    if not plan.found and not result.problems:
        result.notes.append(f"no load balancer named {spec.name}: the controller makes one")
        return result
    if result.problems:
        result.status = "refused"
        return result
    try:
        previewed = run.preview_engine.stack(service=spec.service) if run.preview_engine else stack
        with progress(f"{key}: previewing the import"):
            outcome = previewed.preview(plan.spec, imports=plan.imports)
    except EngineError as exc:
        result.status, result.problems = "refused", [f"the preview failed: {exc}"]
        return result
    _show_preview(result, outcome)
    result.problems = judge_preview(plan, outcome, allow_updates=run.allow_updates)
    if records_identity(found.load_balancer, cluster_id=run.cluster_id):
        result.notes.append(
            f"the load balancer is tagged {cluster_id_tag(run.cluster_id)}, this cluster's "
            "identity (the kube-system namespace's UID), as every one the controller serves: "
            "so another cluster with the same --cluster-name can tell it is not theirs"
        )
    if result.problems:
        result.status = "refused"
        return result
    result.status = "adoptable"
    if run.apply:
        _apply(stack, plan.spec, spec, plan.imports, result)
    return result


def _managed(run: AdoptRun, key: str, stack: ServiceStack, result: ServiceResult) -> bool:
    """Whether a stack already holds the Service (then there is nothing to adopt)."""
    info = run.stacks.get(key)
    if info is None:
        return False
    if info.spec_hash:
        result.status = "managed"
        result.notes.append(f"stack {info.stack} holds it; nothing to adopt")
        return True
    held = held_resources(stack) or {}
    if held:
        result.status = "managed"
        result.notes.append(
            f"stack {info.stack} holds {len(held)} cloud objects of it (its last up did not "
            "finish; the controller completes it); nothing to adopt"
        )
        return True
    return False


def _show_preview(result: ServiceResult, outcome: PreviewOutcome) -> None:
    steps = [s for s in outcome.steps if not s.type.startswith("pulumi:")]
    result.preview = dict(Counter(s.op for s in steps))
    result.creates = [f"{s.name} ({s.type.rsplit(':', 1)[-1]})" for s in steps if s.op == "create"]
    result.updates = [
        f"{s.name}: " + "; ".join(f"{c.path} {c.old!r} -> {c.new!r}" for c in s.changes)
        for s in steps
        if s.op == "update"
    ]


def _apply(
    stack: ServiceStack,
    adopted: LoadBalancerSpec,
    original: LoadBalancerSpec,
    imports: Mapping[str, str],
    result: ServiceResult,
) -> None:
    key = result.service
    try:
        with progress(f"{key}: importing"):
            adopt(stack, adopted, imports=imports)
    except AdoptionFailedError as exc:
        result.status, result.problems = "failed", [str(exc)]
        return
    result.status = "adopted"
    try:
        with progress(f"{key}: previewing the Service's spec against the stack"):
            after = stack.preview(original)
        result.after = dict(after.changes)
        result.problems = unchanged_problems(after)
        if not result.problems:
            result.controller_skips = not stack.ensure(original).changed
    except EngineError as exc:
        result.problems = [f"adopted, but the preview afterwards failed: {exc}"]

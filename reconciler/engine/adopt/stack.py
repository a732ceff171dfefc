"""Adopting existing cloud objects into a stack, all or nothing (``lb-reconciler adopt --apply``).

:meth:`ServiceStack.ensure <reconciler.engine.stack.ServiceStack.ensure>` with ``imports`` runs one
``up`` that imports the found objects and creates what the Service asks for beyond them. If that
``up`` fails, Pulumi keeps what it did so far: the objects imported before the failure are in the
state, the others are not. Such a half-adopted stack is dangerous: the controller's next ``up``
(which knows nothing of the imports) would *create* the missing ones again, a second floating IP or
listener beside OCCM's. So :func:`adopt` undoes a failed adoption unless every import reached the
state:

* the objects this ``up`` created (a listener for a port OCCM never served, a new monitor ...)
  are destroyed (``destroy --target``); batch members and floating-IP associations are not
  destroyed (their pool or floating IP existed before, or goes with its own destroy), nor are
  security-group port associations of a group that existed before (removing them would take
  OCCM's group off the Nodes);
* the state is put back as it was: a stack that did not exist is removed (``stack rm --force``,
  which leaves the cloud alone, with its work folder), an existing one gets its earlier
  deployment back (``stack import``). The imported objects are thereby forgotten, untouched.

If every import reached the state the stack is left as it is: it is a stack whose last ``up``
failed (no ``lbr:spec-hash``), which the controller's next sync completes like any other.

**Taking over without ``adopt``** (:func:`take_over`). A user who moves from OCCM and skips
``lb-reconciler adopt`` must not get a second load balancer with the same name and a new IP. So
the first ``ensure`` of a Service without a stack looks for a load balancer with its OCCM name.
None: the program makes one. One this cluster made (:func:`reconciler.model.naming.
made_by_cluster`) whose adoption previews with no replacement and no deletion (updates are fine:
the controller would make them anyway): it is adopted as ``adopt --apply --allow-updates``
would, and keeps its floating IP. Anything else (several with the name, another cluster's, one
that is not ``ACTIVE``, a preview that would replace something): refused with
:class:`ExistingLoadBalancerError`, which names the load balancer and the command to run; the
empty stack made for the attempt is removed again, so nothing is created until someone acts.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from pulumi import automation as auto

from reconciler.engine.adopt.cloud import find_occm_objects
from reconciler.engine.adopt.ownership import foreign_problem
from reconciler.engine.adopt.plan import AdoptionPlan, plan_adoption
from reconciler.engine.adopt.preview import judge_preview
from reconciler.engine.context import EngineContext
from reconciler.engine.deployment import resources_of
from reconciler.engine.errors import EngineError, InvalidConfigError
from reconciler.engine.handle import quiet
from reconciler.engine.results import EnsureResult
from stacks.vocabulary import (
    CONFIG_NAMESPACE,
    FIP_ASSOCIATION_TYPE,
    IMPORTS_KEY,
    MEMBERS_TYPE,
    PORT_SG_TYPE,
    SECURITY_GROUP,
    logical_name,
)

if TYPE_CHECKING:
    from reconciler.engine.preview import PreviewOutcome
    from reconciler.model.spec import LoadBalancerSpec

__all__ = [
    "Adoptable",
    "AdoptionFailedError",
    "ExistingLoadBalancerError",
    "TakeOver",
    "adopt",
    "examine_take_over",
    "held_resources",
    "rollback_targets",
    "take_over",
]

T = TypeVar("T")

# Kept on rollback: idempotent batch/association resources (see the module docstring).
_KEEP_TYPES = (MEMBERS_TYPE, FIP_ASSOCIATION_TYPE)


class Adoptable(Protocol):
    """What adoption needs of a stack: :class:`~reconciler.engine.stack.ServiceStack`'s
    operations on its :class:`~reconciler.engine.handle.StackHandle` (a Protocol, so this module
    does not import the one that calls it)."""

    name: str
    work_dir: Path
    engine: EngineContext

    def open_stack(self, *, create: bool, writes: bool = True) -> auto.Stack | None: ...

    def deadline(self, run: Callable[[], T], *, stack: auto.Stack, doing: str) -> T: ...

    def unprotect_all(self) -> None: ...

    def ensure(
        self, desired: LoadBalancerSpec, *, imports: Mapping[str, str] | None = None
    ) -> EnsureResult: ...

    def preview(
        self, spec: LoadBalancerSpec, *, imports: Mapping[str, str] | None = None
    ) -> PreviewOutcome: ...


class AdoptionFailedError(Exception):
    """The adoption's ``up`` failed. ``rolled_back``: the stack was put back as it was."""

    def __init__(self, message: str, *, rolled_back: bool) -> None:
        super().__init__(message)
        self.rolled_back = rolled_back


class ExistingLoadBalancerError(InvalidConfigError):
    """A load balancer with the Service's name exists and cannot be taken over safely."""

    reason = "ExistingLoadBalancer"


def rollback_targets(deployment: Mapping[str, Any], imports: Mapping[str, str]) -> list[str]:
    """The URNs a failed adoption must destroy: what it created, not what it imported."""
    out = []
    for r in deployment.get("resources") or ():
        rtype, urn = str(r.get("type", "")), str(r.get("urn", ""))
        if not r.get("custom") or rtype.startswith("pulumi:") or logical_name(urn) in imports:
            continue
        if rtype in _KEEP_TYPES or (rtype == PORT_SG_TYPE and SECURITY_GROUP in imports):
            continue
        out.append(urn)
    return out


def held_resources(stack: Adoptable) -> dict[str, str] | None:
    """The cloud objects ``stack`` holds; None when there is no such stack (and then no work
    folder is left behind either)."""
    had_folder = stack.work_dir.exists()
    opened = stack.open_stack(create=False, writes=False)
    if opened is None:
        if not had_folder:
            shutil.rmtree(stack.work_dir, ignore_errors=True)
        return None
    return resources_of(opened.export_stack().deployment or {})


def adopt(stack: Adoptable, spec: LoadBalancerSpec, *, imports: Mapping[str, str]) -> EnsureResult:
    """``stack.ensure(spec, imports=imports)``; undone when it fails before every import is in
    the state (:class:`AdoptionFailedError` says which)."""
    opened = stack.open_stack(create=False, writes=False)
    before = opened.export_stack() if opened is not None else None
    try:
        return stack.ensure(spec, imports=imports)
    except EngineError as exc:
        failure = str(exc)
    current = stack.open_stack(create=False)
    deployment = (current.export_stack().deployment if current is not None else None) or {}
    held = resources_of(deployment)
    if current is None or all(held.get(n) == i for n, i in imports.items()):
        raise AdoptionFailedError(
            f"{failure}; every found object is in the stack now, and the controller's next "
            "sync finishes the rest",
            rolled_back=False,
        )
    targets = rollback_targets(deployment, imports)
    try:
        if targets:
            stack.unprotect_all()  # what the failed adoption created goes; its imports stay
            stack.deadline(
                lambda: current.destroy(target=targets, target_dependents=True, on_output=quiet),
                stack=current,
                doing="rollback",
            )
        if before is None:
            current.workspace.remove_stack(stack.name, force=True)
            shutil.rmtree(stack.work_dir, ignore_errors=True)
        else:
            current.import_stack(before)
            with contextlib.suppress(auto.CommandError):
                current.set_config(f"{CONFIG_NAMESPACE}:{IMPORTS_KEY}", auto.ConfigValue("{}"))
    except (EngineError, auto.CommandError) as exc:
        raise AdoptionFailedError(
            f"{failure}; undoing it failed too ({exc}): stack {stack.name} holds part of the "
            "adoption; do not start the controller on it before `lb-reconciler adopt --apply` "
            "succeeded",
            rolled_back=False,
        ) from None
    created = f", and destroyed what it had created ({len(targets)})" if targets else ""
    raise AdoptionFailedError(
        f"{failure}; undone: the stack is as it was before{created}; the objects found are "
        "left in the cloud",
        rolled_back=True,
    )


@dataclass(frozen=True)
class TakeOver:
    """What the first ``ensure`` of a new stack does about a load balancer that already has
    the Service's name: adopt it with ``plan`` (``outcome``: the import's preview), or refuse
    (``refusal``, raised by :func:`take_over`; shown by ``lb-reconciler preview``)."""

    what: str  # "load balancer <name> (<id>)"
    plan: AdoptionPlan
    outcome: PreviewOutcome | None
    refusal: ExistingLoadBalancerError | None


def examine_take_over(stack: Adoptable, spec: LoadBalancerSpec) -> TakeOver | None:
    """Whether a new stack takes over an existing load balancer (see the module docstring),
    changing nothing. None: there is none with the Service's name, the program makes one."""
    settings = stack.engine.settings
    rest = stack.engine.rest()
    found, problems = find_occm_objects(rest, spec)
    lb = found.load_balancer
    if lb is None and not problems:
        return None
    what = f"load balancer {spec.name}" + (f" ({lb.get('id')})" if lb is not None else "")
    command = (
        f"lb-reconciler adopt --cluster-name {settings.cluster_name} --cloud-config ... "
        "--state-dir ...  (see docs/adopt.md)"
    )
    plan = plan_adoption(spec, found)
    if found.shared and not plan.imports:
        # joins a shared load balancer with nothing of its own there yet: the program checks
        # what may block it (a port in use, max-shared-lb) and says so
        return None
    foreign = foreign_problem(
        found, cluster_name=settings.cluster_name, cluster_id=settings.cluster_id
    )
    if foreign is not None:
        problems.append(foreign)
    problems += plan.problems
    outcome = None
    if not problems:
        outcome = stack.preview(plan.spec, imports=plan.imports)
        problems += judge_preview(plan, outcome, allow_updates=True)
    refusal = None
    if problems:
        refusal = ExistingLoadBalancerError(
            f"{what} already exists and taking it over is not safe, so nothing was created "
            f"(no second load balancer, no new IP): {'; '.join(problems)}. To see and fix "
            f"it: {command}",
            stack=stack.name,
        )
    return TakeOver(what, plan, outcome, refusal)


def take_over(stack: Adoptable, spec: LoadBalancerSpec) -> EnsureResult | None:
    """Before the first ``up`` of a new stack: adopt the load balancer that already has the
    Service's name, or refuse (see the module docstring). None: there is none, go on."""
    found = examine_take_over(stack, spec)
    if found is None:
        return None
    if found.refusal is not None:
        _forget_new_stack(stack)
        raise found.refusal
    return adopt(stack, found.plan.spec, imports=found.plan.imports)


def _forget_new_stack(stack: Adoptable) -> None:
    """Remove the empty stack made for this attempt, so the next one looks again."""
    opened = stack.open_stack(create=False)
    if opened is not None:
        with contextlib.suppress(auto.CommandError):
            opened.workspace.remove_stack(stack.name)
    shutil.rmtree(stack.work_dir, ignore_errors=True)

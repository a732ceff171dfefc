"""Whether an adoption's preview may be applied, and whether it took. Pure.

:func:`judge_preview`: the preview of the import (``ServiceStack.preview(spec, imports=...)``)
must import everything :func:`reconciler.engine.adopt.plan.plan_adoption` planned and replace or
delete nothing; an in-place update (the Service asks for another algorithm, a Node was added) is
refused unless the user allows updates. Pulumi no longer fails an import whose inputs differ from
the object: it imports it and then updates it, so this check is what keeps "adopt" from changing
the cloud behind the user's back. :func:`unchanged_problems`: after the adoption, a preview of
the Service's spec must change nothing.
"""

from __future__ import annotations

from reconciler.engine.adopt.plan import AdoptionPlan
from reconciler.engine.preview import REPLACING_OPS, PreviewOutcome, ResourceStep

__all__ = ["judge_preview", "unchanged_problems"]


def _is_engine(step: ResourceStep) -> bool:
    """The stack itself and providers: Pulumi's own bookkeeping, not cloud objects."""
    return step.type.startswith("pulumi:")


def _changes(step: ResourceStep) -> str:
    parts = [f"{c.path} {c.old!r} -> {c.new!r}" for c in step.changes]
    return "; ".join(parts) or ", ".join(step.replace_keys) or "(no property listed)"


def judge_preview(
    plan: AdoptionPlan,
    outcome: PreviewOutcome,
    *,
    allow_updates: bool = False,
) -> list[str]:
    """The problems of an adoption's preview: a replacement or deletion, an update (unless
    ``allow_updates``), or a planned import the program does not declare. The load balancer's
    tags are no difference: the program leaves them as they are (``ignore_changes``)."""
    problems = []
    imported: set[str] = set()
    replaced: dict[str, str] = {}  # delete-before-replace: three steps, one message
    for step in outcome.steps:
        if _is_engine(step):
            continue
        where = f"{step.name} ({plan.described.get(step.name, step.type)})"
        if step.op == "import":
            imported.add(step.name)
        elif step.op in REPLACING_OPS:
            if step.changes or step.replace_keys or step.name not in replaced:
                replaced[step.name] = f"{where} would be replaced: {_changes(step)}"
        elif step.op in ("delete", "discard"):
            problems.append(f"{where} would be deleted")
        elif step.op == "update" and not allow_updates:
            problems.append(
                f"{where} differs from the Service and would be updated: {_changes(step)}; "
                "change the Service to match, or pass --allow-updates"
            )
    problems.extend(replaced.values())
    for name in sorted(set(plan.imports) - imported):
        problems.append(
            f"{name} ({plan.described.get(name, '')}) was found but the stack does not declare "
            "it; nothing was adopted"
        )
    return problems


def unchanged_problems(outcome: PreviewOutcome) -> list[str]:
    """After the adoption, a preview of the Service's spec must change nothing."""
    return [
        f"{step.name}: {step.op} {_changes(step)}"
        for step in outcome.steps
        if not _is_engine(step) and step.op not in ("same", "read")
    ]

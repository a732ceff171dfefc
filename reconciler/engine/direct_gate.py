"""Whether the direct paths may write a stack's state at all: the decision, pure.

The direct paths (:mod:`.members_direct`, :mod:`.delete.direct`) write what the ``pulumi`` CLI
and the OpenStack provider would have written, in the layout of the versions they were written
and tested against. A state written by another CLI (another checkpoint format, or journaled
writes: upstream Pulumi's ``pkg/backend/diy/journal.go`` keeps an update's steps under
``.pulumi/journal/<project>/<stack>/`` until it consolidates them, which a direct write beside
them would silently contradict) or by another provider (other output fields) is not theirs to
write. So they run only when

* the ``pulumi`` CLI and the provider plugin the engine runs report exactly the versions below
  (read from the binaries when the engine starts: :meth:`reconciler.engine.context.EngineContext.
  direct_refusal`), and
* the stack's checkpoint is format :data:`CHECKPOINT_FORMAT` and it has no journal objects
  (read with the state, each time).

Otherwise the CLI path runs, and the engine says once, at start, why.
"""

from __future__ import annotations

__all__ = ["CHECKPOINT_FORMAT", "TESTED_CLI", "TESTED_PROVIDER", "state_refusal", "tools_refusal"]

# what `pulumi version` and `pulumi-resource-openstack -version` print for the toolchain the
# direct paths were written and tested with (tools/build.sh builds these; the Python SDK pins
# are the same versions)
TESTED_CLI = "v3.259.0"
TESTED_PROVIDER = "5.5.1"
CHECKPOINT_FORMAT = 3


def tools_refusal(*, cli: str | None, provider: str | None) -> str | None:
    """Why the direct paths are off for these versions (None: they are on). ``None`` for a
    version that could not be read."""
    found = {"pulumi": (cli, TESTED_CLI), "pulumi-resource-openstack": (provider, TESTED_PROVIDER)}
    wrong = [
        f"{tool} reports {have or 'no version'} (tested with {want})"
        for tool, (have, want) in found.items()
        if have != want
    ]
    if not wrong:
        return None
    return (
        f"{'; '.join(wrong)}: the engine changes pool members and deletes stacks through the "
        "pulumi CLI only"
    )


def state_refusal(*, checkpoint_format: object, journal: bool) -> str | None:
    """Why a direct path may not write this stack's state (None: it may)."""
    if checkpoint_format != CHECKPOINT_FORMAT:
        return f"its checkpoint is format {checkpoint_format!r}, not {CHECKPOINT_FORMAT}"
    if journal:
        return "it has journal objects (an update of a newer pulumi not consolidated yet)"
    return None

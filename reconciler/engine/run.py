"""``up``, ``destroy`` and ``refresh`` without the Automation API's follow-up commands.

After ``pulumi up`` the Python SDK runs ``pulumi stack output --json`` twice (plain, then with
secrets) and ``pulumi stack history`` for the summary; after ``destroy`` and ``refresh`` the
history. Each is a start of the ``pulumi`` binary: about 0.45 s before it does anything, 1.5 to
2 s per ``up`` on two cores. The operation's engine events already carry both answers: the
``pulumi:pulumi:Stack`` resource's outputs (its outputs event comes even when nothing changed)
and the summary's resource changes. The functions here collect them from the events, and for the
duration of the call the stack's ``outputs()`` and ``info()`` answer from what was collected.
They fall back to the real commands when an event is missing or an output is a secret (the
events show secrets only as ciphertext), so the result is the SDK's either way.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from pulumi import automation as auto

from reconciler.engine.deployment import STACK_TYPE, holds_secret

__all__ = ["destroy", "refresh", "up"]


@dataclass
class _Collected:
    kind: str
    start: datetime = field(default_factory=lambda: datetime.now(UTC))
    outputs: dict[str, Any] | None = None
    changes: dict[str, int] | None = None

    def on_event(self, event: auto.EngineEvent) -> None:
        done = event.res_outputs_event
        if done is not None and done.metadata.type == STACK_TYPE and done.metadata.new:
            outputs = dict(done.metadata.new.outputs or {})
            self.outputs = None if any(holds_secret(v) for v in outputs.values()) else outputs
        if event.summary_event is not None:
            self.changes = {str(k): int(v) for k, v in event.summary_event.resource_changes.items()}


@contextlib.contextmanager
def _answered_from(stack: auto.Stack, collected: _Collected) -> Iterator[None]:
    real_outputs, real_info = stack.outputs, stack.info

    def outputs() -> auto.OutputMap:
        if collected.outputs is None:
            return real_outputs()
        return {k: auto.OutputValue(value=v, secret=False) for k, v in collected.outputs.items()}

    def info(show_secrets: bool = True) -> auto.UpdateSummary | None:
        if collected.changes is None:
            return real_info(show_secrets)
        return auto.UpdateSummary(
            kind=collected.kind,
            start_time=collected.start,
            end_time=datetime.now(UTC),
            message="",
            environment={},
            config={},
            result="succeeded",  # the SDK asks only after the command succeeded
            resource_changes=collected.changes,  # type: ignore[arg-type]
        )

    # Instance attributes shadow the methods for this call only.
    setattr(stack, "outputs", outputs)  # noqa: B010
    setattr(stack, "info", info)  # noqa: B010
    try:
        yield
    finally:
        for name in ("outputs", "info"):
            with contextlib.suppress(AttributeError):
                delattr(stack, name)


def up(
    stack: auto.Stack, *, on_output: Callable[[str], None], refresh: bool = False
) -> auto.UpResult:
    """``pulumi up``; with ``refresh``, ``up --refresh`` (the state read back from the cloud
    first)."""
    collected = _Collected("update")
    with _answered_from(stack, collected):
        return stack.up(
            on_output=on_output,
            on_event=collected.on_event,
            show_secrets=False,
            refresh=True if refresh else None,
        )


def destroy(stack: auto.Stack, *, on_output: Callable[[str], None]) -> auto.DestroyResult:
    collected = _Collected("destroy")
    with _answered_from(stack, collected):
        return stack.destroy(on_output=on_output, on_event=collected.on_event, show_secrets=False)


def refresh(stack: auto.Stack, *, on_output: Callable[[str], None]) -> auto.RefreshResult:
    collected = _Collected("refresh")
    with _answered_from(stack, collected):
        return stack.refresh(on_output=on_output, on_event=collected.on_event, show_secrets=False)

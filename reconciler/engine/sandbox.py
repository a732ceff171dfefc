"""Previews on a throw-away copy of the stacks: the backend they live on is only read.

``lb-reconciler preview`` (CI) must write nothing to the controller's backend, ever, and work with
read-only credentials (a PostgreSQL role with SELECT only, an S3 user with a read-only policy):
the CLI's own ``preview`` would not, since it opens the backend as a writer (the PostgreSQL
backend creates its table on every open) and a new Service's preview would create a stack there.
So a :class:`Sandbox` is a ``file://`` backend in a temporary folder: each stack to preview is
copied into it from the real backend (its checkpoint and tags, read through
:class:`~.state.store.StateStore`), and the preview runs there; a new Service's stack is made
there too. An interrupted preview leaves nothing but the folder, which the caller removes.

**Secrets.** A stack's state is encrypted with the controller's passphrase. A stack holding no
secret (every stack the engine wrote since the credentials left the stacks) needs none: its copy
names the sandbox's own salt, and the preview runs with a passphrase of its own. A stack still
holding a secret is previewed only with the controller's passphrase (``passphrase``), which
then decrypts it; without it the copy fails with :class:`SandboxError` saying so.
"""

from __future__ import annotations

import dataclasses
import secrets
from pathlib import Path
from typing import Any

from reconciler.config import Secret
from reconciler.engine.deployment import holds_secret
from reconciler.engine.stack import Engine, ServiceStack
from reconciler.engine.stack_meta import new_settings_file, outputs_in
from reconciler.engine.state.stacks import copy_stack
from reconciler.engine.state.store import BucketError
from reconciler.model.spec import ServiceRef

__all__ = ["Sandbox", "SandboxError", "sandboxed_checkpoint"]


class SandboxError(Exception):
    """A stack that cannot be copied into the sandbox; the message says why and what to do."""


def sandboxed_checkpoint(
    document: dict[str, Any], *, salt_state: str, passphrase_known: bool
) -> dict[str, Any]:
    """The checkpoint ``document`` as the sandbox holds it: with its secrets provider's salt
    replaced by the sandbox's (``salt_state``) when its deployment holds no secret; as it is
    when it does and the controller's passphrase is known; else :class:`SandboxError`."""
    inner = document.get("checkpoint") or {}
    latest = inner.get("latest")
    if not isinstance(latest, dict):
        return document  # never updated: nothing encrypted
    if holds_secret(latest.get("resources") or []):
        if passphrase_known:
            return document
        raise SandboxError(
            "its state still holds secrets (the OpenStack credentials that versions before "
            "0.2 kept in each stack); set PULUMI_CONFIG_PASSPHRASE to the controller's "
            "passphrase, or let the controller run one operation on the Service (its next "
            "`up` or drift repair removes them)"
        )
    provider = {"type": "passphrase", "state": {"salt": salt_state}}
    return {
        **document,
        "checkpoint": {**inner, "latest": {**latest, "secrets_providers": provider}},
    }


class Sandbox:
    """Copies of stacks of ``source``'s backend in ``folder`` (a ``file://`` backend), and an
    engine on them with ``source``'s settings otherwise."""

    def __init__(self, source: Engine, folder: Path, *, passphrase: str | None = None) -> None:
        self.source = source
        self.passphrase_known = passphrase is not None
        self.engine = Engine(
            settings=dataclasses.replace(
                source.settings,
                state_dir=folder,
                backend_url=(folder / "backend").as_uri(),
                passphrase=Secret(passphrase or secrets.token_urlsafe(24)),
                secrets_provider="passphrase",
            )
        )

    def stack(self, service: ServiceRef, *, copy: bool) -> ServiceStack:
        """The sandbox's stack of ``service``; ``copy``: copied from the source backend first
        (an existing Service's), else none yet (a new Service's: the preview makes one)."""
        stack = self.engine.stack(service=service)
        if copy:
            self._copy(stack)
        return stack

    def outputs_and_state(
        self, stack: ServiceStack
    ) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        """The outputs and the state (deployment) of the sandbox's copy of ``stack``; (None,
        None) when there is none (a new Service's)."""
        store = self.engine.store
        read = store.read_checkpoint(stack.name) if store is not None else None
        if read is None:
            return None, None
        return outputs_in(read.deployment), read.deployment

    def _copy(self, stack: ServiceStack) -> None:
        name = stack.name
        source, target = self.source.store, self.engine.store
        if source is None:
            raise SandboxError(
                "the backend is not one this command reads directly (file://, s3://, "
                "postgres://): it cannot be previewed without writing to it"
            )
        assert target is not None  # a file:// backend
        key = self.engine.passphrase_key

        def sandboxed(document: dict[str, Any]) -> dict[str, Any]:
            return sandboxed_checkpoint(
                document, salt_state=key.state, passphrase_known=self.passphrase_known
            )

        try:
            copied = copy_stack(source, target, name, sandboxed)
        except BucketError as exc:
            raise SandboxError(f"reading stack {name} from the backend: {exc}") from None
        if not copied:
            raise SandboxError(f"stack {name}: its checkpoint cannot be read")
        new_settings_file(stack.work_dir / f"Pulumi.{name}.yaml", key.state)

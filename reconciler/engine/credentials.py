"""No OpenStack credential in any stack: what an older engine wrote is taken out.

The engine used to write the provider's secret fields (``openstack:password``,
``openstack:token``, ``openstack:applicationCredentialSecret``) into each stack's config as
Pulumi secrets, so that each ``up`` also put them into the default provider's inputs and
outputs in the state, its history and its backups: whoever had the passphrase and read access
to the backend could read the cloud's password. Now the provider gets them from its
environment only (:mod:`.provider_config`), and :func:`drop_stack_credentials` takes them out
of a stack made before, at its first operation in this process that writes (``ensure``, even
one that finds nothing to do; ``refresh``; ``delete``), changing nothing in the cloud:

* the stack's settings file here (:func:`.stack_meta.drop_credentials`);
* on a backend the store writes (``file://``, ``s3://``, ``postgres://``): its history
  records and their checkpoints, its checkpoint backups and the checkpoint's ``.bak``, then the
  checkpoint itself, last, so that one interrupted midway is found again by the checkpoint
  and finished (:func:`.provider_config.scrubbed` says what goes), under a lock of this
  process's own and with the backend's compare-and-swap, as the other direct edits
  (:mod:`.direct_state`). Then the provider's inputs in the state equal what the next ``up``
  gives it, so Pulumi sees no change of the provider either;
* elsewhere (Pulumi Cloud, ``gs://``, ``azblob://``): the next ``up`` writes the provider's
  inputs without them (its config no longer has them); earlier checkpoints stay in that
  backend's own history.

A stack found clean, or cleaned, is not read for this again by this process
(:attr:`.context.EngineContext.scrubbed`).
"""

from __future__ import annotations

import logging
from pathlib import Path

from reconciler.engine.context import EngineContext
from reconciler.engine.direct_state import editable_checkpoint, replace_deployment
from reconciler.engine.errors import EngineError
from reconciler.engine.provider_config import scrubbed
from reconciler.engine.stack_meta import drop_credentials
from reconciler.engine.state.stacks import rewrite_records
from reconciler.engine.state.store import BucketError

__all__ = ["drop_stack_credentials", "drop_stack_credentials_if_can"]

log = logging.getLogger("reconciler.engine.stack")


def drop_stack_credentials(engine: EngineContext, stack: str, config_file: Path) -> None:
    """Take the OpenStack credentials an older engine left out of ``stack``'s settings file
    and, on a DIY backend, its state (see the module docstring). Raises what a direct edit
    raises: :class:`StackLockedError` while another's lock holds the stack,
    :class:`ConflictError` when it was written meanwhile, the engine's error for a backend
    that cannot be read or written now; the next operation tries again."""
    doing = "taking the OpenStack credentials out of the stack"
    if stack in engine.scrubbed:
        return
    engine.fence(doing, stack=stack)
    if drop_credentials(config_file):
        log.info("credentials taken out of the stack config", extra={"stack_name": stack})
    store = engine.store_or_none()
    if store is None:
        engine.scrubbed.add(stack)
        return
    try:
        read = editable_checkpoint(store, stack)
        clean = scrubbed(read.document) if read is not None else None
        if read is None or clean is None:
            engine.scrubbed.add(stack)
            return
        engine.fence(doing, stack=stack)
        records: list[int] = []
        replace_deployment(
            store,
            stack,
            clean["checkpoint"]["latest"],
            expect=read,
            doing=doing,
            backup=False,  # the .bak holds the credentials too: rewritten by rewrite_records
            first=lambda: records.append(rewrite_records(store, stack, scrubbed)),
        )
    except BucketError as exc:
        raise engine.error(exc, stack=stack, doing=doing) from None
    engine.scrubbed.add(stack)
    log.info(
        "credentials taken out of the stack state",
        extra={"stack_name": stack, "records": sum(records) + 1},
    )


def drop_stack_credentials_if_can(engine: EngineContext, stack: str, config_file: Path) -> None:
    """:func:`drop_stack_credentials` before an ``ensure`` that may find nothing to do (no
    ``pulumi``, no other write): what refuses it now (another's lock, another writer, the
    backend, a process that no longer leads) is left to the next operation that writes, and
    the ``ensure`` goes on as it would have."""
    try:
        drop_stack_credentials(engine, stack, config_file)
    except EngineError as exc:
        log.info(
            "credentials not taken out of the stack now",
            extra={"stack_name": stack, "error": str(exc)},
        )

"""The stack engine: one Pulumi stack per Service, driven through the Automation API.

:class:`Engine` holds the settings (backend, secrets, credentials, deadlines); :meth:`Engine.stack`
gives the :class:`ServiceStack` of one Service, whose four operations are what the controller
calls: :meth:`~ServiceStack.ensure`, :meth:`~ServiceStack.delete`, :meth:`~ServiceStack.preview`,
:meth:`~ServiceStack.refresh` and :meth:`~ServiceStack.check_drift` (a refresh that writes
nothing). :meth:`Engine.stacks` lists this cluster's stacks (for the
housekeeper) and :meth:`Engine.stack_for` gives the stack of a listed one. The decisions and the
repairs are the other modules of :mod:`reconciler.engine` (its docstring names each); this module
only runs the operations and reports.

* **One stack, one work directory per Service**: ``<state_dir>/work/<stack>/`` holds the
  project settings and ``Pulumi.<stack>.yaml`` (the spec, the provider configuration without
  any secret). The program is
  :func:`stacks.program.main` run inline, the same function the plain CLI runs.
* **Backend** ``backend_url`` (any URL Pulumi accepts: ``file://``, ``s3://``, ``azblob://``,
  ``gs://``, ``postgres://``, Pulumi Cloud), default ``file://<state_dir>/backend``.
  **Secrets** ``secrets_provider`` (``passphrase`` by default, or a KMS URL) and the passphrase.
* **Credentials**: the secret ones reach the provider in its environment only, never a stack's
  config or state (:mod:`.provider_config`, :mod:`.credentials`); redacted from any error text.
* **Nothing done twice**: ``ensure`` skips when the stack tag ``lbr:spec-hash`` equals the spec's
  hash (set only after a successful ``up``, removed before an ``up`` or ``destroy`` starts). On a
  DIY backend (``file://``, ``s3://``, ``postgres://``) that skip runs no ``pulumi`` at all: the
  stack's tags object says the spec is applied and holds the outputs the controller reports
  (:func:`reconciler.engine.plan.outputs_from_tags`), read through :mod:`.state.store`.
* **Few CLI starts**: each ``pulumi`` command costs about 0.45 s of start-up before it works, so
  the engine runs as few as it can: a DIY backend's tags are read and written as one object
  (:mod:`reconciler.engine.tags`), a stack known to be absent is created without trying to select
  it, crash leftovers are looked for only when the last operation did not finish (no spec hash),
  and a secret the process already wrote is not written again.
* **Crash safety**, before every operation: stale locks are removed (:mod:`.state.lock_plan`
  says whose a lock is; a person's is never taken), at takeover (:meth:`Engine.take_over`) and
  before each operation of a stack; pending creates left by a killed ``up`` are imported, or
  cleared when nothing was created (:mod:`reconciler.engine.lost`); an ``up`` after one that
  did not finish (failed, cut off, or a refresh that found drift) reads the cloud first
  (``up --refresh``), its objects left in ``ERROR`` repaired before.
  An operation that runs past ``operation_timeout``, or is running when :meth:`Engine.cancel` is
  called (shutdown), gets SIGINT (pulumi then stops cleanly and releases its lock), SIGKILL after
  ``interrupt_grace``; the next operation recovers.
* **Fencing**: a controller's engine (given ``leading``) refuses every write once its process no
  longer holds the Lease, and kills a running ``pulumi`` then (:mod:`reconciler.engine.context`).
* **Shared load balancers**: deleting the owner while others use it releases the load balancer
  (retained in the cloud, as OCCM does); the last sharer's ``delete`` removes it.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping
from typing import Any, TypeVar

from pulumi import automation as auto

from reconciler.engine import run as engine_run
from reconciler.engine.adopt.stack import take_over
from reconciler.engine.certificates import check_certificates
from reconciler.engine.context import EngineContext, EngineSettings
from reconciler.engine.credentials import drop_stack_credentials_if_can
from reconciler.engine.delete.repair import repair_errored, repaired_for_retry
from reconciler.engine.delete.stack import DeleteResult, delete_stack
from reconciler.engine.drift import check_drift
from reconciler.engine.errors import EngineError
from reconciler.engine.handle import StackHandle, quiet
from reconciler.engine.lb_tags import add_tags
from reconciler.engine.listing import list_stacks
from reconciler.engine.members_direct import update_members_without_cli
from reconciler.engine.plan import (
    HASH_TAG,
    LB_ID_TAG,
    StackInfo,
    applied_spec_from,
    output_tags,
    outputs_from_tags,
    should_skip,
)
from reconciler.engine.preview import PreviewOutcome
from reconciler.engine.preview_run import run_preview
from reconciler.engine.results import DriftReport, EnsureResult
from reconciler.engine.stack_meta import plain_outputs
from reconciler.engine.stack_spec import (
    create_only_record,
    create_only_tags,
    spec_for_stack,
    stack_spec,
    stale_create_only_tags,
    unprotect_before_up,
)
from reconciler.engine.state.locks import Cleared, clear_stale_locks
from reconciler.engine.state.store import BucketError
from reconciler.engine.tags import StackTags
from reconciler.model.spec import LoadBalancerSpec, ServiceRef

__all__ = [
    "DeleteResult",
    "Engine",
    "EngineSettings",
    "PreviewOutcome",
    "ServiceStack",
    "StackInfo",
]

log = logging.getLogger("reconciler.engine.stack")
T = TypeVar("T")


class Engine(EngineContext):
    """Settings plus the pieces every Service's stack shares; the stacks of this cluster."""

    def stack(self, *, service: ServiceRef) -> ServiceStack:
        return ServiceStack(engine=self, service=service)

    def stacks(self, *, detail: bool = True) -> list[StackInfo]:
        """This cluster's stacks (tag ``lbr:cluster``), none opened (:func:`.list_stacks`)."""
        return list_stacks(self, detail=detail)

    def take_over(self) -> Cleared:
        """What a new leader does before its first operation: remove the stale locks of this
        cluster's stacks (:mod:`.state.lock_plan`: its own dead operations', a dead or deposed
        replica's), in one listing, and name the ones it leaves to their holders. A dead
        leader's locks would otherwise fail every operation on its stacks (``the stack is
        currently locked``). Refused unless leading."""
        self.fence("clearing the previous leader's locks")
        rule = self.lock_rule()
        if rule is None:
            return Cleared()
        try:
            store = self.store
        except BucketError as exc:
            raise self.error(exc, stack="", doing="reading the backend's locks") from None
        cluster = self.settings.cluster_name
        return clear_stale_locks(store=store, rule=rule, cluster_name=cluster)

    def stack_for(self, info: StackInfo) -> ServiceStack:
        """The stack of a listed one, to refresh or delete it (its Service from the tags)."""
        stack = self.stack(service=ServiceRef(info.namespace, info.name, info.uid))
        if stack.name != info.stack:
            raise ValueError(f"stack {info.stack} is not named as this engine names {info.key}")
        return stack


class ServiceStack(StackHandle):
    """The stack of one Service and its operations. One caller at a time per Service."""

    # --- the operations ----------------------------------------------------------------------

    def ensure(
        self, desired: LoadBalancerSpec, *, imports: Mapping[str, str] | None = None
    ) -> EnsureResult:
        """Bring the cloud to ``desired``; nothing happens if it was the last applied spec (its
        create-only fields kept as made: :func:`reconciler.engine.stack_spec.stack_spec`).

        ``imports`` ({logical name: cloud ID}) adopts existing objects instead of creating them
        (``lb-reconciler adopt``); Pulumi fails the import of one whose inputs differ.
        """
        if not imports:
            stored = self._stored_tags()
            if stored is not None:
                applied = self._applied(desired, stored)
                if applied is not None:
                    return applied
                direct = update_members_without_cli(self, desired, stored)
                if direct is not None:
                    return direct
        stack = self.open_stack(create=True)
        assert stack is not None
        tags = self.tags_of(stack)
        current = tags.read()
        # Never tagged: made just now (a backend without a store cannot say otherwise cheaply)
        # or by an ensure that stopped before its first up; either way nothing is in the state.
        fresh = self.created or not current
        if fresh and not imports:
            taken = take_over(self, desired)  # OCCM's load balancer of this Service, if any
            if taken is not None:
                return taken
        finished = HASH_TAG in current or fresh  # nothing can be pending in the state
        current = tags.apply(current, put=self.wanted_tags())
        if not fresh and create_only_record(current) is None:
            current = self._record_create_only(stack, tags, current)
        wanted = stack_spec(desired, tags=current)
        spec, frozen = wanted.spec, wanted.frozen
        digest = spec.spec_hash()
        # The last up did not finish (it failed, a crash cut it off, or a refresh found drift):
        # what the state says may not be in the cloud (a listener update Octavia refused with a
        # 400 leaves the refused value in the state), so this up reads the cloud first.
        if not finished:
            self.recover(stack, spec)  # what a crash left pending: imports for this up
            repair_errored(self, stack, current.get(LB_ID_TAG))  # else the refresh keeps ERROR
        unsettled = not finished or self.refresh_next
        if imports:
            self.imports = {**self.imports, **dict(imports)}
        if should_skip(tags=current, spec_hash=digest):
            return EnsureResult(
                changed=False, spec_hash=digest, outputs=self.outputs_of(stack), frozen=frozen
            )
        if any(li.default_tls_container_ref for li in spec.listeners):
            check_certificates(spec, self.engine.rest(), stack=self.name)  # before any change
        current = tags.apply(current, drop=[HASH_TAG])
        self.unprotect(unprotect_before_up(spec, tags=current))
        self.configure_stack(stack, spec)
        # Joining another Service's load balancer: under its lock, so that its owner's direct delete
        # (one cascade DELETE, reconciler.engine.delete.stack) sees this listener or refuses it
        joining = self.engine.lb_locks(spec.existing_lb_id) if spec.existing_lb_id else None
        with joining or contextlib.nullcontext():
            try:
                result = self._up(stack, refresh=unsettled)
            except EngineError as exc:
                if not repaired_for_retry(self, stack, current.get(LB_ID_TAG), exc):
                    raise
                result = self._up(stack, refresh=unsettled)
        outputs = plain_outputs(result.outputs)
        if outputs.get("lb_id"):  # before the hash: a failure here is retried by an `up`
            self._tag_load_balancer(str(outputs["lb_id"]), spec)
        recorded = {**output_tags(outputs), **create_only_tags(wanted.requested, outputs)}
        # What the next ensure compares; written last (the CLI path sets tags in order).
        digest = spec_for_stack(desired, tags={**current, **recorded}).spec_hash()
        drop = stale_create_only_tags(current, recorded)
        tags.apply(current, put={**recorded, HASH_TAG: digest}, drop=drop)
        if self.imports:
            self.imports = {}
            self.clear_imports(stack)
        changes = {str(k): int(v) for k, v in (result.summary.resource_changes or {}).items()}
        return EnsureResult(
            changed=True,
            spec_hash=digest,
            outputs=outputs,
            resource_changes=changes,
            frozen=frozen,
        )

    def _up(self, stack: auto.Stack, *, refresh: bool) -> auto.UpResult:
        """``up``; ``up --refresh`` after an ``up`` cut off during an update or delete: the
        cloud may hold what that ``up`` sent while the state holds the values before it (only
        the pending operation says otherwise), so without the refresh an edit undone meanwhile
        looks like no change and the cloud keeps the undone value."""
        return self.deadline(
            lambda: engine_run.up(stack, on_output=quiet, refresh=refresh), stack=stack, doing="up"
        )

    def _tag_load_balancer(self, lb_id: str, spec: LoadBalancerSpec) -> None:
        """The Service's name and load-balancer-tags on its load balancer, its own or shared
        (:mod:`reconciler.engine.lb_tags`)."""
        self.engine.fence("tagging the load balancer", stack=self.name)
        add_tags(
            self.engine.rest(),
            lb_id,
            spec.lb_tags(),
            stack_name=self.name,
            timeout=self.engine.settings.operation_timeout,
            cancelled=self.engine.cancelled,
            locks=self.engine.lb_locks,
        )

    def _record_create_only(
        self, stack: auto.Stack, tags: StackTags, current: dict[str, str]
    ) -> dict[str, str]:
        """A stack made before its create-only values were recorded: record them from the spec
        of its last successful ``up`` (its ``spec`` output), once. No such spec (the first
        ``up`` never succeeded): nothing was made, nothing to keep."""
        try:
            outputs = self.outputs_of(stack)
        except auto.CommandError as exc:
            raise self.engine.error(exc, stack=self.name, doing="reading outputs") from None
        applied = applied_spec_from(outputs)
        if applied is None:
            return current
        return tags.apply(current, put=create_only_tags(applied, outputs))

    def _stored_tags(self) -> dict[str, str] | None:
        """The stack's tags as the backend holds them, this Service's and with the create-only
        values recorded, read once for the skip and the direct members change; None: ask the
        stack (also when the backend cannot be read now: the stack's steps report that)."""
        try:
            store = self.engine.store
            tags = store.tags(self.name) if store is not None else None
        except BucketError:
            return None
        if not tags or any(tags.get(key) != value for key, value in self.wanted_tags().items()):
            return None
        drop_stack_credentials_if_can(self.engine, self.name, self.config_file)
        return tags if create_only_record(tags) is not None else None  # else: record it first

    def _applied(self, spec: LoadBalancerSpec, tags: Mapping[str, str]) -> EnsureResult | None:
        """The skip of :meth:`ensure` without ``pulumi``: the stack's tags (:meth:`_stored_tags`)
        say ``spec`` is applied and hold the outputs. None: ask the stack."""
        wanted = stack_spec(spec, tags=tags)
        digest = wanted.spec.spec_hash()
        outputs = outputs_from_tags(tags)
        if outputs is None or not should_skip(tags=tags, spec_hash=digest):
            return None
        try:
            store = self.engine.store
            if store is None or not store.stack_exists(self.name):
                return None
        except BucketError:
            return None
        return EnsureResult(changed=False, spec_hash=digest, outputs=outputs, frozen=wanted.frozen)

    def preview(
        self,
        spec: LoadBalancerSpec,
        *,
        imports: Mapping[str, str] | None = None,
        recorded: Mapping[str, Any] | None = None,
        refresh: bool = False,
    ) -> PreviewOutcome:
        """What ``ensure(spec)`` would do, resource by resource, changing nothing
        (:func:`.preview_run.run_preview`: ``imports`` previews adopting existing objects,
        ``recorded`` previews without the cloud, ``refresh`` reads the cloud first)."""
        return run_preview(self, spec, imports=imports, recorded=recorded, refresh=refresh)

    def applied_spec(self) -> LoadBalancerSpec | None:
        """The spec of the last successful ``up`` (the stack's ``spec`` output); None when there
        is no stack or no such output."""
        stack = self.open_stack(create=False, writes=False)
        if stack is None:
            return None
        return self.applied_spec_of(stack)

    def refresh(self) -> dict[str, int]:
        """Read the cloud back into the state; drift makes the next ``ensure`` run ``up``."""
        stack = self.open_stack(create=False)
        if stack is None:
            return {}
        self.recover(stack)
        result = self.deadline(
            lambda: engine_run.refresh(stack, on_output=quiet), stack=stack, doing="refresh"
        )
        changes = {str(k): int(v) for k, v in (result.summary.resource_changes or {}).items()}
        if any(k != "same" and v for k, v in changes.items()):
            with contextlib.suppress(auto.CommandError):
                self.tags_of(stack).remove(HASH_TAG)
        return changes

    def check_drift(self) -> DriftReport:
        """What differs between the cloud and the state, changing neither (a preview-only
        refresh, :mod:`reconciler.engine.drift`); empty without a stack."""
        return check_drift(self)

    def delete(self, *, keep_floating_ip: bool | None = None) -> DeleteResult:
        """Destroy everything the stack made, then remove the stack (see engine_delete).
        ``keep_floating_ip``: the Service's ``keep-floatingip`` now (None: as last applied)."""
        return delete_stack(self, keep_floating_ip=keep_floating_ip)

    # --- pieces ------------------------------------------------------------------------------

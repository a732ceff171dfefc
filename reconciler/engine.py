"""The stack engine: one Pulumi stack per Service, driven through the Automation API.

:class:`Engine` holds the settings (backend, secrets, credentials, deadlines); :meth:`Engine.stack`
gives the :class:`ServiceStack` of one Service, whose four operations are what the controller
calls: :meth:`~ServiceStack.ensure`, :meth:`~ServiceStack.delete`, :meth:`~ServiceStack.preview`
and :meth:`~ServiceStack.refresh`. :meth:`Engine.stacks` lists this cluster's stacks (for the
housekeeper) and :meth:`Engine.stack_for` gives the stack of a listed one. Decisions (names,
tags, skip or not, what a crash left, parsing the listing) are pure functions in
:mod:`reconciler.engine_plan`; errors are classified in :mod:`reconciler.engine_errors`; crash
recovery (stale locks, pending creates, interrupting a hanging ``pulumi``) is in
:mod:`reconciler.engine_recovery`; config, tags and listing in
:mod:`reconciler.engine_stack_meta`; this module only runs the operations and reports.

* **One stack, one work directory per Service**: ``<state_dir>/work/<stack>/`` holds the
  project settings and ``Pulumi.<stack>.yaml`` (the spec, the provider configuration with the
  credentials encrypted by the stack's secrets provider). The program is
  :func:`stacks.program.main` run inline, the same function the plain CLI runs.
* **Backend** ``backend_url`` (any URL Pulumi accepts: ``file://``, ``s3://``, ``azblob://``,
  ``gs://``, ``postgres://``, Pulumi Cloud), default ``file://<state_dir>/backend``.
  **Secrets** ``secrets_provider`` (``passphrase`` by default, or a KMS URL) and the passphrase.
* **Credentials** go in as the OpenStack provider's configuration; the secret ones
  (password, application-credential secret, token) with ``--secret`` and on stdin, never on a
  command line, so they are encrypted in the config file and in the state, and are redacted from
  any error text.
* **Nothing done twice**: ``ensure`` skips when the stack tag ``lbr:spec-hash`` equals the spec's
  hash (set only after a successful ``up``, removed before an ``up`` or ``destroy`` starts). On a
  ``file://`` backend that skip runs no ``pulumi`` at all: the tags file says the spec is applied
  and holds the outputs the controller reports (:func:`reconciler.engine_plan.outputs_from_tags`).
* **Few CLI starts**: each ``pulumi`` command costs about 0.45 s of start-up before it works, so
  the engine runs as few as it can: a ``file://`` backend's tags are read and written as one file
  (:mod:`reconciler.engine_tags`), a stack known to be absent is created without trying to select
  it, crash leftovers are looked for only when the last operation did not finish (no spec hash),
  and a secret the process already wrote is not written again.
* **Crash safety**, before every operation: a ``file://`` backend lock whose process is gone (same
  host) is removed; pending creates left by a killed ``up`` are looked up in the cloud by name and
  imported into the stack, or cleared when nothing was created (:mod:`reconciler.engine_plan`).
  An operation that runs past ``operation_timeout``, or is running when :meth:`Engine.cancel` is
  called (shutdown), gets SIGINT (pulumi then stops cleanly and releases its lock), SIGKILL after
  ``interrupt_grace``; the next operation recovers.
* **Shared load balancers**: deleting the owner while others use it releases the load balancer
  (retained in the cloud, as OCCM does); the last sharer's ``delete`` removes it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import shutil
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import unquote, urlsplit

from pulumi import automation as auto

from reconciler import engine_run
from reconciler.config import AuthConfig, Secret
from reconciler.engine_adopt import take_over
from reconciler.engine_delete import DeleteResult, delete_stack
from reconciler.engine_errored import delete_unadopted
from reconciler.engine_errors import (
    EngineError,
    InterruptedOperationError,
    engine_error,
    redact,
)
from reconciler.engine_lb_tags import add_tags
from reconciler.engine_lost import lost_children
from reconciler.engine_plan import (
    HASH_TAG,
    PROJECT,
    StackInfo,
    carried_imports,
    create_only_record,
    create_only_tags,
    lost_lookups,
    output_tags,
    outputs_from_tags,
    resource_urn,
    secret_values,
    should_skip,
    spec_for_stack,
    stack_name,
    stack_spec,
    stack_tags,
    stale_create_only_tags,
    unprotect_before_up,
)
from reconciler.engine_preview import PreviewOutcome, ResourceStep, step_from_event
from reconciler.engine_recovery import (
    clear_stale_locks,
    recover_pending,
    repair_torn_sidecars,
    run_with_deadline,
)
from reconciler.engine_stack_meta import (
    NO_SUCH_RESOURCE,
    configure,
    list_stacks,
    plain_outputs,
    run_cli,
)
from reconciler.engine_tags import StackTags, file_tags, stack_exists
from reconciler.model.frozen import FrozenChange
from reconciler.model.spec import LoadBalancerSpec, ServiceRef
from reconciler.openstack_rest import OpenStackRest
from reconciler.toolchain import Toolchain
from stacks.program import (
    CHILD_DELETE_TIMEOUT_KEY,
    CONFIG_NAMESPACE,
    IMPORTS_KEY,
    RELEASE_KEY,
    SPEC_KEY,
    adoptable_names,
    main,
)

__all__ = [
    "DeleteResult",
    "Engine",
    "EngineSettings",
    "EnsureResult",
    "PreviewOutcome",
    "ServiceStack",
    "StackInfo",
]

log = logging.getLogger("reconciler.engine")
T = TypeVar("T")


@dataclass(frozen=True)
class EngineSettings:
    cluster_name: str
    state_dir: Path
    auth: AuthConfig
    toolchain: Toolchain
    backend_url: str = ""  # default: file://<state_dir>/backend
    secrets_provider: str = "passphrase"
    passphrase: Secret = field(default_factory=Secret)
    operation_timeout: float = 900.0
    interrupt_grace: float = 30.0
    # seconds the provider waits for a child's delete (stacks.program.CHILD_DELETE_TIMEOUT_KEY)
    child_delete_timeout: float = 120.0
    extra_env: Mapping[str, str] = field(default_factory=dict)
    # The cluster's identity (the kube-system namespace's UID, OCCM's kube_cluster_id_ tag):
    # "" when unknown; then only name and description tell this cluster's load balancers
    cluster_id: str = ""

    @property
    def backend(self) -> str:
        return self.backend_url or (self.state_dir / "backend").absolute().as_uri()


@dataclass(frozen=True)
class EnsureResult:
    changed: bool  # False: skipped, the spec was already applied
    spec_hash: str
    outputs: dict[str, Any]
    resource_changes: dict[str, int]
    frozen: tuple[FrozenChange, ...] = ()  # create-only fields asked to change, kept as made


class Engine:
    """Settings plus the pieces every Service's stack shares."""

    def __init__(self, *, settings: EngineSettings) -> None:
        self.settings = settings
        self._secrets = [*secret_values(settings.auth), settings.passphrase.reveal()]
        settings.state_dir.mkdir(parents=True, exist_ok=True)  # work folders; CLI calls run here
        if settings.backend.startswith("file://"):
            Path(unquote(urlsplit(settings.backend).path)).mkdir(parents=True, exist_ok=True)
        # The toolchain's own CLI, never whatever `pulumi` this process's PATH holds; checked
        # against the SDK's minimum version once, here.
        self.pulumi_command = auto.PulumiCommand(root=str(settings.toolchain.pulumi_root()))
        self.cancelled = threading.Event()
        # (stack, config key) -> digest of the secret this process wrote there (engine_stack_meta)
        self.secrets_written: dict[tuple[str, str], str] = {}

    def cancel(self) -> None:
        """Interrupt the running stack operations and refuse new ones (the process stops):
        they raise :class:`InterruptedOperationError`; the next process recovers the stacks."""
        self.cancelled.set()

    def stack(self, *, service: ServiceRef) -> ServiceStack:
        return ServiceStack(engine=self, service=service)

    def stacks(self) -> list[StackInfo]:
        """This cluster's stacks on the backend (tag ``lbr:cluster``), without opening any."""
        return list_stacks(self)

    def stack_for(self, info: StackInfo) -> ServiceStack:
        """The stack of a listed one, to refresh or delete it (its Service from the tags)."""
        stack = self.stack(service=ServiceRef(info.namespace, info.name, info.uid))
        if stack.name != info.stack:
            raise ValueError(f"stack {info.stack} is not named as this engine names {info.key}")
        return stack

    def env(self) -> dict[str, str]:
        env = self.settings.toolchain.env()
        env.update(self.settings.extra_env)
        env["PULUMI_BACKEND_URL"] = self.settings.backend
        env["PULUMI_CONFIG_PASSPHRASE"] = self.settings.passphrase.reveal()
        env["PULUMI_SKIP_UPDATE_CHECK"] = "true"
        return env

    def error(
        self, exc: BaseException, *, stack: str, doing: str, subject: str = ""
    ) -> EngineError:
        # the stack's own names are public: a secret inside one is left there (engine_errors)
        keep = (stack, f"{PROJECT}-{stack}") if stack else ()
        text = redact(str(exc), self._secrets, keep=keep)
        error = engine_error(text, doing=doing, subject=subject or f"stack {stack}", stack=stack)
        return type(error)(redact(str(error), self._secrets, keep=keep), stack=stack)

    def rest(self) -> OpenStackRest:
        return OpenStackRest(auth=self.settings.auth)


class ServiceStack:
    """The stack of one Service. One caller at a time per Service (the controller's queue)."""

    def __init__(self, *, engine: Engine, service: ServiceRef) -> None:
        self.engine = engine
        self.service = service
        s = engine.settings
        self.name = stack_name(
            cluster_name=s.cluster_name, namespace=service.namespace, name=service.name
        )
        self.work_dir = s.state_dir / "work" / self.name
        self._imports: dict[str, str] = {}  # logical name -> cloud ID, for the next up only
        self.created = False  # the last _open created the stack

    # --- opening the stack -------------------------------------------------------------------

    def _workspace_options(self) -> auto.LocalWorkspaceOptions:
        self.work_dir.mkdir(parents=True, exist_ok=True)
        return auto.LocalWorkspaceOptions(
            work_dir=str(self.work_dir),
            pulumi_command=self.engine.pulumi_command,
            project_settings=auto.ProjectSettings(name=PROJECT, runtime="python"),
            env_vars=self.engine.env(),
            secrets_provider=self.engine.settings.secrets_provider,
        )

    def _open(self, *, create: bool) -> auto.Stack | None:
        """Select the stack (None when there is none), or with ``create`` select or create it;
        :attr:`created` says whether it was just created."""
        backend = self.engine.settings.backend
        exists = stack_exists(backend, self.name)  # None: not a file:// backend, ask the CLI
        self.created = False
        if exists is False and not create:
            return None
        opts = self._workspace_options()
        clear_stale_locks(backend=backend, stack_name=self.name)
        repair_torn_sidecars(backend=backend, stack_name=self.name)
        args: dict[str, Any] = {
            "stack_name": self.name,
            "project_name": PROJECT,
            "program": main,
            "opts": opts,
        }
        try:
            if exists is False:
                try:
                    stack = auto.create_stack(**args)
                    self.created = True
                except auto.StackAlreadyExistsError:
                    stack = auto.select_stack(**args)
            elif create:
                stack = auto.create_or_select_stack(**args)
            else:
                stack = auto.select_stack(**args)
        except auto.StackNotFoundError:
            return None
        except auto.CommandError as exc:
            raise self.engine.error(exc, stack=self.name, doing="opening") from None
        return stack

    # --- the four operations -----------------------------------------------------------------

    def ensure(
        self, desired: LoadBalancerSpec, *, imports: Mapping[str, str] | None = None
    ) -> EnsureResult:
        """Bring the cloud to ``desired``; nothing happens if it was the last applied spec (its
        create-only fields kept as made: :func:`reconciler.engine_plan.stack_spec`).

        ``imports`` ({logical name: cloud ID}) adopts existing objects instead of creating them
        (``lb-reconciler adopt``); Pulumi fails the import of one whose inputs differ.
        """
        if not imports:
            applied = self._applied(desired)
            if applied is not None:
                return applied
        stack = self._open(create=True)
        assert stack is not None
        tags = self._tags(stack)
        current = tags.read()
        # Never tagged: made just now (a backend other than file:// cannot say otherwise cheaply)
        # or by an ensure that stopped before its first up; either way nothing is in the state.
        fresh = self.created or not current
        if fresh and not imports:
            taken = take_over(self, desired)  # OCCM's load balancer of this Service, if any
            if taken is not None:
                return taken
        finished = HASH_TAG in current or fresh  # nothing can be pending in the state
        current = tags.apply(current, put=self._wanted_tags())
        if not fresh and create_only_record(current) is None:
            current = self._record_create_only(stack, tags, current)
        wanted = stack_spec(desired, tags=current)
        spec, frozen = wanted.spec, wanted.frozen
        digest = spec.spec_hash()
        if not finished:
            self._recover(stack, spec)
        if imports:
            self._imports = {**self._imports, **dict(imports)}
        if should_skip(tags=current, spec_hash=digest):
            return EnsureResult(False, digest, self._outputs(stack), {}, frozen)
        current = tags.apply(current, drop=[HASH_TAG])
        self._unprotect(unprotect_before_up(spec, tags=current))
        self._configure(stack, spec)
        result = self._deadline(
            lambda: engine_run.up(stack, on_output=_quiet), stack=stack, doing="up"
        )
        outputs = plain_outputs(result.outputs)
        if outputs.get("lb_id"):  # before the hash: a failure here is retried by an `up`
            self._tag_load_balancer(str(outputs["lb_id"]), spec)
        recorded = {**output_tags(outputs), **create_only_tags(wanted.requested, outputs)}
        # What the next ensure compares; written last (the CLI path sets tags in order).
        digest = spec_for_stack(desired, tags={**current, **recorded}).spec_hash()
        drop = stale_create_only_tags(current, recorded)
        tags.apply(current, put={**recorded, HASH_TAG: digest}, drop=drop)
        if self._imports:
            self._imports = {}
            stack.set_config(f"{CONFIG_NAMESPACE}:{IMPORTS_KEY}", auto.ConfigValue("{}"))
        changes = {str(k): int(v) for k, v in (result.summary.resource_changes or {}).items()}
        return EnsureResult(True, digest, outputs, changes, frozen)

    def _tag_load_balancer(self, lb_id: str, spec: LoadBalancerSpec) -> None:
        """The Service's name and load-balancer-tags on its load balancer, its own or shared
        (:mod:`reconciler.engine_lb_tags`)."""
        add_tags(
            self.engine.rest(),
            lb_id,
            spec.lb_tags(),
            stack_name=self.name,
            timeout=self.engine.settings.operation_timeout,
            cancelled=self.engine.cancelled,
        )

    def _record_create_only(
        self, stack: auto.Stack, tags: StackTags, current: dict[str, str]
    ) -> dict[str, str]:
        """A stack made before its create-only values were recorded: record them from the spec
        of its last successful ``up`` (its ``spec`` output), once. No such spec (the first
        ``up`` never succeeded): nothing was made, nothing to keep."""
        try:
            outputs = self._outputs(stack)
        except auto.CommandError as exc:
            raise self.engine.error(exc, stack=self.name, doing="reading outputs") from None
        applied = _spec_output(outputs)
        if applied is None:
            return current
        return tags.apply(current, put=create_only_tags(applied, outputs))

    def _unprotect(self, names: list[str]) -> None:
        """Lift the protection of these resources (logical names) before an ``up`` that is
        meant to delete them; one without a state entry is no error."""
        for name in names:
            urn = resource_urn(stack_name=self.name, logical_name=name)
            run_cli(
                self.engine,
                ["state", "unprotect", urn, "--yes"],
                stack_name=self.name,
                work_dir=self.work_dir,
                ok_if=NO_SUCH_RESOURCE,
            )

    def _applied(self, spec: LoadBalancerSpec) -> EnsureResult | None:
        """The skip of :meth:`ensure` without running ``pulumi``: a ``file://`` backend's tags
        file says ``spec`` is applied and holds the outputs. None: ask the stack."""
        backend = self.engine.settings.backend
        tags = file_tags(backend, self.name)
        if tags is None or not stack_exists(backend, self.name):
            return None
        if any(tags.get(key) != value for key, value in self._wanted_tags().items()):
            return None
        if create_only_record(tags) is None:
            return None  # record it first (ensure)
        wanted = stack_spec(spec, tags=tags)
        digest = wanted.spec.spec_hash()
        outputs = outputs_from_tags(tags)
        if outputs is None or not should_skip(tags=tags, spec_hash=digest):
            return None
        return EnsureResult(False, digest, outputs, {}, wanted.frozen)

    def preview(
        self, spec: LoadBalancerSpec, *, imports: Mapping[str, str] | None = None
    ) -> PreviewOutcome:
        """What ``ensure(spec)`` would do, resource by resource, changing nothing.

        ``imports`` ({logical name: cloud ID}) previews adopting existing objects. The stack is
        left as it was: its state is not written (what a crash left pending is looked up, as
        ``ensure`` would, but not repaired), its config file is put back byte for byte, and a
        stack that did not exist (a new Service) is removed again with its work folder.
        """
        stack = self._open(create=False)
        existed = stack is not None
        config_file = self.work_dir / f"Pulumi.{self.name}.yaml"
        saved_config = config_file.read_bytes() if existed and config_file.exists() else None
        stack = stack or self._open(create=True)
        assert stack is not None
        steps: list[ResourceStep] = []

        def on_event(event: auto.EngineEvent) -> None:
            pre = event.resource_pre_event
            if pre is not None and pre.metadata.op.value != "same":
                steps.append(step_from_event(pre.metadata))

        try:
            tags = stack.list_tags() if existed else self._wanted_tags()
            wanted = stack_spec(spec, tags=tags)
            spec = wanted.spec
            pending = recover_pending(
                stack=stack,
                stack_name=self.name,
                rest=self.engine.rest(),
                carried=self._carried_imports() if existed else None,
                lost=lost_lookups(spec) if existed else (),
                repair=False,
            ).imports
            saved, self._imports = self._imports, {**self._imports, **pending}
            self._imports.update(imports or {})
            try:
                self._configure(stack, spec)
            finally:
                self._imports = saved
            result = self._deadline(
                lambda: stack.preview(on_output=_quiet, on_event=on_event),
                stack=stack,
                doing="preview",
            )
        finally:
            self._restore_after_preview(stack, existed=existed, config=saved_config)
        counts = {str(k): int(v) for k, v in result.change_summary.items()}
        return PreviewOutcome(counts, tuple(steps), tuple(f.message() for f in wanted.frozen))

    def _restore_after_preview(
        self, stack: auto.Stack, *, existed: bool, config: bytes | None
    ) -> None:
        if not existed:
            with contextlib.suppress(auto.CommandError):
                stack.workspace.remove_stack(self.name)
            shutil.rmtree(self.work_dir, ignore_errors=True)
            return
        if config is not None:  # as it was: secrets keep their ciphertext
            (self.work_dir / f"Pulumi.{self.name}.yaml").write_bytes(config)
            return
        # No config file here before (another machine's state dir, same backend): drop what
        # the preview set apart from the provider's credentials, which any operation sets.
        names = (SPEC_KEY, IMPORTS_KEY, RELEASE_KEY, CHILD_DELETE_TIMEOUT_KEY)
        keys = [f"{CONFIG_NAMESPACE}:{k}" for k in names]
        with contextlib.suppress(auto.CommandError):
            stack.remove_all_config(keys)

    def applied_spec(self) -> LoadBalancerSpec | None:
        """The spec of the last successful ``up`` (the stack's ``spec`` output); None when there
        is no stack or no such output."""
        stack = self._open(create=False)
        if stack is None:
            return None
        return self.applied_spec_of(stack)

    def applied_spec_of(self, stack: auto.Stack) -> LoadBalancerSpec | None:
        """:meth:`applied_spec` of the opened ``stack``."""
        try:
            outputs = self._outputs(stack)
        except auto.CommandError as exc:
            raise self.engine.error(exc, stack=self.name, doing="reading outputs") from None
        return _spec_output(outputs)

    def refresh(self) -> dict[str, int]:
        """Read the cloud back into the state; drift makes the next ``ensure`` run ``up``."""
        stack = self._open(create=False)
        if stack is None:
            return {}
        self._recover(stack)
        result = self._deadline(
            lambda: engine_run.refresh(stack, on_output=_quiet), stack=stack, doing="refresh"
        )
        changes = {str(k): int(v) for k, v in (result.summary.resource_changes or {}).items()}
        if any(k != "same" and v for k, v in changes.items()):
            with contextlib.suppress(auto.CommandError):
                self._tags(stack).remove(HASH_TAG)
        return changes

    def delete(self, *, keep_floating_ip: bool | None = None) -> DeleteResult:
        """Destroy everything the stack made, then remove the stack (see engine_delete).
        ``keep_floating_ip``: the Service's ``keep-floatingip`` now (None: as last applied)."""
        return delete_stack(self, keep_floating_ip=keep_floating_ip)

    # --- pieces ------------------------------------------------------------------------------

    def _tags(self, stack: auto.Stack) -> StackTags:
        return StackTags(backend=self.engine.settings.backend, stack_name=self.name, stack=stack)

    def _wanted_tags(self) -> dict[str, str]:
        ref, s = self.service, self.engine.settings
        return stack_tags(
            cluster_name=s.cluster_name,
            namespace=ref.namespace,
            name=ref.name,
            uid=ref.uid,
            cluster_id=s.cluster_id,
        )

    def _configure(self, stack: auto.Stack, spec: LoadBalancerSpec) -> None:
        configure(
            self.engine,
            stack,
            spec,
            stack_name=self.name,
            work_dir=self.work_dir,
            imports=self._imports,
            release=False,
        )

    def _outputs(self, stack: auto.Stack) -> dict[str, Any]:
        return plain_outputs(stack.outputs())

    def _deadline(self, run: Callable[[], T], *, stack: auto.Stack, doing: str) -> T:
        """Run a stack operation; interrupt it if it outlives the operation timeout."""
        settings = self.engine.settings
        if self.engine.cancelled.is_set():
            raise InterruptedOperationError(
                f"{doing} of stack {self.name} not started: the controller is stopping",
                stack=self.name,
            )
        return run_with_deadline(
            run,
            stack_name=self.name,
            doing=doing,
            timeout=settings.operation_timeout,
            grace=settings.interrupt_grace,
            on_error=lambda exc: self.engine.error(exc, stack=self.name, doing=doing),
            cancel=self.engine.cancelled,
        )

    def _recover(
        self,
        stack: auto.Stack,
        spec: LoadBalancerSpec | None = None,
        *,
        rest: OpenStackRest | None = None,
    ) -> None:
        """Resolve what an interrupted or failed operation left (see engine_recovery): the
        objects found become the next ``up``'s imports. With the ``spec`` about to be applied,
        the objects it also wants are looked for when the state lacks them, and a found object
        it does not declare (a port since removed) is deleted, or it would be left behind.
        ``rest``: the caller's client, so one Keystone login serves both."""
        rest = rest or self.engine.rest()
        found, orphans = recover_pending(
            stack=stack,
            stack_name=self.name,
            rest=rest,
            carried=self._carried_imports(),
            lost=lost_lookups(spec) if spec is not None else (),
            orphans=lost_children(spec) if spec is not None else (),
        )
        if spec is not None:
            wanted = adoptable_names(spec)
            delete_unadopted(
                rest,
                {**{n: i for n, i in found.items() if n not in wanted}, **orphans},
                stack_name=self.name,
                timeout=self.engine.settings.operation_timeout,
                cancelled=self.engine.cancelled,
            )
            found = {n: i for n, i in found.items() if n in wanted}
        self._imports = found

    def _carried_imports(self) -> dict[str, str]:
        """The imports in the stack's config file: an earlier ``up`` was given them and did not
        finish (a successful ``up`` empties them)."""
        try:
            text = (self.work_dir / f"Pulumi.{self.name}.yaml").read_text()
        except OSError:
            return {}
        return carried_imports(text, key=f"{CONFIG_NAMESPACE}:{IMPORTS_KEY}")


def _spec_output(outputs: Mapping[str, Any]) -> LoadBalancerSpec | None:
    """The spec a successful ``up`` exported (output ``spec``); None when absent or unreadable."""
    text = outputs.get("spec")
    if not text:
        return None
    try:
        return LoadBalancerSpec.from_dict(json.loads(str(text)))
    except (ValueError, TypeError, KeyError):
        return None


def _quiet(_line: str) -> None:
    """Pulumi's progress output is not logged (it may quote inputs)."""

"""One Service's stack as the engine's operations use it: open, tags, config, deadlines, recovery.

:class:`StackHandle` is the public surface that :mod:`.stack` (``ensure``, ``preview``,
``refresh``), :mod:`.delete.stack` and :mod:`.adopt.stack` share:
nothing outside this module reaches into another's privates. It makes no decisions (those are
:mod:`.plan`'s, :mod:`.stack_spec`'s and :mod:`.lost`'s); it runs what they say.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from pulumi import automation as auto
from pulumi.automation._stack import StackInitMode  # the mode Stack.select gives

from reconciler.engine.context import EngineContext
from reconciler.engine.credentials import drop_stack_credentials
from reconciler.engine.delete.cloud import delete_unadopted
from reconciler.engine.direct_state import unprotect_in_state
from reconciler.engine.errors import (
    InterruptedOperationError,
    NotLeaderError,
    StackLockedError,
)
from reconciler.engine.lost import carried_imports, configured_spec, lost_children, lost_lookups
from reconciler.engine.openstack.client import OpenStackRest
from reconciler.engine.plan import applied_spec_from, resource_urn, stack_name, stack_tags
from reconciler.engine.recovery import recover_pending, repair_torn_sidecars, run_with_deadline
from reconciler.engine.stack_meta import (
    NO_SUCH_RESOURCE,
    configure,
    new_settings_file,
    outputs_in,
    plain_outputs,
    run_cli,
    set_plain_config,
)
from reconciler.engine.state.locks import clear_stale_locks
from reconciler.engine.state.stacks import create_stack, prune, remove_leftovers
from reconciler.engine.state.store import BucketError
from reconciler.engine.tags import StackTags
from reconciler.model.naming import lb_name
from reconciler.model.spec import LoadBalancerSpec, ServiceRef
from stacks.program import adoptable_names, main
from stacks.vocabulary import CONFIG_NAMESPACE, IMPORTS_KEY, PROJECT, SPEC_KEY

__all__ = ["KnownStack", "StackHandle", "quiet"]

log = logging.getLogger(__name__)
T = TypeVar("T")


class KnownStack(auto.Stack):
    """A stack the backend holds (:meth:`StackHandle.check_stack` found it there), opened
    without ``pulumi stack select``: that command only checks that the stack exists and makes it
    the work folder's current one, and every command the engine runs names the stack
    (``--stack``). One ``pulumi`` start, about 0.45 s, less per operation."""

    def __init__(self, name: str, workspace: auto.Workspace) -> None:
        # auto.Stack.__init__ would run `stack select`; these are all it sets besides
        self.name = name
        self.workspace = workspace
        self._mode = StackInitMode.SELECT


class StackHandle:
    """The stack of one Service: its name, work folder and the steps every operation uses.
    One caller at a time per Service (the controller's queue)."""

    def __init__(self, *, engine: EngineContext, service: ServiceRef) -> None:
        self.engine = engine
        self.service = service
        s = engine.settings
        self.name = stack_name(
            cluster_name=s.cluster_name, namespace=service.namespace, name=service.name
        )
        self.work_dir = s.state_dir / "work" / self.name
        self.imports: dict[str, str] = {}  # logical name -> cloud ID, for the next up only
        self.created = False  # the last open_stack created the stack
        # the next up reads the cloud first: another writer wrote the stack since a direct
        # path read it (.members_direct gave up)
        self.refresh_next = False

    @property
    def config_file(self) -> Path:
        """The stack's settings file ``Pulumi.<stack>.yaml`` in its work folder."""
        return self.work_dir / f"Pulumi.{self.name}.yaml"

    @property
    def occm_name(self) -> str:
        """The Service's name on its listeners and on the load balancers it is on (OCCM's)."""
        ref = self.service
        return lb_name(
            cluster_name=self.engine.settings.cluster_name, namespace=ref.namespace, name=ref.name
        )

    def _workspace_options(self) -> auto.LocalWorkspaceOptions:
        self.work_dir.mkdir(parents=True, exist_ok=True)
        return auto.LocalWorkspaceOptions(
            work_dir=str(self.work_dir),
            pulumi_command=self.engine.pulumi_command,
            project_settings=auto.ProjectSettings(name=PROJECT, runtime="python"),
            env_vars=self.engine.env(),
            secrets_provider=self.engine.settings.secrets_provider,
        )

    def open_stack(self, *, create: bool, writes: bool = True) -> auto.Stack | None:
        """Select the stack (None when there is none), or with ``create`` select or create it;
        :attr:`created` says whether it was just created. Every operation starts here, with
        :meth:`check_stack` (``writes``: the operation writes the state, so takes its lock)."""
        exists = self.check_stack(create=create, writes=writes)
        return None if exists is False and not create else self.select_stack(exists, create)

    def check_stack(self, *, create: bool = False, writes: bool = True) -> bool | None:
        """Whether the stack exists (None: a backend the store does not read, ask the CLI), after
        the checks every operation starts with: a controller that no longer leads is refused
        (:meth:`EngineContext.fence`), and the stack's stale locks are cleared
        (:mod:`.state.lock_plan`: for the leader, its own dead operations', a dead or deposed
        replica's, and those past ``--foreign-lock-timeout``; for anyone else, only a dead
        process's of this host), unless there is no stack to open. An operation that
        ``writes`` is refused with :class:`StackLockedError` while a lock that is not this
        controller's holds the stack (a person's or CI's ``pulumi``): it waits for its holder."""
        self.engine.fence("opening", stack=self.name)
        self.created = False
        try:
            store = self.engine.store
            exists = store.stack_exists(self.name) if store is not None else None
            if exists is False and not create:
                return exists
            rule = self.engine.lock_rule()
            cleared = clear_stale_locks(store=store, stack_name=self.name, rule=rule)
            if writes and cleared.foreign and store is not None:
                raise StackLockedError.of(self.name, cleared.foreign, backend=store.url)
            repair_torn_sidecars(store=store, stack_name=self.name)
        except BucketError as exc:
            raise self.engine.error(exc, stack=self.name, doing="reading the backend") from None
        if writes and exists is not False:  # a stack an older engine gave the credentials
            drop_stack_credentials(self.engine, self.name, self.config_file)
        return exists

    def select_stack(self, exists: bool | None, create: bool) -> auto.Stack | None:
        """The stack opened after :meth:`check_stack` said ``exists``: one the backend holds
        without a ``pulumi`` (:class:`KnownStack`), a new one made by the store when it can
        (:meth:`create_directly`), else with the CLI."""
        opts = self._workspace_options()
        if exists is False and create and self.create_directly():
            self.created = True
            exists = True
        if exists:
            if opts.project_settings is not None and opts.project_settings.main is None:
                opts.project_settings.main = os.getcwd()  # as the SDK's own helpers set it
            opts.program = main
            return KnownStack(self.name, auto.LocalWorkspace(**opts.__dict__))
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

    def create_directly(self) -> bool:
        """Make the stack as ``pulumi stack init`` does, with no ``pulumi`` start (about 0.6 s
        and 0.6 CPU seconds saved per new Service): its checkpoint in the backend
        (:func:`.state.stacks.create_stack`), its settings file with this process's salt
        (:mod:`.state.passphrase`). False, nothing made, for a backend the store does not
        write, another secrets provider than ``passphrase``, or a stack made meanwhile: ask the
        CLI."""
        engine, store = self.engine, self.engine.store
        if store is None or engine.settings.secrets_provider != "passphrase":
            return False
        engine.fence("creating the stack", stack=self.name)
        try:
            made = create_stack(store, self.name)
        except BucketError as exc:
            raise engine.error(exc, stack=self.name, doing="creating the stack") from None
        if made:
            new_settings_file(self.config_file, engine.passphrase_key.state)
        return made

    def unprotect(self, names: list[str]) -> None:
        """Lift the protection of these resources (logical names) before an ``up`` that is
        meant to delete them; one without a state entry is no error."""
        urns = [resource_urn(stack_name=self.name, logical_name=name) for name in names]
        if not urns or unprotect_in_state(self.engine, self.name, urns):
            return
        for urn in urns:
            run_cli(
                self.engine,
                ["state", "unprotect", urn, "--yes"],
                stack_name=self.name,
                work_dir=self.work_dir,
                ok_if=NO_SUCH_RESOURCE,
            )

    def unprotect_all(self) -> None:
        """Lift the protection of the load balancer and floating IP (stacks/program.py): the
        Service is going away, deleting them is what was asked for."""
        if unprotect_in_state(self.engine, self.name):
            return
        run_cli(
            self.engine,
            ["state", "unprotect", "--all", "--yes"],
            stack_name=self.name,
            work_dir=self.work_dir,
        )

    def applied_spec_of(self, stack: auto.Stack) -> LoadBalancerSpec | None:
        """:meth:`applied_spec` of the opened ``stack``."""
        try:
            outputs = self.outputs_of(stack)
        except auto.CommandError as exc:
            raise self.engine.error(exc, stack=self.name, doing="reading outputs") from None
        return applied_spec_from(outputs)

    def tags_of(self, stack: auto.Stack) -> StackTags:
        return StackTags(
            store=self.engine.store,
            stack_name=self.name,
            stack=stack,
            before_write=lambda: self.engine.fence("writing tags", stack=self.name),
        )

    def wanted_tags(self) -> dict[str, str]:
        ref, s = self.service, self.engine.settings
        return stack_tags(
            cluster_name=s.cluster_name,
            namespace=ref.namespace,
            name=ref.name,
            uid=ref.uid,
            cluster_id=s.cluster_id,
        )

    def configure_stack(self, stack: auto.Stack, spec: LoadBalancerSpec) -> None:
        configure(
            self.engine,
            stack,
            spec,
            stack_name=self.name,
            work_dir=self.work_dir,
            imports=self.imports,
            release=False,
        )

    def outputs_of(self, stack: auto.Stack) -> dict[str, Any]:
        """The stack's outputs: from its checkpoint, read by the store (no ``pulumi``), or
        with ``pulumi stack output`` (two starts: plain, then with secrets) where the store
        does not read the backend or an output is a secret."""
        store = self.engine.store_or_none()
        try:
            read = store.read_checkpoint(self.name) if store is not None else None
        except BucketError:
            read = None
        stored = outputs_in(read.deployment) if read is not None else None
        return stored if stored is not None else plain_outputs(stack.outputs())

    def deadline(self, run: Callable[[], T], *, stack: auto.Stack, doing: str) -> T:
        """Run a stack operation; interrupt it if it outlives the operation timeout."""
        settings = self.engine.settings
        if self.engine.cancelled.is_set():
            raise InterruptedOperationError(
                f"{doing} of stack {self.name} not started: the controller is stopping",
                stack=self.name,
            )
        self.engine.fence(doing, stack=self.name)
        log.info("stack operation started", extra={"stack_name": self.name, "operation": doing})
        try:
            return run_with_deadline(
                run,
                stack_name=self.name,
                doing=doing,
                timeout=settings.operation_timeout,
                grace=settings.interrupt_grace,
                on_error=lambda exc: self.engine.error(exc, stack=self.name, doing=doing),
                cancel=self.engine.cancelled,
                leading=self.engine.leading,
            )
        finally:
            self.prune()

    def prune(self) -> None:
        """Keep the newest ``keep_history`` history entries and checkpoint backups of the
        stack (each operation adds one of each, and the CLI never removes them). A backend
        that cannot be pruned now is pruned after the next operation: logged, not raised.
        Skipped once this process no longer leads, or not for long enough (each delete passes
        the fence: a write like any other)."""
        leading = self.engine.leading
        if leading is not None and not leading():
            return
        try:
            store = self.engine.store
            if store is not None:
                prune(store, self.name, keep=self.engine.settings.keep_history)
        except (BucketError, OSError, NotLeaderError) as exc:
            log.warning("stack %s: history not pruned: %s", self.name, exc)

    def forget(self, *, removed: bool = False) -> None:
        """After ``stack rm``: what the CLI leaves of the stack in the backend (backups, the
        checkpoint's ``.bak``) and its work folder here go too (the backend's, only while
        this process may write). ``removed``: the store removed the stack whole
        (:func:`~.state.stacks.remove_stack`), only the folder."""
        leading = self.engine.leading
        try:
            if leading is not None and not leading():
                raise OSError("this process no longer holds the Lease")
            store = self.engine.store
            if store is not None and not removed:
                remove_leftovers(store, self.name)
        except (BucketError, OSError, NotLeaderError) as exc:
            log.warning("stack %s: leftovers in the backend not removed: %s", self.name, exc)
        shutil.rmtree(self.work_dir, ignore_errors=True)

    def recover(
        self,
        stack: auto.Stack,
        spec: LoadBalancerSpec | None = None,
        *,
        rest: OpenStackRest | None = None,
    ) -> bool:
        """Resolve what an interrupted or failed operation left (see engine_recovery): the
        objects found become the next ``up``'s imports. With the ``spec`` about to be applied,
        the objects it also wants are looked for when the state lacks them, and a found object
        it does not declare (a port since removed) is deleted, or it would be left behind.
        ``rest``: the caller's client, so one Keystone login serves both. True when an update
        or delete was cut off: the next ``up`` must refresh first."""
        rest = rest or self.engine.rest()
        try:
            found, orphans, unsure = recover_pending(
                stack=stack,
                stack_name=self.name,
                rest=rest,
                carried=self.carried_imports_of(),
                lost=lost_lookups(spec) if spec is not None else (),
                orphans=lost_children(spec, self.configured_spec_of()) if spec is not None else (),
                store=self.engine.store_or_none(),
            )
        except BucketError as exc:
            raise self.engine.error(exc, stack=self.name, doing="repairing the state") from None
        if spec is not None:
            wanted = adoptable_names(spec)
            self.engine.fence("deleting what a crash left", stack=self.name)
            delete_unadopted(
                rest,
                {**{n: i for n, i in found.items() if n not in wanted}, **orphans},
                stack_name=self.name,
                timeout=self.engine.settings.operation_timeout,
                cancelled=self.engine.cancelled,
            )
            found = {n: i for n, i in found.items() if n in wanted}
        self.imports = found
        return bool(unsure)

    def clear_imports(self, stack: auto.Stack) -> None:
        """After an ``up`` that adopted its imports: none are carried to the next one."""
        key = f"{CONFIG_NAMESPACE}:{IMPORTS_KEY}"
        self.engine.fence("writing the config", stack=self.name)
        if set_plain_config(self.config_file, key, "{}") is None:
            stack.set_config(key, auto.ConfigValue("{}"))

    def carried_imports_of(self) -> dict[str, str]:
        """The imports in the stack's config file: an earlier ``up`` was given them and did not
        finish (a successful ``up`` empties them)."""
        try:
            text = self.config_file.read_text()
        except OSError:
            return {}
        return carried_imports(text, key=f"{CONFIG_NAMESPACE}:{IMPORTS_KEY}")

    def configured_spec_of(self) -> LoadBalancerSpec | None:
        """The spec in the stack's config file: what the last ``up`` was given (whether or not
        it finished); None without one."""
        try:
            text = self.config_file.read_text()
        except OSError:
            return None
        return configured_spec(text, key=f"{CONFIG_NAMESPACE}:{SPEC_KEY}")


def quiet(_line: str) -> None:
    """Pulumi's progress output is not logged (it may quote inputs)."""

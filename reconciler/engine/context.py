"""What every stack of one engine shares: settings, the ``pulumi`` command, secrets, cancellation,
and the fence.

:class:`EngineContext` is the part of :class:`reconciler.engine.stack.Engine` that the lower modules
(:mod:`.stack_meta`, :mod:`.handle`, :mod:`.delete.stack`,
:mod:`.adopt.stack`) need; they take it, so none of them imports :mod:`.stack`. No
decisions live here.

**The fence.** A controller's engine is given ``leading``: whether this process holds the Lease and
renewed it within the renew deadline (the controller's ``LeaderElector.is_leader``, which turns
false on its own clock, whether or not the elector's thread has run since). While it is false,
:meth:`EngineContext.fence` refuses every write with
:class:`~reconciler.engine.errors.NotLeaderError` (no Event: the process is stepping down; the new
leader does the work): every ``pulumi`` the engine starts (``up``, ``destroy``, ``refresh``,
``import``, ``stack rm``, config and tag writes: :class:`EngineCommand` checks before each), the
tags and config files it writes itself, the cloud calls that delete or tag, and the lock clearing. A
running operation is killed when it turns false
(:func:`reconciler.engine.recovery.run_with_deadline`). Without ``leading`` (a command a person or
CI runs) nothing is fenced, and only provably stale locks are cleared
(:mod:`.state.lock_plan`).
"""

from __future__ import annotations

import contextlib
import logging
import math
import subprocess
import threading
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Protocol, runtime_checkable
from urllib.parse import unquote, urlsplit

from reconciler.config import AuthConfig, Secret
from reconciler.engine.cli import EngineCommand, cli_env
from reconciler.engine.direct_gate import tools_refusal
from reconciler.engine.errors import (
    CloudUnavailableError,
    EngineError,
    NotLeaderError,
    engine_error,
    fault_class,
    policy_refusal_in,
    refused_by_policy,
)
from reconciler.engine.failure_text import CloudFault
from reconciler.engine.lb_tags import LoadBalancerLocks
from reconciler.engine.openstack.client import OpenStackRest, OpenStackRestError
from reconciler.engine.openstack.roles import forbidden_hint
from reconciler.engine.program_channels import use_own_connections
from reconciler.engine.provider_config import provider_env, secret_values
from reconciler.engine.redact import redact
from reconciler.engine.state.locks import LeaderRule
from reconciler.engine.state.passphrase import PassphraseKey
from reconciler.engine.state.retention import DEFAULT_KEEP
from reconciler.engine.state.store import (
    DEFAULT_TIMEOUT,
    BucketError,
    StateStore,
    open_state_store,
)
from reconciler.toolchain import Toolchain
from stacks.vocabulary import PROJECT

__all__ = ["EngineContext", "EngineSettings", "Term"]

log = logging.getLogger("reconciler.engine.context")


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
    # seconds the provider waits for a child's delete (stacks.vocabulary.CHILD_DELETE_TIMEOUT_KEY)
    child_delete_timeout: float = 120.0
    # history entries and checkpoint backups kept per stack (state.retention)
    keep_history: int = DEFAULT_KEEP
    # delete a stack's own load-balancer tree with one cascade DELETE when its state allows it
    # (reconciler.engine.delete.direct_plan); False: always `destroy` (the tests of its fallbacks)
    direct_delete: bool = True
    # change a stack's pool members with Octavia's batch PUT when only they differ from the
    # applied spec (reconciler.engine.members_plan); False: always `up`
    direct_members: bool = True
    extra_env: Mapping[str, str] = field(default_factory=dict)
    # The cluster's identity (the kube-system namespace's UID, OCCM's kube_cluster_id_ tag):
    # "" when unknown; then only name and description tell this cluster's load balancers
    cluster_id: str = ""
    # Who runs the operations, the message of every update in the stack's history
    # (`pulumi stack history`), e.g. "lb-reconciler run <identity>"; "": none
    writer: str = ""
    # seconds after which a lock that is not this controller's (a person's, CI's) is removed
    # all the same (--foreign-lock-timeout); None: never (state.lock_plan)
    foreign_lock_timeout: float | None = None
    # the most seconds one request to the backend may take (a controller's: sized to end
    # within the Lease's renew deadline, so a write that starts in time also ends in time)
    backend_timeout: float = DEFAULT_TIMEOUT

    @property
    def backend(self) -> str:
        return self.backend_url or (self.state_dir / "backend").absolute().as_uri()


@runtime_checkable
class Term(Protocol):
    """What a controller's engine may ask of its process's hold on the Lease, besides whether
    it leads now (``leading()``, the call itself): seconds left unless renewed (a write that
    cannot end before then must not start), the term (the Lease's ``leaseTransitions``), and
    the hostnames of this controller's other replicas (past holders of the Lease), whose stack
    locks a leader removes (:mod:`.state.lock_plan`). The runner's
    :class:`~reconciler.controller.leadership.Leadership` is one."""

    def __call__(self) -> bool: ...

    def remaining(self) -> float: ...

    def epoch(self) -> int: ...

    def replica_hosts(self) -> Collection[str]: ...


class EngineContext:
    """Settings plus the pieces every Service's stack shares.

    ``leading``: this engine is a controller's, and says whether the process may write now
    (see the module docstring); None: a command's, never fenced."""

    def __init__(
        self, *, settings: EngineSettings, leading: Callable[[], bool] | None = None
    ) -> None:
        self.settings = settings
        self.leading = leading
        # what a controller knows of its term besides "leading now" (the runner's Leadership)
        self.term = leading if isinstance(leading, Term) else None
        use_own_connections()  # before any inline program runs (.program_channels)
        self._secrets = [*secret_values(settings.auth), settings.passphrase.reveal()]
        settings.state_dir.mkdir(parents=True, exist_ok=True)  # work folders; CLI calls run here
        if settings.backend.startswith("file://"):
            Path(unquote(urlsplit(settings.backend).path)).mkdir(parents=True, exist_ok=True)
        # The toolchain's own CLI, never whatever `pulumi` this process's PATH holds; checked
        # against the SDK's minimum version once, here.
        self.pulumi_command = EngineCommand(
            root=str(settings.toolchain.pulumi_root()),
            fence=lambda args: self.fence(f"pulumi {' '.join(args[:2])}"),
            message=settings.writer,
        )
        self.cancelled = threading.Event()
        # the stacks this process found without OpenStack credentials, or took them out of
        # (.credentials): not read for them again
        self.scrubbed: set[str] = set()
        # the salt and key of the stacks this process creates without `pulumi stack init`
        self.passphrase_key = PassphraseKey.of(settings.passphrase.reveal())
        # one Service at a time changes a load balancer's tags (lb_tags)
        self.lb_locks = LoadBalancerLocks()
        self._rest: OpenStackRest | None = None
        self._rest_lock = threading.Lock()
        self._store: StateStore | None = None
        self._store_lock = threading.Lock()
        self._gate: tuple[str | None] | None = None  # direct_refusal's answer, once read
        self._gate_lock = threading.Lock()

    @property
    def store(self) -> StateStore | None:
        """The backend's objects (:mod:`.state.store`): stacks, tags and locks read
        and written without a CLI start; None for a backend that is not a DIY bucket this code reads
        (Pulumi Cloud, ``gs://``, ``azblob://``): ask the CLI. Opened on first use, after checking
        the backend's layout once; raises :class:`~.state.store.BucketError` when
        the backend cannot be read (retried at the next use)."""
        with self._store_lock:
            if self._store is None:
                store = open_state_store(
                    self.settings.backend, env=self.env(), timeout=self.settings.backend_timeout
                )
                if store is None:
                    return None
                if self.leading is not None:  # a controller's: every write fenced and logged
                    store.bucket.guard = self.backend_write
                store.check_layout()
                self._store = store
            return self._store

    def store_or_none(self) -> StateStore | None:
        """:attr:`store`; None also when the backend cannot be opened now (what asks the CLI
        instead then hears from it what is wrong)."""
        try:
            return self.store
        except BucketError:
            return None

    @contextlib.contextmanager
    def backend_write(self, doing: str, need: float) -> Iterator[None]:
        """The guard of every write and delete of a controller's store (:data:`.state.store.
        Guard`), right before it reaches the backend: refused with
        :class:`~reconciler.engine.errors.NotLeaderError` unless this process holds the Lease
        for at least ``need`` more seconds (the write's bound: then it ends before another
        replica can take over), and logged with the Lease's term once done (``backend write``,
        at debug level: what the partition test reads)."""
        left = self.lease_left()
        if left < need:
            raise NotLeaderError(
                f"{doing} refused: this process holds the Lease for {left:.1f}s more, less "
                f"than the {need:g}s the write may take (another replica may lead by then)"
            )
        yield
        term = self.term
        log.debug(
            "backend write",
            extra={
                "write": doing,
                "epoch": term.epoch() if term is not None else 0,
                "lease_left": round(self.lease_left(), 3),
            },
        )

    def lease_left(self) -> float:
        """Seconds this process may still write: the Lease's (infinite for a command, or a
        controller without leader election)."""
        if self.leading is None:
            return math.inf
        if self.term is not None:
            return self.term.remaining() if self.leading() else 0.0
        return math.inf if self.leading() else 0.0

    def direct_refusal(self) -> str | None:
        """Why the direct paths are off (:mod:`.direct_gate`: the ``pulumi`` CLI and the
        provider plugin are not the versions they were tested with); None: they are on. Read
        from the binaries once and said once: the CLI's as the Automation API read it when
        the engine started (``pulumi version``), the plugin's with ``-version`` (about 0.1 s:
        the engine's warm-up pays it)."""
        with self._gate_lock:
            if self._gate is None:
                found = self.pulumi_command.version
                cli = f"v{found}" if found is not None else None
                provider = self._version_of("pulumi-resource-openstack", "-version")
                refusal = tools_refusal(cli=cli, provider=provider)
                if refusal:
                    log.warning("direct paths off", extra={"why": refusal})
                self._gate = (refusal,)
            return self._gate[0]

    def _version_of(self, tool: str, flag: str) -> str | None:
        try:
            done = subprocess.run(
                [str(self.settings.toolchain.path(tool)), flag],
                capture_output=True,
                text=True,
                timeout=60,
                env=self.env(),
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        lines = done.stdout.strip().splitlines()
        return lines[-1].strip() if done.returncode == 0 and lines else None

    def warm_up(self) -> None:
        """Pay before the first operation what the first new stack would otherwise pay, on a
        backend the engine writes itself with the ``passphrase`` secrets provider: the key of
        the stacks this process creates (:class:`PassphraseKey`, about 0.25 CPU seconds) and a
        new backend's setup (:meth:`~.state.store.StateStore.set_up`, one small write). A
        failure is logged; the first operation pays then."""
        try:
            store = self.store
            if store is None:
                return
            self.direct_refusal()
            if self.settings.secrets_provider != "passphrase":
                return
            self.passphrase_key.derive()
            store.set_up()
        except (BucketError, NotLeaderError, OSError) as exc:
            error = redact(str(exc), self._secrets)
            log.warning("warm-up of the engine failed", extra={"error": error})

    def close(self) -> None:
        """Close the backend connection (a ``postgres://`` backend's), if one was opened."""
        with self._store_lock:
            if self._store is not None:
                self._store.close()
                self._store = None

    def cancel(self) -> None:
        """Interrupt the running stack operations and refuse new ones (the process stops):
        they raise :class:`~reconciler.engine.errors.InterruptedOperationError`; the next
        process recovers the stacks."""
        self.cancelled.set()

    def is_leader(self) -> bool:
        """Whether the leader's rules apply: a controller's engine whose process holds the
        Lease (it clears every lock its own operations do not hold:
        :mod:`.state.lock_plan`)."""
        return self.leading is not None and self.leading()

    def lock_rule(self) -> LeaderRule | None:
        """The leader's rule for stack locks when this process leads (with what it knows of its
        cluster's other replicas), else None: a bystander's (:mod:`.state.lock_plan`)."""
        if not self.is_leader():
            return None
        timeout = self.settings.foreign_lock_timeout
        return LeaderRule(
            replicas=tuple(self.term.replica_hosts()) if self.term is not None else (),
            foreign_timeout=timedelta(seconds=timeout) if timeout else None,
        )

    def fence(self, doing: str, *, stack: str = "") -> None:
        """Refuse ``doing`` (raise :class:`~reconciler.engine.errors.NotLeaderError`) when this
        is a controller's engine and its process no longer holds the Lease."""
        if self.leading is not None and not self.leading():
            on = f" on stack {stack}" if stack else ""
            raise NotLeaderError(
                f"{doing}{on} refused: this process no longer holds the Lease "
                "(another replica leads)",
                stack=stack,
            )

    def env(self) -> dict[str, str]:
        """The environment of every ``pulumi`` the engine starts (:func:`.cli.cli_env`)."""
        s = self.settings
        return cli_env(
            s.toolchain,
            backend=s.backend,
            passphrase=s.passphrase.reveal(),
            extra=s.extra_env,
            credentials=provider_env(s.auth),
        )

    def error(
        self, exc: BaseException, *, stack: str, doing: str, subject: str = ""
    ) -> EngineError:
        if isinstance(exc, EngineError):
            return exc  # already classified (the fence's refusal, raised inside a CLI call)
        # the stack's own names are public: a secret inside one is left there (redact.redact)
        keep = (stack, f"{PROJECT}-{stack}") if stack else ()
        text = redact(str(exc), self._secrets, keep=keep)
        if isinstance(exc, OpenStackRestError):  # the engine's own request: classed by its answer
            fault = CloudFault(exc.status or 0, exc.method, exc.path, exc.cloud_message, exc.kind)
            # no answer (unreachable, TLS, timeout): the cloud is unavailable
            cls = CloudUnavailableError if exc.status is None else fault_class(fault)
            text = f"{doing} of {subject or f'stack {stack}'} failed: {text}"
            if exc.status is not None and refused_by_policy(fault):
                text = f"{text}; {self._role_hint()}"
            return cls(text, stack=stack)
        error = engine_error(text, doing=doing, subject=subject or f"stack {stack}", stack=stack)
        message = redact(str(error), self._secrets, keep=keep)
        if policy_refusal_in(text):
            message = f"{message}; {self._role_hint()}"
        return type(error)(message, stack=stack)

    def _role_hint(self) -> str:
        """What a refusal by the cloud's policy adds to its Warning: the roles the credential
        holds (from its token; unknown when that cannot be had) and the ones wanted."""
        roles: list[str] | None = None
        project = self.settings.auth.tenant_name or self.settings.auth.tenant_id
        with contextlib.suppress(OpenStackRestError):
            roles, project = self.rest().roles()
        return forbidden_hint(roles, project=project)

    def rest(self) -> OpenStackRest:
        """The engine's OpenStack client: one for every stack and thread, so one login (its
        token renewed when due) serves them all."""
        with self._rest_lock:
            if self._rest is None:
                self._rest = OpenStackRest(auth=self.settings.auth)
            return self._rest

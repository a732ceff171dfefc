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

import logging
import subprocess
import threading
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Protocol, runtime_checkable
from urllib.parse import unquote, urlsplit

from pulumi import automation as auto

from reconciler.config import AuthConfig, Secret
from reconciler.engine.errors import (
    CloudUnavailableError,
    EngineError,
    NotLeaderError,
    engine_error,
    fault_class,
)
from reconciler.engine.failure_text import CloudFault
from reconciler.engine.lb_tags import LoadBalancerLocks
from reconciler.engine.openstack.client import OpenStackRest, OpenStackRestError
from reconciler.engine.program_channels import use_own_connections
from reconciler.engine.provider_config import secret_values
from reconciler.engine.redact import redact
from reconciler.engine.state.locks import LeaderRule
from reconciler.engine.state.passphrase import PassphraseKey
from reconciler.engine.state.retention import DEFAULT_KEEP
from reconciler.engine.state.store import (
    META,
    BucketError,
    StateStore,
    cli_settings,
    open_state_store,
)
from reconciler.local.toolchain import Toolchain
from stacks.vocabulary import PROJECT

__all__ = ["EngineCommand", "EngineContext", "EngineSettings", "Term"]

log = logging.getLogger("reconciler.engine.context")

# the commands that record an update in the stack's history, with its message
_UPDATES = ("up", "destroy", "refresh")

# Go's garbage collector target for `pulumi` and its provider plugin, unless the process's own
# environment sets GOGC: each lives for one operation, and at Go's default (100) collecting
# is a good part of the CPU it uses. 400 took the CPU of a members-only `up` from 0.71 to 0.60
# s and of a create's from 0.96 to 0.85 s, with the same peak RSS (129 MiB) of the largest
# (docs/performance.md, "Go's garbage collector").
CLI_GOGC = "400"

# Go's processors for `pulumi` and its plugin, unless the process's own environment sets
# GOMAXPROCS: their work is a few milliseconds of Go between network waits, and the controller
# runs several at once (--workers); with one each, none spins its idle threads or runs its
# collector in parallel. 1 took a create's `up` from 0.75-0.79 to 0.68-0.71 CPU seconds on 2
# cores, wall no longer (docs/performance.md, "The CLI's own logs").
CLI_GOMAXPROCS = "1"

# The most the `pulumi` CLI's own debug logs ($PULUMI_HOME/logs, one file per command; `pulumi
# logs list` shows them) may take, in MB, unless the controller's own environment sets it. At
# every start the CLI lists and stats each file there to rotate them; at its default (500 MB,
# 7 days) a controller's operations leave tens of thousands, and each `up` then cost about 0.2
# CPU seconds more (docs/performance.md, "The CLI's own logs"). 32 MB keeps about 700 `up`s'.
CLI_LOG_MAX_TOTAL_MB = "32"


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


class EngineCommand(auto.PulumiCommand):
    """The toolchain's ``pulumi`` as the Automation API runs it: ``fence`` is called before every
    command (it raises to refuse), and every update carries ``message`` (who made it)."""

    def __init__(self, *, root: str, fence: Callable[[list[str]], None], message: str) -> None:
        self._fence, self._message = fence, message
        super().__init__(root=root)

    def run(
        self,
        args: list[str],
        cwd: str,
        additional_env: Mapping[str, str],
        on_output: Callable[[str], None] | None = None,
        on_error: Callable[[str], None] | None = None,
    ) -> auto.CommandResult:
        self._fence(args)
        if self._message and args and args[0] in _UPDATES and "--message" not in args:
            args = [*args, "--message", self._message]
        return super().run(args, cwd, additional_env, on_output, on_error)


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
        # (stack, config key) -> digest of the secret this process wrote there (stack_meta)
        self.secrets_written: dict[tuple[str, str], str] = {}
        # the salt and key of the stacks this process creates without `pulumi stack init`
        self.passphrase_key = PassphraseKey(settings.passphrase.reveal())
        # one Service at a time changes a load balancer's tags (lb_tags)
        self.lb_locks = LoadBalancerLocks()
        self._rest: OpenStackRest | None = None
        self._rest_lock = threading.Lock()
        self._store: StateStore | None = None
        self._store_lock = threading.Lock()

    @property
    def store(self) -> StateStore | None:
        """The backend's objects (:mod:`.state.store`): stacks, tags and locks read
        and written without a CLI start; None for a backend that is not a DIY bucket this code reads
        (Pulumi Cloud, ``gs://``, ``azblob://``): ask the CLI. Opened on first use, after checking
        the backend's layout once; raises :class:`~.state.store.BucketError` when
        the backend cannot be read (retried at the next use)."""
        with self._store_lock:
            if self._store is None:
                store = open_state_store(self.settings.backend, env=self.env())
                if store is None:
                    return None
                store.check_layout()
                self._store = store
            return self._store

    def warm_up(self) -> None:
        """Pay before the first operation what the first new stacks would otherwise pay, on a
        backend the engine writes itself with the ``passphrase`` secrets provider: the key of
        the stacks this process creates (:class:`PassphraseKey`, about 0.25 CPU seconds) and,
        on a backend no CLI has opened yet, its setup by one ``pulumi stack ls`` (until then a
        new stack is made by ``stack init`` and ``config set``, about 1 s more: see
        :func:`.state.stacks.create_stack`). A failure is logged; the first operation pays then."""
        try:
            store = self.store
            if store is None or self.settings.secrets_provider != "passphrase":
                return
            self.passphrase_key.derive()
            if store.objects(META):
                return
            done = subprocess.run(
                [str(self.settings.toolchain.path("pulumi")), "stack", "ls", "--json", "--all"],
                capture_output=True,
                text=True,
                cwd=self.settings.state_dir,
                env=self.env(),
                check=False,
            )
            if done.returncode != 0:
                raise RuntimeError(done.stdout + done.stderr)
        except (BucketError, OSError, RuntimeError) as exc:
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
        env = self.settings.toolchain.env()
        for key, value in cli_settings(self.settings.backend).items():
            env.setdefault(key, value)  # the user's own setting wins
        env.setdefault("GOGC", CLI_GOGC)
        env.setdefault("GOMAXPROCS", CLI_GOMAXPROCS)
        env.setdefault("PULUMI_LOG_ROTATION_MAX_TOTAL_MB", CLI_LOG_MAX_TOTAL_MB)
        env.update(self.settings.extra_env)
        env["PULUMI_BACKEND_URL"] = self.settings.backend
        env["PULUMI_CONFIG_PASSPHRASE"] = self.settings.passphrase.reveal()
        env["PULUMI_SKIP_UPDATE_CHECK"] = "true"
        return env

    def error(
        self, exc: BaseException, *, stack: str, doing: str, subject: str = ""
    ) -> EngineError:
        if isinstance(exc, EngineError):
            return exc  # already classified (the fence's refusal, raised inside a CLI call)
        # the stack's own names are public: a secret inside one is left there (redact.redact)
        keep = (stack, f"{PROJECT}-{stack}") if stack else ()
        text = redact(str(exc), self._secrets, keep=keep)
        if isinstance(exc, OpenStackRestError):  # the engine's own request: classed by its answer
            cls = (
                CloudUnavailableError  # no answer: unreachable, TLS, timeout
                if exc.status is None
                else fault_class(
                    CloudFault(exc.status, exc.method, exc.path, exc.cloud_message, exc.kind)
                )
            )
            return cls(f"{doing} of {subject or f'stack {stack}'} failed: {text}", stack=stack)
        error = engine_error(text, doing=doing, subject=subject or f"stack {stack}", stack=stack)
        return type(error)(redact(str(error), self._secrets, keep=keep), stack=stack)

    def rest(self) -> OpenStackRest:
        """The engine's OpenStack client: one for every stack and thread, so one login (its
        token renewed when due) serves them all."""
        with self._rest_lock:
            if self._rest is None:
                self._rest = OpenStackRest(auth=self.settings.auth)
            return self._rest

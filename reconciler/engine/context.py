"""What every stack of one engine shares: settings, the ``pulumi`` command, secrets, cancellation.

:class:`EngineContext` is the part of :class:`reconciler.engine.stack.Engine` that the lower
modules (:mod:`.stack_meta`, :mod:`.handle`, :mod:`.delete`, :mod:`.adopt`) need; they take it,
so none of them imports :mod:`.stack`. No decisions live here.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit

from pulumi import automation as auto

from reconciler.config import AuthConfig, Secret
from reconciler.engine.errors import EngineError, engine_error
from reconciler.engine.openstack import OpenStackRest
from reconciler.engine.provider_config import secret_values
from reconciler.engine.redact import redact
from reconciler.engine.state_retention import DEFAULT_KEEP
from reconciler.engine.state_store import StateStore, open_state_store
from reconciler.local.toolchain import Toolchain
from stacks.vocabulary import PROJECT

__all__ = ["EngineContext", "EngineSettings"]


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
    # history entries and checkpoint backups kept per stack (state_retention)
    keep_history: int = DEFAULT_KEEP
    extra_env: Mapping[str, str] = field(default_factory=dict)
    # The cluster's identity (the kube-system namespace's UID, OCCM's kube_cluster_id_ tag):
    # "" when unknown; then only name and description tell this cluster's load balancers
    cluster_id: str = ""

    @property
    def backend(self) -> str:
        return self.backend_url or (self.state_dir / "backend").absolute().as_uri()


class EngineContext:
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
        # (stack, config key) -> digest of the secret this process wrote there (stack_meta)
        self.secrets_written: dict[tuple[str, str], str] = {}
        self._store: StateStore | None = None
        self._store_lock = threading.Lock()

    @property
    def store(self) -> StateStore | None:
        """The backend's objects (:mod:`.state_store`): stacks, tags and locks read and written
        without a CLI start; None for a backend that is not a DIY bucket this code reads
        (Pulumi Cloud, ``gs://``, ``azblob://``): ask the CLI. Opened on first use, after
        checking the backend's layout once; raises
        :class:`~reconciler.engine.state_store.BucketError` when the backend cannot be read
        (retried at the next use)."""
        with self._store_lock:
            if self._store is None:
                store = open_state_store(self.settings.backend, env=self.env())
                if store is None:
                    return None
                store.check_layout()
                self._store = store
            return self._store

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
        # the stack's own names are public: a secret inside one is left there (redact.redact)
        keep = (stack, f"{PROJECT}-{stack}") if stack else ()
        text = redact(str(exc), self._secrets, keep=keep)
        error = engine_error(text, doing=doing, subject=subject or f"stack {stack}", stack=stack)
        return type(error)(redact(str(error), self._secrets, keep=keep), stack=stack)

    def rest(self) -> OpenStackRest:
        return OpenStackRest(auth=self.settings.auth)

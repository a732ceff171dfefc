"""The toolchain's ``pulumi`` as the engine runs it: the command the Automation API is given
(:class:`EngineCommand`: fenced, every update signed with its writer) and the environment of
every ``pulumi`` child (:func:`cli_env`: the backend, the passphrase, the OpenStack provider's
credentials, and the settings that keep each start cheap). No decisions live here.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping

from pulumi import automation as auto

from reconciler.engine.provider_config import CREDENTIAL_ENV
from reconciler.engine.state.store import cli_settings
from reconciler.toolchain import Toolchain

__all__ = [
    "CLI_GOGC",
    "CLI_GOMAXPROCS",
    "CLI_LOG_MAX_TOTAL_MB",
    "EngineCommand",
    "checked_command",
    "cli_env",
]

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


@functools.cache
def _checked(root: str, _modified_ns: int) -> auto.PulumiCommand:
    """``<root>/bin/pulumi`` with its version read and checked against the SDK's minimum (it
    raises when too old): one ``pulumi version`` (about 0.3 CPU seconds) per binary, as it was
    when modified, and process, instead of one per engine."""
    return auto.PulumiCommand(root=root)


def checked_command(root: str) -> auto.PulumiCommand:
    """``<root>/bin/pulumi`` as the Automation API runs it, its version checked once per
    binary and process (:func:`_checked`)."""
    return _checked(root, os.stat(os.path.join(root, "bin", "pulumi")).st_mtime_ns)


class EngineCommand(auto.PulumiCommand):
    """The toolchain's ``pulumi`` as the Automation API runs it: ``fence`` is called before every
    command (it raises to refuse), and every update carries ``message`` (who made it)."""

    def __init__(self, *, root: str, fence: Callable[[list[str]], None], message: str) -> None:
        # not PulumiCommand.__init__: it runs `pulumi version` each time (_checked)
        self._fence, self._message = fence, message
        self.command = os.path.join(root, "bin", "pulumi")
        self.version = checked_command(root).version

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


def cli_env(
    toolchain: Toolchain,
    *,
    backend: str,
    passphrase: str,
    extra: Mapping[str, str],
    credentials: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment of a ``pulumi`` child working on ``backend``: the toolchain first on
    PATH, what the backend needs (:func:`~reconciler.engine.state.store.cli_settings`), the
    collector, processor and log settings above unless the process's own environment sets
    them, the OpenStack provider's ``credentials``
    (:func:`~reconciler.engine.provider_config.provider_env`: the only credential variables
    it gets, none inherited), then ``extra``, the backend URL and the passphrase. Never a
    command line: a secret there is in every process listing."""
    env = toolchain.env()
    for name in CREDENTIAL_ENV:
        env.pop(name, None)  # cloud.conf's credentials, or none: as the engine's own client
    env.update(credentials or {})
    for key, value in cli_settings(backend).items():
        env.setdefault(key, value)  # the user's own setting wins
    env.setdefault("GOGC", CLI_GOGC)
    env.setdefault("GOMAXPROCS", CLI_GOMAXPROCS)
    env.setdefault("PULUMI_LOG_ROTATION_MAX_TOTAL_MB", CLI_LOG_MAX_TOTAL_MB)
    env.update(extra)
    env["PULUMI_BACKEND_URL"] = backend
    env["PULUMI_CONFIG_PASSPHRASE"] = passphrase
    env["PULUMI_SKIP_UPDATE_CHECK"] = "true"
    return env

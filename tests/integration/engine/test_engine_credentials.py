"""No OpenStack credential in any stack (issue 28), with the real engine, CLI and provider.

A stack the engine made before (the password a secret in its config, and so, after its ``up``,
in the default provider's inputs and outputs in the state, its history and its backups) loses
it at its next operation, with nothing changed in the cloud (no write in the emulator's request
log): an ``ensure`` that has nothing to do takes it out of the state directly
(:mod:`reconciler.engine.credentials`), on each DIY backend; and an ``up`` given the config
without it (what the next ``up`` is on a backend the engine does not edit) writes the
provider's inputs without it, changing no resource. Every stack the engine tests make is
scanned at teardown too (``conftest.no_credentials_in``).
"""

from __future__ import annotations

import subprocess
from typing import Any

import pytest
import yaml

from reconciler.config import CloudConfig
from reconciler.engine import run as engine_run
from reconciler.engine.handle import quiet
from reconciler.engine.stack import ServiceStack
from reconciler.engine.stack_meta import drop_credentials
from tests.builders import stored_service
from tests.integration.engine.conftest import PASSPHRASE, Env, spec_for
from tests.stack_secrets import assert_no_credentials

# each test starts real pulumi runs or servers for many seconds: not in make test-fast
pytestmark = pytest.mark.slow


def pulumi(env: Env, stack: ServiceStack, *args: str, stdin: str | None = None) -> str:
    """``pulumi <args> --stack <stack>`` in the stack's work folder, as a person runs it there:
    the backend, the passphrase, and no OpenStack credential in the environment."""
    base = {k: v for k, v in env.toolchain.env().items() if not k.startswith("OS_")}
    done = subprocess.run(
        [str(env.toolchain.path("pulumi")), *args, "--stack", stack.name],
        cwd=stack.work_dir,
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
        env={
            **base,
            **stack.engine.settings.extra_env,
            "PULUMI_BACKEND_URL": stack.engine.settings.backend,
            "PULUMI_CONFIG_PASSPHRASE": PASSPHRASE,
        },
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def exported(env: Env, stack: ServiceStack) -> str:
    """``pulumi stack export --show-secrets``: the state with every secret decrypted."""
    return pulumi(env, stack, "stack", "export", "--show-secrets")


def made_the_old_way(env: Env, config: CloudConfig, name: str) -> tuple[ServiceStack, Any]:
    """A stack as the engine before issue 28 left one: applied, then the password a secret in
    its config (``config set --secret`` on stdin, as that engine did) and an ``up`` with it,
    which puts it into the default provider's inputs and outputs in the state."""
    spec = spec_for(stored_service(name), config)
    stack = env.engine(config).stack(service=spec.service)
    assert stack.ensure(spec).changed
    password = config.auth.password.reveal()
    pulumi(env, stack, "config", "set", "--secret", "openstack:password", stdin=password)
    opened = stack.select_stack(True, create=False)  # no check_stack: it would take it out
    assert opened is not None
    engine_run.up(opened, on_output=quiet, refresh=False)
    assert password in exported(env, stack)  # the state holds it, as before issue 28
    assert "openstack:password" in stack.config_file.read_text()
    return stack, spec


def requests_since(env: Env) -> int:
    """Where the emulator's request log is now (``GET /admin/requests``'s ``next``)."""
    return int(env.cloud.get("/requests?since=0")["next"])


def cloud_writes(env: Env, since: int) -> list[str]:
    """The requests since ``since`` that would change the cloud (a Keystone login aside)."""
    logged = env.cloud.get(f"/requests?since={since}")["requests"]
    return [
        f"{r['method']} {r['path']}"
        for r in logged
        if r["method"] not in ("GET", "HEAD") and "/identity/" not in r["path"]
    ]


def cloud_objects(env: Env) -> dict[str, Any]:
    """The emulator's objects without their status (which an ``up``'s reads may settle)."""
    volatile = {"provisioning_status", "operating_status", "status"}
    return {
        kind: sorted(
            ({k: v for k, v in obj.items() if k not in volatile} for obj in objects),
            key=lambda o: str(o.get("id")),
        )
        for kind, objects in env.cloud.inventory().items()
    }


def test_an_ensure_with_nothing_to_do_takes_the_credentials_out(
    backend_env: Env, starts: list[str]
) -> None:
    env = backend_env
    config = env.config()
    stack, spec = made_the_old_way(env, config, "oldway")
    password = config.auth.password.reveal()
    try:
        before, since = cloud_objects(env), requests_since(env)
        again = env.engine(config).stack(service=spec.service)  # as the new engine's process
        starts.clear()
        assert not again.ensure(spec).changed
        assert starts == []  # no `pulumi`: nothing could change in the cloud
        assert cloud_writes(env, since) == []
        assert cloud_objects(env) == before
        state = exported(env, again)
        assert password not in state
        # no secret of this project's left at all: what the passphrase still protects is a
        # secret a person adds (docs/engine.md, "What the passphrase still protects")
        assert '"ciphertext"' not in state
        settings = yaml.safe_load(again.config_file.read_text())
        assert "openstack:password" not in settings["config"]
        assert settings["config"]["openstack:authUrl"] == config.auth.auth_url
        assert env.backend is not None
        # history entries, their checkpoints, backups and the .bak too
        assert_no_credentials(
            env.backend.url,
            env={**env.backend.cli_env(), **env.backend.env},
            values=[password],
            passphrases=[PASSPHRASE],
        )
        # the provider logs in from the environment: a change still applies
        ports = [{"port": 80, "protocol": "TCP", "nodePort": 30080},
                 {"port": 81, "protocol": "TCP", "nodePort": 30081}]  # fmt: skip
        wider = spec_for(stored_service("oldway", ports=ports), config)
        assert again.ensure(wider).resource_changes.get("create", 0) >= 3
        assert password not in exported(env, again)
    finally:
        stack.delete()


def test_the_next_up_writes_the_provider_without_them_and_changes_nothing(env: Env) -> None:
    """Where the engine cannot edit the state (a backend it does not write): the config
    without the password, and the ``up`` that follows, given it only in its environment
    (``OS_PASSWORD``), leaves every resource as it was, the provider's inputs without it."""
    config = env.config()
    stack, _ = made_the_old_way(env, config, "nextup")
    password = config.auth.password.reveal()
    try:
        before, since = cloud_objects(env), requests_since(env)
        assert drop_credentials(stack.config_file)
        opened = env.engine(config).stack(service=stack.service).select_stack(True, create=False)
        assert opened is not None
        result = engine_run.up(opened, on_output=quiet, refresh=False)
        changes = result.summary.resource_changes or {}
        assert set(changes) == {"same"}, changes
        assert cloud_writes(env, since) == []
        assert cloud_objects(env) == before
        state = exported(env, stack)
        assert password not in state
        assert '"password"' not in state
    finally:
        stack.delete()


def test_a_refresh_takes_the_credentials_out_before_it_starts_the_provider(env: Env) -> None:
    """``pulumi refresh`` configures the provider from the state's provider inputs, not from
    the config, so nothing of the config file would take the password out there. The engine
    takes it out before the refresh starts, which then logs in from the environment."""
    config = env.config()
    stack, spec = made_the_old_way(env, config, "oldrefresh")
    password = config.auth.password.reveal()
    try:
        since = requests_since(env)
        again = env.engine(config).stack(service=spec.service)
        changes = again.refresh()
        assert set(changes) == {"same"}, changes
        assert cloud_writes(env, since) == []
        assert password not in exported(env, again)
        assert "openstack:password" not in again.config_file.read_text()
    finally:
        stack.delete()

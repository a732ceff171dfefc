"""Few `pulumi` starts per operation, and the plain CLI still sees what the engine wrote.

Each `pulumi` command costs about 0.45 s of start-up, so the engine avoids the ones it can
(reconciler.engine.tags, reconciler.engine.run). These tests spy on every `pulumi` process the
engine starts (the real processes still run) and check, with the real CLI, that the tags written
as one file and the outputs taken from the engine events are what `pulumi stack tag ls` and
`pulumi stack output` say, on each DIY backend (file://, postgres://, s3://: the tags through
reconciler.engine.state.store) and on the CLI path other backends take.
"""

from __future__ import annotations

import json
import subprocess
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from reconciler.engine import cli
from reconciler.engine.cli import CLI_LOG_MAX_TOTAL_MB
from reconciler.engine.plan import HASH_TAG
from reconciler.engine.stack import Engine, ServiceStack
from reconciler.engine.stack_spec import create_only_tags
from reconciler.engine.state.passphrase import PassphraseKey
from reconciler.engine.state.store import StateStore
from reconciler.model import LoadBalancerSpec
from reconciler.toolchain import REPO_ROOT
from tests.builders import stored_service
from tests.integration.engine.conftest import CLUSTER, PASSPHRASE, Env, owner_and_joiner, spec_for

# each test starts real pulumi runs or servers for many seconds: not in make test-fast
pytestmark = pytest.mark.slow


def plain(env: Env, stack: ServiceStack, *args: str) -> Any:
    """``pulumi <args> --json`` of the stack, parsed."""
    return json.loads(plain_cli(env, stack, *args, "--json", "--stack", stack.name))


def plain_config(env: Env, stack: ServiceStack, key: str) -> str:
    """``pulumi config get`` of the stack's settings file, as a user would in its work folder."""
    return plain_cli(env, stack, "config", "get", key, "--stack", stack.name, cwd=stack.work_dir)


def plain_cli(env: Env, stack: ServiceStack, *args: str, cwd: Path = REPO_ROOT) -> str:
    """What ``pulumi <args>`` prints, with only the backend URL and the passphrase."""
    done = subprocess.run(
        [str(env.toolchain.path("pulumi")), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        env={
            **env.toolchain.env(),
            **stack.engine.settings.extra_env,
            "PULUMI_BACKEND_URL": stack.engine.settings.backend,
            "PULUMI_CONFIG_PASSPHRASE": PASSPHRASE,
        },
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.rstrip("\n")


def as_a_new_process(engine: Engine) -> Engine:
    """``engine`` as another process's: the key of its passphrase not derived yet, its salt
    another (the engines of one process share them: PassphraseKey.of)."""
    engine.passphrase_key = PassphraseKey(engine.settings.passphrase.reveal())
    return engine


def expected_tags(
    stack: ServiceStack, spec: LoadBalancerSpec, outputs: dict[str, Any], digest: str
) -> dict[str, str]:
    ref = stack.service
    return {
        "lbr:cluster": CLUSTER,
        "lbr:namespace": ref.namespace,
        "lbr:name": ref.name,
        "lbr:uid": ref.uid,
        "lbr:lb-id": outputs["lb_id"],
        "lbr:shared": "false",
        "lbr:owns-lb": outputs["lb_id"],
        "lbr:vip-subnet": outputs["vip_subnet_id"],
        "lbr:vip-address": outputs["vip_address"],
        "lbr:external-ip": outputs["floating_ip"],
        "lbr:fip-network": outputs["fip_network_id"],
        "lbr:keep-fip": "false",
        **create_only_tags(spec, outputs),
        HASH_TAG: digest,
    }


def without_system_tags(tags: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in tags.items() if not k.startswith("pulumi:")}


@pytest.mark.parametrize(
    ("backend", "via"),
    [("file", "store"), ("postgres", "store"), ("s3", "store"), ("file", "cli")],
    indirect=["backend"],
)
def test_create_noop_update_delete(
    backend_env: Env, starts: list[str], monkeypatch: pytest.MonkeyPatch, via: str
) -> None:
    env = backend_env
    if via == "cli":  # as for Pulumi Cloud and the rest: tags through `pulumi stack tag`
        monkeypatch.setattr(StateStore, "tags", lambda _self, _name: None)
    config = env.config()
    assert env.backend is not None
    spec = spec_for(stored_service(f"starts-{via}-{env.backend.kind}"), config)
    stack = env.engine(config).stack(service=spec.service)
    # a new backend, which no CLI has opened: the store sets it up as the CLI would
    # (StateStore.set_up), so even its first stack needs no `stack init`
    assert env.backend.store().objects() == []

    created = stack.ensure(spec)
    assert created.changed
    on_create = list(starts)
    # the settings file the engine wrote itself, as the CLI reads it; no credential in it
    # (the provider reads those from its environment: reconciler.engine.provider_config)
    assert plain_config(env, stack, "openstack:authUrl") == config.auth.auth_url
    assert "openstack:password" not in stack.config_file.read_text()
    sdk_outputs = plain(env, stack, "stack", "output")
    for key in ("lb_id", "vip_address", "floating_ip", "vip_subnet_id", "spec_hash"):
        assert created.outputs[key] == sdk_outputs[key]  # from the events = the CLI's
    try:
        tags = without_system_tags(plain(env, stack, "stack", "tag", "ls"))
        assert tags == expected_tags(stack, spec, created.outputs, created.spec_hash)
        starts.clear()
        again = stack.ensure(spec)
        assert not again.changed
        for key in ("lb_id", "vip_address", "floating_ip"):
            assert again.outputs[key] == created.outputs[key]
        on_noop = list(starts)

        starts.clear()
        ports = [{"port": 80, "protocol": "TCP", "nodePort": 30080},
                 {"port": 443, "protocol": "TCP", "nodePort": 30443}]  # fmt: skip
        wider = spec_for(stored_service(spec.service.name, ports=ports), config)
        updated = stack.ensure(wider)
        assert updated.changed
        assert updated.resource_changes.get("create", 0) >= 3  # listener, pool, members
        on_update = list(starts)
        tags = without_system_tags(plain(env, stack, "stack", "tag", "ls"))
        assert tags[HASH_TAG] == updated.spec_hash
    finally:
        starts.clear()
        assert stack.delete().existed
        on_delete = list(starts)
    assert env.cloud.lbs() == []

    if via == "store":
        # the stack, its salt and its config are written without `stack init` and `config
        # set`; `pulumi version` is read once per process (the next test)
        assert [start for start in on_create if start != "version"] == ["up"]
        assert on_noop == []
        assert on_update == ["up"]  # no `stack select`: the backend holds it (KnownStack)
        # the direct delete (docs/engine.md): one cascade DELETE and the floating IP's through
        # the engine's client, the stack removed in the backend; no `pulumi` at all
        assert on_delete == []
        assert stack.engine.store is not None
        assert stack.engine.store.objects_of(stack.name) == []
    else:
        assert "stack output" not in on_create + on_update
        assert "stack history" not in on_create + on_update + on_delete
        assert on_noop.count("stack tag") == 1  # one `stack tag ls`; outputs from the CLI


def test_the_cli_s_version_is_read_once_per_process(env: Env, starts: list[str]) -> None:
    """``pulumi version`` (the SDK's check of the CLI against its minimum) runs for the first
    engine of a process, not for each: tests and tools make many engines, and each check is a
    `pulumi` start (reconciler.engine.cli._checked)."""
    cli._checked.cache_clear()
    config = env.config()
    first = env.engine(config)
    second = env.engine(config)
    assert starts == ["version"]
    assert first.pulumi_command.version is not None
    assert second.pulumi_command.version == first.pulumi_command.version


def test_pulumi_and_its_plugin_run_tuned_for_short_lives(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``pulumi`` (and the provider plugin it starts, with its environment) runs with GOGC 400
    and GOMAXPROCS 1 (reconciler.engine.cli.CLI_GOGC, CLI_GOMAXPROCS; docs/performance.md),
    unless the controller's own environment sets them."""
    tuning: list[tuple[str | None, str | None]] = []
    real = subprocess.Popen

    def spy(args: Any, *rest: Any, **kw: Any) -> Any:
        # every command but the SDK's own `pulumi version` check (once, with the process's
        # environment, when the engine is made)
        if Path(str(args[0])).name == "pulumi" and list(args[1:]) != ["version"]:
            child = kw.get("env") or {}
            tuning.append((child.get("GOGC"), child.get("GOMAXPROCS")))
        return real(args, *rest, **kw)

    monkeypatch.setattr(subprocess, "Popen", spy)
    monkeypatch.delenv("GOGC", raising=False)
    monkeypatch.delenv("GOMAXPROCS", raising=False)
    config = env.config()
    spec = spec_for(stored_service("gc"), config)
    stack = env.engine(config).stack(service=spec.service)
    try:
        stack.ensure(spec)
        assert tuning
        assert set(tuning) == {("400", "1")}
        tuning.clear()
        monkeypatch.setenv("GOGC", "150")
        monkeypatch.setenv("GOMAXPROCS", "3")
        stack = env.engine(config).stack(service=spec.service)
        stack.refresh()
        assert tuning
        assert set(tuning) == {("150", "3")}
    finally:
        stack.delete()


def filled_logs(home: Path, *, files: int, size: int) -> list[str]:
    """``home``/logs as a controller that ran for a while leaves it: ``files`` of the CLI's
    automatic logs of ``size`` bytes each, oldest first, all of today (none past its age)."""
    logs = home / "logs"
    logs.mkdir(parents=True)
    now = datetime.now()
    names = []
    for i in range(files):
        at = (now - timedelta(minutes=files - i)).strftime("%Y%m%dT%H%M%S")
        name = f"pulumi-{at}-{1000 + i}-up.log"
        (logs / name).write_bytes(b"x" * size)
        names.append(name)
    return names


def test_the_clis_own_logs_stay_bounded(env: Env, tmp_path: Path) -> None:
    """What a user saw: the controller slowed down over days. Every ``pulumi`` command writes
    a debug log under ``$PULUMI_HOME/logs`` and, at each start, lists and stats every file there
    to rotate them (by default up to 500 MB and 7 days: tens of thousands of files). The engine's
    ``pulumi`` children keep them to ``CLI_LOG_MAX_TOTAL_MB``: the oldest go, the newest stay."""
    home = tmp_path / "pulumi-home"
    mib = 1024 * 1024
    names = filled_logs(home, files=48, size=mib)  # 48 MiB, more than the bound
    config = env.config()
    spec = spec_for(stored_service("logs"), config)
    stack = env.engine(config, extra_env={"PULUMI_HOME": str(home)}).stack(service=spec.service)
    try:
        stack.ensure(spec)
    finally:
        stack.delete()
    kept = {p.name: p.stat().st_size for p in (home / "logs").iterdir()}
    # rotated at the start of each command; the last one's own log is written after that
    old = [size for name, size in kept.items() if name in names]
    assert sum(old) <= int(CLI_LOG_MAX_TOTAL_MB) * mib, sorted(kept)
    assert names[0] not in kept  # the oldest went
    assert names[-1] in kept  # the newest stayed
    assert any(name not in names for name in kept)  # and the operation's own log was written


def test_the_users_own_log_bound_wins(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    """``PULUMI_LOG_ROTATION_MAX_TOTAL_MB`` in the controller's environment is passed on as is."""
    seen: list[str | None] = []
    real = subprocess.Popen

    def spy(args: Any, *rest: Any, **kw: Any) -> Any:
        if Path(str(args[0])).name == "pulumi" and list(args[1:]) != ["version"]:
            seen.append((kw.get("env") or {}).get("PULUMI_LOG_ROTATION_MAX_TOTAL_MB"))
        return real(args, *rest, **kw)

    monkeypatch.setattr(subprocess, "Popen", spy)
    monkeypatch.setenv("PULUMI_LOG_ROTATION_MAX_TOTAL_MB", "200")
    config = env.config()
    spec = spec_for(stored_service("logs-own"), config)
    stack = env.engine(config).stack(service=spec.service)
    try:
        stack.ensure(spec)
    finally:
        stack.delete()
    assert seen
    assert set(seen) == {"200"}


def test_the_first_new_stack_after_warm_up_is_one_up(env: Env, starts: list[str]) -> None:
    """What a user saw: the first Service after the controller started on a new backend took
    about 2 s, the next ones about 1 s: the first stack was made through ``stack init`` and
    ``config set --secret``, and the first one made directly derived the passphrase's key.
    ``warm_up``, which the controller runs as it starts to lead, derives the key and sets the
    new backend up (StateStore.set_up) with no ``pulumi``, and does nothing once paid."""
    config = env.config()
    engine = as_a_new_process(env.engine(config))
    starts.clear()
    engine.warm_up()
    assert starts == []
    assert engine.passphrase_key.ready
    assert engine.store is not None
    assert engine.store.opened()  # meta.yaml written
    spec = spec_for(stored_service("warm"), config)
    stack = engine.stack(service=spec.service)
    starts.clear()
    try:
        assert stack.ensure(spec).changed
        assert starts == ["up"]
    finally:
        stack.delete()
    again = as_a_new_process(env.engine(config))  # the backend set up
    starts.clear()
    again.warm_up()
    assert again.passphrase_key.ready
    assert starts == []  # the key only


def test_a_process_that_takes_over_a_stack_starts_only_its_up(env: Env, starts: list[str]) -> None:
    """What a failover showed: the new leader's first operation on each stack the old one
    had made started a ``pulumi config set --secret`` (the stack's salt was the other
    process's, whose key it did not have). No secret is written to a stack's config any more
    (the credentials reach the provider in its environment): its ``up`` is the one start, and
    the CLI reads the config it wrote."""
    config = env.config()
    spec = spec_for(stored_service("taken"), config)
    first = env.engine(config).stack(service=spec.service)
    assert first.ensure(spec).changed
    ports = [{"port": 80, "protocol": "TCP", "nodePort": 30080},
             {"port": 8080, "protocol": "TCP", "nodePort": 30081}]  # fmt: skip
    wider = spec_for(stored_service("taken", ports=ports), config)
    second = as_a_new_process(env.engine(config)).stack(service=spec.service)
    starts.clear()
    try:
        assert second.ensure(wider).changed
        assert starts == ["up"]
        assert plain_config(env, second, "openstack:authUrl") == config.auth.auth_url
    finally:
        second.delete()


def test_outputs_are_read_from_the_checkpoint_as_the_cli_prints_them(
    env: Env, starts: list[str]
) -> None:
    """A stack's outputs (the applied spec, create-only values after a crash, a delete's
    floating IP) come from its checkpoint in the backend, not from two ``pulumi stack output``
    starts; they are what the CLI prints."""
    config = env.config()
    spec = spec_for(stored_service("outs"), config)
    stack = env.engine(config).stack(service=spec.service)
    stack.ensure(spec)
    try:
        starts.clear()
        opened = stack.open_stack(create=False, writes=False)
        assert opened is not None
        outputs = stack.outputs_of(opened)
        assert stack.applied_spec() == spec
        assert starts == []
        by_cli = plain(env, stack, "stack", "output")
        assert {k: v for k, v in outputs.items() if v is not None} == by_cli
    finally:
        stack.delete()


def test_a_sharer_leaves_with_one_destroy(env: Env, starts: list[str]) -> None:
    """A Service on another's load balancer is deleted through ``pulumi destroy`` (the direct
    delete is for a load balancer of its own): its protection is lifted before and its emptied
    stack removed after in the state by the store (reconciler.engine.direct_state), not by
    ``pulumi state unprotect`` and ``pulumi stack rm``; the CLI then lists no such stack."""
    owner, sharer, _owner_svc, _sharer_svc, _lb_id = owner_and_joiner(env)
    try:
        starts.clear()
        assert sharer.delete().existed
        assert starts == ["destroy"]
        listed = plain_cli(env, owner, "stack", "ls", "--json")
        assert [s["name"] for s in json.loads(listed)] == [owner.name]
    finally:
        owner.delete()
    assert env.cloud.lbs() == []


def test_a_failed_warm_up_is_logged_and_the_first_operation_pays(
    env: Env, caplog: pytest.LogCaptureFixture
) -> None:
    """A backend that cannot be read at start (here: no PostgreSQL where the URL points) does
    not stop the controller from starting; the warning names the backend, not its password."""
    config = env.config()
    engine = env.engine(config, backend_url="postgres://lbr:hunter2@127.0.0.1:9/state")
    as_a_new_process(engine)
    with caplog.at_level("WARNING", logger="reconciler.engine.context"):
        engine.warm_up()
    (record,) = [r for r in caplog.records if r.getMessage() == "warm-up of the engine failed"]
    error = str(getattr(record, "error", ""))
    assert "127.0.0.1:9" in error
    assert "hunter2" not in error
    assert not engine.passphrase_key.ready

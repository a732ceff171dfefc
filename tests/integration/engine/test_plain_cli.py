"""Usage 2 of DESIGN.md: the plain `pulumi` CLI inspects the stacks the engine made.

From the repository root (the Pulumi.yaml of project lb-reconciler), with the engine's backend
and passphrase, `pulumi stack ls --tag`, `stack output`, `stack history` and `stack export`
show each Service's infrastructure.
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest

from reconciler.local.toolchain import REPO_ROOT
from tests.builders import stored_service
from tests.integration.engine.conftest import CLUSTER, PASSPHRASE, Env, spec_for


def _pulumi(env: Env, backend: str, *args: str, json_flag: bool = True) -> Any:
    done = subprocess.run(
        [str(env.toolchain.path("pulumi")), *args, *(["--json"] if json_flag else [])],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=False,
        env={
            **env.toolchain.env(),
            "PULUMI_BACKEND_URL": backend,
            "PULUMI_CONFIG_PASSPHRASE": PASSPHRASE,
        },
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_stack_ls_output_history_export(env: Env) -> None:
    config = env.config()
    spec = spec_for(stored_service("inspect"), config)
    engine = env.engine(config)
    stack = engine.stack(service=spec.service)
    ensured = stack.ensure(spec)
    backend = engine.settings.backend
    try:
        listed = _pulumi(env, backend, "stack", "ls", "--tag", f"lbr:cluster={CLUSTER}")
        assert [s["name"] for s in listed] == [stack.name]
        by_name = _pulumi(env, backend, "stack", "ls", "--tag", "lbr:name=inspect")
        assert [s["name"] for s in by_name] == [stack.name]
        assert _pulumi(env, backend, "stack", "ls", "--tag", "lbr:name=nobody") == []

        outputs = _pulumi(env, backend, "stack", "output", "-s", stack.name)
        assert outputs["lb_id"] == ensured.outputs["lb_id"]
        assert outputs["spec_hash"] == spec.spec_hash()

        history = _pulumi(env, backend, "stack", "history", "-s", stack.name)
        assert [h["kind"] for h in history] == ["update"]
        assert history[0]["result"] == "succeeded"

        exported = _pulumi(env, backend, "stack", "export", "-s", stack.name, json_flag=False)
        types = {r["type"] for r in exported["deployment"]["resources"]}
        assert "openstack:loadbalancer/loadBalancer:LoadBalancer" in types
    finally:
        stack.delete()


def test_engine_needs_no_pulumi_on_the_process_path(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The in-cluster image need not put the toolchain on PATH: the engine uses its own."""
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    config = env.config()
    spec = spec_for(stored_service("nopath"), config)
    stack = env.engine(config).stack(service=spec.service)
    assert stack.ensure(spec).changed
    stack.delete()

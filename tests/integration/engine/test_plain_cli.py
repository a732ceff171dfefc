"""Usages 2 and 3 of DESIGN.md: the plain `pulumi` CLI inspects the stacks the engine made.

As a person or CI would, on each kind of backend (file://, postgres://, s3://): another process
with only the backend URL, the passphrase (and for s3:// the access keys) in its environment, an
empty home and an empty working folder (no Pulumi.yaml), runs `pulumi stack ls --all --tag`,
`stack output`, `stack history` and `stack export` and sees each Service's infrastructure.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest

from tests.builders import stored_service
from tests.integration.engine.conftest import CLUSTER, PASSPHRASE, Env, spec_for

# each test starts real pulumi runs or servers for many seconds: not in make test-fast
pytestmark = pytest.mark.slow


def _pulumi(env: Env, where: Path, *args: str, json_flag: bool = True) -> Any:
    """``pulumi <args>`` in another process that knows only the backend and the passphrase."""
    assert env.backend is not None
    home = where / "home"
    home.mkdir(exist_ok=True)
    done = subprocess.run(
        [str(env.toolchain.path("pulumi")), *args, *(["--json"] if json_flag else [])],
        cwd=where,
        capture_output=True,
        text=True,
        check=False,
        env={
            "PATH": os.defpath,
            "HOME": str(home),
            **env.backend.cli_env(),
            "PULUMI_CONFIG_PASSPHRASE": PASSPHRASE,
            "PULUMI_SKIP_UPDATE_CHECK": "true",
        },
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_stack_ls_output_history_export(backend_env: Env) -> None:
    env = backend_env
    config = env.config()
    spec = spec_for(stored_service("inspect"), config)
    engine = env.engine(config)
    stack = engine.stack(service=spec.service)
    ensured = stack.ensure(spec)
    # outside any project (a --basetemp inside this checkout would find its Pulumi.yaml)
    where = Path(tempfile.mkdtemp(prefix="lbr-elsewhere-"))
    qualified = f"organization/lb-reconciler/{stack.name}"
    try:
        listed = _pulumi(env, where, "stack", "ls", "--all", "--tag", f"lbr:cluster={CLUSTER}")
        assert [s["name"] for s in listed] == [qualified]
        by_name = _pulumi(env, where, "stack", "ls", "--all", "--tag", "lbr:name=inspect")
        assert [s["name"] for s in by_name] == [qualified]
        assert _pulumi(env, where, "stack", "ls", "--all", "--tag", "lbr:name=nobody") == []

        outputs = _pulumi(env, where, "stack", "output", "-s", qualified)
        assert outputs["lb_id"] == ensured.outputs["lb_id"]
        assert outputs["spec_hash"] == spec.spec_hash()

        history = _pulumi(env, where, "stack", "history", "-s", qualified)
        assert [h["kind"] for h in history] == ["update"]
        assert history[0]["result"] == "succeeded"

        exported = _pulumi(env, where, "stack", "export", "-s", qualified, json_flag=False)
        types = {r["type"] for r in exported["deployment"]["resources"]}
        assert "openstack:loadbalancer/loadBalancer:LoadBalancer" in types
    finally:
        stack.delete()
    assert _pulumi(env, where, "stack", "ls", "--all", "--tag", f"lbr:cluster={CLUSTER}") == []
    assert sorted(p.name for p in where.iterdir()) == ["home"]  # nothing written but its home
    shutil.rmtree(where)


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

"""DESIGN.md's second use through read-only credentials: docs/inspect.md's recipes as written.

On each kind of backend the engine makes a Service's stack; then, as a person would, with only
the read-only credential of ``examples/ci/`` (:mod:`tests.readonly`), no passphrase and an empty
home: ``lb-reconciler stacks``, and the ``pulumi`` commands of the docs' recipe for that backend,
read from docs/inspect.md and run by bash (the test's URL, keys, cluster and Service in place of
the docs' examples). On ``postgres://`` the plain CLI itself fails with the error the docs quote,
and the recipe reads a ``psql`` copy of the table. Every object of the backend is the same, byte
for byte, before and after.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from reconciler.engine.state.store import StateStore
from reconciler.local.backends import postgres_bin_dir
from reconciler.toolchain import Toolchain
from tests.backends import Backend
from tests.builders import stored_service
from tests.integration.engine.conftest import CLUSTER, Env, spec_for

# each test starts real pulumi runs or servers for many seconds: not in make test-fast
pytestmark = pytest.mark.slow

DOC = Path(__file__).resolve().parents[3] / "docs" / "inspect.md"
LB_TYPE = "openstack:loadbalancer/loadBalancer:LoadBalancer"
# what each recipe's export lines must set, supplied by the test (the docs show examples)
SUPPLIED = {
    "file": ("PULUMI_BACKEND_URL",),
    "s3": ("PULUMI_BACKEND_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"),
    "postgres": ("READ_ONLY_BACKEND_URL",),
}


def recipe(kind: str) -> list[str]:
    """The lines of the ``sh`` block after ``<!-- recipe: KIND -->`` in docs/inspect.md."""
    found = re.search(rf"<!-- recipe: {kind} -->\n```sh\n(.*?)```", DOC.read_text(), re.S)
    assert found is not None, f"no recipe for {kind} in {DOC}"
    return found.group(1).splitlines()


def snapshot(store: StateStore) -> dict[str, str]:
    return {
        obj.key: hashlib.sha256(store.bucket.read(obj.key) or b"").hexdigest()
        for obj in store.objects("")
    }


def person(where: Path) -> dict[str, str]:
    """A person's environment: the toolchain (the tests': on PATH, and ``LBR_TOOLS_BIN`` for
    ``lb-reconciler``, which would otherwise build its own under this new home) and psql on
    PATH, a home of its own, none of the controller's settings (no passphrase, no backend)."""
    home = where / "home"
    home.mkdir(exist_ok=True)
    keep = ("PATH", "GOGC", "GOMAXPROCS")
    env = {k: v for k, v in os.environ.items() if k in keep}
    pulumi = shutil.which("pulumi", path=env["PATH"])
    assert pulumi is not None  # the toolchain fixture put it first on PATH
    return {
        **env,
        "PATH": f"{env['PATH']}{os.pathsep}{postgres_bin_dir()}",
        "LBR_TOOLS_BIN": str(Path(pulumi).parent),
        "HOME": str(home),
        "PULUMI_SKIP_UPDATE_CHECK": "true",
    }


def run_recipe(kind: str, readonly: Backend, stack: str, where: Path) -> list[tuple[str, str]]:
    """Run the docs' recipe for ``kind`` in ``where`` with bash; each ``pulumi`` command and
    what it printed."""
    values = {
        "PULUMI_BACKEND_URL": readonly.url,
        "READ_ONLY_BACKEND_URL": readonly.url,
        **readonly.env,
    }
    script, commands, supplied = ["set -euo pipefail"], [], set()
    for line in recipe(kind):
        exported = re.match(r"export ([A-Z_]+)=", line)
        if exported and exported.group(1) in SUPPLIED[kind]:
            for name in re.findall(r"([A-Z_]+)=", line.partition("#")[0]):
                supplied.add(name)
                script.append(f"export {name}='{values[name]}'")
            continue
        if line.startswith("pulumi "):
            command = line.split("  #")[0].strip()
            command = command.replace("prod.default.web", stack).replace("=prod", f"={CLUSTER}")
            script.append(f'{command} >"out-{len(commands)}.txt"')
            commands.append(command)
            continue
        script.append(line)
    assert supplied == set(SUPPLIED[kind]), supplied
    if kind == "s3":  # temporary keys: the docs say they need the token too
        script.insert(1, f"export AWS_SESSION_TOKEN='{readonly.env['AWS_SESSION_TOKEN']}'")
    done = subprocess.run(
        ["bash", "-c", "\n".join(script)],
        cwd=where,
        env=person(where),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, f"{kind} recipe:\n{done.stdout}{done.stderr}"
    return [(c, (where / f"out-{i}.txt").read_text()) for i, c in enumerate(commands)]


def lbr_stacks(readonly: Backend, where: Path, *args: str) -> Any:
    """``lb-reconciler stacks --output json ARGS`` with the read-only URL and nothing else."""
    flags = ["--backend-url", readonly.url, "--cluster-name", CLUSTER, "--output", "json"]
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "reconciler.cli",
            "stacks",
            *flags,
            "--state-dir",
            str(where),
            *args,
        ],
        cwd=where,
        env={**person(where), **readonly.env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_recipes_read_an_engine_made_stack_through_read_only_credentials(
    backend_env: Env, readonly_backend: Backend, toolchain: Toolchain, tmp_path: Path
) -> None:
    assert shutil.which("pulumi") == str(toolchain.path("pulumi"))
    env, kind = backend_env, readonly_backend.kind
    assert env.backend is not None
    config = env.config()
    spec = spec_for(stored_service("inspect"), config)
    stack = env.engine(config).stack(service=spec.service)
    outputs = stack.ensure(spec).outputs
    admin = env.backend.store()
    before = snapshot(admin)
    where = tmp_path / "person"
    where.mkdir()
    try:
        (row,) = lbr_stacks(readonly_backend, where)
        assert (row["service"], row["stack"]) == ("default/inspect", stack.name)
        assert (row["lbId"], row["externalIP"]) == (outputs["lb_id"], outputs["floating_ip"])
        assert (row["lastOperation"], row["lastResult"], row["flags"]) == (
            "update",
            "succeeded",
            [],
        )
        history = lbr_stacks(readonly_backend, where, "--history", "default/inspect")
        assert [(o["operation"], o["result"]) for o in history["operations"]] == [
            ("update", "succeeded")
        ]

        if kind == "postgres":  # the plain CLI on the role's URL: the docs' error
            done = subprocess.run(
                ["pulumi", "stack", "ls", "--all"],
                cwd=where,
                env={**person(where), **readonly_backend.cli_env()},
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )
            assert done.returncode != 0
            error = done.stderr.strip().partition(": failed to create table")[2]
            quoted = f"failed to create table{error}"
            assert quoted.endswith(
                "pq: permission denied for schema public at position 1:28 (42501)"
            )
            assert quoted in DOC.read_text()

        printed = dict(run_recipe(kind, readonly_backend, stack.name, where))
        qualified = f"organization/lb-reconciler/{stack.name}"
        assert list(printed) == [
            "pulumi version",
            f"pulumi stack ls --all --tag lbr:cluster={CLUSTER}",
            f"pulumi stack output --stack {qualified}",
            f"pulumi stack history --stack {qualified}",
            f"pulumi stack export --stack {qualified}",
        ]
        version, listed, shown, history, exported = printed.values()
        assert version.strip() == "v3.259.0"
        assert qualified in listed
        assert re.search(rf"lb_id\s+{outputs['lb_id']}", shown), shown
        assert re.search(rf"floating_ip\s+{re.escape(str(outputs['floating_ip']))}", shown), shown
        assert "UpdateKind: update" in history
        assert "Status: succeeded" in history
        assert LB_TYPE in {r["type"] for r in json.loads(exported)["deployment"]["resources"]}
    finally:
        try:
            assert snapshot(admin) == before
        finally:
            admin.close()
            stack.delete()

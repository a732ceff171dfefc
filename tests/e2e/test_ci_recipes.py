"""The CI recipes of ``examples/ci/`` run as written, in the image, against a read-only backend.

The controller's engine brings ``default/web`` up on a ``postgres://`` backend (the emulator as
the cloud). A repository of manifests then holds a pull request: ``web`` with a second port and
a new Service ``api``, and the controller's cloud.conf without its credentials, whose Keystone
does not even answer (a closed port): CI has no cloud.

* **GitHub Actions** (``examples/ci/github-actions.yml``): the ``preview`` step's script, read
  from the YAML, runs in bash as the runner runs it, with ``docker`` being podman (this
  machine's flags) and the image this tree built; the backend secret is the read-only role's
  URL (``examples/ci/readonly-postgres.sql``). The step passes with a warning (exit 2), its
  output says ``code=2``, and the Markdown (comment and job summary) names the new listener
  and the new Service.
* **GitLab CI** (``examples/ci/gitlab-ci.yml``): the job's ``script`` lines run in the image (its
  entrypoint cleared, as the job says), with the job's variables, the read-only URL, and the
  Nodes from the cluster through CI's kubeconfig made as ``examples/ci/rbac.yaml`` says. The
  job ends with exit 2, which the job allows (``allow_failure: exit_codes: [2]``).

Throughout, the backend (every object, read as the admin) is byte for byte as before.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from reconciler.config import Secret
from reconciler.controller.kubeapi import KubeApi, KubeError
from reconciler.engine.stack import Engine, EngineSettings
from reconciler.local.toolchain import Toolchain
from reconciler.toolchain import REPO_ROOT
from tests.backends import Backend
from tests.builders import make_node, make_service, stored_service
from tests.e2e.container import IMAGE, podman_flags
from tests.e2e.test_ci_rbac import admin, ci_kubeconfig  # noqa: F401 (fixtures)
from tests.e2e.test_image import image_of_this_tree  # noqa: F401 (fixture)
from tests.emulated import (
    cloud_conf_text,
    cloud_config,
    emulator_fixtures,
    subnet_line,
    without_cloud,
)
from tests.readonly import postgres_read_only

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

EXAMPLES = REPO_ROOT / "examples" / "ci"
CLUSTER = "prod"  # the recipes' LBR_CLUSTER_NAME
WORKERS = [("ci-worker-a", "10.0.0.21"), ("ci-worker-b", "10.0.0.22")]
NODES = [make_node(name, internal=address, hostname=False) for name, address in WORKERS]
MONITOR = {"loadbalancer.openstack.org/enable-health-monitor": "true"}

emu, topo, cloud = emulator_fixtures(scope="module", admin="cloud")


def manifest(name: str, ports: list[dict[str, Any]]) -> str:
    """As in git: no uid, no nodePort."""
    return yaml.safe_dump(make_service(name, annotations=MONITOR, ports=ports), sort_keys=False)


@pytest.fixture(scope="module")
def live(
    topo: dict[str, Any],
    toolchain: Toolchain,
    backend_servers: Any,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Backend, Backend]]:
    """``default/web`` as the controller keeps it on a ``postgres://`` backend; that backend
    and its read-only twin."""
    from reconciler.model import build_spec

    folder = tmp_path_factory.mktemp("ci-recipes")
    backend = backend_servers.backend("postgres", folder=folder)
    config = cloud_config(topo, subnet_line(topo))
    spec = build_spec(
        service=stored_service("web", annotations=MONITOR),
        nodes=NODES,
        config=config,
        cluster_name=CLUSTER,
    ).spec
    assert spec is not None
    engine = Engine(
        settings=EngineSettings(
            cluster_name=CLUSTER,
            state_dir=folder / "controller",
            auth=config.auth,
            toolchain=toolchain,
            passphrase=Secret("the-controller-s-passphrase"),
            backend_url=backend.url,
            extra_env=backend.env,
        )
    )
    stack = engine.stack(service=spec.service)
    stack.ensure(spec)
    yield backend, postgres_read_only(backend)
    stack.delete()


@pytest.fixture
def repository(topo: dict[str, Any], tmp_path: Path) -> Path:
    """The manifests' repository with the pull request checked out."""
    repo = tmp_path / "repo"
    services = repo / "deploy" / "services"
    services.mkdir(parents=True)
    two = [{"name": "http", "port": 80}, {"name": "https", "port": 443}]
    (services / "web.yaml").write_text(manifest("web", two))
    (services / "api.yaml").write_text(manifest("api", [{"name": "http", "port": 80}]))
    no_cloud = without_cloud(topo)
    (repo / "deploy" / "lb").mkdir()
    (repo / "deploy" / "lb" / "cloud.conf").write_text(cloud_conf_text(no_cloud, subnet_line(topo)))
    for path in repo.rglob("*"):  # the image's user is not this one
        path.chmod(0o755 if path.is_dir() else 0o644)
    repo.chmod(0o777)  # GitLab's job writes preview.md in its checkout
    return repo


def check_markdown(text: str) -> None:
    assert "`default/web`" in text, text
    assert "`default/api`" in text
    assert "`listener-tcp-443`" in text  # web's new port
    assert "`lb`" in text  # api's new load balancer
    assert "not checked (no cloud credentials)" in text


def test_the_github_actions_recipe(
    live: tuple[Backend, Backend], repository: Path, tmp_path: Path
) -> None:
    backend, readonly = live
    workflow = yaml.safe_load((EXAMPLES / "github-actions.yml").read_text())
    (job,) = workflow["jobs"].values()
    (step,) = [s for s in job["steps"] if s.get("id") == "preview"]
    shim = tmp_path / "bin"
    shim.mkdir()
    flags = " ".join(shlex.quote(f) for f in podman_flags())
    (shim / "docker").write_text(f'#!/bin/bash\nsub=$1; shift\nexec podman "$sub" {flags} "$@"\n')
    (shim / "docker").chmod(0o755)
    output, summary = tmp_path / "output", tmp_path / "summary"
    env = {
        "PATH": f"{shim}{os.pathsep}{os.environ['PATH']}",
        "HOME": str(tmp_path),
        **{k: str(v) for k, v in workflow["env"].items()},
        "LBR_IMAGE": IMAGE,  # this tree's, instead of the registry's
        "LBR_BACKEND_URL": readonly.url,  # the secret
        "GITHUB_OUTPUT": str(output),
        "GITHUB_STEP_SUMMARY": str(summary),
    }
    assert env["LBR_CLUSTER_NAME"] == CLUSTER
    before = backend.digest()
    done = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
        cwd=repository,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "::warning title=load balancers::" in done.stdout
    assert "code=2" in output.read_text().splitlines()
    check_markdown((repository / "preview.md").read_text())
    check_markdown(summary.read_text())
    assert "members: the Nodes the stack was last applied with" in summary.read_text()
    assert backend.digest() == before
    comment = next(s for s in job["steps"] if s.get("name") == "comment")
    assert "--body-file preview.md" in comment["run"]


def test_the_gitlab_recipe(
    live: tuple[Backend, Backend],
    repository: Path,
    ci_kubeconfig: Path,  # noqa: F811 (the fixture)
    admin: KubeApi,  # noqa: F811
) -> None:
    backend, readonly = live
    made = []
    for node in NODES:  # Nodes in the cluster (taken away after: the control plane is shared)
        try:
            admin.create("/api/v1/nodes", node)
            made.append(node["metadata"]["name"])
        except KubeError as exc:
            if not exc.conflict:
                raise
    try:
        _run_the_gitlab_job(backend, readonly, repository, kubeconfig_file=ci_kubeconfig)
    finally:
        for name in made:
            admin.request(method="DELETE", path=f"/api/v1/nodes/{name}")


def _run_the_gitlab_job(
    backend: Backend, readonly: Backend, repository: Path, *, kubeconfig_file: Path
) -> None:
    job = yaml.safe_load((EXAMPLES / "gitlab-ci.yml").read_text())["lb-preview"]
    assert job["image"]["entrypoint"] == [""]
    assert job["allow_failure"] == {"exit_codes": [2]}
    kubeconfig = repository / "ci.kubeconfig"  # the file-type variable
    kubeconfig.write_bytes(kubeconfig_file.read_bytes())
    kubeconfig.chmod(0o644)
    variables = {
        **{k: str(v) for k, v in job["variables"].items()},
        "LBR_BACKEND_URL": readonly.url,
        "LBR_KUBECONFIG": "/work/ci.kubeconfig",
    }
    script = "\n".join(["set -eo pipefail", *job["script"]])
    before = backend.digest()
    done = subprocess.run(
        [
            "podman",
            "run",
            "--rm",
            *podman_flags(),
            "--network",
            "host",
            "--read-only",
            "--tmpfs",
            "/tmp",
            "-v",
            f"{repository}:/work",
            "-w",
            "/work",
            *(arg for k, v in variables.items() for arg in ("-e", f"{k}={v}")),
            "--entrypoint",
            "bash",
            IMAGE,
            "-c",
            script,
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    check_markdown(done.stdout)  # `cat preview.md`, in the job's log
    check_markdown((repository / "preview.md").read_text())  # the artifact
    # the Nodes came from the cluster (the session's: other tests' Nodes too, so web's members
    # may show as updated), not from the state
    assert "the Nodes the stack was last applied with" not in done.stdout
    assert backend.digest() == before

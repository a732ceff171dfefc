"""`lb-reconciler preview` as CI runs it: read access to the backend and nothing else.

On each kind of backend (file, postgres, s3), the controller's engine brings ``default/web`` up
(the program records its cloud lookups). Then
a pull-request folder is previewed the way docs/preview.md's CI recipe does: a state dir of its
own, the controller's backend through read-only credentials (the PostgreSQL role and the S3
policy of examples/ci/), Nodes from the state, no passphrase, and a cloud.conf with no
credential whose Keystone does not even answer (a closed port). The manifest as in git previews
as unchanged (the lookups replayed from the stack give the same VIP subnet and floating
network); a port added and a new Service preview as changes (exit 2) with what could not be
checked listed; and every object of the backend is byte for byte as before: no stack, lock or
history written, a new Service's stack made only in the throw-away copy.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from reconciler.cli.main import main
from tests.backends import Backend
from tests.emulated import cloud_conf_text, subnet_line, without_cloud
from tests.integration.engine.conftest import CLUSTER, Env
from tests.integration.engine.test_cmd_preview import brought_up, manifest

pytestmark = pytest.mark.slow


def test_a_pull_request_previewed_without_the_cloud_writes_nothing(
    backend_env: Env,
    readonly_backend: Backend,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    commands_env: pytest.MonkeyPatch,
) -> None:
    env = backend_env
    assert env.backend is not None
    _, stack, _ = brought_up(env)
    try:
        assert stack.applied_spec() is not None
        before = env.backend.digest()
        for key, value in readonly_backend.env.items():  # CI's: read-only (s3: its own keys)
            commands_env.setenv(key, value)

        # CI's environment: no passphrase, no OpenStack credential, no cluster
        for name in ("PULUMI_CONFIG_PASSPHRASE", "OS_PASSWORD", "OS_TOKEN", "KUBECONFIG"):
            commands_env.delenv(name, raising=False)
        unreachable = without_cloud(env.topo)
        conf = tmp_path / "cloud.conf"
        conf.write_text(cloud_conf_text(unreachable, subnet_line(env.topo)))
        pr = tmp_path / "pr"
        pr.mkdir()
        base = [
            "preview",
            *("--cloud-config", str(conf)),
            *("--state-dir", str(tmp_path / "ci-state")),
            *("--backend-url", readonly_backend.url),
            *("--cluster-name", CLUSTER),
            "--nodes-from-state",
            *("-f", str(pr)),
        ]

        (pr / "web.yaml").write_text(manifest("web"))
        code = main(base)
        out, err = capsys.readouterr()
        assert code == 0, out + err
        assert "no changes" in out
        assert "not checked" not in out  # every lookup of web was replayed

        two = [{"name": "http", "port": 80}, {"name": "https", "port": 443}]
        (pr / "web.yaml").write_text(manifest("web", ports=two))
        (pr / "api.yaml").write_text(manifest("api"))
        code = main([*base, "-o", "markdown"])
        out, err = capsys.readouterr()
        assert code == 2, out + err
        assert "`default/web`" in out
        assert "`default/api`" in out
        assert "`listener-tcp-443`" in out  # the new port's chain ...
        assert "`listener-tcp-80`" in out  # ... and the new Service's
        assert "the Nodes the stack was last applied with" in out  # web's own
        assert "the Nodes the stack of default/web was last applied with" in out  # api is new
        assert "`members-tcp-80`" in out  # so api's members are previewed
        # api is new: what its program would ask the cloud is listed, not asked
        assert "not checked (no cloud credentials): that the VIP subnet-id" in out
        assert "whether a load balancer named" in out

        assert env.backend.digest() == before
        assert not (tmp_path / "ci-state").exists()  # the state dir is not even made
    finally:
        stack.delete()

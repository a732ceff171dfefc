"""`[Global] use-clouds = true`: the credentials come from clouds.yaml; the whole engine works.

cloud.conf has no credentials of its own, only ``use-clouds``, ``clouds-file`` and ``cloud``; the
emulator writes the clouds.yaml (a password entry and an application-credential entry). The
real engine, Pulumi and provider create a load balancer with a floating IP from the resolved
configuration and the delete path (which also logs in with the engine's own REST client) removes
it: both read the same filled-in ``[Global]``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from emulator.server import EmulatorHandle
from reconciler.config import parse_cloud_conf
from tests.builders import stored_service
from tests.integration.engine.conftest import Env, only, spec_for

# each test starts real pulumi runs or servers for many seconds: not in make test-fast
pytestmark = pytest.mark.slow


@pytest.mark.parametrize("entry", ["emulator", "emulator-appcred"])
def test_credentials_from_clouds_yaml(
    env: Env, emu: EmulatorHandle, tmp_path: Path, entry: str
) -> None:
    clouds = emu.write_clouds_yaml(path=tmp_path / "os" / "clouds.yaml")
    text = (
        f"[Global]\nuse-clouds = true\nclouds-file = {clouds}\ncloud = {entry}\n"
        f"[LoadBalancer]\nsubnet-id = {env.topo['subnet_id']}\n"
    )
    parsed = parse_cloud_conf(text=text, environ={}, search_dirs=())
    assert parsed.config is not None, [str(e) for e in parsed.errors]
    assert parsed.config.auth.auth_url == env.topo["auth_url"]
    assert parsed.config.auth.cloud == ""
    config = parsed.config
    svc = stored_service(f"clouds-{entry}")
    spec = spec_for(svc, config)
    stack = env.engine(config).stack(service=spec.service)
    out = stack.ensure(spec).outputs
    lb = only(env.cloud.lbs())
    assert lb["id"] == out["lb_id"]
    assert out["floating_ip"]
    assert stack.delete().existed
    assert env.cloud.lbs() == []

"""The real engine and provider against the emulator: fixtures for tests/integration/engine.

One emulator per session with the ``instant`` timing profile (every call still shows
``PENDING_*`` until the next read, as Octavia does), a ``file://`` backend per test
(``backend_env``: one of each kind, file, postgres and s3, from ``tests/backends.py``), cloud.conf
text pointing at the emulator's Keystone with the demo user, and helpers that build a spec from
a Service (:func:`tests.builders.stored_service`) the way the controller will
(:func:`reconciler.model.build_spec`). After each test the emulator's inventory must show
nothing created that the test did not delete, and no stack of the test's backends may hold an
OpenStack credential (:mod:`tests.stack_secrets`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from emulator.timing import INSTANT, TimingProfile
from reconciler.config import CloudConfig, Secret
from reconciler.controller.kubeapi import KubeApi
from reconciler.controller.kubeconfig import api_client
from reconciler.engine.stack import Engine, EngineSettings, ServiceStack
from reconciler.local.plane import LocalControlPlane
from reconciler.model import LoadBalancerSpec, build_spec
from reconciler.toolchain import Toolchain
from tests import occm
from tests.backends import Backend
from tests.builders import make_node, stored_service
from tests.emulated import (
    EmulatorAdmin,
    cloud_conf_text,
    cloud_config,
    emulator_fixtures,
    running_emulator,
    subnet_line,
)
from tests.stack_secrets import EMULATOR_CREDENTIALS, assert_no_credentials

CLUSTER = "itest"
PASSPHRASE = "engine-test-passphrase"

emu, topo, cloud = emulator_fixtures(scope="session", timing=INSTANT, admin="cloud")
Cloud = EmulatorAdmin


WORKERS = [("worker-a", "10.0.0.11"), ("worker-b", "10.0.0.12")]
"""The cluster's Nodes, (name, InternalIP): the members of its load balancers."""
NODES = [make_node(name, internal=address, hostname=False) for name, address in WORKERS]


def spec_for(svc: dict[str, Any], config: CloudConfig, nodes: list[dict[str, Any]] | None = None):  # type: ignore[no-untyped-def]
    result = build_spec(
        service=svc, nodes=NODES if nodes is None else nodes, config=config, cluster_name=CLUSTER
    )
    assert result.spec is not None, [str(e) for e in result.errors]
    spec: LoadBalancerSpec = result.spec
    return spec


@dataclass
class Env:
    topo: dict[str, Any]
    cloud: Cloud
    toolchain: Toolchain
    state_dir: Path
    backend: Backend | None = None  # None: file://<state_dir>/backend, the engine's default

    def config(self, load_balancer: str = "", extra: str = "") -> CloudConfig:
        return cloud_config(self.topo, subnet_line(self.topo) + load_balancer, extra)

    def config_without_subnet(self, load_balancer: str = "", extra: str = "") -> CloudConfig:
        return cloud_config(self.topo, load_balancer, extra)

    def cloud_conf_file(self, path: Path) -> Path:
        """cloud.conf for the commands (:meth:`config`'s text) at ``path``."""
        path.write_text(cloud_conf_text(self.topo, subnet_line(self.topo)))
        return path

    def engine(self, config: CloudConfig, **overrides: Any) -> Engine:
        if self.backend is not None:
            overrides.setdefault("backend_url", self.backend.url)
            overrides.setdefault("extra_env", self.backend.env)
        settings = EngineSettings(
            cluster_name=CLUSTER,
            state_dir=self.state_dir,
            auth=config.auth,
            toolchain=self.toolchain,
            passphrase=Secret(PASSPHRASE),
            **overrides,
        )
        return Engine(settings=settings)

    def stack(self, config: CloudConfig, svc: dict[str, Any], **overrides: Any) -> ServiceStack:
        spec = spec_for(svc, config)
        return self.engine(config, **overrides).stack(service=spec.service)


def occm_made(
    env: Env,
    conn: Any,
    name: str,
    ports: Sequence[occm.Port],
    *,
    namespace: str = "default",
    nodes: Sequence[tuple[str, str]] = WORKERS,
    floating_ip: bool = True,
) -> occm.OccmLoadBalancer:
    """What OCCM of this cluster (``CLUSTER``) left for Service ``<namespace>/<name>``: the
    load balancer of :func:`tests.occm.make`, members on ``nodes``."""
    return occm.make(
        conn,
        env.topo,
        cluster=CLUSTER,
        namespace=namespace,
        name=name,
        ports=ports,
        nodes=nodes,
        floating_ip=floating_ip,
    )


@pytest.fixture
def commands_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """The environment of the ``lb-reconciler`` commands a test runs: this suite's passphrase,
    no ``PULUMI_BACKEND_URL`` (the state dir's own backend)."""
    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE", PASSPHRASE)
    monkeypatch.delenv("PULUMI_BACKEND_URL", raising=False)
    return monkeypatch


def no_credentials_in(
    env: Env, url: str = "", backend_env: Mapping[str, str] | None = None
) -> None:
    """Fail the test when a stack of ``url`` (default: the state dir's own ``file://``
    backend, if the test made one) holds an OpenStack credential (:mod:`tests.stack_secrets`)."""
    if not url:
        folder = env.state_dir / "backend"
        if not (folder / ".pulumi").is_dir():
            return
        url = folder.absolute().as_uri()
    values = (env.topo["password"], env.topo.get("application_credential_secret", ""))
    assert_no_credentials(
        url,
        env=backend_env,
        values=(*values, *EMULATOR_CREDENTIALS),
        passphrases=(PASSPHRASE,),
    )


@pytest.fixture
def env(toolchain: Toolchain, topo: dict[str, Any], cloud: Cloud, tmp_path: Path) -> Iterator[Env]:
    made = Env(topo=topo, cloud=cloud, toolchain=toolchain, state_dir=tmp_path / "lbr")
    yield made
    cloud.wait_nothing_created(timeout=15)
    no_credentials_in(made)


@pytest.fixture
def starts(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The `pulumi` commands started, as "verb noun" (e.g. "stack select", "up")."""
    seen: list[str] = []
    real = subprocess.Popen

    def spy(args: Any, *rest: Any, **kw: Any) -> Any:
        argv = [str(a) for a in args]
        if argv and Path(argv[0]).name == "pulumi":
            words = [a for a in argv[1:] if not a.startswith("-")]
            seen.append(" ".join(words[:2]) if words[0] in ("stack", "config") else words[0])
        return real(args, *rest, **kw)

    monkeypatch.setattr(subprocess, "Popen", spy)
    return seen


@pytest.fixture
def backend_env(env: Env, backend: Backend) -> Iterator[Env]:
    """``env`` on a backend of its own, one run per kind (file, postgres, s3); at the end, no
    stack of it may hold an OpenStack credential."""
    yield dataclasses.replace(env, backend=backend)
    no_credentials_in(env, backend.url, {**backend.cli_env(), **backend.env})


@contextlib.contextmanager
def env_of_its_own(
    toolchain: Toolchain, state_dir: Path, *, timing: TimingProfile = INSTANT
) -> Iterator[Env]:
    """An :class:`Env` on an emulator of its own (its faults and timing touch no other test);
    at the end, as ``env``'s, nothing created may be left."""
    with running_emulator(timing=timing) as handle:
        cloud = Cloud(handle)
        made = Env(topo=handle.topology(), cloud=cloud, toolchain=toolchain, state_dir=state_dir)
        yield made
        cloud.wait_nothing_created(timeout=15)
        no_credentials_in(made)


@pytest.fixture
def fault_env(toolchain: Toolchain, tmp_path: Path) -> Iterator[tuple[Env, str]]:
    """An emulator of its own (its faults touch no other test) and its admin URL."""
    with env_of_its_own(toolchain, tmp_path) as env:
        yield env, env.cloud.url


def kube_fixture(namespace: str) -> Any:
    """A fixture ``kube``: the admin's API client on the session's control plane, with
    ``namespace`` created for the test and deleted after it (``kube = kube_fixture(NS)``)."""

    @pytest.fixture(name="kube")
    def kube(control_plane: LocalControlPlane) -> Iterator[KubeApi]:
        api = KubeApi(api_client=api_client(kubeconfig=control_plane.kubeconfig))
        api.create("/api/v1/namespaces", {"metadata": {"name": namespace}})
        yield api
        api.request(method="DELETE", path=f"/api/v1/namespaces/{namespace}")
        api.close()

    return kube


def owner_and_joiner(env: Env) -> tuple[Any, Any, dict[str, Any], dict[str, Any], str]:
    """A Service that owns its load balancer and one that joins it (port 81): their stacks
    (both applied), their Services and the load balancer's ID."""
    config = env.config()
    owner_svc = stored_service("owner")
    owner = env.stack(config, owner_svc)
    lb_id = owner.ensure(spec_for(owner_svc, config)).outputs["lb_id"]
    joiner_svc = stored_service(
        "joiner",
        ports=[{"port": 81, "protocol": "TCP", "nodePort": 30081}],
        annotations={"loadbalancer.openstack.org/load-balancer-id": lb_id},
    )
    joiner = env.stack(config, joiner_svc)
    assert joiner.ensure(spec_for(joiner_svc, config)).outputs["shared"] is True
    return owner, joiner, owner_svc, joiner_svc, lb_id


def only(records: list[dict[str, Any]]) -> dict[str, Any]:
    assert len(records) == 1, records
    return records[0]

"""The real engine and provider against the emulator: fixtures for tests/integration/engine.

One emulator per session with the ``instant`` timing profile (every call still shows
``PENDING_*`` until the next read, as Octavia does), a ``file://`` backend per test, cloud.conf
text pointing at the emulator's Keystone with the demo user, and helpers that build a spec from
a Service the way the controller will (:func:`reconciler.model.build_spec`). After each test
the emulator's inventory must show nothing created that the test did not delete.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from emulator.cloud import CloudConfig as EmulatorConfig
from emulator.server import EmulatorHandle, start
from emulator.timing import INSTANT
from reconciler.config import CloudConfig, Secret, parse_cloud_conf
from reconciler.engine.stack import Engine, EngineSettings, ServiceStack
from reconciler.local.toolchain import Toolchain
from reconciler.model import LoadBalancerSpec, build_spec
from tests.emulated import EmulatorAdmin, cloud_conf_text, wait_until

CLUSTER = "itest"
PASSPHRASE = "engine-test-passphrase"


@pytest.fixture(scope="session")
def emu() -> Iterator[EmulatorHandle]:
    handle = start(config=EmulatorConfig(timing=INSTANT))
    yield handle
    handle.stop()


@pytest.fixture(scope="session")
def topo(emu: EmulatorHandle) -> dict[str, Any]:
    return emu.topology()


Cloud = EmulatorAdmin


@pytest.fixture(scope="session")
def cloud(emu: EmulatorHandle) -> Cloud:
    return Cloud(emu)


def cloud_conf(topo: dict[str, Any], load_balancer: str = "", extra: str = "") -> CloudConfig:
    result = parse_cloud_conf(text=cloud_conf_text(topo, load_balancer, extra))
    assert result.config is not None, [str(e) for e in result.errors]
    return result.config


def service(
    name: str,
    *,
    ports: list[dict[str, Any]] | None = None,
    annotations: dict[str, str] | None = None,
    uid: str | None = None,
    **spec: Any,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": uid or str(uuid.uuid5(uuid.NAMESPACE_URL, f"service/{name}")),
            "annotations": dict(annotations or {}),
        },
        "spec": {
            "type": "LoadBalancer",
            "ports": ports or [{"port": 80, "protocol": "TCP", "nodePort": 30080}],
            "sessionAffinity": "None",
            "externalTrafficPolicy": "Cluster",
            "ipFamilies": ["IPv4"],
            "allocateLoadBalancerNodePorts": True,
        },
        "status": {"loadBalancer": {}},
    }
    body["spec"].update(copy.deepcopy(spec))
    return body


def node(name: str, address: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "spec": {"providerID": f"openstack:///{name}", "taints": []},
        "status": {
            "addresses": [{"type": "InternalIP", "address": address}],
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


NODES = [node("worker-a", "10.0.0.11"), node("worker-b", "10.0.0.12")]


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

    def config(self, load_balancer: str = "", extra: str = "") -> CloudConfig:
        lb = f"subnet-id = {self.topo['subnet_id']}\n{load_balancer}"
        return cloud_conf(self.topo, lb, extra)

    def config_without_subnet(self, load_balancer: str = "", extra: str = "") -> CloudConfig:
        return cloud_conf(self.topo, load_balancer, extra)

    def engine(self, config: CloudConfig, **overrides: Any) -> Engine:
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


@pytest.fixture
def env(toolchain: Toolchain, topo: dict[str, Any], cloud: Cloud, tmp_path: Path) -> Iterator[Env]:
    yield Env(topo=topo, cloud=cloud, toolchain=toolchain, state_dir=tmp_path / "lbr")
    wait_until(lambda: cloud.created() == {} or None, timeout=15)


@pytest.fixture
def fault_env(toolchain: Toolchain, tmp_path: Path) -> Iterator[tuple[Env, str]]:
    """An emulator of its own (its faults touch no other test) and its admin URL."""
    handle: EmulatorHandle = start(config=EmulatorConfig(timing=INSTANT))
    try:
        cloud = Cloud(handle)
        env = Env(topo=handle.topology(), cloud=cloud, toolchain=toolchain, state_dir=tmp_path)
        yield env, cloud.url
        wait_until(lambda: cloud.created() == {} or None, timeout=15)
    finally:
        handle.stop()


def only(records: list[dict[str, Any]]) -> dict[str, Any]:
    assert len(records) == 1, records
    return records[0]

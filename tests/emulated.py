"""The OpenStack emulator as tests use it: one way to start it, its admin endpoint, an
openstacksdk connection, a cloud.conf for it, a wait helper.

Shared by tests/integration/emulator, tests/integration/engine and tests/e2e. Every emulator a
test starts comes from :func:`running_emulator` (a context manager) or :func:`emulator_fixture`
(a pytest fixture around it): a free loopback port (``port=0``), the timing profile the level
needs (``emulator.timing``; ``instant`` by default, as ``emulator.cloud.EmulatorConfig``), optional
fault rules and state file, stopped when the block or the fixture's scope ends.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import openstack
import pytest
import requests

from emulator.cloud import EmulatorConfig
from emulator.faults import FaultConfig
from emulator.server import EmulatorHandle, start
from emulator.timing import INSTANT, TimingProfile
from reconciler.config import CloudConfig, parse_cloud_conf

T = TypeVar("T")


def wait_until(
    probe: Callable[[], T | None], *, timeout: float = 15.0, interval: float = 0.05
) -> T:
    """Poll ``probe`` until it returns something truthy, or fail at the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s")
        time.sleep(interval)


class EmulatorAdmin:
    """The emulator's ``/admin`` API: inventory, what was created and not deleted, faults."""

    def __init__(self, emu: EmulatorHandle | str) -> None:
        base = emu if isinstance(emu, str) else emu.url
        self.url = f"{base}/admin"

    def get(self, path: str) -> Any:
        response = requests.get(self.url + path, timeout=10)
        response.raise_for_status()
        return response.json()

    def post(self, path: str, body: dict[str, Any]) -> Any:
        response = requests.post(self.url + path, json=body, timeout=10)
        response.raise_for_status()
        return response.json()

    def put(self, path: str, body: dict[str, Any]) -> Any:
        response = requests.put(self.url + path, json=body, timeout=10)
        response.raise_for_status()
        return response.json()

    def clear_faults(self) -> None:
        requests.delete(self.url + "/faults", timeout=10).raise_for_status()

    def inventory(self) -> dict[str, list[dict[str, Any]]]:
        resources: dict[str, list[dict[str, Any]]] = self.get("/inventory")["resources"]
        return resources

    def created(self) -> dict[str, list[str]]:
        """IDs of what was created through the API and not deleted since, by kind."""
        created: dict[str, list[str]] = self.get("/inventory")["created"]
        return created

    def lbs(self) -> list[dict[str, Any]]:
        return self.inventory()["loadbalancers"]

    def wait_nothing_created(self, *, timeout: float) -> None:
        """Wait until everything created through the API is deleted again (deletes settle
        after the call that asked for them). What is still there at the deadline is removed
        (:meth:`forget_created`) and named in the failure: the test that left it fails, and the
        tests after it on the same emulator start from the seeded topology, as they would alone."""
        try:
            wait_until(lambda: self.created() == {} or None, timeout=timeout)
        except AssertionError:
            left = self.forget_created()
            raise AssertionError(f"left behind after {timeout}s (now removed): {left}") from None

    def forget_created(self) -> dict[str, list[str]]:
        """Remove everything created since the topology was seeded; what was removed, by kind."""
        response = requests.delete(self.url + "/inventory/created", timeout=10)
        response.raise_for_status()
        removed: dict[str, list[str]] = response.json()["removed"]
        return removed


@contextlib.contextmanager
def running_emulator(
    *,
    timing: TimingProfile = INSTANT,
    faults: FaultConfig | None = None,
    state_file: Path | None = None,
    pagination_max_limit: int | None = None,
    ssl_context: ssl.SSLContext | None = None,
) -> Iterator[EmulatorHandle]:
    """An emulator on a free loopback port for the ``with`` block (HTTPS with an
    ``ssl_context``: :func:`emulator.server.tls_context`)."""
    config = EmulatorConfig(
        timing=timing,
        faults=faults or FaultConfig(),
        state_file=state_file,
        pagination_max_limit=pagination_max_limit,
    )
    handle = start(config=config, ssl_context=ssl_context)
    try:
        yield handle
    finally:
        handle.stop()


def emulator_fixture(
    *,
    name: str = "emu",
    scope: str = "function",
    timing: TimingProfile = INSTANT,
    faults: FaultConfig | None = None,
) -> Any:
    """A fixture called ``name`` giving an emulator of its own per ``scope``; a conftest or test
    module assigns it to a module name, e.g. ``emu = emulator_fixture(scope="session")``."""

    @pytest.fixture(name=name, scope=scope)  # type: ignore[call-overload]
    def emulator() -> Iterator[EmulatorHandle]:
        with running_emulator(timing=timing, faults=faults) as handle:
            yield handle

    return emulator


def emulator_fixtures(
    *,
    scope: str,
    timing: TimingProfile = INSTANT,
    faults: FaultConfig | None = None,
    admin: str = "admin",
) -> tuple[Any, Any, Any]:
    """Three fixtures of ``scope``: ``emu`` (:func:`emulator_fixture`), ``topo`` (its
    topology) and an :class:`EmulatorAdmin` on it called ``admin``; a conftest assigns them,
    e.g. ``emu, topo, admin = emulator_fixtures(scope="session")``."""
    emu = emulator_fixture(scope=scope, timing=timing, faults=faults)

    @pytest.fixture(name="topo", scope=scope)  # type: ignore[call-overload]
    def topo(emu: EmulatorHandle) -> dict[str, Any]:
        return emu.topology()

    @pytest.fixture(name=admin, scope=scope)  # type: ignore[call-overload]
    def admin_api(emu: EmulatorHandle) -> EmulatorAdmin:
        return EmulatorAdmin(emu)

    return emu, topo, admin_api


def connect(topo: dict[str, Any]) -> Any:
    """An openstacksdk connection as the topology's demo user."""
    return openstack.connect(
        auth_url=topo["auth_url"],
        username=topo["username"],
        password=topo["password"],
        project_name=topo["project_name"],
        user_domain_name="Default",
        project_domain_name="Default",
        region_name=topo["region_name"],
    )


def store_certificate(conn: Any, name: str = "tls") -> tuple[Any, Any]:
    """A certificate container in the emulator's Barbican, as ``openstack secret container
    create`` makes one: (the container, its certificate secret)."""
    cert = conn.key_manager.create_secret(
        name=f"{name}-cert", payload="PEM", payload_content_type="text/plain"
    )
    made = conn.key_manager.create_container(
        name=name, type="certificate",
        secret_refs=[{"name": "certificate", "secret_ref": cert.secret_ref}],
    )  # fmt: skip
    return made, cert


def forget_certificates(conn: Any) -> None:
    """Delete every container and secret the connection's project has in Barbican (what
    :func:`store_certificate` stored: tests check the cloud for leftovers)."""
    for container in list(conn.key_manager.containers()):
        conn.key_manager.delete_container(container, ignore_missing=False)
    for secret in list(conn.key_manager.secrets()):
        conn.key_manager.delete_secret(secret, ignore_missing=False)


def without_cloud(topo: dict[str, Any]) -> dict[str, Any]:
    """``topo`` as CI sees it: no password, and a Keystone that does not answer (a loopback
    port nothing listens on: connections are refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    return {**topo, "auth_url": f"http://127.0.0.1:{port}/v3", "password": ""}


def subnet_line(topo: dict[str, Any]) -> str:
    """The [LoadBalancer] line that puts VIPs on the topology's tenant subnet."""
    return f"subnet-id = {topo['subnet_id']}\n"


def cloud_config(topo: dict[str, Any], load_balancer: str = "", extra: str = "") -> CloudConfig:
    """:func:`cloud_conf_text`, parsed (and required to parse)."""
    result = parse_cloud_conf(text=cloud_conf_text(topo, load_balancer, extra))
    assert result.config is not None, [str(e) for e in result.errors]
    return result.config


def cloud_conf_text(topo: dict[str, Any], load_balancer: str = "", extra: str = "") -> str:
    """An OCCM cloud.conf for the emulator's demo user; ``load_balancer``: [LoadBalancer] lines."""
    return f"""
[Global]
auth-url = {topo["auth_url"]}
username = {topo["username"]}
password = {topo["password"]}
tenant-name = {topo["project_name"]}
user-domain-name = {topo["user_domain_name"]}
tenant-domain-name = {topo["project_domain_name"]}
region = {topo["region_name"]}

[LoadBalancer]
{load_balancer}
{extra}
"""

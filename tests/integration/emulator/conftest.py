"""A real emulator on a free loopback port, with short but observable provisioning delays.

The fixtures give the emulator handle, the default topology's IDs, an openstacksdk connection
and an admin helper. After each test the fault configuration is cleared and the inventory must
show nothing left that the test created (tests clean up after themselves).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import openstack
import pytest
import requests

from emulator.cloud import CloudConfig
from emulator.server import EmulatorHandle, start
from emulator.timing import TimingProfile

FAST = TimingProfile(name="test", lb_create=0.4, lb_update=0.2, lb_delete=0.2, child=0.15)
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


@pytest.fixture(scope="session")
def emu() -> Iterator[EmulatorHandle]:
    handle = start(config=CloudConfig(timing=FAST))
    yield handle
    handle.stop()


@pytest.fixture(scope="session")
def topo(emu: EmulatorHandle) -> dict[str, Any]:
    return emu.topology()


class Admin:
    def __init__(self, url: str) -> None:
        self.url = f"{url}/admin"

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

    def created(self) -> dict[str, list[str]]:
        created: dict[str, list[str]] = self.get("/inventory")["created"]
        return created


@pytest.fixture(scope="session")
def admin(emu: EmulatorHandle) -> Admin:
    return Admin(emu.url)


@pytest.fixture
def conn(emu: EmulatorHandle, topo: dict[str, Any]) -> Any:
    return openstack.connect(
        auth_url=emu.auth_url,
        username=topo["username"],
        password=topo["password"],
        project_name=topo["project_name"],
        user_domain_name="Default",
        project_domain_name="Default",
        region_name=topo["region_name"],
    )


@pytest.fixture(autouse=True)
def no_orphans(admin: Admin) -> Iterator[None]:
    yield
    admin.clear_faults()
    wait_until(lambda: admin.created() == {} or None, timeout=10)

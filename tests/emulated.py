"""The OpenStack emulator as tests use it: its admin endpoint, a cloud.conf for it, a wait helper.

Shared by tests/integration/emulator, tests/integration/engine and tests/e2e; each level starts
its emulator with the timing profile it needs (``emulator.timing``) and wraps it here.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

import requests

from emulator.server import EmulatorHandle

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

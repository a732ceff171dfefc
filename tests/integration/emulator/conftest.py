"""A real emulator on a free loopback port, with short but observable provisioning delays.

The fixtures give the emulator handle, the default topology's IDs, an openstacksdk connection
and an admin helper. After each test the fault configuration is cleared and the inventory must
show nothing left that the test created (tests clean up after themselves).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from emulator.timing import TimingProfile
from tests.emulated import EmulatorAdmin, connect, emulator_fixtures, wait_until

__all__ = ["FAST", "Admin", "wait_until"]

FAST = TimingProfile(name="test", lb_create=0.4, lb_update=0.2, lb_delete=0.2, child=0.15)

emu, topo, admin = emulator_fixtures(scope="session", timing=FAST)
Admin = EmulatorAdmin


@pytest.fixture
def conn(topo: dict[str, Any]) -> Any:
    return connect(topo)


@pytest.fixture(autouse=True)
def no_orphans(admin: Admin) -> Iterator[None]:
    yield
    admin.clear_faults()
    admin.wait_nothing_created(timeout=10)

"""Pure fixtures: a cloud on a manual clock, with delays so PENDING_* states can be observed."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from emulator.cloud import Cloud, EmulatorConfig
from emulator.context import AuthContext
from emulator.timing import ManualClock, TimingProfile

SLOW = TimingProfile(name="test", lb_create=3.0, lb_update=1.0, lb_delete=2.0, child=0.5)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def cloud(clock: ManualClock) -> Iterator[Cloud]:
    c = Cloud(config=EmulatorConfig(timing=SLOW), clock=clock)
    yield c
    c.close()


@pytest.fixture
def ctx(cloud: Cloud) -> AuthContext:
    project = cloud.keystone.project_by_name("demo")
    return AuthContext(user_id="u", project_id=project["id"], roles=("member",))


@pytest.fixture
def topo(cloud: Cloud) -> dict[str, str]:
    return cloud.topology_info(auth_url="http://x/identity/v3")

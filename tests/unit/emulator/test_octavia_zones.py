"""Availability zones and flavors on load balancer create, answered as Octavia answers them
(octavia/api/v2/controllers/load_balancer.py: ``_validate_availability_zone``,
``_validate_flavor``; octavia/common/exceptions.py: ``ValidationException``,
``DisabledOption``)."""

from __future__ import annotations

import copy
from collections.abc import Iterator

import pytest

from emulator.cloud import Cloud, EmulatorConfig
from emulator.context import AuthContext
from emulator.errors import BadRequest
from emulator.timing import ManualClock
from emulator.topology import DEFAULT_TOPOLOGY, Topology, validate_topology

FLAVOR = "8d3f3c51-0000-4000-8000-0000000000f1"


@pytest.fixture
def zoned(clock: ManualClock) -> Iterator[Cloud]:
    data = copy.deepcopy(DEFAULT_TOPOLOGY)
    data["octavia"]["availability_zones"] = [
        {"name": "az-1"},
        {"name": "az-off", "enabled": False},
    ]
    data["octavia"]["flavors"] = [{"id": FLAVOR, "name": "small"}]
    validate_topology(data)
    cloud = Cloud(config=EmulatorConfig(topology=Topology(data=data)), clock=clock)
    yield cloud
    cloud.close()


def _ctx(cloud: Cloud) -> AuthContext:
    project = cloud.keystone.project_by_name("demo")
    return AuthContext(user_id="u", project_id=project["id"], roles=("member",))


def _subnet(cloud: Cloud) -> str:
    return str(cloud.topology_info(auth_url="http://x/identity/v3")["subnet_id"])


def test_an_unknown_zone_is_octavias_400(zoned: Cloud) -> None:
    body = {"vip_subnet_id": _subnet(zoned), "availability_zone": "az-2"}
    with pytest.raises(BadRequest) as err:
        zoned.octavia.create_loadbalancer(_ctx(zoned), body)
    assert err.value.message == "Validation failure: Invalid availability zone."
    assert zoned.octavia.list_records("loadbalancer", _ctx(zoned), {}) == []


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        pytest.param(
            "availability_zone",
            "az-off",
            "The selected availability_zone is not allowed in this deployment: az-off",
            id="a-disabled-zone-is-refused-by-name",
        ),
        pytest.param(
            "flavor_id",
            "no-such-flavor",
            "Validation failure: Invalid flavor_id.",
            id="an-unknown-flavor-is-octavias-400",
        ),
    ],
)
def test_refused(zoned: Cloud, field: str, value: str, message: str) -> None:
    body = {"vip_subnet_id": _subnet(zoned), field: value}
    with pytest.raises(BadRequest) as err:
        zoned.octavia.create_loadbalancer(_ctx(zoned), body)
    assert err.value.message == message


def test_a_known_zone_and_flavor_are_accepted(zoned: Cloud) -> None:
    body = {"vip_subnet_id": _subnet(zoned), "availability_zone": "az-1", "flavor_id": FLAVOR}
    lb = zoned.octavia.create_loadbalancer(_ctx(zoned), body)
    assert (lb["availability_zone"], lb["flavor_id"]) == ("az-1", FLAVOR)


def test_the_default_topology_has_no_zone(cloud: Cloud, ctx: AuthContext) -> None:
    body = {"vip_subnet_id": _subnet(cloud), "availability_zone": "az-2"}
    with pytest.raises(BadRequest, match=r"^Validation failure: Invalid availability zone\.$"):
        cloud.octavia.create_loadbalancer(ctx, body)

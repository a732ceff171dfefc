"""floating-subnet and floating-subnet-tags pick the floating IP's subnet as OCCM matches them.

Real engine, Pulumi and provider against the emulator: the floating network ``public`` gets
more subnets (named and tagged, one of them IPv6) made by the admin, each Service asks for its
floating IP by name pattern (glob, ``~regexp``, ``!``) and/or tags (any, ``&`` all, ``!``), and
the floating IP that ``ensure`` creates must come from the subnet OCCM's matching selects: the
first match by name among the IPv4 subnets (floating IPs are IPv4). No match is an invalid spec
whose message lists the network's subnets.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from typing import Any

import openstack
import pytest

from reconciler.engine.errors import InvalidConfigError
from tests.builders import stored_service
from tests.integration.engine.conftest import Env, only, spec_for

# each test starts real pulumi runs or servers for many seconds: not in make test-fast
pytestmark = pytest.mark.slow

A = "loadbalancer.openstack.org/"

# name -> (cidr, tags); "public-subnet" (172.24.4.0/24, no tags) is the topology's own
SUBNETS = {
    "fip-a": ("172.30.1.0/24", ["internet"]),
    "fip-b": ("172.30.2.0/24", ["internet", "dmz"]),
    "other": ("172.30.3.0/24", ["dmz"]),
    "fip-0-v6": ("fd00:30::/64", ["internet", "dmz"]),  # first by name, but no floating IPs
}


def _admin(topo: dict[str, Any]) -> Any:
    return openstack.connect(
        auth_url=topo["auth_url"],
        username="admin",
        password="admin-password",
        project_name="admin",
        user_domain_name="Default",
        project_domain_name="Default",
        region_name=topo["region_name"],
    )


@pytest.fixture
def subnets(env: Env) -> Iterator[dict[str, str]]:
    conn = _admin(env.topo)
    made = {}
    try:
        for name, (cidr, tags) in SUBNETS.items():
            version = ipaddress.ip_network(cidr).version
            subnet = conn.network.create_subnet(
                network_id=env.topo["external_network_id"],
                name=name,
                cidr=cidr,
                ip_version=version,
            )
            conn.network.set_tags(subnet, tags)
            made[name] = subnet.id
        yield made
    finally:
        for subnet_id in made.values():
            conn.network.delete_subnet(subnet_id)


def _fip_subnet(env: Env, address: str) -> str:
    inv = env.cloud.inventory()
    only([f for f in inv["floatingips"] if f["floating_ip_address"] == address])
    ip = ipaddress.ip_address(address)
    if ip in ipaddress.ip_network("172.24.4.0/24"):
        return "public-subnet"
    return next(n for n, (cidr, _t) in SUBNETS.items() if ip in ipaddress.ip_network(cidr))


@pytest.mark.parametrize(
    ("annotations", "expected"),
    [
        ({A + "floating-subnet": "fip-*"}, "fip-a"),  # glob; the IPv6 match is skipped
        ({A + "floating-subnet": "~fip-[b-z]"}, "fip-b"),  # Go regexp, whole name
        ({A + "floating-subnet": "!fip-*", A + "floating-subnet-tags": "dmz"}, "other"),
        ({A + "floating-subnet-tags": "&internet,dmz"}, "fip-b"),  # all of
        ({A + "floating-subnet-tags": "internet,nothing"}, "fip-a"),  # any of
        ({A + "floating-subnet-tags": "!internet"}, "other"),  # none of
    ],
)
def test_floating_ip_comes_from_the_matching_subnet(
    env: Env, subnets: dict[str, str], annotations: dict[str, str], expected: str
) -> None:
    config = env.config()
    svc = stored_service("fipsub", annotations=annotations)
    spec = spec_for(svc, config)
    stack = env.engine(config).stack(service=spec.service)
    out = stack.ensure(spec).outputs
    assert _fip_subnet(env, out["floating_ip"]) == expected
    stack.delete()


def test_no_matching_subnet_is_an_invalid_spec_listing_the_subnets(
    env: Env, subnets: dict[str, str]
) -> None:
    config = env.config(
        f"floating-subnet = nothing-*\nfloating-network-id = {env.topo['external_network_id']}"
    )
    svc = stored_service("fipnone")
    spec = spec_for(svc, config)
    stack = env.engine(config).stack(service=spec.service)
    with pytest.raises(InvalidConfigError, match=r"floating-subnet 'nothing-\*'.*fip-a") as err:
        stack.ensure(spec)
    assert "floating-subnet-id" in str(err.value)
    stack.delete()
    assert env.cloud.lbs() == []

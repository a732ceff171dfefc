"""A VIP ``subnet-id`` of the wrong IP family is refused before anything is made (issue 13),
on the real engine against the emulator: without the check, an IPv4 Service given an IPv6
subnet got an IPv6 load balancer whose listener then failed, and the load balancer leaked."""

from __future__ import annotations

import pytest

from reconciler.engine.errors import InvalidConfigError
from tests.builders import stored_service
from tests.emulated import connect
from tests.integration.engine.conftest import Env, spec_for

# each test starts real pulumi runs or servers for many seconds: not in make test-fast
pytestmark = pytest.mark.slow

A = "loadbalancer.openstack.org/"


def test_ipv6_subnet_for_an_ipv4_service_is_refused(env: Env) -> None:
    conn = connect(env.topo)
    v6 = conn.network.create_subnet(
        network_id=env.topo["network_id"], name="vip-v6", cidr="fd00:30::/64", ip_version=6
    )
    try:
        config = env.config()
        spec = spec_for(stored_service("family", annotations={A + "subnet-id": v6.id}), config)
        stack = env.engine(config).stack(service=spec.service)
        try:
            with pytest.raises(InvalidConfigError, match="is an IPv6 subnet but the Service's"):
                stack.ensure(spec)
            assert env.cloud.lbs() == []
        finally:
            stack.delete()
    finally:
        conn.network.delete_subnet(v6.id)

"""The program's shape under Pulumi's unit-test mocks: which resources, names, order, outputs.

The mocks stand in for the engine and the provider only to check what the program declares;
what the cloud does with it is the integration tests' job (tests/integration/engine).
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pulumi
import pytest

from reconciler.config import default_config, with_overrides
from reconciler.model import LoadBalancerSpec
from tests.unit.model_helpers import UUID1, spec_of

SUBNET = UUID1
EXTERNAL = "5a0356e7-d3a3-5400-9468-c6c1c9075c90"


class Mocks(pulumi.runtime.Mocks):
    def __init__(self) -> None:
        self.resources: list[pulumi.runtime.MockResourceArgs] = []
        self.calls: list[str] = []

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        self.resources.append(args)
        state = dict(args.inputs)
        if args.typ.endswith("LoadBalancer"):
            state.update(vipAddress="10.0.0.5", vipPortId="vip-port")
        if args.typ.endswith("FloatingIp"):
            state.update(address="172.24.4.10")
        return f"{args.name}-id", state

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict[str, Any], list[Any]]:
        self.calls.append(args.token)
        if args.token.endswith("getNetwork"):
            return {"id": EXTERNAL, "name": "public"}, []
        if args.token.endswith("getFloatingIp"):
            raise Exception("Your query returned no results.")
        if args.token.endswith("getSubnet"):
            return {"id": SUBNET, "cidr": "10.0.0.0/24", "ipVersion": 4}, []
        if args.token.endswith("getPort"):
            raise Exception("Your query returned no results.")
        return {}, []


def run(spec: LoadBalancerSpec) -> Mocks:
    """Declare ``spec`` under mocks and wait until every registration has reached them."""
    from stacks.program import declare

    mocks = Mocks()
    pulumi.runtime.set_mocks(mocks, preview=False)
    pulumi.runtime.test(lambda: declare(spec))()
    return mocks


def by_name(mocks: Mocks) -> dict[str, pulumi.runtime.MockResourceArgs]:
    return {r.name: r for r in mocks.resources}


@pytest.fixture
def config() -> Any:
    return with_overrides(default_config(), subnet_id=SUBNET, create_monitor=True)


def test_one_port_declares_the_occm_objects(config: Any) -> None:
    spec = spec_of(config=config)
    mocks = run(spec)
    names = by_name(mocks)
    assert set(names) == {
        "lb",
        "listener-tcp-8765",
        "pool-tcp-8765",
        "members-tcp-8765",
        "monitor-tcp-8765",
        "fip",
        "fip-association",
    }
    lb = names["lb"].inputs
    assert lb["name"] == "kube_service_kubernetes_default_example-service"
    assert lb["tags"] == ["kube_service_kubernetes_default_example-service"]
    assert lb["vipSubnetId"] == SUBNET
    listener = names["listener-tcp-8765"].inputs
    assert listener["name"] == "listener_0_kube_service_kubernetes_default_example-service"
    assert names["fip"].inputs["pool"] == "public"
    assert names["fip"].inputs["description"].startswith("Floating IP for Kubernetes")


def test_internal_has_no_floating_ip(config: Any) -> None:
    spec = spec_of(
        {"service.beta.kubernetes.io/openstack-internal-load-balancer": "true"}, config=config
    )
    mocks = run(spec)
    assert not [r for r in mocks.resources if "FloatingIp" in r.typ]


def test_ports_are_chained_after_each_other(config: Any) -> Any:
    ports = [
        {"name": "a", "port": 80, "protocol": "TCP", "nodePort": 30080},
        {"name": "b", "port": 443, "protocol": "TCP", "nodePort": 30443},
    ]
    spec = spec_of(config=config, ports=ports)
    mocks = run(spec)
    names = by_name(mocks)
    assert {"listener-tcp-80", "monitor-tcp-80", "listener-tcp-443", "monitor-tcp-443"} <= set(
        names
    )
    # registration follows the chain: lb, then port 80's chain, then port 443's
    order = [r.name for r in mocks.resources if not r.name.startswith("fip")]
    assert order.index("monitor-tcp-80") < order.index("listener-tcp-443")


def test_shared_internal_is_refused(config: Any) -> None:
    from stacks.lookups import InvalidSpecError
    from stacks.program import declare

    spec = spec_of(
        {
            "service.beta.kubernetes.io/openstack-internal-load-balancer": "true",
            "loadbalancer.openstack.org/load-balancer-id": UUID1,
        },
        config=config,
    )
    pulumi.runtime.set_mocks(Mocks(), preview=False)
    with pytest.raises(InvalidSpecError, match="internal Service cannot share"):
        declare(spec)


def test_spec_round_trips_through_config_json(config: Any) -> None:
    spec = spec_of(config=config)
    again = LoadBalancerSpec.from_dict(json.loads(spec.canonical_json()))
    assert again == spec
    assert again.spec_hash() == spec.spec_hash()


def test_the_providers_not_found_messages_are_no_result() -> None:
    """getFloatingIp says "No openstack_networking_floatingip_v2 found" when no floating IP has
    the address (a loadBalancerIP not allocated yet): the program then creates it."""
    from stacks.lookups import _no_result

    invoke = "invoking openstack:networking/getFloatingIp:getFloatingIp: 1 error occurred:\n\t* "
    assert _no_result(Exception(invoke + "No openstack_networking_floatingip_v2 found"))
    assert _no_result(Exception("Your query returned no results."))
    assert not _no_result(Exception(invoke + "Unauthorized"))


_NOT_IMPORTED = ("SecGroupRule", "PortSecGroupAssociate")  # never looked for after a crash


@pytest.mark.parametrize(
    ("annotations", "ports", "monitor"),
    [
        ({}, None, True),
        ({}, None, False),
        ({"service.beta.kubernetes.io/openstack-internal-load-balancer": "true"}, None, True),
        ({"loadbalancer.openstack.org/manage-security-groups": "true"}, None, True),
        (
            {},
            [
                {"name": "a", "port": 80, "protocol": "TCP", "nodePort": 30080},
                {"name": "b", "port": 53, "protocol": "UDP", "nodePort": 30053},
            ],
            True,
        ),
    ],
)
def test_adoptable_names_are_what_the_program_declares(
    annotations: dict[str, str], ports: list[dict[str, Any]] | None, monitor: bool
) -> None:
    """The engine deletes a recovered object whose name is not in ``adoptable_names``: a
    name the program declares but the function misses would be deleted and made again."""
    from stacks.program import adoptable_names

    config = with_overrides(default_config(), subnet_id=SUBNET, create_monitor=monitor)
    extra = {"ports": ports} if ports else {}
    spec = spec_of(annotations, config=config, **extra)
    declared = {r.name for r in run(spec).resources if not r.typ.endswith(_NOT_IMPORTED)}
    assert declared == adoptable_names(spec)


class _NodePortMocks(Mocks):
    """Every Node address has a Neutron port, so the security group is attached to it."""

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict[str, Any], list[Any]]:
        if args.token.endswith("getPort"):
            self.calls.append(args.token)
            return {"id": f"port-{args.args.get('fixedIp')}"}, []
        return super().call(args)


def test_every_resource_is_declared_as_the_vocabulary_spells_it(config: Any) -> None:
    """The engine finds, imports and deletes the program's objects by the logical names and type
    tokens of stacks.vocabulary: each must be what the program declares and the SDK sends."""
    from stacks import vocabulary as v
    from stacks.program import declare

    config = with_overrides(config, manage_security_groups=True)
    spec = spec_of(config=config)
    assert spec.security_group is not None
    mocks = _NodePortMocks()
    pulumi.runtime.set_mocks(mocks, preview=False)
    pulumi.runtime.test(lambda: declare(spec))()
    types = {r.name: r.typ for r in mocks.resources}
    key = v.logical_suffix(spec.listeners[0])
    assert key == "tcp-8765"
    named = {
        v.LB: v.LB_TYPE,
        v.listener_name(key): v.LISTENER_TYPE,
        v.pool_name(key): v.POOL_TYPE,
        v.members_name(key): v.MEMBERS_TYPE,
        v.monitor_name(key): v.MONITOR_TYPE,
        v.FIP: v.FIP_TYPE,
        v.FIP_ASSOCIATION: v.FIP_ASSOCIATION_TYPE,
        v.SECURITY_GROUP: v.SECURITY_GROUP_TYPE,
    }
    assert {name: types.get(name) for name in named} == named
    rest = {name: t for name, t in types.items() if name not in named}
    rules = {n for n in rest if n.startswith(v.SG_RULE_PREFIX)}
    ports = {n for n in rest if n.startswith(v.SG_PORT_PREFIX)}
    assert rules
    assert ports
    assert rules | ports == set(rest)
    assert {rest[n] for n in rules} == {v.SECURITY_GROUP_RULE_TYPE}
    assert {rest[n] for n in ports} == {v.PORT_SG_TYPE}
    assert v.PROTECTED == {v.LB: v.LB_TYPE, v.FIP: v.FIP_TYPE}


def test_the_program_can_start_in_several_threads_of_a_fresh_process() -> None:
    """A new leader's first syncs start several ``up``s at once in one process: the program's
    first use of ``pulumi_openstack.networking`` and ``.loadbalancer`` (lazy modules, whose first
    load is not thread-safe before Python 3.13: cpython gh-114763) must not race. It did:
    ``module 'pulumi_openstack.networking' has no attribute 'get_subnet'``."""
    script = """
import threading
import stacks.program  # what the engine imports before it runs the program
import pulumi_openstack as openstack
errors = []
def first_use():
    try:
        openstack.networking.get_subnet, openstack.loadbalancer.LoadBalancer
    except AttributeError as exc:
        errors.append(str(exc))
threads = [threading.Thread(target=first_use) for _ in range(8)]
for t in threads: t.start()
for t in threads: t.join()
print(errors)
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.strip() == "[]", done.stdout


def run_looking(spec: LoadBalancerSpec, look: Any) -> Mocks:
    from stacks.program import declare

    mocks = Mocks()
    pulumi.runtime.set_mocks(mocks, preview=True)
    pulumi.runtime.test(lambda: declare(spec, look=look))()
    return mocks


def test_lookups_are_recorded_and_replayed_without_asking_the_cloud(config: Any) -> None:
    from stacks.recorded import UNKNOWN, Lookups

    spec = spec_of(config=config)  # subnet-id given: its family is checked; the FIP network found
    asked = Lookups()
    online = run_looking(spec, asked)
    assert online.calls  # the cloud was asked
    assert set(asked.found) == {
        f"vip-family {SUBNET} None IPv4",
        "external-network",
        f"network-name {EXTERNAL}",
    }
    assert asked.found["external-network"] == EXTERNAL
    assert asked.found[f"network-name {EXTERNAL}"] == "public"

    replayed = Lookups(recorded=json.loads(json.dumps(asked.found)))  # as the output keeps it
    offline = run_looking(spec, replayed)
    assert offline.calls == []  # nothing asked
    assert replayed.unchecked == []
    assert {r.name: r.inputs for r in offline.resources} == {
        r.name: r.inputs for r in online.resources
    }

    # nothing recorded (a new Service): placeholders, each lookup said, still nothing asked
    new = Lookups(recorded={})
    fresh = run_looking(spec, new)
    assert fresh.calls == []
    assert by_name(fresh)["fip"].inputs["pool"] == UNKNOWN
    assert len(new.unchecked) == 2  # the VIP subnet's family, the external network
    assert any("external network" in what for what in new.unchecked)

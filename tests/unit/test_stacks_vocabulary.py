"""The stack's vocabulary (stacks/vocabulary.py): spellings that existing stacks carry.

A logical name is part of a resource's URN, so each spelling here is pinned as it is in the
stacks users have today: a change would make Pulumi replace their load balancers. What the
program declares under these names is tests/unit/test_stacks_program.py's.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from reconciler.engine.plan import resource_urn
from stacks.vocabulary import (
    CONFIG_NAMESPACE,
    FIP_DESCRIPTION_MARKER,
    IMPORTS_KEY,
    LB_TYPE,
    PROJECT,
    RELEASE_KEY,
    SPEC_KEY,
    listener_name,
    logical_name,
    logical_suffix,
    members_name,
    monitor_name,
    object_kind,
    pool_name,
    sg_port_name,
    sg_rule_name,
    urn_of,
)


@dataclass(frozen=True)
class _Port:
    service_protocol: str
    protocol_port: int


def test_a_ports_chain_is_named_by_protocol_and_port() -> None:
    key = logical_suffix(_Port("UDP", 53))
    assert key == "udp-53"
    names = [listener_name(key), pool_name(key), members_name(key), monitor_name(key)]
    assert names == ["listener-udp-53", "pool-udp-53", "members-udp-53", "monitor-udp-53"]


def test_security_group_names() -> None:
    rule = sg_rule_name(
        protocol="tcp",
        port_range_min=30080,
        port_range_max=30080,
        ethertype="IPv4",
        remote_ip_prefix="10.0.0.0/24",
    )
    assert rule == "sg-rule-tcp-30080-30080-ipv4-10.0.0.0/24"
    assert sg_port_name("10.0.0.11") == "sg-port-10.0.0.11"


def test_configuration_keys() -> None:
    keys = [f"{CONFIG_NAMESPACE}:{k}" for k in (SPEC_KEY, RELEASE_KEY, IMPORTS_KEY)]
    assert keys == [
        "lb-reconciler:spec",
        "lb-reconciler:release-load-balancer",
        "lb-reconciler:imports",
    ]


def test_the_project_is_pulumi_yamls() -> None:
    # the plain CLI (Pulumi.yaml) and the Automation API must see the same project and stacks
    pulumi_yaml = Path(__file__).resolve().parents[2] / "Pulumi.yaml"
    assert yaml.safe_load(pulumi_yaml.read_text())["name"] == PROJECT == "lb-reconciler"


def test_urn_and_logical_name() -> None:
    urn = "urn:pulumi:prod.default.web::lb-reconciler::" + LB_TYPE + "::lb"
    made = urn_of(stack="prod.default.web", project="lb-reconciler", type_token=LB_TYPE, name="lb")
    assert made == urn
    assert resource_urn(stack_name="prod.default.web", logical_name="lb") == urn
    assert logical_name(urn) == "lb"
    assert logical_name("listener-tcp-80") == "listener-tcp-80"  # a bare name stays as it is


def test_object_kind_of_each_importable_logical_name() -> None:
    kinds = {
        "lb": "loadbalancers",
        "listener-tcp-80": "listeners",
        "pool-udp-53": "pools",
        "members-tcp-80": "pools",  # batch members import by their pool's ID
        "monitor-tcp-80": "healthmonitors",
        "fip": "floatingips",
        "fip-association": "floatingips",
        "sg": "security-groups",
    }
    assert {name: object_kind(name) for name in kinds} == kinds
    assert object_kind("sg-rule-tcp-80-80-ipv4-10.0.0.0/24") is None
    assert object_kind("sg-port-10.0.0.11") is None
    assert object_kind("lbx") is None


def test_the_floating_ip_description_is_occms() -> None:
    # OCCM deletes only floating IPs whose description contains it (pkg/openstack/loadbalancer.go)
    assert FIP_DESCRIPTION_MARKER == "Floating IP for Kubernetes external service"

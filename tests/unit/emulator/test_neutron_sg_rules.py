"""Security group rules as Neutron 29 converts, checks and compares them
(emulator/neutron/sg_rules.py; Neutron's securitygroups_db.py and extensions/securitygroup.py)."""

from __future__ import annotations

from typing import Any

import pytest

from emulator.cloud import Cloud
from emulator.context import AuthContext
from emulator.errors import ApiError, Conflict, NotFound
from emulator.neutron.sg_rules import normalise_rule, rule_key


def rule(**fields: Any) -> dict[str, Any]:
    return normalise_rule({"direction": "ingress", "ethertype": "IPv4", **fields})


def refusal(**fields: Any) -> tuple[int, str, str]:
    with pytest.raises(ApiError) as caught:
        rule(**fields)
    return caught.value.status, caught.value.kind, caught.value.message


def test_what_neutron_converts() -> None:
    assert rule(protocol="TCP")["protocol"] == "tcp"
    assert rule(protocol="any")["protocol"] is None
    assert rule(protocol=6)["protocol"] == "6"
    assert rule(ethertype="ipv6", protocol="icmp")["ethertype"] == "IPv6"
    assert rule(ethertype="IPv6", protocol="icmp")["protocol"] == "ipv6-icmp"  # legacy name
    assert rule(ethertype="IPv6", protocol="1")["protocol"] == "58"  # legacy number
    whole = rule(protocol="tcp", port_range_min="1", port_range_max=65535)
    assert (whole["port_range_min"], whole["port_range_max"]) == (None, None)
    assert rule(remote_ip_prefix="10.0.0.7")["remote_ip_prefix"] == "10.0.0.7/32"
    icmp = rule(protocol="icmp", port_range_min=8, port_range_max=0)
    assert (icmp["port_range_min"], icmp["port_range_max"]) == (8, 0)  # type and code


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        (
            {"protocol": "tcp", "port_range_min": 80},
            (400, "SecurityGroupInvalidPortRange",
             "For TCP/UDP protocols, port_range_min must be <= port_range_max"),
        ),
        (
            {"protocol": "udp", "port_range_min": 90, "port_range_max": 80},
            (400, "SecurityGroupInvalidPortRange",
             "For TCP/UDP protocols, port_range_min must be <= port_range_max"),
        ),
        (
            {"protocol": "tcp", "port_range_min": 0, "port_range_max": 80},
            (400, "SecurityGroupInvalidPortValue", "Invalid value for port 0"),
        ),
        (
            {"protocol": "tcp", "port_range_min": 70000, "port_range_max": 70000},
            (400, "SecurityGroupInvalidPortValue", "Invalid value for port 70000"),
        ),
        (
            {"port_range_min": 80, "port_range_max": 80},
            (400, "SecurityGroupProtocolRequiredWithPorts",
             "Must also specify protocol if port range is given."),
        ),
        (
            {"protocol": "gre", "port_range_min": 80, "port_range_max": 80},
            (400, "SecurityGroupInvalidProtocolForPort",
             "Ports cannot be specified for protocol 47. Ports are only supported for "
             "DCCP, SCTP, TCP, UDP, UDPLITE."),
        ),
        (
            {"protocol": "icmp", "port_range_min": 300},
            (400, "SecurityGroupInvalidIcmpValue",
             "Invalid value for ICMP type (port_range_min) 300. It must be 0 to 255."),
        ),
        (
            {"protocol": "icmp", "port_range_max": 3},
            (400, "SecurityGroupMissingIcmpType",
             "ICMP code (port-range-max) 3 is provided but ICMP type (port-range-min) is "
             "missing."),
        ),
        (
            {"protocol": "ipv6-icmp"},
            (400, "SecurityGroupEthertypeConflictWithProtocol",
             "Invalid ethertype IPv4 for protocol ipv6-icmp."),
        ),
        (
            {"remote_ip_prefix": "::/0"},
            (400, "SecurityGroupRuleParameterConflict",
             "Conflicting value ethertype IPv4 for CIDR ::/0"),
        ),
        (
            {"remote_ip_prefix": "10.0.0.0/8", "remote_group_id": "x"},
            (400, "SecurityGroupMultipleRemoteEntites",
             "Only one of remote_ip_prefix or remote_group_id or remote_address_group_id may "
             "be provided."),
        ),
        (
            {"remote_ip_prefix": "ten/8"},
            (400, "InvalidCIDR", "Invalid CIDR ten/8 given as IP prefix."),
        ),
        (
            {"ethertype": "IPv5"},
            (400, "SecurityGroupRuleInvalidEtherType",
             "Security group rule for ethertype 'IPv5' not supported. Allowed values are "
             "['IPv4', 'IPv6']."),
        ),
    ],
)  # fmt: skip
def test_what_neutron_refuses_with_its_own_words(
    fields: dict[str, Any], expected: tuple[int, str, str]
) -> None:
    assert refusal(**fields) == expected


def test_an_unknown_protocol_lists_the_supported_ones_as_neutron_prints_them() -> None:
    status, kind, message = refusal(protocol="bogus")
    assert (status, kind) == (400, "SecurityGroupRuleInvalidProtocol")
    assert message.startswith(
        "Security group rule protocol bogus not supported. Only protocol values (None, 'any', "
        "'ah', 'dccp',"
    )
    assert message.endswith("'vrrp') and integer representations [0 to 255] are supported.")
    assert refusal(protocol=256)[1] == "SecurityGroupRuleInvalidProtocol"


def test_the_duplicate_key_is_neutrons() -> None:
    by_name = rule(protocol="tcp", port_range_min=80, port_range_max=80)
    by_number = rule(protocol="6", port_range_min=80, port_range_max=80)
    assert rule_key(by_name) == rule_key(by_number)
    assert rule_key(rule(remote_ip_prefix="0.0.0.0/0")) == rule_key(rule())
    assert rule_key(rule(protocol="udp")) != rule_key(rule(protocol="tcp"))


def test_the_default_name_and_a_remote_group_the_project_cannot_see(
    cloud: Cloud, ctx: AuthContext
) -> None:
    n = cloud.neutron
    for name in ("default", "Default", "DEFAULT"):
        with pytest.raises(Conflict, match=r"Default security group already exists\.") as caught:
            n.create_security_group(ctx, {"name": name})
        assert caught.value.kind == "SecurityGroupDefaultAlreadyExists"
    web = n.create_security_group(ctx, {"name": "web"})
    with pytest.raises(Conflict, match=r"Default security group already exists\."):
        n.update_security_group(ctx, web["id"], {"name": "Default"})
    gone = "6f9c1c1e-0000-4000-8000-000000000000"
    with pytest.raises(NotFound, match=f"Security group {gone} does not exist") as missing:
        n.create_security_group_rule(
            ctx, {"security_group_id": web["id"], "direction": "ingress", "remote_group_id": gone}
        )
    assert missing.value.kind == "SecurityGroupNotFound"
    other = n.create_security_group(ctx, {"name": "db"})
    made = n.create_security_group_rule(
        ctx,
        {"security_group_id": web["id"], "direction": "ingress", "remote_group_id": other["id"]},
    )
    assert made["remote_group_id"] == other["id"]
    same = {"security_group_id": web["id"], "direction": "ingress", "protocol": "6",
            "port_range_min": 80, "port_range_max": 80}  # fmt: skip
    n.create_security_group_rule(ctx, same)
    with pytest.raises(Conflict, match="Security group rule already exists"):
        n.create_security_group_rule(ctx, {**same, "protocol": "TCP"})

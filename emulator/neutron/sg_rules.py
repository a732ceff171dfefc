"""A security group rule as Neutron 29 takes it: converted, made canonical and validated, each
refusal Neutron's own (type and message). Pure; :mod:`emulator.neutron.security` stores rules.

In Neutron's order: the API's converters (``neutron/extensions/securitygroup.py``: protocol by
name in any case or as a number 0 to 255, ``any`` meaning none; the ethertype in any case; ports
0 to 65535; the remote prefix as a CIDR), then the database layer's checks
(``neutron/db/securitygroups_db.py``): the legacy IPv6 ICMP names and number made
``ipv6-icmp``/``58``, the whole port range 1-65535 made "no range", ports only for TCP, UDP,
SCTP, DCCP and UDP-Lite (both given, min <= max, not 0), ICMP type and code 0 to 255 (no code
without a type), the remote prefix's family the ethertype's, an IPv6-only protocol not with
IPv4, one remote entity at most. :func:`rule_key` is Neutron's duplicate key (``tcp`` and
``6`` are one protocol; ``0.0.0.0/0`` and no prefix one remote).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from emulator.errors import BadRequest
from emulator.neutron import ipam

__all__ = ["PROTOCOLS", "normalise_rule", "rule_key"]

# neutron_lib.constants.IP_PROTOCOL_MAP
PROTOCOLS = {
    "ah": 51, "dccp": 33, "egp": 8, "esp": 50, "gre": 47, "hopopt": 0, "icmp": 1, "igmp": 2,
    "ip": 0, "ipip": 4, "ipv6-encap": 41, "ipv6-frag": 44, "ipv6-icmp": 58, "icmpv6": 58,
    "ipv6-nonxt": 59, "ipv6-opts": 60, "ipv6-route": 43, "ospf": 89, "pgm": 113, "rsvp": 46,
    "sctp": 132, "tcp": 6, "udp": 17, "udplite": 136, "vrrp": 112,
}  # fmt: skip
_SUPPORTED = (None, "any", *PROTOCOLS)  # sg_supported_protocols, as Neutron prints it
_PORT_PROTOCOLS = ("dccp", "sctp", "tcp", "udp", "udplite")
_PORT_NUMBERS = tuple(PROTOCOLS[p] for p in _PORT_PROTOCOLS)
_ICMP_NUMBERS = (1, 58)
_IPV6_ONLY = ("ipv6-encap", "ipv6-frag", "ipv6-icmp", "icmpv6", "ipv6-nonxt", "ipv6-opts",
              "ipv6-route", "41", "44", "58", "59", "60", "43")  # fmt: skip
_ANY_PREFIX = ("0.0.0.0/0", "::/0", None)


def _invalid(kind: str, message: str) -> BadRequest:
    return BadRequest(message, kind=kind)


def _protocol(value: Any) -> str | None:
    """``convert_protocol``: a name (any case) or a number 0 to 255, as a string; None for none."""
    if value in (None, "any"):
        return None
    refused = _invalid(
        "SecurityGroupRuleInvalidProtocol",
        f"Security group rule protocol {value} not supported. Only protocol values "
        f"{_SUPPORTED} and integer representations [0 to 255] are supported.",
    )
    try:
        number = int(value)
    except (ValueError, TypeError):
        if isinstance(value, str) and value.lower() in PROTOCOLS:
            return value.lower()
        raise refused from None
    if 0 <= number <= 255:
        return str(value)
    raise refused


def _ethertype(value: Any) -> str:
    for ethertype in ("IPv4", "IPv6"):
        if isinstance(value, str) and value.lower() == ethertype.lower():
            return ethertype
    raise _invalid(
        "SecurityGroupRuleInvalidEtherType",
        f"Security group rule for ethertype '{value}' not supported. Allowed values are "
        "['IPv4', 'IPv6'].",
    )


def _port(value: Any) -> int | None:
    if value is None:
        return None
    try:
        number = int(value)
    except (ValueError, TypeError):
        number = -1
    if 0 <= number <= 65535 and not isinstance(value, bool):
        return number
    raise _invalid("SecurityGroupInvalidPortValue", f"Invalid value for port {value}")


def _number(protocol: str) -> int:
    return PROTOCOLS[protocol] if protocol in PROTOCOLS else int(protocol)


def _check_ports(rule: dict[str, Any]) -> None:
    """``_validate_port_range``."""
    pmin, pmax, protocol = rule["port_range_min"], rule["port_range_max"], rule["protocol"]
    if pmin is None and pmax is None:
        return
    if not protocol:
        raise _invalid(
            "SecurityGroupProtocolRequiredWithPorts",
            "Must also specify protocol if port range is given.",
        )
    number = _number(protocol)
    if number in _PORT_NUMBERS:
        if pmin == 0 or pmax == 0:
            raise _invalid("SecurityGroupInvalidPortValue", "Invalid value for port 0")
        if pmin is None or pmax is None or pmin > pmax:
            raise _invalid(
                "SecurityGroupInvalidPortRange",
                "For TCP/UDP protocols, port_range_min must be <= port_range_max",
            )
    elif number in _ICMP_NUMBERS:
        for attr, field in (("port_range_min", "type"), ("port_range_max", "code")):
            if rule[attr] is not None and not 0 <= rule[attr] <= 255:
                raise _invalid(
                    "SecurityGroupInvalidIcmpValue",
                    f"Invalid value for ICMP {field} ({attr}) {rule[attr]}. It must be 0 to 255.",
                )
        if pmin is None and pmax is not None:
            raise _invalid(
                "SecurityGroupMissingIcmpType",
                f"ICMP code (port-range-max) {pmax} is provided but ICMP type (port-range-min) "
                "is missing.",
            )
    else:
        raise _invalid(
            "SecurityGroupInvalidProtocolForPort",
            f"Ports cannot be specified for protocol {number}. Ports are only supported for "
            f"{', '.join(p.upper() for p in _PORT_PROTOCOLS)}.",
        )


def normalise_rule(body: Mapping[str, Any]) -> dict[str, Any]:
    """The rule as Neutron stores it, or its 400 (see the module)."""
    rule = dict(body)
    rule["direction"] = rule.get("direction")
    if rule["direction"] not in ("ingress", "egress"):
        raise _invalid(
            "HTTPBadRequest",
            f"Invalid input for direction. Reason: '{rule['direction']}' is not in "
            "['ingress', 'egress'].",
        )
    rule["ethertype"] = _ethertype(rule.get("ethertype", "IPv4"))
    rule["protocol"] = _protocol(rule.get("protocol"))
    rule["port_range_min"] = _port(rule.get("port_range_min"))
    rule["port_range_max"] = _port(rule.get("port_range_max"))
    prefix = rule.get("remote_ip_prefix")
    if prefix:
        try:
            rule["remote_ip_prefix"] = str(ipam.parse_cidr(str(prefix), field="remote_ip_prefix"))
        except BadRequest:
            raise _invalid("InvalidCIDR", f"Invalid CIDR {prefix} given as IP prefix.") from None
    else:
        rule["remote_ip_prefix"] = None
    if rule["ethertype"] == "IPv6" and rule["protocol"] in ("icmp", "icmpv6"):
        rule["protocol"] = "ipv6-icmp"
    elif rule["ethertype"] == "IPv6" and rule["protocol"] == "1":
        rule["protocol"] = "58"
    if (rule["port_range_min"], rule["port_range_max"]) == (1, 65535):
        rule["port_range_min"] = rule["port_range_max"] = None
    _check_ports(rule)
    prefix = rule["remote_ip_prefix"]
    if prefix is not None and f"IPv{ipam.parse_cidr(prefix).version}" != rule["ethertype"]:
        raise _invalid(
            "SecurityGroupRuleParameterConflict",
            f"Conflicting value ethertype {rule['ethertype']} for CIDR "
            f"{body.get('remote_ip_prefix')}",
        )
    if rule["protocol"] in _IPV6_ONLY and rule["ethertype"] == "IPv4":
        raise _invalid(
            "SecurityGroupEthertypeConflictWithProtocol",
            f"Invalid ethertype IPv4 for protocol {rule['protocol']}.",
        )
    remotes = ("remote_ip_prefix", "remote_group_id", "remote_address_group_id")
    if sum(1 for k in remotes if rule.get(k)) > 1:
        raise _invalid(
            "SecurityGroupMultipleRemoteEntites",
            "Only one of remote_ip_prefix or remote_group_id or remote_address_group_id may "
            "be provided.",
        )
    return rule


def rule_key(rule: Mapping[str, Any]) -> tuple[str, ...]:
    """Neutron's ``_rule_to_key``: equal for rules Neutron calls duplicates."""

    def value(key: str) -> str:
        item = rule.get(key)
        if key == "remote_ip_prefix" and item in _ANY_PREFIX:
            return "+"
        if item is None:
            return "+"
        if key == "protocol":
            return str(_number(str(item)))
        return str(item)

    keys = ("direction", "ethertype", "port_range_max", "port_range_min", "protocol",
            "remote_group_id", "remote_address_group_id", "remote_ip_prefix",
            "security_group_id")  # fmt: skip
    return tuple(value(k) for k in keys)

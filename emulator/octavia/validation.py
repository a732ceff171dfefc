"""Octavia's input rules: enums, ranges and protocol compatibility (the API's own checks).

Pure functions that raise :class:`~emulator.errors.BadRequest` with Octavia's wording
(``Invalid input for field/attribute <field>. Value: '<value>'. <reason>``), so a wrong spec
fails here the way it would on a real cloud, with the field named. What a provider driver
refuses after these checks (501) is :mod:`emulator.octavia.providers`.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Mapping
from typing import Any

from emulator.errors import BadRequest

LISTENER_PROTOCOLS = ("HTTP", "HTTPS", "TCP", "TERMINATED_HTTPS", "UDP", "SCTP", "PROMETHEUS")
POOL_PROTOCOLS = ("HTTP", "HTTPS", "TCP", "UDP", "PROXY", "PROXYV2", "SCTP")
LB_ALGORITHMS = ("ROUND_ROBIN", "LEAST_CONNECTIONS", "SOURCE_IP", "SOURCE_IP_PORT")
PERSISTENCE_TYPES = ("SOURCE_IP", "HTTP_COOKIE", "APP_COOKIE")
MONITOR_TYPES = ("HTTP", "HTTPS", "PING", "TCP", "TLS-HELLO", "UDP-CONNECT", "SCTP")
HTTP_METHODS = ("CONNECT", "DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT", "TRACE")
# listener protocol -> pool protocols it may use (Octavia's VALID_LISTENER_POOL_PROTOCOL_MAP)
LISTENER_POOL_PROTOCOLS: Mapping[str, tuple[str, ...]] = {
    "TCP": ("HTTP", "HTTPS", "PROXY", "PROXYV2", "TCP"),
    "HTTP": ("HTTP", "PROXY", "PROXYV2"),
    "HTTPS": ("HTTPS", "PROXY", "PROXYV2", "TCP"),
    "TERMINATED_HTTPS": ("HTTP", "PROXY", "PROXYV2"),
    "UDP": ("UDP",),
    "SCTP": ("SCTP",),
    "PROMETHEUS": (),
}
_EXPECTED_CODES = re.compile(r"^\d{3}((-\d{3})|(,\d{3})*)$")


def invalid(field: str, value: Any, reason: str) -> BadRequest:
    return BadRequest(f"Invalid input for field/attribute {field}. Value: '{value}'. {reason}")


def reject_unknown(body: Mapping[str, Any], allowed: Iterable[str], *, obj: str) -> None:
    for key in body:
        if key not in allowed:
            raise invalid(obj, dict(body), f"Unknown attribute for argument {obj}: {key}")


def enum(body: Mapping[str, Any], field: str, values: tuple[str, ...]) -> None:
    if field in body and body[field] is not None and body[field] not in values:
        raise invalid(field, body[field], f"Value should be one of: {', '.join(values)}")


def int_range(body: Mapping[str, Any], field: str, low: int, high: int) -> None:
    if field not in body or body[field] is None:
        return
    value = body[field]
    if isinstance(value, bool) or not isinstance(value, int):
        raise invalid(field, value, "Wrong type. Expected 'integer'")
    if value < low:
        raise invalid(field, value, f"Value should be greater or equal to {low}")
    if value > high:
        raise invalid(field, value, f"Value should be lower or equal to {high}")


def boolean(body: Mapping[str, Any], field: str) -> None:
    if field in body and not isinstance(body[field], bool):
        raise invalid(field, body[field], "Wrong type. Expected 'bool'")


def string(body: Mapping[str, Any], field: str, *, max_len: int = 255) -> None:
    if field in body and body[field] is not None:
        if not isinstance(body[field], str):
            raise invalid(field, body[field], "Wrong type. Expected 'str'")
        if len(body[field]) > max_len:
            raise invalid(field, body[field], f"Value should have a maximum length of {max_len}")


def tags(body: Mapping[str, Any]) -> None:
    value = body.get("tags")
    if value is not None and (
        not isinstance(value, list) or not all(isinstance(t, str) for t in value)
    ):
        raise invalid("tags", value, "Wrong type. Expected '[str]'")
    if value is not None and any(len(t) > 255 for t in value):  # StringType(max_length=255)
        raise invalid("tags", value, "Value should have a maximum length of 255")


def ip_address(body: Mapping[str, Any], field: str) -> None:
    if body.get(field) is None:
        return
    try:
        ipaddress.ip_address(str(body[field]))
    except ValueError:
        raise invalid(field, body[field], "Value should be IPv4 or IPv6 format") from None


def cidrs(body: Mapping[str, Any], field: str) -> None:
    value = body.get(field)
    if value is None:
        return
    if not isinstance(value, list):
        raise invalid(field, value, "Wrong type. Expected '[str]'")
    for item in value:
        try:
            ipaddress.ip_network(str(item), strict=True)
        except ValueError:
            raise invalid(field, value, f"'{item}' is not a valid CIDR") from None


def listener_pool_protocol(listener_protocol: str, pool_protocol: str) -> None:
    if pool_protocol not in LISTENER_POOL_PROTOCOLS.get(listener_protocol, ()):
        raise BadRequest(
            f"Validation failure: The pool protocol '{pool_protocol}' is invalid while the "
            f"listener protocol is '{listener_protocol}'."
        )


def session_persistence(value: Any, pool_protocol: str) -> None:
    if value is None:
        return
    if not isinstance(value, dict) or "type" not in value:
        raise invalid("session_persistence", value, "Expected an object with a 'type'")
    enum(value, "type", PERSISTENCE_TYPES)
    if value["type"] == "APP_COOKIE" and not value.get("cookie_name"):
        raise BadRequest(
            "Validation failure: Field cookie_name is required for APP_COOKIE session "
            "persistence type."
        )
    if value["type"] != "APP_COOKIE" and value.get("cookie_name"):
        raise BadRequest(
            "Validation failure: Field cookie_name can only be specified with session "
            "persistence of type APP_COOKIE."
        )
    if pool_protocol == "UDP" and value["type"] != "SOURCE_IP":
        raise BadRequest(
            "Validation failure: Session persistence of type SOURCE_IP is the only one allowed "
            "for UDP pools."
        )


def expected_codes(body: Mapping[str, Any]) -> None:
    value = body.get("expected_codes")
    if value is not None and not _EXPECTED_CODES.match(str(value)):
        raise invalid("expected_codes", value, "Value should match '200', '200,202' or '200-204'")


def url_path(body: Mapping[str, Any]) -> None:
    value = body.get("url_path")
    if value is not None and (not isinstance(value, str) or not value.startswith("/")):
        raise invalid("url_path", value, "Value should be a URL path starting with '/'")

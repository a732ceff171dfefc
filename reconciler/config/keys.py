"""What each cloud.conf key means: the settings field it fills and how its value is read.

Each key maps to one settings field and one converter (gcfg's types as OCCM declares them:
string, bool, int, Go duration; plus UUIDs and secrets). A converter returns the value or raises
:class:`BadValueError` (reason, fix), which :mod:`.parse` turns into an error naming section, key
and value. Aliases (``project-id`` for ``tenant-id`` and so on; OCCM itself only reads the
``tenant-*`` spellings) map to the same field; the last one written wins, as for a repeated key.
The tables: :data:`GLOBAL_KEYS`, :data:`LB_KEYS`, :data:`CLASS_KEYS` (``[LoadBalancerClass
"name"]``, a subset of ``[LoadBalancer]``'s), :data:`OTHER_SECTIONS` (OCCM's sections for its
other controllers: accepted, unused) and :data:`CANONICAL` (section names, any case).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from datetime import timedelta
from types import MappingProxyType
from typing import Any

from reconciler.config.settings import Secret

__all__ = [
    "CANONICAL",
    "CLASS_KEYS",
    "GLOBAL_KEYS",
    "LB_KEYS",
    "OTHER_SECTIONS",
    "SECRET_KEYS",
    "BadValueError",
    "parse_go_duration",
]


# --- value converters: each returns the value or raises BadValueError(reason, fix) ----------


class BadValueError(Exception):
    """A value that is not of its key's type: ``reason`` says why, ``fix`` what to write."""

    def __init__(self, reason: str, fix: str) -> None:
        super().__init__(reason)
        self.reason, self.fix = reason, fix


_BOOLS = {"true": True, "yes": True, "on": True, "1": True}
_BOOLS |= {"false": False, "no": False, "off": False, "0": False}
_DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0}
_DURATION_UNITS |= {"m": 60.0, "h": 3600.0}
_DURATION_PART = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_UUID = re.compile(
    r"^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$"
)


def parse_go_duration(text: str) -> timedelta:
    """Go's ``time.ParseDuration``: ``"5s"``, ``"1m30s"``, ``"-1.5h"``; a bare ``"0"`` too."""
    s = text.strip()
    sign = -1.0 if s.startswith("-") else 1.0
    s = s[1:] if s[:1] in ("+", "-") else s
    if s == "0":
        return timedelta(0)
    if not s:
        raise ValueError(f"invalid duration {text!r}")
    pos, total = 0, 0.0
    while pos < len(s):
        m = _DURATION_PART.match(s, pos)
        if m is None:
            raise ValueError(f"invalid duration {text!r}")
        total += float(m.group(1)) * _DURATION_UNITS[m.group(2)]
        pos = m.end()
    return timedelta(seconds=sign * total)


def _to_str(raw: str | None) -> str:
    if raw is None:
        raise BadValueError("a value is required", "write it as key=value")
    return raw


def _to_secret(raw: str | None) -> Secret:
    return Secret(_to_str(raw))


def _to_bool(raw: str | None) -> bool:
    if raw is None:
        return True
    try:
        return _BOOLS[raw.strip().lower()]
    except KeyError:
        raise BadValueError("not a boolean", "use true or false") from None


def _to_int(raw: str | None) -> int:
    s = _to_str(raw).strip()
    try:
        return int(s, 16) if s.lower().startswith(("0x", "-0x")) else int(s, 10)
    except ValueError:
        raise BadValueError("not an integer", "write a whole number such as 3") from None


def _to_uint(raw: str | None) -> int:
    n = _to_int(raw)
    if n < 0:
        raise BadValueError("must not be negative", "write a number of 0 or more")
    return n


def _to_duration(raw: str | None) -> timedelta:
    try:
        d = parse_go_duration(_to_str(raw))
    except ValueError:
        raise BadValueError(
            "not a Go duration", 'write it with a unit, e.g. "5s" or "1m30s"'
        ) from None
    if d < timedelta(0):
        raise BadValueError("must not be negative", 'write a positive duration such as "5s"')
    return d


def _to_uuid(raw: str | None) -> str:
    s = _to_str(raw).strip()
    if s and not _UUID.match(s):
        raise BadValueError(
            "not an OpenStack id (a UUID)", "copy the id from `openstack ... show -c id`"
        )
    return s


# --- the key tables ------------------------------------------------------------------------

_Conv = Callable[[str | None], Any]
_Table = Mapping[str, tuple[str, _Conv]]
# key -> (dataclass field, converter). Aliases map to the same field.
GLOBAL_KEYS: _Table = MappingProxyType(
    {
        "auth-url": ("auth_url", _to_str),
        "user-id": ("user_id", _to_str),
        "username": ("username", _to_str),
        "password": ("password", _to_secret),
        "tenant-id": ("tenant_id", _to_str),
        "project-id": ("tenant_id", _to_str),
        "tenant-name": ("tenant_name", _to_str),
        "project-name": ("tenant_name", _to_str),
        "trust-id": ("trust_id", _to_str),
        "trustee-id": ("trustee_id", _to_str),
        "trustee-password": ("trustee_password", _to_secret),
        "domain-id": ("domain_id", _to_str),
        "domain-name": ("domain_name", _to_str),
        "tenant-domain-id": ("tenant_domain_id", _to_str),
        "project-domain-id": ("tenant_domain_id", _to_str),
        "tenant-domain-name": ("tenant_domain_name", _to_str),
        "project-domain-name": ("tenant_domain_name", _to_str),
        "user-domain-id": ("user_domain_id", _to_str),
        "user-domain-name": ("user_domain_name", _to_str),
        "region": ("region", _to_str),
        "os-endpoint-type": ("endpoint_type", _to_str),
        "ca-file": ("ca_file", _to_str),
        "tls-insecure": ("tls_insecure", _to_bool),
        "token": ("token", _to_secret),
        "cert-file": ("cert_file", _to_str),
        "key-file": ("key_file", _to_str),
        "use-clouds": ("use_clouds", _to_bool),
        "clouds-file": ("clouds_file", _to_str),
        "cloud": ("cloud", _to_str),
        "application-credential-id": ("application_credential_id", _to_str),
        "application-credential-name": ("application_credential_name", _to_str),
        "application-credential-secret": ("application_credential_secret", _to_secret),
    }
)
SECRET_KEYS = frozenset(k for k, (_, c) in GLOBAL_KEYS.items() if c is _to_secret)
CLASS_KEYS: _Table = MappingProxyType(
    {
        "floating-network-id": ("floating_network_id", _to_uuid),
        "floating-subnet-id": ("floating_subnet_id", _to_uuid),
        "floating-subnet": ("floating_subnet", _to_str),
        "floating-subnet-tags": ("floating_subnet_tags", _to_str),
        "network-id": ("network_id", _to_uuid),
        "subnet-id": ("subnet_id", _to_uuid),
        "member-subnet-id": ("member_subnet_id", _to_uuid),
    }
)
LB_KEYS: _Table = MappingProxyType(
    {
        **CLASS_KEYS,
        "enabled": ("enabled", _to_bool),
        "lb-version": ("lb_version", _to_str),
        "lb-method": ("lb_method", _to_str),
        "lb-provider": ("lb_provider", _to_str),
        "create-monitor": ("create_monitor", _to_bool),
        "monitor-delay": ("monitor_delay", _to_duration),
        "monitor-timeout": ("monitor_timeout", _to_duration),
        "monitor-max-retries": ("monitor_max_retries", _to_uint),
        "monitor-max-retries-down": ("monitor_max_retries_down", _to_uint),
        "manage-security-groups": ("manage_security_groups", _to_bool),
        "internal-lb": ("internal_lb", _to_bool),
        "node-selector": ("node_selector", _to_str),
        "cascade-delete": ("cascade_delete", _to_bool),
        "flavor-id": ("flavor_id", _to_uuid),
        "availability-zone": ("availability_zone", _to_str),
        "enable-ingress-hostname": ("enable_ingress_hostname", _to_bool),
        "ingress-hostname-suffix": ("ingress_hostname_suffix", _to_str),
        "max-shared-lb": ("max_shared_lb", _to_int),
        "container-store": ("container_store", _to_str),
        "provider-requires-serial-api-calls": ("provider_requires_serial_api_calls", _to_bool),
        "default-tls-container-ref": ("default_tls_container_ref", _to_str),
    }
)
# Sections OCCM reads for its other controllers; accepted silently, not used by this controller.
OTHER_SECTIONS: Mapping[str, frozenset[str]] = MappingProxyType(
    {
        "route": frozenset({"router-id"}),
        "metadata": frozenset({"search-order", "request-timeout"}),
        "networking": frozenset(
            {
                "ipv6-support-disabled",
                "public-network-name",
                "internal-network-name",
                "address-sort-order",
            }
        ),
    }
)
# section names as written in any case -> as OCCM spells them
CANONICAL: Mapping[str, str] = MappingProxyType(
    {
        "global": "Global",
        "loadbalancer": "LoadBalancer",
        "loadbalancerclass": "LoadBalancerClass",
        "route": "Route",
        "metadata": "Metadata",
        "networking": "Networking",
    }
)

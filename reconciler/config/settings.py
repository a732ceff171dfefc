"""The settings read from cloud.conf: frozen, comparable, and safe to log.

Field names follow OCCM's keys with ``-`` turned into ``_``; defaults are OCCM's (``ReadConfig`` in
pkg/openstack/openstack.go). Credentials are :class:`Secret` so that a ``repr`` of the whole config
(in a log line, a traceback, a test failure) never shows them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from datetime import timedelta
from types import MappingProxyType
from typing import Any


@dataclass(frozen=True, repr=False)
class Secret:
    """A credential. Compares by value; never shows it in ``repr``/``str``; ``reveal()`` does."""

    _value: str = ""

    def reveal(self) -> str:
        return self._value

    def __bool__(self) -> bool:
        return bool(self._value)

    def __repr__(self) -> str:
        return "Secret('<redacted>')" if self._value else "Secret('')"

    __str__ = __repr__


@dataclass(frozen=True)
class ConfigIssue:
    """One problem in cloud.conf. ``line`` is 1-based, 0 when the issue is about the whole file."""

    section: str
    key: str
    value: str
    reason: str
    fix: str
    line: int = 0

    def __str__(self) -> str:
        where = f"[{self.section}] {self.key}".rstrip() if self.section else "cloud.conf"
        at = f" (line {self.line})" if self.line else ""
        shown = f" = {self.value!r}" if self.value else ""
        return f"{where}{shown}{at}: {self.reason}; {self.fix}"


@dataclass(frozen=True)
class AuthConfig:
    """``[Global]``: how to authenticate to Keystone (OCCM ``client.AuthOpts``)."""

    auth_url: str = ""
    user_id: str = ""
    username: str = ""
    password: Secret = Secret()
    tenant_id: str = ""
    tenant_name: str = ""
    trust_id: str = ""
    trustee_id: str = ""
    trustee_password: Secret = Secret()
    domain_id: str = ""
    domain_name: str = ""
    tenant_domain_id: str = ""
    tenant_domain_name: str = ""
    user_domain_id: str = ""
    user_domain_name: str = ""
    region: str = ""
    endpoint_type: str = ""
    ca_file: str = ""
    tls_insecure: bool = False
    token: Secret = Secret()
    cert_file: str = ""
    key_file: str = ""
    use_clouds: bool = False
    clouds_file: str = ""
    cloud: str = ""
    application_credential_id: str = ""
    application_credential_name: str = ""
    application_credential_secret: Secret = Secret()


@dataclass(frozen=True)
class LoadBalancerClass:
    """``[LoadBalancerClass "name"]``: named network choices a Service selects by annotation."""

    floating_network_id: str = ""
    floating_subnet_id: str = ""
    floating_subnet: str = ""
    floating_subnet_tags: str = ""
    network_id: str = ""
    subnet_id: str = ""
    member_subnet_id: str = ""


@dataclass(frozen=True)
class LoadBalancerConfig:
    """``[LoadBalancer]`` with OCCM's defaults (``ReadConfig`` in pkg/openstack/openstack.go)."""

    enabled: bool = True
    lb_version: str = ""
    subnet_id: str = ""
    member_subnet_id: str = ""
    network_id: str = ""
    floating_network_id: str = ""
    floating_subnet_id: str = ""
    floating_subnet: str = ""
    floating_subnet_tags: str = ""
    lb_method: str = "ROUND_ROBIN"
    lb_provider: str = "amphora"
    create_monitor: bool = False
    monitor_delay: timedelta = timedelta(seconds=5)
    monitor_timeout: timedelta = timedelta(seconds=3)
    monitor_max_retries: int = 1
    monitor_max_retries_down: int = 3
    manage_security_groups: bool = False
    internal_lb: bool = False
    node_selector: str = ""
    cascade_delete: bool = True
    flavor_id: str = ""
    availability_zone: str = ""
    enable_ingress_hostname: bool = False
    ingress_hostname_suffix: str = "nip.io"
    max_shared_lb: int = 2
    container_store: str = "barbican"
    provider_requires_serial_api_calls: bool = False
    default_tls_container_ref: str = ""


@dataclass(frozen=True)
class CloudConfig:
    """The whole file. ``classes`` is read-only and keyed by the case-sensitive class name."""

    auth: AuthConfig = AuthConfig()
    load_balancer: LoadBalancerConfig = LoadBalancerConfig()
    classes: Mapping[str, LoadBalancerClass] = field(default_factory=lambda: MappingProxyType({}))


@dataclass(frozen=True)
class ConfigResult:
    """``config`` is None exactly when ``errors`` is non-empty."""

    config: CloudConfig | None
    warnings: tuple[ConfigIssue, ...]
    errors: tuple[ConfigIssue, ...]


def default_config() -> CloudConfig:
    """OCCM's defaults, as if cloud.conf had only empty sections."""
    return CloudConfig()


def with_overrides(config: CloudConfig, **lb_fields: Any) -> CloudConfig:
    """A copy with some ``[LoadBalancer]`` fields replaced; for tests and CLI flags."""
    known = {f.name for f in fields(LoadBalancerConfig)}
    unknown = set(lb_fields) - known
    if unknown:
        raise TypeError(f"unknown LoadBalancerConfig fields: {sorted(unknown)}")
    return replace(config, load_balancer=replace(config.load_balancer, **lb_fields))

"""What cloud.conf keys mean: per-key converters, the key tables, and cross-key checks.

Each key maps to one settings field and one converter; a converter returns the value or raises
``_BadValueError(reason, fix)``, which becomes an error naming section, key and value. Aliases
(``project-id`` for ``tenant-id`` and so on; OCCM itself only reads the ``tenant-*`` spellings) map
to the same field, the last one written wins, as for a repeated key.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta
from pathlib import Path
from types import MappingProxyType
from typing import Any

from reconciler.config.clouds import resolve_clouds
from reconciler.config.gcfg import read_gcfg
from reconciler.config.settings import (
    AuthConfig,
    CloudConfig,
    ConfigIssue,
    ConfigResult,
    LoadBalancerClass,
    LoadBalancerConfig,
    Secret,
)
from reconciler.config.subnet_match import check_pattern, check_tags

__all__ = ["LB_METHODS", "parse_cloud_conf", "parse_go_duration"]

LB_METHODS = ("ROUND_ROBIN", "LEAST_CONNECTIONS", "SOURCE_IP", "SOURCE_IP_PORT")
KNOWN_PROVIDERS = ("amphora", "octavia", "ovn", "f5", "amphorav2")
KNOWN_CONTAINER_STORES = ("barbican", "external")


# --- value converters: each returns the value or raises _BadValueError(reason, fix) ---


class _BadValueError(Exception):
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
        raise _BadValueError("a value is required", "write it as key=value")
    return raw


def _to_secret(raw: str | None) -> Secret:
    return Secret(_to_str(raw))


def _to_bool(raw: str | None) -> bool:
    if raw is None:
        return True
    try:
        return _BOOLS[raw.strip().lower()]
    except KeyError:
        raise _BadValueError("not a boolean", "use true or false") from None


def _to_int(raw: str | None) -> int:
    s = _to_str(raw).strip()
    try:
        return int(s, 16) if s.lower().startswith(("0x", "-0x")) else int(s, 10)
    except ValueError:
        raise _BadValueError("not an integer", "write a whole number such as 3") from None


def _to_uint(raw: str | None) -> int:
    n = _to_int(raw)
    if n < 0:
        raise _BadValueError("must not be negative", "write a number of 0 or more")
    return n


def _to_duration(raw: str | None) -> timedelta:
    try:
        d = parse_go_duration(_to_str(raw))
    except ValueError:
        raise _BadValueError(
            "not a Go duration", 'write it with a unit, e.g. "5s" or "1m30s"'
        ) from None
    if d < timedelta(0):
        raise _BadValueError("must not be negative", 'write a positive duration such as "5s"')
    return d


def _to_uuid(raw: str | None) -> str:
    s = _to_str(raw).strip()
    if s and not _UUID.match(s):
        raise _BadValueError(
            "not an OpenStack id (a UUID)", "copy the id from `openstack ... show -c id`"
        )
    return s


_Conv = Callable[[str | None], Any]
# key -> (dataclass field, converter). Aliases map to the same field.
_GLOBAL_KEYS: dict[str, tuple[str, _Conv]] = {
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
_SECRET_KEYS = frozenset(k for k, (_, c) in _GLOBAL_KEYS.items() if c is _to_secret)
_CLASS_KEYS: dict[str, tuple[str, _Conv]] = {
    "floating-network-id": ("floating_network_id", _to_uuid),
    "floating-subnet-id": ("floating_subnet_id", _to_uuid),
    "floating-subnet": ("floating_subnet", _to_str),
    "floating-subnet-tags": ("floating_subnet_tags", _to_str),
    "network-id": ("network_id", _to_uuid),
    "subnet-id": ("subnet_id", _to_uuid),
    "member-subnet-id": ("member_subnet_id", _to_uuid),
}
_LB_KEYS: dict[str, tuple[str, _Conv]] = {
    **_CLASS_KEYS,
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
# Sections OCCM reads for its other controllers; accepted silently, not used by this controller.
_OTHER_SECTIONS = {
    "route": {"router-id"},
    "metadata": {"search-order", "request-timeout"},
    "networking": {
        "ipv6-support-disabled",
        "public-network-name",
        "internal-network-name",
        "address-sort-order",
    },
}
_CANONICAL = {"global": "Global", "loadbalancer": "LoadBalancer"}
_CANONICAL |= {"loadbalancerclass": "LoadBalancerClass"}
_CANONICAL |= {"route": "Route", "metadata": "Metadata", "networking": "Networking"}


# --- entries -> settings ---------------------------------------------------------------------


def _shown(key: str, raw: str | None) -> str:
    return "" if key in _SECRET_KEYS or raw is None else raw


def parse_cloud_conf(
    *,
    text: str,
    environ: Mapping[str, str] | None = None,
    search_dirs: Sequence[Path] | None = None,
) -> ConfigResult:
    """Read cloud.conf text. Never raises; see :class:`ConfigResult`.

    With ``use-clouds = true`` the clouds.yaml it names is read too (:mod:`.clouds`), with
    ``environ`` (default: the process's) for ``OS_CLOUD`` and ``OS_CLIENT_*_FILE`` and
    ``search_dirs`` (default: ./, ~/.config/openstack, /etc/openstack) to look in."""
    entries, syntax_errors = read_gcfg(text)
    errors, warnings = list(syntax_errors), []
    values: dict[str, dict[str, Any]] = {"Global": {}, "LoadBalancer": {}}
    classes: dict[str, dict[str, Any]] = {}
    for e in entries:
        canon = _CANONICAL.get(e.section.lower())
        if canon is None:
            if not e.key:
                fix = "remove it; known sections are " + ", ".join(sorted(set(_CANONICAL.values())))
                warnings.append(ConfigIssue(e.section, "", "", "unknown section", fix, e.line))
            continue
        if canon.lower() in _OTHER_SECTIONS:
            if e.key and e.key.lower() not in _OTHER_SECTIONS[canon.lower()]:
                fix = "remove it or check its spelling"
                warnings.append(ConfigIssue(canon, e.key, "", "unknown key", fix, e.line))
            continue
        if canon == "LoadBalancerClass":
            name = e.sub or ""
            if not e.key and not name:
                reason = "a class needs a name"
                fix = 'write [LoadBalancerClass "name"]'
                warnings.append(ConfigIssue(canon, "", "", reason, fix, e.line))
            target, table, label = classes.setdefault(name, {}), _CLASS_KEYS, f'{canon} "{name}"'
        elif e.sub is not None:
            if not e.key:
                reason = f"[{canon}] takes no subsection"
                warnings.append(ConfigIssue(canon, "", e.sub, reason, f"write [{canon}]", e.line))
            continue
        else:
            target, label = values[canon], canon
            table = _GLOBAL_KEYS if canon == "Global" else _LB_KEYS
        if not e.key:
            continue
        spec = table.get(e.key.lower())
        if spec is None:
            fix = "remove it or check its spelling (keys are listed in docs/annotations.md)"
            warnings.append(ConfigIssue(label, e.key, "", "unknown key", fix, e.line))
            continue
        name_, conv = spec
        try:
            target[name_] = conv(e.raw)
        except _BadValueError as bad:
            issue = ConfigIssue(
                label, e.key, _shown(e.key.lower(), e.raw), bad.reason, bad.fix, e.line
            )
            errors.append(issue)
    auth = AuthConfig(**values["Global"])
    lb = LoadBalancerConfig(**values["LoadBalancer"])
    lbclasses = {n: LoadBalancerClass(**v) for n, v in classes.items()}
    errors += _check_load_balancer(lb) + _refuse_unsupported(lb) + _check_global(auth)
    warnings += _warn_load_balancer(lb) + _warn_global(auth)
    for n, c in lbclasses.items():
        errors += _check_matchers(
            f'LoadBalancerClass "{n}"', c.floating_subnet, c.floating_subnet_tags
        )
    if auth.use_clouds:
        env = os.environ if environ is None else environ
        auth, more_warnings, more_errors = resolve_clouds(
            auth, environ=env, search_dirs=search_dirs
        )
        warnings += more_warnings
        errors += more_errors
    if errors:
        return ConfigResult(None, tuple(warnings), tuple(errors))
    config = CloudConfig(auth=auth, load_balancer=lb, classes=MappingProxyType(lbclasses))
    return ConfigResult(config, tuple(warnings), ())


def _check_matchers(section: str, pattern: str, tags: str) -> list[ConfigIssue]:
    """``floating-subnet`` and ``floating-subnet-tags``: OCCM's syntax (:mod:`.subnet_match`)."""
    out = []
    if pattern and (problem := check_pattern(pattern)):
        fix = "write a glob such as public-* or a Go regular expression after '~' ('!' negates)"
        out.append(ConfigIssue(section, "floating-subnet", pattern, problem, fix))
    if tags and (problem := check_tags(tags)):
        fix = 'write tags as "a,b" (any of them); prefix "&" for all of them, "!" to negate'
        out.append(ConfigIssue(section, "floating-subnet-tags", tags, problem, fix))
    return out


def _check_load_balancer(lb: LoadBalancerConfig) -> list[ConfigIssue]:
    s, out = "LoadBalancer", []
    if lb.lb_version not in ("", "v2"):
        out.append(ConfigIssue(s, "lb-version", lb.lb_version, "only v2 exists", "remove it"))
    if lb.lb_method not in LB_METHODS:
        fix = "use one of " + ", ".join(LB_METHODS)
        out.append(ConfigIssue(s, "lb-method", lb.lb_method, "unknown algorithm", fix))
    elif lb.lb_provider == "ovn" and lb.lb_method != "SOURCE_IP_PORT":
        reason = "the ovn provider only supports SOURCE_IP_PORT"
        out.append(
            ConfigIssue(s, "lb-method", lb.lb_method, reason, "set lb-method=SOURCE_IP_PORT")
        )
    if lb.monitor_timeout > lb.monitor_delay:
        reason = f"longer than monitor-delay ({lb.monitor_delay.total_seconds():g}s)"
        fix = "make monitor-timeout at most monitor-delay"
        value = f"{lb.monitor_timeout.total_seconds():g}s"
        out.append(ConfigIssue(s, "monitor-timeout", value, reason, fix))
    for key, n in (
        ("monitor-max-retries", lb.monitor_max_retries),
        ("monitor-max-retries-down", lb.monitor_max_retries_down),
    ):
        if not 1 <= n <= 10:
            out.append(ConfigIssue(s, key, str(n), "Octavia accepts 1 to 10", "pick 1 to 10"))
    return out + _check_matchers(s, lb.floating_subnet, lb.floating_subnet_tags)


def _warn_load_balancer(lb: LoadBalancerConfig) -> list[ConfigIssue]:
    s, out = "LoadBalancer", []
    if lb.lb_provider not in KNOWN_PROVIDERS:
        fix = "check the name with `openstack loadbalancer provider list`"
        out.append(ConfigIssue(s, "lb-provider", lb.lb_provider, "untested provider", fix))
    if lb.container_store not in KNOWN_CONTAINER_STORES:
        fix = "use barbican or external"
        out.append(ConfigIssue(s, "container-store", lb.container_store, "unknown store", fix))
    if lb.max_shared_lb < 1:
        fix = "set max-shared-lb to 1 or more (1 disables sharing)"
        value = str(lb.max_shared_lb)
        out.append(ConfigIssue(s, "max-shared-lb", value, "no Service can use a shared LB", fix))
    return out


# --- keys OCCM reads that this controller cannot honour: refused, never ignored -------------


def _refuse_unsupported(lb: LoadBalancerConfig) -> list[ConfigIssue]:
    s, out = "LoadBalancer", []
    if not lb.enabled:
        reason = (
            "load balancers are disabled, and they are all lb-reconciler does (OCCM runs no "
            "service controller then)"
        )
        fix = "set enabled = true (or remove it) to run lb-reconciler, or do not deploy it"
        out.append(ConfigIssue(s, "enabled", "false", reason, fix))
    if not lb.cascade_delete:
        reason = (
            "not supported: lb-reconciler deletes a load balancer's children one by one (what "
            "OCCM does with cascade-delete = false) but still cascades a load balancer in ERROR "
            "or one whose children cannot be deleted, and `sweep` deletes with cascade"
        )
        fix = "remove it (the default is true)"
        out.append(ConfigIssue(s, "cascade-delete", "false", reason, fix))
    if lb.provider_requires_serial_api_calls:
        reason = (
            "not supported: listeners and pools are created one by one already, but members are "
            "set with Octavia's batch member update, which this option exists to avoid"
        )
        fix = "remove it (the default is false); no provider without batch member updates is served"
        out.append(ConfigIssue(s, "provider-requires-serial-api-calls", "true", reason, fix))
    return out


def _check_global(auth: AuthConfig) -> list[ConfigIssue]:
    s, out = "Global", []
    trust_fix = (
        "log in without a trust: an application credential (application-credential-id and "
        "application-credential-secret) or a user with a password"
    )
    reason = "Keystone trusts are not supported (the OpenStack Pulumi provider cannot use one)"
    for key, value in (
        ("trust-id", auth.trust_id),
        ("trustee-id", auth.trustee_id),
        ("trustee-password", auth.trustee_password),
    ):
        if value:
            shown = "" if isinstance(value, Secret) else str(value)
            out.append(ConfigIssue(s, key, shown, reason, trust_fix))
    if auth.cloud and not auth.use_clouds:
        reason = "names a clouds.yaml entry, which is read only with use-clouds = true"
        fix = (
            "set use-clouds = true (and clouds-file) to take the credentials from it, or remove it"
        )
        out.append(ConfigIssue(s, "cloud", auth.cloud, reason, fix))
    return out


def _warn_global(auth: AuthConfig) -> list[ConfigIssue]:
    if auth.clouds_file and not auth.use_clouds:
        reason = "is not read without use-clouds = true (as in OCCM)"
        fix = "set use-clouds = true to take the credentials from it, or remove it"
        return [ConfigIssue("Global", "clouds-file", auth.clouds_file, reason, fix)]
    return []

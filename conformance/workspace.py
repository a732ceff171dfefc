"""The tempest workspace for one run: personas, emulator topology, accounts.yaml, tempest.conf.

Pure functions of plain data; :mod:`conformance.__main__` writes what they return.

**Credentials.** The plugin's base class (``octavia_tempest_plugin/tests/test_base.py``,
``LoadBalancerBaseTest.credentials``) asks tempest for seven credentials per test class, and
which roles each has depends on ``[load_balancer] RBAC_test_type``: :func:`personas`. Tempest
hands them out from a pre-provisioned ``accounts.yaml`` (``[auth] use_dynamic_credentials =
false``), one account per credential, locked while a class runs: with ``workers`` classes at
once, ``workers + 1`` sets are provisioned. Each account has a project of its own, as tempest's
dynamic credentials would make it (so ``lb_member2`` is another project than ``lb_member``, which
the RBAC tests rely on). The ``primary`` accounts come first in the file: tempest gives
``primary`` the first free account with the ``member`` role, and the ``lb_member`` ones have it
too. :func:`topology` is the emulator's default topology (its networks, its ``demo`` and
``admin``) plus these projects and users.

**Configuration-only workarounds** (the plugin is run as published; ``tempest.conf`` is all we
set):

* ``[load_balancer] log_user_roles = false``: with it on, every class first lists its users'
  role assignments through Keystone's admin API (``GET /v3/role_assignments``,
  ``/v3/roles/{id}``), which the emulator does not serve; the option only logs.
* no ``test_network_override``/``test_subnet_override``: the plugin 3.5.0 is broken there.
  ``resource_setup`` keeps the whole ``show_subnet`` answer (``{"subnet": {...}}``) as the
  subnet and then reads its ``id`` (KeyError), and with IPv6 on it reads
  ``test_IPv6_subnet_override``, an option it never registers (``test_ipv6_subnet_override``
  is the registered one): NoSuchOptError. So the plugin makes its own networks and subnets, as
  in Octavia's gate.
* ``[load_balancer] default_ipv6_subnetpool =`` (empty): the emulator has no subnet pools; an
  empty name makes the plugin give its IPv6 VIP subnet a CIDR (``vip_ipv6_subnet_cidr``)
  instead of looking the pool up.
* status polling every 0.2 s instead of 5-10 s: the emulator runs with the ``instant`` timing
  profile, so a poll interval only adds wall time.
"""

from __future__ import annotations

import configparser
import copy
import io
from dataclasses import dataclass
from typing import Any

from emulator.topology import DEFAULT_TOPOLOGY

MODES = ("none", "advanced", "keystone_default_roles")
DOMAIN = "Default"
PROVIDER = "amphora"
POLL_INTERVAL = 0.2


@dataclass(frozen=True)
class Persona:
    """One credential the plugin's base class asks for: its name and roles on its project."""

    name: str
    roles: tuple[str, ...]
    admin: bool = False  # tempest's ``types: [admin]``: the cloud admin


def personas(mode: str) -> tuple[Persona, ...]:
    """The credentials of ``LoadBalancerBaseTest.credentials`` in ``mode``, ``primary`` first
    (see the module docstring). ``[load_balancer]`` keeps its default role names
    (``load-balancer_member`` ...), so these are the roles Octavia's advanced policy knows."""
    if mode not in MODES:
        raise ValueError(f"unknown RBAC mode {mode!r}; use one of: {', '.join(MODES)}")
    if mode == "keystone_default_roles":
        return (
            Persona("primary", ("member",)),
            Persona("admin", ("admin",), admin=True),
            Persona("lb_admin", ("admin",)),
            Persona("lb_observer", ("reader",)),
            Persona("lb_global_observer", ("reader",)),
            Persona("lb_member", ("member",)),
            Persona("lb_member2", ("member",)),
        )
    return (
        Persona("primary", ("member",)),
        Persona("admin", ("admin",), admin=True),
        Persona("lb_admin", ("load-balancer_admin",)),
        Persona("lb_observer", ("load-balancer_observer", "reader")),
        Persona("lb_global_observer", ("load-balancer_global_observer", "reader")),
        Persona("lb_member", ("load-balancer_member", "member")),
        Persona("lb_member2", ("load-balancer_member", "member")),
    )


@dataclass(frozen=True)
class Account:
    """One pre-provisioned account: a user with a project of its own."""

    persona: Persona
    set_index: int

    @property
    def name(self) -> str:
        return f"conformance-{self.set_index}-{self.persona.name}"

    @property
    def password(self) -> str:
        return f"{self.name}-password"


def accounts(mode: str, *, workers: int) -> list[Account]:
    """``workers + 1`` sets of :func:`personas`, ordered persona by persona (all ``primary``
    accounts first: tempest picks the first free account that has the roles)."""
    sets = range(1, workers + 2)
    return [Account(persona=p, set_index=i) for p in personas(mode) for i in sets]


def topology(mode: str, *, workers: int) -> dict[str, Any]:
    """The emulator's default topology plus a project and a user per account."""
    data = copy.deepcopy(DEFAULT_TOPOLOGY)
    for account in accounts(mode, workers=workers):
        data["projects"].append({"name": account.name, "domain": "default"})
        data["users"].append(
            {
                "name": account.name,
                "password": account.password,
                "domain": "default",
                "projects": {account.name: list(account.persona.roles)},
            }
        )
    return data


def accounts_yaml(mode: str, *, workers: int) -> list[dict[str, Any]]:
    """tempest's ``accounts.yaml`` (``etc/accounts.yaml.sample``), as data."""
    entries: list[dict[str, Any]] = []
    for account in accounts(mode, workers=workers):
        entry: dict[str, Any] = {
            "username": account.name,
            "project_name": account.name,
            "password": account.password,
            "user_domain_name": DOMAIN,
            "project_domain_name": DOMAIN,
            "roles": list(account.persona.roles),
        }
        if account.persona.admin:
            entry["types"] = ["admin"]
        entries.append(entry)
    return entries


@dataclass(frozen=True)
class Cloud:
    """What tempest needs to know of the running emulator."""

    auth_url: str  # .../identity/v3
    region: str
    public_network_id: str
    providers: dict[str, str]  # name -> description, as the emulator lists them


def tempest_conf(
    *,
    mode: str,
    cloud: Cloud,
    accounts_file: str,
    lock_path: str,
    log_file: str,
) -> str:
    """``etc/tempest.conf`` for one mode against the emulator (see the module docstring for the
    options that work around the plugin or the emulator)."""
    if mode not in MODES:
        raise ValueError(f"unknown RBAC mode {mode!r}; use one of: {', '.join(MODES)}")
    conf = configparser.ConfigParser(interpolation=None)
    conf.optionxform = str  # type: ignore[assignment,method-assign]  # keep RBAC_test_type's case
    interval = str(POLL_INTERVAL)
    sections: dict[str, dict[str, str]] = {
        "DEFAULT": {"log_file": log_file, "use_stderr": "false", "debug": "true"},
        "oslo_concurrency": {"lock_path": lock_path},
        "auth": {
            "use_dynamic_credentials": "false",
            "test_accounts_file": accounts_file,
            "default_credentials_domain_name": DOMAIN,
            "create_isolated_networks": "false",
        },
        "identity": {
            "uri_v3": cloud.auth_url,
            "auth_version": "v3",
            "region": cloud.region,
            "v3_endpoint_type": "public",
            "disable_ssl_certificate_validation": "true",
        },
        "identity-feature-enabled": {"api_v2": "false", "api_v3": "true"},
        "service_available": {
            "load_balancer": "true",
            "neutron": "true",
            # the plugin's skip_checks want compute and image unless test_with_noop, which
            # would replace every network with a made-up ID; the api tests never call them
            "nova": "true",
            "glance": "true",
            "cinder": "false",
            "swift": "false",
            "horizon": "false",
        },
        "network": {
            "public_network_id": cloud.public_network_id,
            "project_networks_reachable": "false",
        },
        "network-feature-enabled": {"port_security": "false"},
        "validation": {"run_validation": "false"},
        "load_balancer": {
            "RBAC_test_type": mode,
            "provider": PROVIDER,
            "enabled_provider_drivers": ",".join(
                f"{name}:{text}" for name, text in cloud.providers.items()
            ),
            "region": cloud.region,
            "log_user_roles": "false",
            "default_ipv6_subnetpool": "",
            "test_with_noop": "false",
            "check_interval": interval,
            "check_timeout": "60",
            "build_interval": interval,
            "build_timeout": "60",
            "lb_build_interval": interval,
            "lb_build_timeout": "60",
        },
        "loadbalancer-feature-enabled": {"not_implemented_is_error": "true"},
        "enforce_scope": {"octavia": "false"},
    }
    for name, values in sections.items():
        if name != "DEFAULT":
            conf.add_section(name)
        for key, value in values.items():
            conf.set(name, key, value)
    out = io.StringIO()
    conf.write(out)
    return out.getvalue()

"""The cloud that exists at start: identity, networks and Octavia options, from a file or defaults.

The default topology needs no setup calls: a ``Default`` domain, a ``demo`` project with a
``demo`` user (password ``demo-password``) and an application credential, a ``viewer`` user
with only the ``reader`` role there (``viewer-password``), an ``admin`` project and user, an
external network ``public`` with a floating-IP subnet, and a tenant network
``private`` with a subnet for VIPs and members. IDs are derived from names (UUIDv5), so they are
the same on every run unless the file sets them.

A topology file (YAML or JSON) has the same shape as :data:`DEFAULT_TOPOLOGY`; any top-level key
it sets replaces the default one.
"""

from __future__ import annotations

import ipaddress
import json
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

_NAMESPACE = uuid.UUID("6f1c3f4e-1b8a-4b52-9a53-0d1f0c1e5a11")

DEFAULT_TOPOLOGY: dict[str, Any] = {
    "region": "RegionOne",
    "domains": [{"id": "default", "name": "Default"}],
    "projects": [
        {"name": "demo", "domain": "default"},
        {"name": "admin", "domain": "default"},
    ],
    "users": [
        {
            "name": "demo",
            "password": "demo-password",
            "domain": "default",
            "projects": {"demo": ["member", "load-balancer_member"]},
        },
        {
            "name": "admin",
            "password": "admin-password",
            "domain": "default",
            "projects": {"admin": ["admin"], "demo": ["admin"]},
        },
        {  # may read the demo project's objects, not make any (Keystone's reader role)
            "name": "viewer",
            "password": "viewer-password",
            "domain": "default",
            "projects": {"demo": ["reader"]},
        },
    ],
    "application_credentials": [
        {"name": "demo-appcred", "user": "demo", "project": "demo", "secret": "demo-appcred-secret"}
    ],
    "networks": [
        {
            "name": "public",
            "project": "admin",
            "external": True,
            "shared": False,
            "subnets": [
                {
                    "name": "public-subnet",
                    "cidr": "172.24.4.0/24",
                    "gateway_ip": "172.24.4.1",
                    "allocation_pools": [{"start": "172.24.4.10", "end": "172.24.4.250"}],
                }
            ],
        },
        {
            "name": "private",
            "project": "demo",
            "subnets": [{"name": "private-subnet", "cidr": "10.0.0.0/24"}],
        },
    ],
    "octavia": {
        "providers": {
            "amphora": "The Octavia Amphora driver.",
            "octavia": "Deprecated alias of the Octavia Amphora driver.",
            "ovn": "Octavia OVN driver.",
        },
        "default_provider": "amphora",
        "flavors": [],
        "availability_zones": [],
    },
}


def stable_id(kind: str, name: str) -> str:
    """A UUID derived from a kind and a name, identical on every run."""
    return str(uuid.uuid5(_NAMESPACE, f"{kind}:{name}"))


@dataclass(frozen=True)
class Topology:
    """A validated topology document (the dict form is kept: models read it directly)."""

    data: dict[str, Any]

    @property
    def region(self) -> str:
        return str(self.data["region"])

    @property
    def octavia(self) -> dict[str, Any]:
        value: dict[str, Any] = self.data["octavia"]
        return value


def load_topology(*, path: Path | None = None) -> Topology:
    """The default topology, with the top-level keys of ``path`` (if given) replacing defaults."""
    data = json.loads(json.dumps(DEFAULT_TOPOLOGY))
    if path is not None:
        loaded = load_document(path=path)
        unknown = set(loaded) - set(DEFAULT_TOPOLOGY)
        if unknown:
            raise ValueError(
                f"{path}: unknown topology keys {sorted(unknown)}; "
                f"use: {', '.join(sorted(DEFAULT_TOPOLOGY))}"
            )
        data.update(loaded)
    validate_topology(data)
    return Topology(data=data)


def load_document(*, path: Path) -> dict[str, Any]:
    """A YAML or JSON mapping from a file, or a ValueError that names the file."""
    try:
        loaded = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise ValueError(f"{path}: cannot read YAML/JSON: {exc}") from exc
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise ValueError(f"{path}: expected a mapping at the top level")
    return loaded


def validate_topology(data: dict[str, Any]) -> None:
    """Raise ValueError naming the first wrong field."""
    projects = {p.get("name") for p in data["projects"]}
    for i, user in enumerate(data["users"]):
        for field in ("name", "password"):
            if not user.get(field):
                raise ValueError(f"users[{i}].{field} is required")
        for project in user.get("projects", {}):
            if project not in projects:
                raise ValueError(f"users[{i}].projects: unknown project {project!r}")
    for i, net in enumerate(data["networks"]):
        if not net.get("name"):
            raise ValueError(f"networks[{i}].name is required")
        if net.get("project", "admin") not in projects:
            raise ValueError(f"networks[{i}].project: unknown project {net.get('project')!r}")
        for j, subnet in enumerate(net.get("subnets", [])):
            try:
                ipaddress.ip_network(subnet["cidr"])
            except (KeyError, ValueError) as exc:
                raise ValueError(
                    f"networks[{i}].subnets[{j}].cidr must be a CIDR like 10.0.0.0/24: {exc}"
                ) from exc
    if data["octavia"].get("default_provider") not in data["octavia"].get("providers", {}):
        raise ValueError("octavia.default_provider must be one of octavia.providers")

"""Client configuration for a running emulator: ``clouds.yaml``, ``OS_*`` env and topology IDs.

``clouds.yaml`` holds two clouds: ``<name>`` (password auth, project scoped) and
``<name>-appcred`` (application credential), usable by ``openstack --os-cloud``, openstacksdk
and the Pulumi/Terraform OpenStack provider (``OS_CLOUD``). ``topology.json`` next to it lists
the IDs of the default topology (external network and subnet, tenant network and subnet).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml


def clouds_document(*, cloud_name: str, info: dict[str, Any]) -> dict[str, Any]:
    common = {"region_name": info["region_name"], "interface": "public", "identity_api_version": 3}
    clouds: dict[str, Any] = {
        cloud_name: {
            **common,
            "auth_type": "password",
            "auth": {
                "auth_url": info["auth_url"],
                "username": info["username"],
                "password": info["password"],
                "project_name": info["project_name"],
                "user_domain_name": info["user_domain_name"],
                "project_domain_name": info["project_domain_name"],
            },
        }
    }
    if "application_credential_id" in info:
        clouds[f"{cloud_name}-appcred"] = {
            **common,
            "auth_type": "v3applicationcredential",
            "auth": {
                "auth_url": info["auth_url"],
                "application_credential_id": info["application_credential_id"],
                "application_credential_secret": info["application_credential_secret"],
            },
        }
    return {"clouds": clouds}


def write_clouds_yaml(*, path: Path, cloud_name: str, info: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(clouds_document(cloud_name=cloud_name, info=info)))
    (path.parent / "topology.json").write_text(json.dumps(info, indent=2) + "\n")
    return path


def env_vars(*, info: dict[str, Any]) -> dict[str, str]:
    return {
        "OS_AUTH_URL": info["auth_url"],
        "OS_AUTH_TYPE": "password",
        "OS_IDENTITY_API_VERSION": "3",
        "OS_REGION_NAME": info["region_name"],
        "OS_USERNAME": info["username"],
        "OS_PASSWORD": info["password"],
        "OS_PROJECT_NAME": info["project_name"],
        "OS_USER_DOMAIN_NAME": info["user_domain_name"],
        "OS_PROJECT_DOMAIN_NAME": info["project_domain_name"],
        "OS_INTERFACE": "public",
    }


def write_env_file(*, path: Path, info: dict[str, Any]) -> Path:
    lines = [f"export {k}={json.dumps(v)}" for k, v in env_vars(info=info).items()]
    path.write_text("\n".join(lines) + "\n")
    return path

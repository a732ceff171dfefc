"""Keystone rules: who gets a token, with which scope, and what validates."""

from __future__ import annotations

from typing import Any

import pytest

from emulator.cloud import Cloud
from emulator.errors import Unauthorized
from emulator.timing import ManualClock

DEMO_PASSWORD = "demo-password"


def password_body(*, password: str = DEMO_PASSWORD, project: str | None = "demo") -> Any:
    auth: dict[str, Any] = {
        "identity": {
            "methods": ["password"],
            "password": {
                "user": {"name": "demo", "domain": {"name": "Default"}, "password": password}
            },
        }
    }
    if project:
        auth["scope"] = {"project": {"name": project, "domain": {"id": "default"}}}
    return {"auth": auth}


def test_password_auth_scopes_token_to_project(cloud: Cloud) -> None:
    token = cloud.keystone.authenticate(password_body())
    ctx = cloud.keystone.validate(token["id"])
    assert ctx.project_id == cloud.keystone.project_by_name("demo")["id"]
    assert "member" in ctx.roles
    assert not ctx.is_admin


def test_wrong_password_is_401(cloud: Cloud) -> None:
    with pytest.raises(Unauthorized):
        cloud.keystone.authenticate(password_body(password="nope"))


def test_project_without_role_is_401(cloud: Cloud) -> None:
    with pytest.raises(Unauthorized, match="has no access to project"):
        cloud.keystone.authenticate(password_body(project="admin"))


def test_unscoped_token_is_not_accepted_by_services(cloud: Cloud) -> None:
    token = cloud.keystone.authenticate(password_body(project=None))
    with pytest.raises(Unauthorized, match="project-scoped"):
        cloud.keystone.validate(token["id"])


def test_application_credential_auth(cloud: Cloud) -> None:
    info = cloud.topology_info(auth_url="x")
    token = cloud.keystone.authenticate(
        {
            "auth": {
                "identity": {
                    "methods": ["application_credential"],
                    "application_credential": {
                        "id": info["application_credential_id"],
                        "secret": info["application_credential_secret"],
                    },
                }
            }
        }
    )
    assert cloud.keystone.validate(token["id"]).project_id == info["project_id"]


def test_unknown_revoked_and_expired_tokens_are_401(cloud: Cloud, clock: ManualClock) -> None:
    with pytest.raises(Unauthorized):
        cloud.keystone.validate("not-a-token")
    with pytest.raises(Unauthorized):
        cloud.keystone.validate(None)
    token = cloud.keystone.authenticate(password_body())
    clock.advance(25 * 3600)
    with pytest.raises(Unauthorized):
        cloud.keystone.validate(token["id"])
    fresh = cloud.keystone.authenticate(password_body())
    cloud.keystone.revoke(fresh["id"])
    with pytest.raises(Unauthorized):
        cloud.keystone.validate(fresh["id"])

"""Keystone rules: who gets a token, with which scope, and what validates."""

from __future__ import annotations

from typing import Any

import pytest

from emulator.cloud import Cloud
from emulator.errors import NotFound, Unauthorized
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


def test_a_subject_token_that_does_not_validate_is_404_as_keystone_says_it(
    cloud: Cloud, clock: ManualClock
) -> None:
    """``GET``/``DELETE /v3/auth/tokens`` with a bad ``X-Subject-Token``: Keystone 30's
    ``validate_token`` raises ``TokenNotFound`` (404): "Could not recognize Fernet token" for
    one it cannot read, "Failed to validate token" for one expired or revoked, "No token in the
    request" without one. The caller's own bad ``X-Auth-Token`` stays 401."""
    caller = cloud.keystone.authenticate(password_body())["id"]
    with pytest.raises(NotFound, match=r"^Could not recognize Fernet token$"):
        cloud.keystone.validate_subject("not-a-token")
    with pytest.raises(NotFound, match=r"^No token in the request$"):
        cloud.keystone.validate_subject("")
    revoked = cloud.keystone.authenticate(password_body())["id"]
    cloud.keystone.revoke(revoked)
    with pytest.raises(NotFound, match=r"^Failed to validate token$"):
        cloud.keystone.validate_subject(revoked)
    with pytest.raises(NotFound, match=r"^Failed to validate token$"):
        cloud.keystone.revoke(revoked)  # revoking it again: the same answer
    with pytest.raises(Unauthorized):
        cloud.keystone.validate(revoked)  # as the caller's token: 401
    assert cloud.keystone.validate_subject(caller)["id"] == caller
    clock.advance(25 * 3600)
    with pytest.raises(NotFound, match=r"^Failed to validate token$"):
        cloud.keystone.validate_subject(caller)

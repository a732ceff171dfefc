"""How the engine's OpenStack client reads cloud.conf ``[Global]`` (pure), and how its errors are
retried."""

from __future__ import annotations

import pytest

from reconciler.config import AuthConfig, Secret
from reconciler.engine.openstack.auth import (
    client_cert,
    identity_url,
    interface_of,
    login_failure,
    login_method,
    missing_endpoint,
    tls_verify,
)
from reconciler.engine.openstack.session import LoginError, OpenStackRestError

URL = "https://keystone.example.com:5000/v3"
PASSWORD = AuthConfig(
    auth_url=URL,
    username="kube",
    password=Secret("s3cret"),
    tenant_name="prod",
    user_domain_name="users",
)


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (URL, URL),
        (URL + "/", URL),
        ("https://keystone.example.com:5000", URL),
        ("https://keystone.example.com:5000/", URL),
        ("https://keystone.example.com:5000/v2.0", URL),
        ("https://cloud.example.com/identity", "https://cloud.example.com/identity/v3"),
    ],
)
def test_keystone_v3_url(given: str, expected: str) -> None:
    assert identity_url(given) == expected


@pytest.mark.parametrize(
    ("endpoint_type", "interface"),
    [
        ("", "public"),
        ("public", "public"),
        ("internal", "internal"),
        ("internalURL", "internal"),
        ("admin", "admin"),
        ("adminURL", "admin"),
        ("private", "public"),  # gophercloud's GetEndpointType: anything else is public
    ],
)
def test_endpoint_interface(endpoint_type: str, interface: str) -> None:
    assert interface_of(endpoint_type) == interface


def test_tls_settings() -> None:
    assert tls_verify(AuthConfig()) is True
    assert tls_verify(AuthConfig(ca_file="/ca.pem")) == "/ca.pem"
    assert tls_verify(AuthConfig(ca_file="/ca.pem", tls_insecure=True)) is False
    assert client_cert(AuthConfig()) is None
    assert client_cert(AuthConfig(cert_file="/c.pem", key_file="/k.pem")) == ("/c.pem", "/k.pem")
    assert client_cert(AuthConfig(cert_file="/both.pem")) == "/both.pem"


def test_password_login_with_its_domains_and_project() -> None:
    method, arguments = login_method(PASSWORD)
    assert method.plugin == "password"
    assert arguments == {
        "auth_url": URL,
        "username": "kube",
        "user_domain_name": "users",
        "password": "s3cret",
        "project_name": "prod",
        "project_domain_name": "Default",
    }
    by_ids = AuthConfig(
        auth_url=URL, user_id="u1", password=Secret("p"), tenant_id="p1", domain_id="d1"
    )
    assert login_method(by_ids)[1] == {
        "auth_url": URL,
        "user_id": "u1",
        "password": "p",
        "project_id": "p1",
    }
    named = AuthConfig(auth_url=URL, username="kube", password=Secret("p"), domain_name="corp")
    assert login_method(named)[1]["user_domain_name"] == "corp"


def test_a_trust_scopes_the_password_login() -> None:
    trusted = AuthConfig(
        auth_url=URL, user_id="trustee", password=Secret("p"), tenant_id="p1", trust_id="t1"
    )
    method, arguments = login_method(trusted)
    assert arguments["trust_id"] == "t1"
    assert "project_id" not in arguments
    assert "in trust t1 (trust-id)" in method.what


def test_gophercloud_order_password_then_token_then_application_credential() -> None:
    everything = AuthConfig(
        auth_url=URL,
        username="kube",
        password=Secret("p"),
        token=Secret("tok"),
        application_credential_id="ac",
        application_credential_secret=Secret("acs"),
    )
    assert login_method(everything)[0].plugin == "password"
    no_password = AuthConfig(
        auth_url=URL,
        token=Secret("tok"),
        tenant_id="p1",
        application_credential_id="ac",
        application_credential_secret=Secret("acs"),
    )
    method, arguments = login_method(no_password)
    assert (method.plugin, arguments) == (
        "token",
        {"auth_url": URL, "token": "tok", "project_id": "p1"},
    )
    appcred = AuthConfig(
        auth_url="https://keystone.example.com:5000",
        application_credential_id="ac",
        application_credential_secret=Secret("acs"),
    )
    method, arguments = login_method(appcred)
    assert method.plugin == "application_credential"
    assert arguments == {
        "auth_url": URL,
        "application_credential_id": "ac",
        "application_credential_secret": "acs",
    }
    by_name = AuthConfig(
        auth_url=URL,
        username="kube",
        user_domain_id="ud",
        application_credential_name="lbr",
        application_credential_secret=Secret("acs"),
    )
    method, arguments = login_method(by_name)
    assert method.what == "application credential lbr of user kube"
    assert arguments["user_domain_id"] == "ud"


def test_what_a_refused_login_says() -> None:
    text = login_failure(
        PASSWORD, status=401, cloud_message="The request you have made requires authentication."
    )
    assert text == (
        f"cannot log in to Keystone at {URL} (auth-url) with the password of user kube for "
        "project prod (tenant-name): the cloud answered 401: The request you have made "
        "requires authentication.; check username, password, user-domain-name, tenant-name, "
        "tenant-id in cloud.conf [Global]"
    )
    assert "s3cret" not in text
    clouds = AuthConfig(
        auth_url=URL,
        application_credential_id="ac",
        application_credential_secret=Secret("acs"),
        use_clouds=True,
    )
    text = login_failure(clouds, status=401, cloud_message="no")
    assert "with application credential ac" in text
    assert "in the clouds.yaml entry of use-clouds, or cloud.conf [Global]" in text
    assert "acs" not in text


@pytest.mark.parametrize(
    ("status", "reason", "fix"),
    [
        (None, "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed", "check ca-file"),
        (None, "Connection refused", "check auth-url, and that Keystone can be reached"),
        (404, "", "check auth-url: Keystone's v3 URL"),
        (503, "", "Keystone failed"),
    ],
)
def test_each_failed_login_says_what_to_check(status: int | None, reason: str, fix: str) -> None:
    assert fix in login_failure(PASSWORD, status=status, reason=reason)


def test_a_closed_connection_over_https_names_the_client_certificate() -> None:
    """A TLS 1.3 server that wants a client certificate checks it after the handshake and may
    close the connection before the client reads its alert: no TLS error reaches the client
    (tests/integration/engine/test_openstack_client.py saw both answers)."""
    closed = "('Connection aborted.', RemoteDisconnected('Remote end closed connection'))"
    plain = AuthConfig(auth_url="http://keystone.example.com:5000/v3", username="u")
    assert "cert-file/key-file" in login_failure(PASSWORD, status=None, reason=closed)
    assert "cert-file/key-file" not in login_failure(plain, status=None, reason=closed)


def test_a_missing_endpoint_names_interface_and_region() -> None:
    auth = AuthConfig(auth_url=URL, endpoint_type="internalURL", region="RegionTwo")
    assert missing_endpoint(auth, "load-balancer") == (
        f"the catalog of Keystone at {URL} has no internal load-balancer endpoint in region "
        "RegionTwo; check os-endpoint-type (internalURL) and region in cloud.conf [Global] "
        "(`openstack catalog list` shows what there is)"
    )


@pytest.mark.parametrize(
    ("status", "message", "kind"),
    [
        (409, "Invalid state PENDING_UPDATE of loadbalancer resource x", "busy"),
        (409, "Quota exceeded for resources: ['floatingip'].", "backoff"),
        (503, "", "backoff"),
        (400, "Validation failure", "backoff"),
        (None, "", "backoff"),
    ],
)
def test_client_errors_are_retried_as_the_same_answers_of_the_provider(
    status: int | None, message: str, kind: str
) -> None:
    error = OpenStackRestError("x", status=status, method="DELETE", path="/", cloud_message=message)
    assert error.failure_kind == kind
    assert error.conflict is (status == 409)
    assert LoginError("x").failure_kind == "backoff"

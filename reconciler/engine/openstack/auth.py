"""How the engine's OpenStack client logs in and connects, from cloud.conf ``[Global]``. Pure.

The same settings the OpenStack provider gets (:mod:`reconciler.engine.provider_config`), read the
way gophercloud reads them (the provider and OCCM both log in with it), so that the client works
wherever the provider does:

* **how to log in** (:func:`login_method`): a password (``user-id`` or ``username`` with
  ``user-domain-*``/``domain-*``, scoped to ``tenant-id`` or ``tenant-name`` with
  ``tenant-domain-*``/``domain-*``), else a ``token`` scoped the same way, else an application
  credential (``application-credential-id``, or ``-name`` with its user), gophercloud's order. A
  ``trust-id`` scopes the password login to the trust (cloud.conf refuses trusts today, as the
  provider cannot use one: :mod:`reconciler.config.checks`). With ``use-clouds`` these settings
  came from the clouds.yaml entry; nothing changes here;
* **where** (:func:`identity_url`, :func:`interface_of`): Keystone v3 at ``auth-url`` (an
  unversioned URL, or a v2.0 one, gets ``/v3``, as gophercloud's version choice ends up), the
  catalog's endpoints of ``os-endpoint-type`` (``public``, ``internal``, ``admin``; gophercloud's
  spelling ``internalURL`` too; anything else is ``public``, as in gophercloud) in ``region``;
* **TLS** (:func:`tls_verify`, :func:`client_cert`): ``ca-file``, ``tls-insecure``, ``cert-file``
  and ``key-file``;
* **what a failed login tells the operator** (:func:`login_failure`): which settings were used,
  the cloud's answer, and what to check.

Secrets are only handed out by :func:`login_method`'s arguments, which the caller passes on to
keystoneauth and keeps nowhere; nothing here puts one into a message.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from reconciler.config import AuthConfig

__all__ = [
    "INTERFACES",
    "LoginMethod",
    "client_cert",
    "identity_url",
    "interface_of",
    "login_failure",
    "login_method",
    "missing_endpoint",
    "tls_verify",
]

INTERFACES = ("public", "internal", "admin")


@dataclass(frozen=True)
class LoginMethod:
    """Which keystoneauth v3 plugin logs in (``password``, ``token``,
    ``application_credential``), what it says about itself (``what``, no secret: for messages),
    and the settings it reads (``settings``: cloud.conf keys, for messages)."""

    plugin: str
    what: str
    settings: tuple[str, ...]


def identity_url(auth_url: str) -> str:
    """Keystone's v3 URL from ``auth-url``: as given when it ends in ``/v3``, else with
    ``/v3`` in place of a ``/v2.0`` or appended."""
    parts = urlsplit(auth_url.strip())
    path = parts.path.rstrip("/")
    if path.endswith("/v2.0"):
        path = path.removesuffix("/v2.0")
    if not path.endswith("/v3"):
        path += "/v3"
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


def interface_of(endpoint_type: str) -> str:
    """The catalog interface for ``os-endpoint-type`` (gophercloud's ``GetEndpointType``)."""
    value = endpoint_type.strip()
    if value in ("internal", "internalURL"):
        return "internal"
    if value in ("admin", "adminURL"):
        return "admin"
    return "public"


def tls_verify(auth: AuthConfig) -> bool | str:
    """What keystoneauth checks the cloud's certificate against: ``ca-file``, the system's
    CAs (True), or nothing (``tls-insecure``)."""
    if auth.tls_insecure:
        return False
    return auth.ca_file or True


def client_cert(auth: AuthConfig) -> tuple[str, str] | str | None:
    """The client certificate (``cert-file``, ``key-file``) the cloud may ask for."""
    if auth.cert_file and auth.key_file:
        return (auth.cert_file, auth.key_file)
    return auth.cert_file or None


def _domain(auth: AuthConfig, *, project: bool) -> dict[str, str]:
    did = (auth.tenant_domain_id if project else auth.user_domain_id) or auth.domain_id
    name = (auth.tenant_domain_name if project else auth.user_domain_name) or auth.domain_name
    prefix = "project_domain" if project else "user_domain"
    return {f"{prefix}_id": did} if did else {f"{prefix}_name": name or "Default"}


def _user(auth: AuthConfig) -> dict[str, str]:
    if auth.user_id:
        return {"user_id": auth.user_id}
    return {"username": auth.username, **_domain(auth, project=False)}


def _project(auth: AuthConfig) -> dict[str, str]:
    if auth.tenant_id:
        return {"project_id": auth.tenant_id}
    if auth.tenant_name:
        return {"project_name": auth.tenant_name, **_domain(auth, project=True)}
    return {}


def _scope_text(auth: AuthConfig) -> str:
    if auth.trust_id:
        return f" in trust {auth.trust_id} (trust-id)"
    if auth.tenant_id:
        return f" for project {auth.tenant_id} (tenant-id)"
    if auth.tenant_name:
        return f" for project {auth.tenant_name} (tenant-name)"
    return " without a project (set tenant-id or tenant-name)"


def login_method(auth: AuthConfig) -> tuple[LoginMethod, dict[str, object]]:
    """The login and the keyword arguments of its keystoneauth v3 plugin (secrets included:
    pass them on, keep them nowhere)."""
    url = {"auth_url": identity_url(auth.auth_url)}
    who = auth.user_id or auth.username
    user_key = "user-id" if auth.user_id else "username"
    if auth.password:
        scope: dict[str, str] = {"trust_id": auth.trust_id} if auth.trust_id else _project(auth)
        method = LoginMethod(
            "password",
            f"the password of user {who}{_scope_text(auth)}",
            (user_key, "password", "user-domain-name", "tenant-name", "tenant-id"),
        )
        return method, {**url, **_user(auth), "password": auth.password.reveal(), **scope}
    if auth.token:
        method = LoginMethod("token", f"a token{_scope_text(auth)}", ("token", "tenant-name"))
        return method, {**url, "token": auth.token.reveal(), **_project(auth)}
    if auth.application_credential_id or auth.application_credential_name:
        secret = {"application_credential_secret": auth.application_credential_secret.reveal()}
        if auth.application_credential_id:
            ident = auth.application_credential_id
            method = LoginMethod(
                "application_credential",
                f"application credential {ident}",
                ("application-credential-id", "application-credential-secret"),
            )
            return method, {**url, "application_credential_id": ident, **secret}
        name = auth.application_credential_name
        method = LoginMethod(
            "application_credential",
            f"application credential {name} of user {who}",
            ("application-credential-name", "application-credential-secret", user_key),
        )
        return method, {**url, "application_credential_name": name, **_user(auth), **secret}
    method = LoginMethod(
        "password",
        f"user {who or '(none)'} without a password",
        ("password", "application-credential-id", "token"),
    )
    return method, {**url, **_user(auth), "password": "", **_project(auth)}


def _origin(auth: AuthConfig) -> str:
    return "the clouds.yaml entry of use-clouds, or " if auth.use_clouds else ""


def login_failure(
    auth: AuthConfig, *, status: int | None, cloud_message: str = "", reason: str = ""
) -> str:
    """What an operator reads when the login failed: with what, the cloud's answer (``status``
    and ``cloud_message``; ``reason`` when there was no answer) and what to check."""
    method, _arguments = login_method(auth)
    where = f"cannot log in to Keystone at {identity_url(auth.auth_url)} (auth-url)"
    settings = ", ".join(method.settings)
    if status is None:
        answer = f"no answer: {reason}" if reason else "no answer"
        tls = any(w in reason.lower() for w in ("ssl", "certificate", "tls"))
        if tls:
            fix = (
                "check ca-file (the CA that signed Keystone's certificate; tls-insecure = true "
                "skips the check, not for production) and cert-file/key-file when the cloud "
                "asks for a client certificate"
            )
        elif identity_url(auth.auth_url).startswith("https:") and any(
            w in reason for w in ("RemoteDisconnected", "Connection aborted", "reset by peer")
        ):
            # TLS 1.3: a server that wants a client certificate checks it after the handshake
            # and may just close the connection, so the client sees no TLS error at all
            fix = (
                "check auth-url, that Keystone can be reached from here, and cert-file/key-file "
                "when the cloud asks for a client certificate (a TLS 1.3 server that gets none "
                "may close the connection without an answer)"
            )
        else:
            fix = "check auth-url, and that Keystone can be reached from here"
    else:
        said = f": {cloud_message}" if cloud_message else ""
        answer = f"the cloud answered {status}{said}"
        if status in (401, 403):
            fix = f"check {settings} in {_origin(auth)}cloud.conf [Global]"
        elif status == 404:
            fix = "check auth-url: Keystone's v3 URL, e.g. https://keystone.example.com:5000/v3"
        elif status >= 500:
            fix = "Keystone failed; it is tried again at the next start"
        else:
            fix = f"check auth-url and {settings} in {_origin(auth)}cloud.conf [Global]"
    return f"{where} with {method.what}: {answer}; {fix}"


def missing_endpoint(auth: AuthConfig, service_type: str) -> str:
    """What an operator reads when the catalog of the login has no endpoint to use."""
    interface = interface_of(auth.endpoint_type)
    region = f" in region {auth.region}" if auth.region else ""
    return (
        f"the catalog of Keystone at {identity_url(auth.auth_url)} has no {interface} "
        f"{service_type} endpoint{region}; check os-endpoint-type"
        f"{' (' + auth.endpoint_type + ')' if auth.endpoint_type else ''} and region in "
        f"{_origin(auth)}cloud.conf [Global] (`openstack catalog list` shows what there is)"
    )

"""The OpenStack provider's configuration, from cloud.conf ``[Global]``. Pure.

The engine writes these into every stack's configuration (``openstack:authUrl``, ``openstack:
password`` ...; :func:`reconciler.engine.stack_meta.configure`): the secret ones with ``pulumi
config set --secret``, never on a command line, and :func:`secret_values` tells the engine which
values to redact from every message.
"""

from __future__ import annotations

from typing import Any

from reconciler.config import AuthConfig

__all__ = ["provider_config", "secret_values"]

# cloud.conf [Global] field -> the OpenStack provider's config key, and whether it is secret.
_PROVIDER_KEYS: tuple[tuple[str, str, bool], ...] = (
    ("auth_url", "authUrl", False),
    ("user_id", "userId", False),
    ("username", "userName", False),
    ("password", "password", True),
    ("tenant_id", "tenantId", False),
    ("tenant_name", "tenantName", False),
    ("domain_id", "domainId", False),
    ("domain_name", "domainName", False),
    ("tenant_domain_id", "projectDomainId", False),
    ("tenant_domain_name", "projectDomainName", False),
    ("user_domain_id", "userDomainId", False),
    ("user_domain_name", "userDomainName", False),
    ("region", "region", False),
    ("endpoint_type", "endpointType", False),
    ("ca_file", "cacertFile", False),
    ("cert_file", "cert", False),
    ("key_file", "key", False),
    ("token", "token", True),
    ("application_credential_id", "applicationCredentialId", False),
    ("application_credential_name", "applicationCredentialName", False),
    ("application_credential_secret", "applicationCredentialSecret", True),
    ("cloud", "cloud", False),
)


def provider_config(auth: AuthConfig) -> dict[str, tuple[str, bool]]:
    """``openstack:<key>`` -> (value, secret) for the non-empty fields of ``auth``."""
    out: dict[str, tuple[str, bool]] = {}
    for field, key, secret in _PROVIDER_KEYS:
        raw: Any = getattr(auth, field)
        value = raw.reveal() if hasattr(raw, "reveal") else str(raw)
        if value:
            out[f"openstack:{key}"] = (value, secret)
    if auth.tls_insecure:
        out["openstack:insecure"] = ("true", False)
    return out


def secret_values(auth: AuthConfig) -> list[str]:
    return [v for v, secret in provider_config(auth).values() if secret]

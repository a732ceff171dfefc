"""The OpenStack provider's configuration, from cloud.conf ``[Global]``, and where its secrets
may not be. Pure.

* **Stack config** (:func:`provider_config`): the fields that say *which* cloud, user, project
  and region (``openstack:authUrl``, ``openstack:userName`` ...), written into every stack's
  configuration as plain values (:func:`reconciler.engine.stack_meta.configure`). They stay
  there so that the default provider's inputs, and so Pulumi's diff of the provider, are what
  they always were; a person reading a stack sees which cloud it is in.
* **The environment** (:func:`provider_env`): the secrets (password, token, application
  credential secret) go to the provider only at run time, as the ``OS_*`` variables that
  terraform-provider-openstack reads for a field its configuration does not set
  (``openstack/provider.go``, v3.4.0: ``OS_PASSWORD``; ``OS_TOKEN``, else ``OS_AUTH_TOKEN``;
  ``OS_APPLICATION_CREDENTIAL_SECRET``). The bridge applies no default of its own to those
  three, so nothing puts them into the provider's inputs: neither the stack's config nor its
  state holds them, and the passphrase opens no cloud credential.
* **Stacks made before** (:func:`scrubbed`): a stored document (a checkpoint, a history record,
  a backup) without the credential keys an older engine put in its config and provider inputs.
* :func:`secret_values` tells the engine which values to redact from every message.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reconciler.config import AuthConfig

__all__ = [
    "CREDENTIAL_CONFIG_KEYS",
    "CREDENTIAL_ENV",
    "CREDENTIAL_INPUTS",
    "provider_config",
    "provider_env",
    "scrubbed",
    "secret_values",
]

# cloud.conf [Global] field -> the OpenStack provider's config key (plain stack config).
_PROVIDER_KEYS: tuple[tuple[str, str], ...] = (
    ("auth_url", "authUrl"),
    ("user_id", "userId"),
    ("username", "userName"),
    ("tenant_id", "tenantId"),
    ("tenant_name", "tenantName"),
    ("domain_id", "domainId"),
    ("domain_name", "domainName"),
    ("tenant_domain_id", "projectDomainId"),
    ("tenant_domain_name", "projectDomainName"),
    ("user_domain_id", "userDomainId"),
    ("user_domain_name", "userDomainName"),
    ("region", "region"),
    ("endpoint_type", "endpointType"),
    ("ca_file", "cacertFile"),
    ("cert_file", "cert"),
    ("key_file", "key"),
    ("application_credential_id", "applicationCredentialId"),
    ("application_credential_name", "applicationCredentialName"),
    ("cloud", "cloud"),
)

# cloud.conf [Global] secret field -> the provider's input (config key) and the variables the
# provider reads it from when its config does not set it (the first one is set).
_SECRETS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("password", "password", ("OS_PASSWORD",)),
    ("token", "token", ("OS_TOKEN", "OS_AUTH_TOKEN")),
    (
        "application_credential_secret",
        "applicationCredentialSecret",
        ("OS_APPLICATION_CREDENTIAL_SECRET",),
    ),
)

CREDENTIAL_INPUTS = tuple(key for _, key, _ in _SECRETS)
"""The default provider's inputs (and outputs) that would hold a credential."""
CREDENTIAL_CONFIG_KEYS = tuple(f"openstack:{key}" for key in CREDENTIAL_INPUTS)
"""Their stack config keys, as an older engine wrote them (secrets)."""
CREDENTIAL_ENV = tuple(name for _, _, names in _SECRETS for name in names)
"""Every variable the provider reads a credential from."""

PROVIDER_TYPE_PREFIX = "pulumi:providers:openstack"


def provider_config(auth: AuthConfig) -> dict[str, str]:
    """``openstack:<key>`` -> value for the non-empty, non-secret fields of ``auth``."""
    out: dict[str, str] = {}
    for field, key in _PROVIDER_KEYS:
        value = str(getattr(auth, field))
        if value:
            out[f"openstack:{key}"] = value
    if auth.tls_insecure:
        out["openstack:insecure"] = "true"
    return out


def provider_env(auth: AuthConfig) -> dict[str, str]:
    """The credential variables of every ``pulumi`` child: the secrets ``auth`` has, each in
    the first variable the provider reads it from. The caller removes the other
    :data:`CREDENTIAL_ENV` names from the environment it inherits, so that the provider logs in
    with cloud.conf's credentials only, as the engine's own client does."""
    out: dict[str, str] = {}
    for field, _, names in _SECRETS:
        value = getattr(auth, field).reveal()
        if value:
            out[names[0]] = value
    return out


def secret_values(auth: AuthConfig) -> list[str]:
    return [v for field, _, _ in _SECRETS if (v := getattr(auth, field).reveal())]


def _without_credentials(props: Any) -> Any:
    if isinstance(props, Mapping) and any(key in props for key in CREDENTIAL_INPUTS):
        return {k: v for k, v in props.items() if k not in CREDENTIAL_INPUTS}
    return props


def _scrubbed_resource(resource: Any) -> Any:
    if not isinstance(resource, Mapping):
        return resource
    if not str(resource.get("type", "")).startswith(PROVIDER_TYPE_PREFIX):
        return resource
    return {
        k: _without_credentials(v) if k in ("inputs", "outputs") else v for k, v in resource.items()
    }


def _scrubbed_deployment(deployment: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(deployment)
    if isinstance(deployment.get("resources"), list):
        out["resources"] = [_scrubbed_resource(r) for r in deployment["resources"]]
    if isinstance(deployment.get("pending_operations"), list):
        out["pending_operations"] = [
            {**op, "resource": _scrubbed_resource(op.get("resource"))}
            if isinstance(op, Mapping)
            else op
            for op in deployment["pending_operations"]
        ]
    return out


def scrubbed(document: Mapping[str, Any]) -> dict[str, Any] | None:
    """``document`` without OpenStack credentials: a checkpoint (``{"checkpoint": {"latest":
    ...}}``: the providers' inputs and outputs), a deployment (``pulumi stack export``'s) or
    an update's history record (``{"config": ...}``: the config keys). None when it holds
    none (nothing to write)."""
    out = dict(document)
    inner = document.get("checkpoint")
    if isinstance(inner, Mapping) and isinstance(inner.get("latest"), Mapping):
        out["checkpoint"] = {**inner, "latest": _scrubbed_deployment(inner["latest"])}
    if isinstance(document.get("resources"), list):
        out.update(_scrubbed_deployment(document))
    config = document.get("config")
    if isinstance(config, Mapping) and any(k in config for k in CREDENTIAL_CONFIG_KEYS):
        out["config"] = {k: v for k, v in config.items() if k not in CREDENTIAL_CONFIG_KEYS}
    return out if out != document else None

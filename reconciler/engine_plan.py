"""The engine's pure decisions: stack names, tags, provider config, skips, crash leftovers.

Nothing here runs ``pulumi`` or touches the cloud; :mod:`reconciler.engine` does, and asks these
functions what to do.

**Stack names.** ``<cluster>.<namespace>.<name>``: readable in ``pulumi stack ls`` and unique
across clusters that share a backend. Namespace and Service names are DNS labels (``a-z0-9-``),
so the dots separate the parts unambiguously as long as the cluster name has only
``A-Za-z0-9_-``. When it has other characters (they are replaced by ``_``) or the name would be
longer than Pulumi's 100 characters, the parts are shortened and ``-<10 hex>`` of the sha256 of
the exact ``cluster/namespace/name`` is appended, so distinct Services never collide. The uid is
not part of the name (a Service re-created under the same name is the same load balancer for
OCCM too, its LB name has no uid); it is a stack tag, with cluster, namespace and name.

**Skipping.** The stack tag ``lbr:spec-hash`` holds the hash of the spec of the last *successful*
``up``; it is removed before an ``up`` starts, so an interrupted or failed ``up`` never looks done.

**Pending creates.** A ``pulumi`` killed during ``up`` leaves ``pending_operations`` in the state:
resources it asked the cloud to create whose IDs it never recorded. :func:`pending_creates`
lists them with the name (or description) to find them by in the cloud; batch and association
resources (members, floating-IP association, port security groups) are idempotent and are just
cleared, the next ``up`` applies them again.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from reconciler.config import AuthConfig
from reconciler.model.spec import LoadBalancerSpec

__all__ = [
    "HASH_TAG",
    "LB_ID_TAG",
    "OWNS_TAG",
    "SHARED_TAG",
    "PendingCreate",
    "pending_creates",
    "provider_config",
    "secret_values",
    "should_skip",
    "spec_for_stack",
    "stack_name",
    "stack_tags",
]

PROJECT = "lb-reconciler"
TAG_PREFIX = "lbr:"
HASH_TAG = TAG_PREFIX + "spec-hash"
LB_ID_TAG = TAG_PREFIX + "lb-id"
SHARED_TAG = TAG_PREFIX + "shared"
OWNS_TAG = TAG_PREFIX + "owns-lb"
MAX_STACK_NAME = 100
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def stack_name(*, cluster_name: str, namespace: str, name: str) -> str:
    safe_cluster = _UNSAFE.sub("_", cluster_name) or "_"
    candidate = f"{safe_cluster}.{_UNSAFE.sub('_', namespace)}.{_UNSAFE.sub('_', name)}"
    if candidate == f"{cluster_name}.{namespace}.{name}" and len(candidate) <= MAX_STACK_NAME:
        return candidate
    digest = hashlib.sha256(f"{cluster_name}/{namespace}/{name}".encode()).hexdigest()[:10]
    return f"{candidate[: MAX_STACK_NAME - 11]}-{digest}"


def stack_tags(*, cluster_name: str, namespace: str, name: str, uid: str) -> dict[str, str]:
    return {
        TAG_PREFIX + "cluster": cluster_name,
        TAG_PREFIX + "namespace": namespace,
        TAG_PREFIX + "name": name,
        TAG_PREFIX + "uid": uid,
    }


def should_skip(*, tags: Mapping[str, str], spec_hash: str) -> bool:
    """Whether the last successful ``up`` applied exactly this spec."""
    return tags.get(HASH_TAG) == spec_hash


def spec_for_stack(spec: LoadBalancerSpec, *, tags: Mapping[str, str]) -> LoadBalancerSpec:
    """``spec`` as this stack must apply it. The controller writes the ``load-balancer-id``
    annotation back after an ``up`` (as OCCM does), so the next spec names the stack's own load
    balancer as ``existing_lb_id``. That is not a request to share it: without this, the spec
    hash would change and the program would replace its own load balancer by a lookup of it."""
    if spec.existing_lb_id and spec.existing_lb_id == tags.get(OWNS_TAG):
        return replace(spec, existing_lb_id=None)
    return spec


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


@dataclass(frozen=True)
class PendingCreate:
    urn: str
    type: str  # e.g. openstack:loadbalancer/loadBalancer:LoadBalancer
    find_by: dict[str, str]  # what identifies it in the cloud: name, or description
    idempotent: bool  # clear it; the next up applies it again


_IDEMPOTENT = (
    "openstack:loadbalancer/members:Members",
    "openstack:networking/floatingIpAssociate:FloatingIpAssociate",
    "openstack:networking/portSecGroupAssociate:PortSecGroupAssociate",
)


def pending_creates(deployment: Mapping[str, Any]) -> list[PendingCreate]:
    """The pending creates in an exported deployment (``pulumi stack export``)."""
    out = []
    for op in deployment.get("pending_operations") or []:
        if op.get("type") != "creating":
            continue
        resource = op.get("resource") or {}
        inputs = resource.get("inputs") or {}
        find_by = {
            k: str(inputs[k])
            for k in ("name", "description", "loadbalancerId", "poolId", "listenerId")
            if inputs.get(k)
        }
        rtype = str(resource.get("type", ""))
        out.append(
            PendingCreate(str(resource.get("urn", "")), rtype, find_by, rtype in _IDEMPOTENT)
        )
    return out

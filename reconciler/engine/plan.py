"""The engine's pure decisions: stack names, tags, provider config, skips, crash leftovers.

Nothing here runs ``pulumi`` or touches the cloud; :mod:`reconciler.engine.stack` does, and asks
these functions what to do.

**Stack names.** ``<cluster>.<namespace>.<name>``: readable in ``pulumi stack ls`` and unique
across clusters that share a backend. Namespace and Service names are DNS labels (``a-z0-9-``),
so the dots separate the parts unambiguously as long as the cluster name has only
``A-Za-z0-9_-``. When it has other characters (they are replaced by ``_``) or the name would be
longer than Pulumi's 100 characters, the parts are shortened and ``-<10 hex>`` of the sha256 of
the exact ``cluster/namespace/name`` is appended, so distinct Services never collide. The uid is
not part of the name (a Service re-created under the same name is the same load balancer for
OCCM too, its LB name has no uid); it is a stack tag, with cluster, namespace and name.

**Skipping.** The stack tag ``lbr:spec-hash`` holds the hash of the spec of the last *successful*
``up``; it is removed before an ``up`` or ``destroy`` starts, so an interrupted or failed one never
looks done. While it is there, the last operation finished: the state has nothing pending, and an
``ensure`` of the same spec needs nothing but the tags (:func:`outputs_from_tags`).

**Listing.** ``pulumi stack ls --json`` gives a stack's name, last update time, whether an
update is in progress and its resource count, but not its tags; :func:`parse_stack_ls` reads the
former, :func:`parse_tags_file` a ``file://`` backend's tags file, and :func:`stack_info` joins
them into a :class:`StackInfo` (see :mod:`reconciler.engine.stack_meta` for how they are read).

**Pending creates.** A ``pulumi`` killed during ``up`` leaves ``pending_operations`` in the state:
resources it asked the cloud to create whose IDs it never recorded. :func:`pending_creates`
lists them with the name (or description) to find them by in the cloud; batch and association
resources (members, floating-IP association, port security groups) are idempotent and are just
cleared, the next ``up`` applies them again.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

import yaml

from reconciler.config import AuthConfig
from reconciler.model.frozen import (
    CreateOnly,
    FrozenChange,
    freeze,
    made_with,
    wants_floating_ip,
)
from reconciler.model.naming import cluster_id_tag
from reconciler.model.spec import LoadBalancerSpec
from stacks.vocabulary import (
    FIP,
    FIP_ASSOCIATION_TYPE,
    FIP_TYPE,
    LB,
    LB_TYPE,
    MEMBERS_TYPE,
    PORT_SG_TYPE,
    PROJECT,
    PROTECTED,
    logical_name,
    urn_of,
)

__all__ = [
    "CLUSTER_ID_TAG",
    "CLUSTER_TAG",
    "CREATE_ONLY_TAG",
    "EXTERNAL_IP_TAG",
    "HASH_TAG",
    "LB_ID_TAG",
    "NAMESPACE_TAG",
    "NAME_TAG",
    "OWNS_TAG",
    "SHARED_TAG",
    "UID_TAG",
    "VIP_ADDRESS_TAG",
    "VIP_SUBNET_TAG",
    "PendingCreate",
    "StackInfo",
    "StackListing",
    "StackSpec",
    "carried_imports",
    "create_only_record",
    "create_only_tags",
    "lost_lookups",
    "output_tags",
    "outputs_from_tags",
    "parse_stack_ls",
    "parse_tags_file",
    "parse_time",
    "pending_creates",
    "provider_config",
    "resource_urn",
    "secret_values",
    "should_skip",
    "spec_for_stack",
    "stack_info",
    "stack_name",
    "stack_spec",
    "stack_tags",
    "stale_create_only_tags",
    "unprotect_before_up",
]

TAG_PREFIX = "lbr:"
CLUSTER_TAG = TAG_PREFIX + "cluster"
NAMESPACE_TAG = TAG_PREFIX + "namespace"
NAME_TAG = TAG_PREFIX + "name"
UID_TAG = TAG_PREFIX + "uid"
# the cluster's identity (kube-system's UID) when the controller knew it: its load balancer is
# tagged kube_cluster_id_<uid> (OCCM's PR #3103), so another cluster with the same name can tell
CLUSTER_ID_TAG = TAG_PREFIX + "cluster-id"
HASH_TAG = TAG_PREFIX + "spec-hash"
LB_ID_TAG = TAG_PREFIX + "lb-id"
SHARED_TAG = TAG_PREFIX + "shared"
OWNS_TAG = TAG_PREFIX + "owns-lb"
VIP_SUBNET_TAG = TAG_PREFIX + "vip-subnet"
EXTERNAL_IP_TAG = TAG_PREFIX + "external-ip"
VIP_ADDRESS_TAG = TAG_PREFIX + "vip-address"
FIP_NETWORK_TAG = TAG_PREFIX + "fip-network"
FIP_SUBNET_TAG = TAG_PREFIX + "fip-subnet"
KEEP_FIP_TAG = TAG_PREFIX + "keep-fip"  # "true": destroy leaves the floating IP (keep-floatingip)
# The create-only values the load balancer was made with (reconciler.model.frozen), compact JSON;
# split over ``lbr:create-only``, ``lbr:create-only-2``, ... when longer than a tag value may be.
CREATE_ONLY_TAG = TAG_PREFIX + "create-only"
MAX_TAG_VALUE = 256
MAX_STACK_NAME = 100
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def stack_name(*, cluster_name: str, namespace: str, name: str) -> str:
    safe_cluster = _UNSAFE.sub("_", cluster_name) or "_"
    candidate = f"{safe_cluster}.{_UNSAFE.sub('_', namespace)}.{_UNSAFE.sub('_', name)}"
    if candidate == f"{cluster_name}.{namespace}.{name}" and len(candidate) <= MAX_STACK_NAME:
        return candidate
    digest = hashlib.sha256(f"{cluster_name}/{namespace}/{name}".encode()).hexdigest()[:10]
    return f"{candidate[: MAX_STACK_NAME - 11]}-{digest}"


def stack_tags(
    *, cluster_name: str, namespace: str, name: str, uid: str, cluster_id: str = ""
) -> dict[str, str]:
    tags = {CLUSTER_TAG: cluster_name, NAMESPACE_TAG: namespace, NAME_TAG: name, UID_TAG: uid}
    if cluster_id:
        tags[CLUSTER_ID_TAG] = cluster_id
    return tags


def should_skip(*, tags: Mapping[str, str], spec_hash: str) -> bool:
    """Whether the last successful ``up`` applied exactly this spec."""
    return tags.get(HASH_TAG) == spec_hash


def output_tags(outputs: Mapping[str, Any]) -> dict[str, str]:
    """The tags a successful ``up`` records from its outputs: the load balancer's ID, whether
    it is shared, which LB the stack owns, its VIP subnet and address, and the external IP
    (floating IP, else VIP). The caller adds the spec hash."""
    tags = {}
    lb_id = str(outputs.get("lb_id") or "")
    if lb_id:
        tags[LB_ID_TAG] = lb_id
    shared = str(bool(outputs.get("shared"))).lower()
    tags[SHARED_TAG] = shared
    if shared == "false" and lb_id:
        tags[OWNS_TAG] = lb_id
    if outputs.get("vip_subnet_id"):
        tags[VIP_SUBNET_TAG] = str(outputs["vip_subnet_id"])
    if outputs.get("vip_address"):
        tags[VIP_ADDRESS_TAG] = str(outputs["vip_address"])
    external_ip = outputs.get("floating_ip") or outputs.get("vip_address")
    if external_ip:
        tags[EXTERNAL_IP_TAG] = str(external_ip)
    for key, tag in (("fip_network_id", FIP_NETWORK_TAG), ("fip_subnet_id", FIP_SUBNET_TAG)):
        if outputs.get(key):
            tags[tag] = str(outputs[key])
    tags[KEEP_FIP_TAG] = str(bool(outputs.get("fip_keep"))).lower()
    return tags


def create_only_tags(spec: LoadBalancerSpec, outputs: Mapping[str, Any]) -> dict[str, str]:
    """The tags that record what the load balancer of ``spec`` (as just applied, with these
    ``outputs``) was made with: a floating IP only when the stack made or associated one."""
    made = made_with(spec)
    if made.fip is not None and not outputs.get("floating_ip"):
        made = CreateOnly(made.lb, None)  # no external network: no floating IP was made
    text = made.to_text()
    chunks = [text[i : i + MAX_TAG_VALUE] for i in range(0, len(text), MAX_TAG_VALUE)]
    return {_chunk_key(i): chunk for i, chunk in enumerate(chunks)}


def _chunk_key(index: int) -> str:
    return CREATE_ONLY_TAG if index == 0 else f"{CREATE_ONLY_TAG}-{index + 1}"


def create_only_record(tags: Mapping[str, str]) -> CreateOnly | None:
    """The record :func:`create_only_tags` wrote; None when there is none (a new stack, or
    one made before the record existed) or it cannot be read."""
    parts = []
    index = 0
    while _chunk_key(index) in tags:
        parts.append(tags[_chunk_key(index)])
        index += 1
    return CreateOnly.from_text("".join(parts)) if parts else None


def stale_create_only_tags(current: Mapping[str, str], put: Mapping[str, str]) -> list[str]:
    """Chunks of an older, longer record that ``put`` does not overwrite."""
    return [
        k
        for k in current
        if (k == CREATE_ONLY_TAG or k.startswith(CREATE_ONLY_TAG + "-")) and k not in put
    ]


def outputs_from_tags(tags: Mapping[str, str]) -> dict[str, Any] | None:
    """The outputs a skipped ``ensure`` reports, from the tags :func:`output_tags` wrote; None
    when they are not all there (a stack tagged before ``lbr:vip-address`` existed: read the
    outputs instead). A floating IP is never the VIP, so an external IP that differs from the
    VIP is the floating IP."""
    lb_id, vip, external = (tags.get(k) for k in (LB_ID_TAG, VIP_ADDRESS_TAG, EXTERNAL_IP_TAG))
    if not lb_id or not vip or not external:
        return None
    return {
        "lb_id": lb_id,
        "vip_address": vip,
        "floating_ip": external if external != vip else None,
        "shared": tags.get(SHARED_TAG) == "true",
        "vip_subnet_id": tags.get(VIP_SUBNET_TAG),
        "fip_keep": tags.get(KEEP_FIP_TAG) == "true",
    }


@dataclass(frozen=True)
class StackSpec:
    """A Service's spec as its stack applies it (:func:`stack_spec`).

    ``spec``: what the program gets. ``requested``: the same before what the cloud chose is
    filled in (the create-only values to record, :func:`create_only_tags`). ``frozen``: the
    create-only fields the Service asks to change in vain."""

    spec: LoadBalancerSpec
    requested: LoadBalancerSpec
    frozen: tuple[FrozenChange, ...]


def stack_spec(spec: LoadBalancerSpec, *, tags: Mapping[str, str]) -> StackSpec:
    """``spec`` as this stack must apply it.

    * The stack's own load balancer (tag ``lbr:owns-lb``) named by the ``load-balancer-id``
      annotation is not a shared one (``LoadBalancerSpec.owning``): the controller writes it.
    * Create-only fields keep the values the load balancer was made with (tag
      ``lbr:create-only``, :mod:`reconciler.model.frozen`); each one asked to differ is listed.
    * The load balancer the stack makes carries the cluster's identity tag (stack tag
      ``lbr:cluster-id``), OCCM's ``kube_cluster_id_<uid>``.
    * What the cloud chose once stays chosen: an autodetected VIP subnet (OCCM's "the first
      Node's subnet", tag ``lbr:vip-subnet``: a Node added later whose name sorts first must
      change members only, never the VIP), and the floating IP's network and subnet as the
      program resolved them (tags ``lbr:fip-network``, ``lbr:fip-subnet``: a second external
      network, or a new subnet matching ``floating-subnet``, must not move the floating IP).
    """
    made = create_only_record(tags)
    requested, changes = freeze(spec.owning(tags.get(OWNS_TAG)), made)
    spec = requested
    identity = cluster_id_tag(tags[CLUSTER_ID_TAG]) if tags.get(CLUSTER_ID_TAG) else None
    if identity and not spec.existing_lb_id and identity not in spec.tags:
        spec = replace(spec, tags=(*spec.tags, identity))
    detected = tags.get(VIP_SUBNET_TAG)
    placed = spec.vip_subnet_id or spec.vip_network_id or spec.vip_port_id
    if detected and not placed and not spec.existing_lb_id:
        spec = replace(spec, vip_subnet_id=detected, vip_autodetect_address=None)
    fip_network = tags.get(FIP_NETWORK_TAG)
    if made is not None and made.fip is not None and spec.floating_ip is not None and fip_network:
        resolved = replace(
            spec.floating_ip,
            network_id=fip_network,
            subnet_id=tags.get(FIP_SUBNET_TAG) or None,
            subnet_name_pattern=None,
            subnet_tags=None,
        )
        spec = replace(spec, floating_ip=resolved)
    return StackSpec(spec, requested, changes)


def spec_for_stack(spec: LoadBalancerSpec, *, tags: Mapping[str, str]) -> LoadBalancerSpec:
    """:attr:`StackSpec.spec` of :func:`stack_spec`."""
    return stack_spec(spec, tags=tags).spec


def unprotect_before_up(spec: LoadBalancerSpec, *, tags: Mapping[str, str]) -> list[str]:
    """Logical names of protected resources that the ``up`` of ``spec`` (as for the stack) is
    asked to delete: the floating IP of a Service made internal (OCCM deletes it too, unless
    ``keep-floatingip``). Everything else the program protects stays protected, so an ``up``
    that would delete or replace it fails instead (docs/engine.md, "Protection")."""
    made = create_only_record(tags)
    if made is None or made.fip is None:
        return []
    return [] if wants_floating_ip(spec) else [FIP]


@dataclass(frozen=True)
class StackListing:
    """One entry of ``pulumi stack ls --json``."""

    name: str  # the stack's own name (``prod.default.web``)
    qualified: str  # as listed; with ``--all`` ``organization/lb-reconciler/prod.default.web``
    last_update: datetime | None  # end of the last update (UTC); None: none, or in progress
    update_in_progress: bool  # only backends that report progress (Pulumi Cloud) say so
    resource_count: int | None


@dataclass(frozen=True)
class StackInfo:
    """A stack of this cluster, as listed: which Service it belongs to and what it last did.

    ``spec_hash`` is None when the last ``up`` did not finish (or failed) or a refresh found
    drift: the next ``ensure`` runs ``up``. ``locked``: a ``file://`` backend holds a lock of a
    live (or unknown, other-host) process; None for other backends, which do not say cheaply.
    """

    stack: str
    namespace: str
    name: str
    uid: str
    lb_id: str | None
    shared: bool
    owns_lb: str | None
    spec_hash: str | None
    last_update: datetime | None
    update_in_progress: bool
    resource_count: int | None
    locked: bool | None = None
    external_ip: str | None = None  # the floating IP, else the VIP (tag lbr:external-ip)
    qualified: str = ""  # the name to give `pulumi --stack` (org/project/stack), "" unknown

    @property
    def key(self) -> str:
        """``namespace/name``, the Service's key in the controller's cache and queue."""
        return f"{self.namespace}/{self.name}"

    @property
    def busy(self) -> bool:
        """An operation is (or may be) running on the stack right now."""
        return self.update_in_progress or bool(self.locked)


def parse_stack_ls(text: str) -> list[StackListing]:
    """The entries of ``pulumi stack ls --json``; raises ValueError on anything else."""
    try:
        raw = json.loads(text) if text.strip() else []
    except ValueError:
        raise ValueError(f"pulumi stack ls --json did not print JSON: {text[:200]!r}") from None
    if not isinstance(raw, list):
        raise ValueError("pulumi stack ls --json did not print a list")
    out = []
    for entry in raw:
        if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str):
            raise ValueError(f"pulumi stack ls --json printed an unexpected entry: {entry!r}")
        qualified = str(entry["name"])
        count = entry.get("resourceCount")
        out.append(
            StackListing(
                name=qualified.rsplit("/", 1)[-1],
                qualified=qualified,
                last_update=parse_time(entry.get("lastUpdate")),
                update_in_progress=entry.get("updateInProgress") is True,
                resource_count=count if isinstance(count, int) and count >= 0 else None,
            )
        )
    return out


def parse_time(value: Any) -> datetime | None:
    """An ISO 8601 time (``Z`` allowed; without a zone: UTC, as Octavia prints them) or Unix
    seconds, as an aware datetime; None for anything else."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return datetime.fromtimestamp(value, tz=UTC)
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def parse_tags_file(text: str) -> dict[str, str] | None:
    """The tags in a ``file://`` backend's ``<stack>.pulumi-tags`` (``{"version": 1, "tags":
    {...}}``); None for any other content (a format this code does not know: ask the CLI)."""
    try:
        raw = json.loads(text)
    except ValueError:
        return None
    if not isinstance(raw, Mapping) or raw.get("version") != 1:
        return None
    tags = raw.get("tags")
    if tags is None:
        return {}
    if not isinstance(tags, Mapping):
        return None
    return {str(k): str(v) for k, v in tags.items()}


def stack_info(
    listing: StackListing, tags: Mapping[str, str], *, cluster_name: str, locked: bool | None
) -> StackInfo | None:
    """The :class:`StackInfo` of a listed stack; None when it is not one of ``cluster_name``'s
    Service stacks (another cluster, or its namespace or name tag is missing: an ``ensure``
    stopped while tagging a new stack, which its next ``ensure`` completes)."""
    namespace, name = tags.get(NAMESPACE_TAG), tags.get(NAME_TAG)
    if tags.get(CLUSTER_TAG) != cluster_name or not namespace or not name:
        return None
    return StackInfo(
        stack=listing.name,
        namespace=namespace,
        name=name,
        uid=tags.get(UID_TAG, ""),
        lb_id=tags.get(LB_ID_TAG) or None,
        shared=tags.get(SHARED_TAG) == "true",
        owns_lb=tags.get(OWNS_TAG) or None,
        spec_hash=tags.get(HASH_TAG) or None,
        last_update=listing.last_update,
        update_in_progress=listing.update_in_progress,
        resource_count=listing.resource_count,
        locked=locked,
        external_ip=tags.get(EXTERNAL_IP_TAG) or None,
        qualified=listing.qualified,
    )


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
    """An object to look for in the cloud: one a pending create (or a create that reported
    failure) may have made. ``urn`` is the resource's URN, or just its logical name."""

    urn: str
    type: str  # e.g. openstack:loadbalancer/loadBalancer:LoadBalancer
    find_by: dict[str, str]  # what identifies it in the cloud: name, or description
    idempotent: bool  # clear it; the next up applies it again

    @property
    def name(self) -> str:
        """The logical name (``lb``, ``listener-tcp-80``), what the program imports it as."""
        return logical_name(self.urn)


_IDEMPOTENT = (MEMBERS_TYPE, FIP_ASSOCIATION_TYPE, PORT_SG_TYPE)


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
            for k in (
                "name",
                "description",
                "loadbalancerId",
                "poolId",
                "listenerId",
                "protocol",
                "protocolPort",
            )
            if inputs.get(k)
        }
        rtype = str(resource.get("type", ""))
        out.append(
            PendingCreate(str(resource.get("urn", "")), rtype, find_by, rtype in _IDEMPOTENT)
        )
    return out


def resource_urn(*, stack_name: str, logical_name: str) -> str:
    """The URN of a protected top-level resource of the program (``lb``, ``fip``)."""
    return urn_of(
        stack=stack_name, project=PROJECT, type_token=PROTECTED[logical_name], name=logical_name
    )


def lost_lookups(spec: LoadBalancerSpec) -> list[PendingCreate]:
    """The top-level objects of ``spec`` to look for in the cloud when the state lacks them
    after an ``up`` that did not finish: a create the cloud carried out can still fail (the
    provider's wait for the new object hit an error) and return no ID, so no pending
    operation is left either. The load balancer by its name, the floating IP by its
    description (only one on no port is taken, :meth:`OpenStackRest.find_ids`)."""
    if spec.existing_lb_id:
        return []
    out = [PendingCreate(LB, LB_TYPE, {"name": spec.name}, False)]
    fip = spec.floating_ip
    if fip is not None and not spec.internal and fip.description:
        out.append(PendingCreate(FIP, FIP_TYPE, {"description": fip.description}, False))
    return out


def carried_imports(config_text: str, *, key: str) -> dict[str, str]:
    """The imports an earlier ``up`` was given and did not finish (``key`` in a stack's
    ``Pulumi.<stack>.yaml``; the engine empties it after a successful ``up``); {} for anything
    unreadable."""
    try:
        config = yaml.safe_load(config_text) or {}
        raw = json.loads(str((config.get("config") or {}).get(key) or "{}"))
    except (ValueError, yaml.YAMLError, AttributeError):
        return {}
    if not isinstance(raw, dict):
        return {}
    return {str(k): str(v) for k, v in raw.items() if k and v}

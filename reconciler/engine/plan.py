"""Stack names and tags, the outputs kept in them, and the stack listing. Pure.

Nothing here runs ``pulumi`` or touches the cloud; :mod:`reconciler.engine.stack` does, and asks
these functions what to do. The spec a stack applies (create-only fields kept as made) is
:mod:`reconciler.engine.stack_spec`'s, what a crash left behind :mod:`reconciler.engine.lost`'s,
the provider's configuration :mod:`reconciler.engine.provider_config`'s.

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
former, :func:`listing_of` the same from a checkpoint the store read, :mod:`.state.store` the
tags, and :func:`stack_info` joins them into a :class:`StackInfo` (see
:mod:`reconciler.engine.stack_meta` for how they are read).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from reconciler.engine.state.layout import ORGANIZATION
from reconciler.model.spec import LoadBalancerSpec
from stacks.vocabulary import PROJECT, PROTECTED, urn_of

__all__ = [
    "CLUSTER_ID_TAG",
    "CLUSTER_TAG",
    "CREATE_ONLY_TAG",
    "EXTERNAL_IP_TAG",
    "FIP_NETWORK_TAG",
    "FIP_SUBNET_TAG",
    "HASH_TAG",
    "KEEP_FIP_TAG",
    "LB_ID_TAG",
    "NAMESPACE_TAG",
    "NAME_TAG",
    "OWNS_TAG",
    "SHARED_TAG",
    "UID_TAG",
    "VIP_ADDRESS_TAG",
    "VIP_SUBNET_TAG",
    "StackInfo",
    "StackListing",
    "applied_spec_from",
    "cluster_prefix",
    "listing_of",
    "output_tags",
    "outputs_from_tags",
    "parse_stack_ls",
    "parse_time",
    "resource_urn",
    "should_skip",
    "stack_info",
    "stack_name",
    "stack_tags",
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
MAX_STACK_NAME = 100
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def cluster_prefix(cluster_name: str) -> str:
    """How the name of every stack of cluster ``cluster_name`` begins (:func:`stack_name`)."""
    return f"{_UNSAFE.sub('_', cluster_name) or '_'}."[: MAX_STACK_NAME - 11]


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
    drift: the next ``ensure`` runs ``up``. ``locked``: the backend holds a lock of a
    live (or unknown, other-host) process; None for a backend the engine reads only through the
    CLI (Pulumi Cloud, ``gs://``, ``azblob://``), which does not say cheaply.
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


def listing_of(name: str, deployment: Mapping[str, Any] | None) -> StackListing:
    """The stack as ``pulumi stack ls --json --all`` lists it, from its latest deployment (None:
    none, or not read): the manifest's time to the millisecond (as the CLI prints it; none for
    Go's zero time) and the number of resources."""
    when = None
    if deployment is not None:
        manifest = deployment.get("manifest")
        when = parse_time(manifest.get("time")) if isinstance(manifest, Mapping) else None
        if when is not None and when.year > 1:
            when = when.replace(microsecond=when.microsecond // 1000 * 1000)
        else:
            when = None
    resources = deployment.get("resources") if deployment is not None else None
    return StackListing(
        name=name,
        qualified=f"{ORGANIZATION}/{PROJECT}/{name}",
        last_update=when,
        update_in_progress=False,  # the CLI says so only of Pulumi Cloud's stacks
        resource_count=len(resources or []) if deployment is not None else None,
    )


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


def resource_urn(*, stack_name: str, logical_name: str) -> str:
    """The URN of a protected top-level resource of the program (``lb``, ``fip``)."""
    return urn_of(
        stack=stack_name, project=PROJECT, type_token=PROTECTED[logical_name], name=logical_name
    )


def applied_spec_from(outputs: Mapping[str, Any]) -> LoadBalancerSpec | None:
    """The spec a successful ``up`` exported (output ``spec``); None when absent or unreadable."""
    text = outputs.get("spec")
    if not text:
        return None
    try:
        return LoadBalancerSpec.from_dict(json.loads(str(text)))
    except (ValueError, TypeError, KeyError):
        return None

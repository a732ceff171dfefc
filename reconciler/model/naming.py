"""OCCM's object names and descriptions, so that load balancers made by OCCM can be adopted.

From pkg/openstack/loadbalancer.go and loadbalancer_sg.go: the load balancer is
``kube_service_<cluster>_<namespace>_<name>`` and is also its own tag; listener, pool and monitor
``i`` (the index of the Service port) are ``listener_<i>_<lb>``, ``pool_<i>_<lb>`` and
``monitor_<i>_<lb>``; every name is cut to 255 bytes (``Sprintf255``), the limit of most OpenStack
name fields. The floating IP description matters beyond looks: OCCM deletes only floating IPs whose
description contains "Floating IP for Kubernetes external service"
(:data:`stacks.vocabulary.FIP_DESCRIPTION_MARKER`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from stacks.vocabulary import FIP_DESCRIPTION_MARKER

__all__ = [
    "CLUSTER_ID_TAG_PREFIX",
    "KEPT_FLOATING_IP_TAG",
    "SERVICE_PREFIX",
    "cluster_id_tag",
    "cluster_name_mismatch",
    "cut255",
    "floating_ip_description",
    "floating_ip_to_delete",
    "lb_description",
    "lb_name",
    "listener_name",
    "made_by_cluster",
    "monitor_name",
    "named_under_other_clusters",
    "others_listener",
    "pool_name",
    "security_group_description",
    "security_group_name",
    "services_tagged",
    "with_tags",
    "without_tag",
]

SERVICE_PREFIX = "kube_service_"
# OCCM's cluster identity tag (kubernetes/cloud-provider-openstack PR #3103): the UID of the
# kube-system namespace, so that two clusters with the same --cluster-name can tell their load
# balancers apart.
CLUSTER_ID_TAG_PREFIX = "kube_cluster_id_"


def cut255(text: str) -> str:
    """At most 255 bytes of UTF-8 (Go slices bytes; a split character is dropped whole here)."""
    raw = text.encode("utf-8")
    return text if len(raw) <= 255 else raw[:255].decode("utf-8", errors="ignore")


def lb_name(*, cluster_name: str, namespace: str, name: str) -> str:
    return cut255(f"{SERVICE_PREFIX}{cluster_name}_{namespace}_{name}")


def listener_name(*, index: int, lb: str) -> str:
    return cut255(f"listener_{index}_{lb}")


def pool_name(*, index: int, lb: str) -> str:
    return cut255(f"pool_{index}_{lb}")


def monitor_name(*, index: int, lb: str) -> str:
    return cut255(f"monitor_{index}_{lb}")


def lb_description(*, cluster_name: str, namespace: str, name: str) -> str:
    return f"Kubernetes external service {namespace}/{name} from cluster {cluster_name}"


def floating_ip_description(*, cluster_name: str, namespace: str, name: str) -> str:
    service = f"{namespace}/{name}"
    return f"{FIP_DESCRIPTION_MARKER} {service} from cluster {cluster_name}"


def security_group_name(*, uid: str, namespace: str, name: str) -> str:
    return cut255(f"lb-sg-{uid}-{namespace}-{name}")


def security_group_description(*, cluster_name: str, namespace: str, name: str) -> str:
    return f"Security Group for {namespace}/{name} Service LoadBalancer in cluster {cluster_name}"


def cluster_id_tag(cluster_id: str) -> str:
    return f"{CLUSTER_ID_TAG_PREFIX}{cluster_id}"


def made_by_cluster(lb: Mapping[str, Any], *, cluster_name: str, cluster_id: str = "") -> bool:
    """Whether Octavia load balancer ``lb`` (as the API shows it) was made for a Service of
    this cluster, by OCCM or by this controller: named ``kube_service_<cluster>_...`` with
    OCCM's description for this cluster, and, when it carries cluster identity tags
    (``kube_cluster_id_<uid>``), carrying ours. A load balancer made by a user (reached through
    ``load-balancer-id``) or by another cluster is never one: it is never deleted, adopted or
    swept. Without our own ``cluster_id`` an identity tag of any cluster makes it not ours."""
    tags = [str(t) for t in lb.get("tags") or ()]
    identities = [t for t in tags if t.startswith(CLUSTER_ID_TAG_PREFIX)]
    if identities and (not cluster_id or cluster_id_tag(cluster_id) not in identities):
        return False
    name = str(lb.get("name") or "")
    description = str(lb.get("description") or "")
    prefix = f"{SERVICE_PREFIX}{cluster_name}_"
    suffix = f" from cluster {cluster_name}"
    return (
        name.startswith(prefix)
        and description.startswith("Kubernetes external service ")
        and description.endswith(suffix)
    )


def services_tagged(tags: Sequence[Any], *, but: str = "") -> set[str]:
    """The Services named in the tags of a load balancer or listener (``kube_service_...``,
    other than ``but``): how OCCM counts the Services sharing a load balancer."""
    return {str(t) for t in tags if str(t).startswith(SERVICE_PREFIX) and str(t) != but}


def others_listener(tags: Sequence[Any], *, ours: str) -> bool:
    """Whether a listener with these tags belongs to somebody else: it has tags and not our
    name (ours carry it, besides the listener-tags annotation's). A listener with no tags at
    all is older than OCCM's tags, or made by hand: nobody's to claim."""
    return bool(tags) and ours not in tags


def with_tags(current: Sequence[Any], wanted: Sequence[str]) -> list[str] | None:
    """``current`` with the ``wanted`` tags it lacks added at the end; None when it lacks none.
    A tag is never taken away here: a load balancer's tags are every Service's on it (OCCM's
    ``mergeTags``)."""
    have = [str(t) for t in current]
    missing = [t for t in dict.fromkeys(wanted) if t not in have]
    return [*have, *missing] if missing else None


def without_tag(current: Sequence[Any], tag: str) -> list[str] | None:
    """``current`` without ``tag``; None when it does not have it."""
    have = [str(t) for t in current]
    return [t for t in have if t != tag] if tag in have else None


# Put on the floating IP of a released load balancer whose owner had keep-floatingip: the last
# Service on the load balancer deletes it with the load balancer, but not a floating IP so tagged.
KEPT_FLOATING_IP_TAG = "lbr-keep-floatingip"


def floating_ip_to_delete(fip: Mapping[str, Any], *, cluster_name: str) -> bool:
    """Whether a floating IP on the VIP port of a load balancer being deleted goes with it:
    only one made for a Service of this cluster (OCCM's description, this cluster's name), and
    not one kept for its owner (:data:`KEPT_FLOATING_IP_TAG`). A user's own is never deleted."""
    description = str(fip.get("description") or "")
    tags = [str(t) for t in fip.get("tags") or ()]
    return (
        description.startswith(f"{FIP_DESCRIPTION_MARKER} ")
        and description.endswith(f" from cluster {cluster_name}")
        and KEPT_FLOATING_IP_TAG not in tags
    )


def named_under_other_clusters(
    lb_names: Sequence[str], *, namespace: str, name: str, cluster_name: str
) -> dict[str, str]:
    """The load balancers OCCM would have named for the Service ``namespace/name`` under a
    cluster name other than ``cluster_name``: ``kube_service_<other>_<namespace>_<name>`` ->
    ``<other>`` (names cut at 255 bytes are left out: their cluster name cannot be told)."""
    ours = lb_name(cluster_name=cluster_name, namespace=namespace, name=name)
    tail = f"_{namespace}_{name}"
    return {
        n: n[len(SERVICE_PREFIX) : -len(tail)]
        for n in sorted(lb_names)
        if n.startswith(SERVICE_PREFIX)
        and n.endswith(tail)
        and n != ours
        and len(n) > len(SERVICE_PREFIX) + len(tail)
    }


def cluster_name_mismatch(
    services: Sequence[tuple[str, str]], lb_names: Sequence[str], *, cluster_name: str
) -> dict[str, dict[str, str]]:
    """A ``--cluster-name`` that is not the one OCCM ran with, as the cloud shows it: none of
    ``services`` (namespace, name: those with an external IP) has a load balancer named for it
    under ``cluster_name``, and some have one under another name. Those Services (``ns/name``)
    and their load balancers (:func:`named_under_other_clusters`); empty when nothing says so
    (no Service with an IP, or one of them has a load balancer of this cluster name)."""
    names = set(lb_names)
    if any(lb_name(cluster_name=cluster_name, namespace=ns, name=n) in names for ns, n in services):
        return {}
    found = {
        f"{ns}/{n}": other
        for ns, n in services
        if (
            other := named_under_other_clusters(
                lb_names, namespace=ns, name=n, cluster_name=cluster_name
            )
        )
    }
    return found

"""Which Nodes back a load balancer, and at which address: pure predicates over Node dicts.

Nodes arrive as plain dicts shaped like the Kubernetes API JSON (``kubectl get node -o json``).
Eligibility follows the Kubernetes service controller since KEP-3458 (``stableNodeSetPredicates``
in staging/src/k8s.io/cloud-provider/controllers/service/controller.go), not the older rules:

* a Node being deleted (``metadata.deletionTimestamp`` set) is out;
* the label ``node.kubernetes.io/exclude-from-external-load-balancers`` excludes a Node unless its
  value parses (Go ``strconv.ParseBool``) as false; a value that does not parse excludes it;
* the cluster-autoscaler taint ``ToBeDeletedByClusterAutoscaler`` excludes it;
* readiness is *not* considered: a NotReady Node stays a member, and the load balancer's health
  monitor takes it out of rotation. Flapping readiness must not rewrite every pool.

Then OCCM's own filter: ``node-selector`` (annotation, else cloud.conf), ``key=value`` pairs
separated by commas, where a bare ``key`` only requires the label to exist. A Node with no labels
matches no non-empty selector.

The member address is the Node's first ``InternalIP``, else its first ``ExternalIP``, restricted to
the Service's preferred IP family when it has one (OCCM ``nodeAddressForLB``).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

__all__ = [
    "EXCLUDE_LABEL",
    "TO_BE_DELETED_TAINT",
    "NodeChoice",
    "NodeSelector",
    "choose_nodes",
    "exclusion_reason",
    "is_eligible",
    "matches_selector",
    "node_address",
    "node_included",
    "node_name",
    "node_not_deleted",
    "node_ready",
    "node_untainted",
    "parse_node_selector",
]

EXCLUDE_LABEL = "node.kubernetes.io/exclude-from-external-load-balancers"
TO_BE_DELETED_TAINT = "ToBeDeletedByClusterAutoscaler"

_GO_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_GO_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})
# Label keys: optional DNS-subdomain prefix and a name; values: empty or the name syntax.
_LABEL_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
_LABEL_KEY = re.compile(rf"^([a-z0-9]([-a-z0-9.]{{0,251}}[a-z0-9])?/)?{_LABEL_NAME}$")
_LABEL_VALUE = re.compile(rf"^({_LABEL_NAME})?$")


def _part(obj: Any, key: str) -> Mapping[str, Any]:
    """``obj[key]`` if both are mappings, else ``{}``: Node dicts may be malformed."""
    value = obj.get(key) if isinstance(obj, Mapping) else None
    return value if isinstance(value, Mapping) else {}


def _list(obj: Mapping[str, Any], key: str) -> list[Any]:
    value = obj.get(key)
    return value if isinstance(value, list) else []


def _labels(node: Mapping[str, Any]) -> Mapping[str, str]:
    return _part(_part(node, "metadata"), "labels")


def node_name(node: Mapping[str, Any]) -> str:
    return str(_part(node, "metadata").get("name") or "")


def node_not_deleted(node: Mapping[str, Any]) -> bool:
    return not _part(node, "metadata").get("deletionTimestamp")


def node_included(node: Mapping[str, Any]) -> bool:
    """The exclude label is absent, or set to a Go-boolean false ("false", "0", "f", ...)."""
    labels = _labels(node)
    if EXCLUDE_LABEL not in labels:
        return True
    return str(labels[EXCLUDE_LABEL]) in _GO_FALSE


def node_untainted(node: Mapping[str, Any]) -> bool:
    taints = _list(_part(node, "spec"), "taints")
    return not any(isinstance(t, Mapping) and t.get("key") == TO_BE_DELETED_TAINT for t in taints)


def node_ready(node: Mapping[str, Any]) -> bool:
    """The Ready condition is True. Informational: not part of :func:`is_eligible` (KEP-3458)."""
    for cond in _list(_part(node, "status"), "conditions"):
        if isinstance(cond, Mapping) and cond.get("type") == "Ready":
            return cond.get("status") == "True"
    return False


def exclusion_reason(node: Mapping[str, Any]) -> str | None:
    """Why a Node is not eligible, or None if it is."""
    if not node_not_deleted(node):
        return "the Node is being deleted"
    if not node_included(node):
        return f"the Node has the label {EXCLUDE_LABEL}"
    if not node_untainted(node):
        return f"the Node has the cluster-autoscaler taint {TO_BE_DELETED_TAINT}"
    return None


def is_eligible(node: Mapping[str, Any]) -> bool:
    return exclusion_reason(node) is None


@dataclass(frozen=True)
class NodeSelector:
    """Parsed ``node-selector``: label -> required value, "" meaning "the label exists"."""

    terms: Mapping[str, str]
    problems: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.terms


def parse_node_selector(*, text: str) -> NodeSelector:
    """OCCM ``StringToMap``: ``"env=prod, region"``; a later duplicate key wins.

    Problems (a key or value that is not a valid label, which could never match) are returned, not
    raised, so the caller can report them with the field they came from.
    """
    terms: dict[str, str] = {}
    problems: list[str] = []
    for item in text.strip().split(","):
        key, sep, value = item.strip().partition("=")
        if not key:
            if sep:
                problems.append(f"{item.strip()!r} has no label key")
            continue
        if not _LABEL_KEY.match(key):
            problems.append(f"{key!r} is not a valid label key")
        if not _LABEL_VALUE.match(value):
            problems.append(f"{value!r} is not a valid label value for {key!r}")
        terms[key] = value
    return NodeSelector(MappingProxyType(terms), tuple(problems))


def matches_selector(node: Mapping[str, Any], selector: NodeSelector) -> bool:
    if selector.empty:
        return True
    labels = _labels(node)
    if not labels:
        return False
    for key, value in selector.terms.items():
        if key not in labels or (value != "" and labels[key] != value):
            return False
    return True


def _family(address: str) -> str | None:
    try:
        return "IPv4" if ipaddress.ip_address(address).version == 4 else "IPv6"
    except ValueError:
        return None


def node_address(node: Mapping[str, Any], *, family: str | None) -> str | None:
    """First InternalIP, else first ExternalIP, of ``family`` ("IPv4"/"IPv6") when given."""
    addresses = _list(_part(node, "status"), "addresses")
    for wanted in ("InternalIP", "ExternalIP"):
        for addr in addresses:
            if not isinstance(addr, Mapping) or addr.get("type") != wanted:
                continue
            value = str(addr.get("address") or "")
            found = _family(value)
            if found is None:
                continue
            if family is None or found == family:
                return value
    return None


@dataclass(frozen=True)
class NodeChoice:
    """Backends as (name, address), sorted; Nodes left out as (name, why), sorted by name.

    ``excluded`` is routine (control-plane Nodes, Nodes being drained); ``without_address`` is an
    anomaly worth a Warning Event: an eligible Node the load balancer cannot reach.
    """

    backends: tuple[tuple[str, str], ...]
    excluded: tuple[tuple[str, str], ...]
    without_address: tuple[str, ...]


def choose_nodes(
    *, nodes: Sequence[Mapping[str, Any]], selector: NodeSelector, family: str | None
) -> NodeChoice:
    """Eligible Nodes matching ``selector`` that have an address of ``family``."""
    backends: set[tuple[str, str]] = set()
    excluded: list[tuple[str, str]] = []
    without_address: list[str] = []
    for node in nodes:
        name = node_name(node)
        reason = exclusion_reason(node)
        if reason is None and not matches_selector(node, selector):
            reason = "the Node does not match the node-selector"
        if reason is not None:
            excluded.append((name, reason))
            continue
        address = node_address(node, family=family)
        if address is None:
            without_address.append(name)
            continue
        backends.add((name, address))
    return NodeChoice(
        tuple(sorted(backends)), tuple(sorted(excluded)), tuple(sorted(without_address))
    )

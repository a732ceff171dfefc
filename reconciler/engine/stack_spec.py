"""A Service's spec as its stack applies it, and the record of what its load balancer was made
with. Pure.

The Service's spec (:func:`reconciler.model.build_spec`) is what the Service asks for today. The
stack applies it with what must not change once the load balancer exists:

* **Create-only fields** (OCCM's: the VIP's subnet, the flavor, the zone, the floating IP's
  network ...; :mod:`reconciler.model.frozen`) keep the values the load balancer was made with.
  A successful ``up`` records them in the stack tag ``lbr:create-only`` (compact JSON, split over
  ``lbr:create-only-2`` ... when longer than a tag value may be: :func:`create_only_tags`);
  :func:`stack_spec` reads them back and lists each field the Service asks to change in vain.
* **What the cloud chose stays chosen**: an autodetected VIP subnet, the floating IP's network
  and subnet as the program resolved them (tags written by
  :func:`reconciler.engine.plan.output_tags`).
* **Protection** stays on, except for the floating IP of a Service made internal
  (:func:`unprotect_before_up`), so an ``up`` that would replace the load balancer fails.

The tag names are :mod:`reconciler.engine.plan`'s.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from reconciler.engine.plan import (
    CLUSTER_ID_TAG,
    CREATE_ONLY_TAG,
    FIP_NETWORK_TAG,
    FIP_SUBNET_TAG,
    OWNS_TAG,
    VIP_SUBNET_TAG,
)
from reconciler.model.frozen import (
    CreateOnly,
    FrozenChange,
    freeze,
    made_with,
    wants_floating_ip,
)
from reconciler.model.naming import cluster_id_tag
from reconciler.model.spec import LoadBalancerSpec
from stacks.vocabulary import FIP

__all__ = [
    "StackSpec",
    "create_only_record",
    "create_only_tags",
    "spec_for_stack",
    "stack_spec",
    "stale_create_only_tags",
    "unprotect_before_up",
]

MAX_TAG_VALUE = 256


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

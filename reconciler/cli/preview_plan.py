"""What ``lb-reconciler preview`` previews, decided from manifests: pure functions over dicts.

1. :func:`select_services`: which documents are Services the controller would serve (the same
   predicate as the controller, :func:`reconciler.model.wants_load_balancer` with the
   controller's class settings); the others are :class:`Skipped`, with the reason. Services
   without ``metadata.namespace`` get the ``--namespace`` one, as ``kubectl apply -n`` would.
   Annotation values that are not strings (YAML's unquoted ``true`` or ``80``) are errors:
   the API server refuses such a manifest.
2. :func:`complete`: what Kubernetes assigns and a manifest in git does not carry. A Service
   applied with ``kubectl apply`` keeps its ``uid`` and the ``nodePort`` of each port it already
   had, so these are taken from the spec the stack last applied (ports matched by protocol and
   port, as the stack's resources are keyed). A port Kubernetes has yet to allocate gets a
   placeholder from the top of the default NodePort range (30000-32767), which shows only in
   resources being created; each placeholder is reported as a note.
3. :func:`build`: the spec, the controller's way
   (:func:`reconciler.controller.sync_plan.plan_ensure`), or the validation errors as
   :class:`InputError` naming the file, the Service, the field and the fix.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reconciler.cli.manifests import Document
from reconciler.config import CloudConfig
from reconciler.controller.sync_plan import ControllerSettings, plan_ensure
from reconciler.model import LoadBalancerSpec, wants_load_balancer
from reconciler.model.annotations import NODE_SELECTOR
from reconciler.model.errors import annotation_field
from reconciler.model.nodes import parse_node_selector

__all__ = [
    "InputError",
    "Skipped",
    "Target",
    "build",
    "complete",
    "nodes_from_spec",
    "nodes_of",
    "select_services",
    "selector_labels",
    "stand_in_node",
]

NODE_PORT_TOP = 32767  # the default --service-node-port-range is 30000-32767


@dataclass(frozen=True)
class InputError:
    """A problem with the input; ``where`` is ``file:line``."""

    where: str
    message: str
    service: str | None = None  # namespace/name
    field: str | None = None
    fix: str | None = None

    def __str__(self) -> str:
        parts = [self.where]
        if self.service:
            parts.append(f"Service {self.service}")
        if self.field:
            parts.append(self.field)
        text = ": ".join([*parts, self.message])
        return f"{text}; fix: {self.fix}" if self.fix else text


@dataclass(frozen=True)
class Skipped:
    """A document that is not previewed. ``key`` is ``namespace/name`` for a Service."""

    where: str
    kind: str
    name: str
    reason: str
    key: str | None = None


@dataclass(frozen=True)
class Target:
    """A Service the controller would serve, with its namespace filled in."""

    document: Document
    service: Mapping[str, Any]

    @property
    def key(self) -> str:
        meta = self.service["metadata"]
        return f"{meta['namespace']}/{meta['name']}"

    @property
    def where(self) -> str:
        return self.document.where


def _part(obj: Any, key: str) -> Mapping[str, Any]:
    value = obj.get(key) if isinstance(obj, Mapping) else None
    return value if isinstance(value, Mapping) else {}


def _skip_reason(service: Mapping[str, Any], settings: ControllerSettings) -> str:
    spec = _part(service, "spec")
    kind = spec.get("type") or "ClusterIP"
    if kind != "LoadBalancer":
        return f"type {kind}, not LoadBalancer"
    cls = spec.get("loadBalancerClass")
    if cls is None:
        return "no loadBalancerClass, and --only-owned-classes is set"
    return f"loadBalancerClass {cls} is not served (add --load-balancer-class {cls} to serve it)"


def _annotation_errors(doc: Document, key: str, service: Mapping[str, Any]) -> list[InputError]:
    out = []
    for name, value in _part(_part(service, "metadata"), "annotations").items():
        if not isinstance(value, str):
            out.append(
                InputError(
                    doc.where,
                    f"{value!r} is a {type(value).__name__}, and annotation values must be "
                    "strings (the API server refuses the manifest)",
                    service=key,
                    field=annotation_field(str(name)),
                    fix=f'quote it: "{str(value).lower() if isinstance(value, bool) else value}"',
                )
            )
    return out


def select_services(
    documents: Iterable[Document], *, settings: ControllerSettings, namespace: str
) -> tuple[list[Target], list[Skipped], list[InputError]]:
    """The Services to preview, the documents skipped, and the errors (duplicates, bad shape)."""
    targets: list[Target] = []
    skipped: list[Skipped] = []
    errors: list[InputError] = []
    seen: dict[str, str] = {}
    for doc in documents:
        if doc.kind != "Service":
            skipped.append(Skipped(doc.where, doc.kind, doc.name, f"not a Service ({doc.kind})"))
            continue
        service = copy.deepcopy(dict(doc.body))
        meta = service.get("metadata")
        if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) or not meta["name"]:
            errors.append(
                InputError(doc.where, "a Service without metadata.name", fix="name the Service")
            )
            continue
        meta["namespace"] = meta.get("namespace") or namespace
        key = f"{meta['namespace']}/{meta['name']}"
        if not wants_load_balancer(service, settings.ownership):
            skipped.append(
                Skipped(doc.where, "Service", meta["name"], _skip_reason(service, settings), key)
            )
            continue
        if key in seen:
            message = f"is defined twice (also at {seen[key]})"
            errors.append(InputError(doc.where, message, service=key, fix="keep one of them"))
            continue
        seen[key] = doc.where
        errors += _annotation_errors(doc, key, service)
        targets.append(Target(doc, service))
    return targets, skipped, errors


def nodes_of(documents: Iterable[Document]) -> list[Mapping[str, Any]]:
    """The Node objects among ``documents`` (``--nodes FILE``)."""
    return [doc.body for doc in documents if doc.kind == "Node"]


class _Placeholders:
    """Node ports for what Kubernetes has yet to allocate, from the top of the default range,
    never one the Service already uses."""

    def __init__(self, used: Iterable[Any]) -> None:
        self.used = {p for p in used if isinstance(p, int)}
        self.next = NODE_PORT_TOP

    def take(self) -> int:
        while self.next in self.used:
            self.next -= 1
        self.used.add(self.next)
        return self.next


def _port_key(port: Mapping[str, Any]) -> tuple[str, Any]:
    return (str(port.get("protocol") or "TCP"), port.get("port"))


def complete(
    service: Mapping[str, Any], applied: LoadBalancerSpec | None
) -> tuple[dict[str, Any], tuple[str, ...]]:
    """``service`` with the fields Kubernetes assigns filled in: from ``applied`` (the spec the
    stack last applied) where it has them, else placeholders. Returns the notes to show."""
    svc = copy.deepcopy(dict(service))
    meta, spec = svc.setdefault("metadata", {}), svc.setdefault("spec", {})
    if not isinstance(meta, dict) or not isinstance(spec, dict):
        return svc, ()
    notes: list[str] = []
    if not meta.get("uid") and applied is not None and applied.service.uid:
        meta["uid"] = applied.service.uid
    raw_ports = spec.get("ports")
    ports: list[Any] = raw_ports if isinstance(raw_ports, list) else []
    known: dict[tuple[str, Any], int] = {}
    monitor_ports: list[int] = []
    if applied is not None:
        for listener in applied.listeners:
            key = (listener.service_protocol, listener.protocol_port)
            known[key] = listener.node_port
            monitor_ports += [m.monitor_port for m in listener.pool.members if m.monitor_port]
    used = [p.get("nodePort") for p in ports if isinstance(p, Mapping)]
    placeholders = _Placeholders([*used, *known.values(), spec.get("healthCheckNodePort")])
    allocate = spec.get("allocateLoadBalancerNodePorts") is not False
    for i, port in enumerate(ports):
        if not isinstance(port, dict) or port.get("nodePort") or not allocate:
            continue
        if not isinstance(port.get("port"), int):
            continue  # the model reports it
        if known.get(_port_key(port)):
            port["nodePort"] = known[_port_key(port)]
            continue
        port["nodePort"] = placeholders.take()
        notes.append(
            f"spec.ports[{i}] ({_port_key(port)[0]} {port['port']}) has no nodePort yet: "
            f"previewed with {port['nodePort']}; Kubernetes allocates the real one"
        )
    if spec.get("externalTrafficPolicy") == "Local" and not spec.get("healthCheckNodePort"):
        if monitor_ports:
            spec["healthCheckNodePort"] = monitor_ports[0]
        else:
            spec["healthCheckNodePort"] = placeholders.take()
            notes.append(
                "spec.healthCheckNodePort is not set yet: previewed with "
                f"{spec['healthCheckNodePort']}; Kubernetes allocates the real one"
            )
    return svc, tuple(notes)


def build(
    target: Target,
    service: Mapping[str, Any],
    *,
    nodes: Sequence[Mapping[str, Any]],
    config: CloudConfig,
    settings: ControllerSettings,
) -> tuple[LoadBalancerSpec | None, list[InputError], tuple[str, ...]]:
    """The spec of ``service`` (``target`` completed), or its errors; and the model's notices."""
    plan = plan_ensure(service=service, nodes=nodes, config=config, settings=settings)
    errors = [
        InputError(
            target.where,
            f"{e.value!r} {e.reason}" if e.value else e.reason,
            service=target.key,
            field=e.field,
            fix=e.fix,
        )
        for e in plan.errors
    ]
    return plan.spec, errors, plan.notices


def selector_labels(service: Mapping[str, Any], config: CloudConfig) -> dict[str, str]:
    """The labels the Service's ``node-selector`` asks for (its annotation, else cloud.conf's)."""
    annotations = (service.get("metadata") or {}).get("annotations") or {}
    text = annotations.get(NODE_SELECTOR)
    if not isinstance(text, str):
        text = config.load_balancer.node_selector
    return dict(parse_node_selector(text=text or "").terms)


def stand_in_node(labels: Mapping[str, str]) -> dict[str, Any]:
    """A Node to check a Service's input with before the real ones are known
    (--nodes-from-state): documentation address 192.0.2.1 (RFC 5737), ``labels``."""
    return _node("(a Node)", "192.0.2.1", labels)


def _node(name: str, address: str, labels: Mapping[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": dict(labels)},
        "status": {
            "addresses": [{"type": "InternalIP", "address": address}],
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def nodes_from_spec(
    applied: LoadBalancerSpec | None, labels: Mapping[str, str]
) -> list[dict[str, Any]]:
    """The Nodes a stack was last applied with (``--nodes-from-state``): one per member, with
    its name and address, ``labels`` (what the Service's node-selector asks for: they matched
    it then) and nothing that would leave it out."""
    if applied is None:
        return []
    found: dict[str, str] = {}
    for listener in applied.listeners:
        for member in listener.pool.members:
            found.setdefault(member.name, member.address)
    return [_node(name, address, labels) for name, address in sorted(found.items())]

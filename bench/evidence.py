"""What a failed chaos run leaves to read: for each Service with a violation, its Events, the
controller's last log lines about it, its stack's state and its load balancer in the cloud; for
each cloud object without a Service (:func:`orphan`), the object as the cloud has it (a port's
``device_owner``/``device_id``, a floating IP's description, address and port, the object it
hangs from) and the emulator's request log and controller log lines that name it.

A run that fails in CI is gone with its machine; these lines are printed with the violations so
the cause can be found from the CI log alone. Reading only, nothing here changes anything.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from reconciler.engine.plan import stack_name
from reconciler.engine.state.store import open_state_store
from reconciler.model import naming
from stacks.vocabulary import logical_name

__all__ = ["collect", "log_lines", "objects_of", "orphan", "orphan_key", "stack_lines"]

LOG_LINES = 25
LINE_CHARS = 600


def log_lines(text: str, name: str, *, last: int = LOG_LINES) -> list[str]:
    """The last ``last`` lines of the controller's log that mention ``name``, each cut short."""
    found = [line for line in text.splitlines() if name in line]
    return [line[:LINE_CHARS] for line in found[-last:]]


def stack_lines(checkpoint: Mapping[str, Any]) -> list[str]:
    """A stack's state in short: each resource's logical name and ID, then pending operations."""
    deployment = checkpoint.get("checkpoint", {}).get("latest") or {}
    out = []
    for resource in deployment.get("resources") or []:
        name = logical_name(str(resource.get("urn", "")))
        if resource.get("custom"):
            out.append(f"state {name} {resource.get('id')}")
    for op in deployment.get("pending_operations") or []:
        urn = str((op.get("resource") or {}).get("urn", ""))
        out.append(f"pending {op.get('type')} {logical_name(urn)}")
    return out


def objects_of(resources: Mapping[str, Sequence[Mapping[str, Any]]], lb_name: str) -> list[str]:
    """The load balancer named ``lb_name`` and its children, one line each."""
    lbs = [lb for lb in resources.get("loadbalancers", []) if lb.get("name") == lb_name]
    out = []
    for lb in lbs:
        out.append(f"cloud loadbalancer {lb.get('id')} {lb.get('provisioning_status')}")
        for li in resources.get("listeners", []):
            if any(x.get("id") == lb.get("id") for x in li.get("loadbalancers") or []):
                out.append(
                    f"cloud listener {li.get('id')} {li.get('protocol')}:"
                    f"{li.get('protocol_port')} {li.get('provisioning_status')} "
                    f"pool={li.get('default_pool_id')}"
                )
        for pool in resources.get("pools", []):
            if any(x.get("id") == lb.get("id") for x in pool.get("loadbalancers") or []):
                listeners = [x.get("id") for x in pool.get("listeners") or []]
                out.append(
                    f"cloud pool {pool.get('id')} {pool.get('provisioning_status')} "
                    f"listeners={listeners}"
                )
    return out


def collect(
    *,
    services: Iterable[str],
    cluster: str,
    events: Sequence[Mapping[str, Any]],
    log_text: str,
    backend: str,
    resources: Mapping[str, Sequence[Mapping[str, Any]]],
) -> dict[str, list[str]]:
    """The evidence for each Service (``namespace/name``)."""
    out: dict[str, list[str]] = {}
    store = open_state_store(backend)
    for key in sorted(set(services)):
        namespace, _, name = key.partition("/")
        lines = [
            f"event {e.get('type')} {e.get('reason')} x{e.get('count', 1)}: "
            f"{str(e.get('message', ''))[:LINE_CHARS]}"
            for e in events
            if (e.get("involvedObject") or {}).get("name") == name
            and (e.get("involvedObject") or {}).get("namespace") == namespace
        ][-10:]
        stack = stack_name(cluster_name=cluster, namespace=namespace, name=name)
        checkpoint = store.checkpoint(stack) if store is not None else None
        lines += stack_lines(checkpoint) if checkpoint is not None else ["state: no checkpoint"]
        lb_name = naming.lb_name(cluster_name=cluster, namespace=namespace, name=name)
        lines += objects_of(resources, lb_name)
        lines += [f"log {line}" for line in log_lines(log_text, name)]
        out[key] = lines
    return out


_ORPHAN = re.compile(r"^(?P<kind>[a-z]+) (?P<id>[0-9A-Za-z-]+)\b.* has no Service$")
_FIELDS = {
    "floatingips": ("floating_ip_address", "description", "port_id", "fixed_ip_address", "tags"),
    "ports": ("name", "device_owner", "device_id", "network_id", "fixed_ips", "description"),
    "loadbalancers": ("name", "provisioning_status", "vip_port_id", "vip_address", "tags"),
}


def orphan_key(what: str) -> tuple[str, str] | None:
    """(collection, ID) of a cloud violation's text (``floatingip <id> has no Service``)."""
    m = _ORPHAN.match(what)
    return (f"{m['kind']}s", m["id"]) if m else None


def _record(resources: Mapping[str, Sequence[Mapping[str, Any]]], kind: str, rid: str) -> Any:
    return next((r for r in resources.get(kind, []) if r.get("id") == rid), None)


def _describe(kind: str, record: Mapping[str, Any]) -> str:
    fields = _FIELDS.get(kind, ("name", "provisioning_status"))
    said = " ".join(f"{f}={json.dumps(record.get(f))}" for f in fields if f in record)
    return f"cloud {kind[:-1]} {record.get('id')} {said}"[:LINE_CHARS]


def _first_and_last(text: str, name: str, *, first: int = 5) -> list[str]:
    """The lines naming ``name``: the first ``first`` (the create that made it) and the last
    ones, :data:`LOG_LINES` in all, each cut short."""
    found = [line[:LINE_CHARS] for line in text.splitlines() if name in line]
    if len(found) <= LOG_LINES:
        return found
    return [*found[:first], "...", *found[-(LOG_LINES - first) :]]


def orphan(
    *,
    kind: str,
    rid: str,
    resources: Mapping[str, Sequence[Mapping[str, Any]]],
    log_text: str,
    emulator_log: str,
) -> list[str]:
    """The evidence for one cloud object without a Service: the object, what it is tied to
    (a port's device, a floating IP's port, the floating IP on a port or backed by it), then
    the emulator's and the controller's log lines naming its ID (or its address)."""
    record = _record(resources, kind, rid)
    if record is None:
        return [f"cloud {kind[:-1]} {rid}: gone from the cloud"]
    out = [_describe(kind, record)]
    names = [rid]
    related: list[tuple[str, str]] = []
    if kind == "ports":
        owner = str(record.get("device_owner") or "")
        device = str(record.get("device_id") or "")
        if owner == "network:floatingip" and device:
            related.append(("floatingips", device))  # the floating IP this port backs
        elif owner.startswith("Octavia") and device:
            related.append(("loadbalancers", device.removeprefix("lb-")))
        related += [
            ("floatingips", str(f["id"]))
            for f in resources.get("floatingips", [])
            if f.get("port_id") == rid
        ]
    if kind == "floatingips":
        if record.get("floating_ip_address"):
            names.append(str(record["floating_ip_address"]))
        if record.get("port_id"):
            related.append(("ports", str(record["port_id"])))
        related += [
            ("ports", str(p["id"]))
            for p in resources.get("ports", [])
            if p.get("device_owner") == "network:floatingip" and p.get("device_id") == rid
        ]
    if kind == "loadbalancers" and record.get("vip_port_id"):
        related.append(("ports", str(record["vip_port_id"])))
    for other_kind, other_id in related:
        other = _record(resources, other_kind, other_id)
        out.append(
            _describe(other_kind, other)
            if other is not None
            else f"cloud {other_kind[:-1]} {other_id}: not in the cloud"
        )
        names.append(other_id)
    for name in dict.fromkeys(names):
        out += [f"emulator {line}" for line in _first_and_last(emulator_log, name)]
    for name in dict.fromkeys(names):
        out += [f"log {line}" for line in log_lines(log_text, name)]
    return out

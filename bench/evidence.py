"""What a failed chaos run leaves to read: for each Service with a violation, its Events, the
controller's last log lines about it, its stack's state and its load balancer in the cloud.

A run that fails in CI is gone with its machine; these lines are printed with the violations so
the cause can be found from the CI log alone. Reading only, nothing here changes anything.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from reconciler.engine.plan import stack_name
from reconciler.model import naming
from stacks.vocabulary import PROJECT, logical_name

__all__ = ["collect", "log_lines", "objects_of", "stack_lines"]

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


def _checkpoint(backend: Path, stack: str) -> dict[str, Any] | None:
    folder = backend / ".pulumi" / "stacks" / PROJECT
    plain, packed = folder / f"{stack}.json", folder / f"{stack}.json.gz"
    if plain.exists():
        text = plain.read_text()
    elif packed.exists():
        text = gzip.decompress(packed.read_bytes()).decode()
    else:
        return None
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def collect(
    *,
    services: Iterable[str],
    cluster: str,
    events: Sequence[Mapping[str, Any]],
    log_text: str,
    backend: Path,
    resources: Mapping[str, Sequence[Mapping[str, Any]]],
) -> dict[str, list[str]]:
    """The evidence for each Service (``namespace/name``)."""
    out: dict[str, list[str]] = {}
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
        checkpoint = _checkpoint(backend, stack)
        lines += stack_lines(checkpoint) if checkpoint is not None else ["state: no checkpoint"]
        lb_name = naming.lb_name(cluster_name=cluster, namespace=namespace, name=name)
        lines += objects_of(resources, lb_name)
        lines += [f"log {line}" for line in log_lines(log_text, name)]
        out[key] = lines
    return out

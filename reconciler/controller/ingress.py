"""The Service's ``status.loadBalancer.ingress``: what it should be, and whether it already is.

``status.loadBalancer.ingress`` as OCCM's ``createLoadBalancerStatus``: the hostname
annotation, else ``<ip>.<suffix>`` with PROXY and ``enable-ingress-hostname``, else the address
with ``ipMode`` ``Proxy`` under PROXY (KEP-1860) or ``VIP``. It is compared on (ip, hostname,
ipMode) with a missing ipMode read as ``VIP`` for an IP (the API server's default), so a status
the server defaulted is not rewritten. Annotations ``load-balancer-id`` and
``load-balancer-address`` are written as OCCM does, only the keys that differ.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reconciler.model import StatusSpec
from reconciler.model.predicates import part

__all__ = ["desired_ingress", "ingress_equal", "status_patch"]


def desired_ingress(status: StatusSpec, address: str) -> list[dict[str, str]]:
    if status.hostname:
        return [{"hostname": status.hostname}]
    if status.hostname_suffix:
        return [{"hostname": f"{address}.{status.hostname_suffix}"}]
    return [{"ip": address, "ipMode": status.ip_mode}]


def _ingress_key(items: Any) -> tuple[tuple[str, str, str], ...]:
    out = []
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, Mapping):
            continue
        ip = str(item.get("ip") or "")
        mode = str(item.get("ipMode") or ("VIP" if ip else ""))
        out.append((ip, str(item.get("hostname") or ""), mode))
    return tuple(out)


def ingress_equal(current: Any, desired: Any) -> bool:
    return _ingress_key(current) == _ingress_key(desired)


def _current_ingress(service: Mapping[str, Any]) -> Any:
    return part(part(service, "status"), "loadBalancer").get("ingress")


def status_patch(
    service: Mapping[str, Any], ingress: list[dict[str, str]]
) -> dict[str, Any] | None:
    if ingress_equal(_current_ingress(service), ingress):
        return None
    return {"status": {"loadBalancer": {"ingress": ingress or None}}}

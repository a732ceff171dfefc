"""The chaos run's end-of-run invariants: a pure function over the collected state.

:func:`check` takes plain data (the Services as :class:`ServiceView`, the Nodes' addresses, the
emulator's inventory ``resources`` and ``created``, the service keys of the stacks) and returns
every :class:`Violation`, each naming the Service (or the cloud object) and what is wrong:

* every live Service of type LoadBalancer has exactly one load balancer named
  ``kube_service_<cluster>_<namespace>_<name>``, ``ACTIVE``, whose listeners are the Service's
  ports (protocol and port), each with a default pool whose members are the Nodes' addresses at
  the port's nodePort, the Service's ``connection-limit`` (``-1`` without the annotation), a
  health monitor when ``monitors`` is set, one floating IP on the VIP port, and that IP in
  ``status.loadBalancer.ingress``;
* no Service is held by a finalizer after its deletion (``deletionTimestamp`` set);
* no stack and no cloud object created during the run (load balancer, listener, pool, member,
  health monitor, floating IP, port, or anything else) exists without a live Service.

A Service stuck with its finalizer is reported once, as stuck; its load balancer and stack are
not reported again as orphans.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reconciler.model import naming
from reconciler.model.annotations import CONNECTION_LIMIT

CLOUD = "(cloud)"
STACKS = "(stacks)"


@dataclass(frozen=True)
class ServiceView:
    """What the checker needs of one Service."""

    name: str
    is_load_balancer: bool
    ports: tuple[tuple[str, int, int], ...]  # (protocol, port, nodePort)
    connection_limit: int
    ingress_ips: tuple[str, ...]
    deleting: bool
    finalizers: tuple[str, ...]


@dataclass(frozen=True)
class Violation:
    service: str  # "<namespace>/<name>", or CLOUD / STACKS for objects without a Service
    what: str

    def __str__(self) -> str:
        return f"{self.service}: {self.what}"


def service_view(obj: Mapping[str, Any]) -> ServiceView:
    """A Service as the Kubernetes API returns it (JSON) -> :class:`ServiceView`."""
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    annotations = meta.get("annotations") or {}
    ingress = ((obj.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
    try:
        limit = int(annotations.get(CONNECTION_LIMIT, -1))
    except ValueError:
        limit = -1
    return ServiceView(
        name=str(meta.get("name", "")),
        is_load_balancer=spec.get("type") == "LoadBalancer",
        ports=tuple(
            (str(p.get("protocol", "TCP")), int(p["port"]), int(p.get("nodePort") or 0))
            for p in spec.get("ports") or []
        ),
        connection_limit=limit,
        ingress_ips=tuple(str(i["ip"]) for i in ingress if i.get("ip")),
        deleting=bool(meta.get("deletionTimestamp")),
        finalizers=tuple(meta.get("finalizers") or ()),
    )


def node_addresses(nodes: Sequence[Mapping[str, Any]]) -> set[str]:
    """The member addresses the controller should use: every Node not being deleted, at its
    first InternalIP (readiness is not considered, see reconciler/model/nodes.py)."""
    out = set()
    for node in nodes:
        if (node.get("metadata") or {}).get("deletionTimestamp"):
            continue
        for address in (node.get("status") or {}).get("addresses") or []:
            if address.get("type") == "InternalIP":
                out.add(str(address["address"]))
                break
    return out


def _ids(refs: Any) -> set[str]:
    return {str(r["id"]) for r in refs or []}


class _Cloud:
    """Indexes over the inventory's ``resources``."""

    def __init__(self, resources: Mapping[str, list[dict[str, Any]]]) -> None:
        self.lbs = resources.get("loadbalancers", [])
        self.listeners = resources.get("listeners", [])
        self.pools = {p["id"]: p for p in resources.get("pools", [])}
        self.members = {m["id"]: m for m in resources.get("members", [])}
        self.monitors = {h["id"]: h for h in resources.get("healthmonitors", [])}
        self.fips = resources.get("floatingips", [])
        self.ports = {p["id"]: p for p in resources.get("ports", [])}

    def lb_of(self, kind: str, record: Mapping[str, Any]) -> set[str]:
        """The load balancers a child hangs from."""
        if kind in ("listeners", "pools"):
            return _ids(record.get("loadbalancers"))
        if kind == "healthmonitors":
            return {lb for p in _ids(record.get("pools")) for lb in self._pool_lbs(p)}
        if kind == "members":
            return {
                lb
                for pid, pool in self.pools.items()
                if record["id"] in _ids(pool.get("members"))
                for lb in self._pool_lbs(pid)
            }
        return set()

    def _pool_lbs(self, pool_id: str) -> set[str]:
        pool = self.pools.get(pool_id)
        return _ids(pool.get("loadbalancers")) if pool else set()


def _check_lb(
    svc: ServiceView,
    lb: Mapping[str, Any],
    cloud: _Cloud,
    *,
    nodes: Collection[str],
    monitors: bool,
) -> list[str]:
    """What is wrong with the one load balancer of a live Service."""
    wrong: list[str] = []
    if lb.get("provisioning_status") != "ACTIVE":
        wrong.append(f"load balancer {lb['id']} is {lb.get('provisioning_status')}")
    listeners = [li for li in cloud.listeners if lb["id"] in _ids(li.get("loadbalancers"))]
    have = sorted((str(li["protocol"]), int(li["protocol_port"])) for li in listeners)
    want = sorted((proto, port) for proto, port, _ in svc.ports)
    if have != want:
        wrong.append(f"listeners {have}, want {want}")
    node_port = {(proto, port): np for proto, port, np in svc.ports}
    for li in listeners:
        where = f"listener {li['protocol']}:{li['protocol_port']}"
        if int(li.get("connection_limit", -1)) != svc.connection_limit:
            wrong.append(
                f"{where}: connection_limit {li.get('connection_limit')}, "
                f"want {svc.connection_limit}"
            )
        pool = cloud.pools.get(str(li.get("default_pool_id")))
        if pool is None:
            wrong.append(f"{where}: no default pool")
            continue
        members = sorted(
            (str(m["address"]), int(m["protocol_port"]))
            for mid in _ids(pool.get("members"))
            if (m := cloud.members.get(mid)) is not None
        )
        np = node_port.get((str(li["protocol"]), int(li["protocol_port"])))
        if np is not None:
            want_members = sorted((ip, np) for ip in nodes)
            if members != want_members:
                wrong.append(f"{where}: members {members}, want {want_members}")
        if monitors and not pool.get("healthmonitor_id"):
            wrong.append(f"{where}: no health monitor")
    pools = [p for p in cloud.pools.values() if lb["id"] in _ids(p.get("loadbalancers"))]
    if len(pools) != len(listeners):
        wrong.append(f"{len(pools)} pools for {len(listeners)} listeners")
    fips = [f for f in cloud.fips if f.get("port_id") and f["port_id"] == lb.get("vip_port_id")]
    if len(fips) != 1:
        wrong.append(f"{len(fips)} floating IPs on the VIP port, want 1")
    if not svc.ingress_ips:
        wrong.append("no IP in status.loadBalancer.ingress")
    elif fips and fips[0]["floating_ip_address"] not in svc.ingress_ips:
        wrong.append(
            f"ingress {list(svc.ingress_ips)} is not the floating IP "
            f"{fips[0]['floating_ip_address']}"
        )
    return wrong


def check(
    *,
    cluster: str,
    namespace: str,
    services: Sequence[ServiceView],
    nodes: Collection[str],
    resources: Mapping[str, list[dict[str, Any]]],
    created: Mapping[str, list[str]],
    stacks: Collection[str],
    monitors: bool = True,
) -> list[Violation]:
    """Every invariant broken at the end of a run (see the module docstring); ``stacks`` are
    the stacks' service keys (``<namespace>/<name>``)."""
    cloud = _Cloud(resources)
    out: list[Violation] = []
    live = {s.name: s for s in services if s.is_load_balancer and not s.deleting}
    stuck = {s.name: s for s in services if s.deleting}
    for svc in stuck.values():
        out.append(
            Violation(
                f"{namespace}/{svc.name}",
                f"deleted but still held by finalizers {list(svc.finalizers)}",
            )
        )

    def lb_name(name: str) -> str:
        return naming.lb_name(cluster_name=cluster, namespace=namespace, name=name)

    accounted: set[str] = set()  # load balancers of live (or stuck) Services
    for svc in live.values():
        key = f"{namespace}/{svc.name}"
        mine = [lb for lb in cloud.lbs if lb["name"] == lb_name(svc.name)]
        accounted |= {lb["id"] for lb in mine}
        if not mine:
            out.append(Violation(key, f"no load balancer named {lb_name(svc.name)}"))
            if not svc.ingress_ips:
                out.append(Violation(key, "no IP in status.loadBalancer.ingress"))
            continue
        if len(mine) > 1:
            dups = ", ".join(sorted(lb["id"] for lb in mine))
            out.append(Violation(key, f"{len(mine)} load balancers (duplicates): {dups}"))
            continue
        out += [
            Violation(key, w)
            for w in _check_lb(svc, mine[0], cloud, nodes=nodes, monitors=monitors)
        ]
    for svc in stuck.values():
        accounted |= {lb["id"] for lb in cloud.lbs if lb["name"] == lb_name(svc.name)}

    lb_by_id = {lb["id"]: lb for lb in cloud.lbs}
    vip_ports = {lb_by_id[i].get("vip_port_id") for i in accounted if i in lb_by_id}
    kept_fips = {f["id"] for f in cloud.fips if f.get("port_id") in vip_ports and f.get("port_id")}
    records: dict[str, Mapping[str, Mapping[str, Any]]] = {
        "loadbalancers": lb_by_id,
        "listeners": {li["id"]: li for li in cloud.listeners},
        "pools": cloud.pools,
        "members": cloud.members,
        "healthmonitors": cloud.monitors,
        "floatingips": {f["id"]: f for f in cloud.fips},
        "ports": cloud.ports,
    }
    for kind, ids in sorted(created.items()):
        for rid in ids:
            record = records.get(kind, {}).get(rid)
            if _belongs(kind, rid, record, cloud, accounted, vip_ports, kept_fips):
                continue
            label = f" ({record['name']})" if record and record.get("name") else ""
            out.append(Violation(CLOUD, f"{kind[:-1]} {rid}{label} has no Service"))

    owned = {f"{namespace}/{name}" for name in (*live, *stuck)}
    for key in sorted(set(stacks) - owned):
        out.append(Violation(STACKS, f"stack of {key} has no Service"))
    return out


def _belongs(
    kind: str,
    rid: str,
    record: Mapping[str, Any] | None,
    cloud: _Cloud,
    accounted: set[str],
    vip_ports: set[Any],
    kept_fips: set[str],
) -> bool:
    if record is None:
        return False  # a kind the checker does not know (security groups...): not ours to keep
    if kind == "loadbalancers":
        return rid in accounted
    if kind in ("listeners", "pools", "healthmonitors", "members"):
        lbs = cloud.lb_of(kind, record)
        return bool(lbs) and lbs <= accounted
    if kind == "floatingips":
        return rid in kept_fips
    if kind == "ports":
        if rid in vip_ports:
            return True
        return record.get("device_owner") == "network:floatingip" and (
            record.get("device_id") in kept_fips
        )
    return False

"""A load balancer made the way openstack-cloud-controller-manager (OCCM) makes one, with
openstacksdk against the emulator: for tests of ``lb-reconciler adopt``.

Names, descriptions, tags and defaults are written out here from OCCM's
``pkg/openstack/loadbalancer.go`` (not taken from :mod:`reconciler.model.naming`, so that the
tests check the model against OCCM, not against itself): load balancer
``kube_service_<cluster>_<ns>_<name>`` (also its tag) with description ``Kubernetes external
service <ns>/<name> from cluster <cluster>``; per Service port ``i`` a listener
``listener_<i>_<lb>`` (tag ``<lb>``, connection limit -1, timeouts 50000/5000/50000/0,
allowed CIDRs 0.0.0.0/0), a pool ``pool_<i>_<lb>``, members named by Node on the Node port, a
monitor ``monitor_<i>_<lb>`` (delay 5, timeout 3, retries 1, retries down 3); a floating IP on
the VIP port described ``Floating IP for Kubernetes external service <ns>/<name> from cluster
<cluster>``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Port:
    protocol: str
    port: int
    node_port: int
    monitor: bool = True
    lb_algorithm: str = "ROUND_ROBIN"


@dataclass
class OccmLoadBalancer:
    """The ids of what was made, to compare after the adoption."""

    lb_id: str
    vip_port_id: str
    name: str
    listeners: dict[int, str] = field(default_factory=dict)  # port -> id
    pools: dict[int, str] = field(default_factory=dict)
    monitors: dict[int, str] = field(default_factory=dict)
    members: dict[int, list[str]] = field(default_factory=dict)
    fip_id: str | None = None
    fip_address: str | None = None


def wait_active(conn: Any, lb_id: str) -> None:
    deadline = time.monotonic() + 30
    while conn.load_balancer.get_load_balancer(lb_id).provisioning_status != "ACTIVE":
        if time.monotonic() > deadline:
            raise AssertionError(f"load balancer {lb_id} did not become ACTIVE")
        time.sleep(0.05)


def make(
    conn: Any,
    topo: dict[str, Any],
    *,
    cluster: str,
    namespace: str,
    name: str,
    ports: Sequence[Port],
    nodes: Sequence[tuple[str, str]],
    floating_ip: bool = True,
) -> OccmLoadBalancer:
    """What OCCM's EnsureLoadBalancer leaves for a Service (VIP and members on the tenant
    subnet, the floating IP from the external network)."""
    lb_name = f"kube_service_{cluster}_{namespace}_{name}"
    subnet = topo["subnet_id"]
    lb = conn.load_balancer.create_load_balancer(
        name=lb_name,
        description=f"Kubernetes external service {namespace}/{name} from cluster {cluster}",
        vip_subnet_id=subnet,
        tags=[lb_name],
    )
    wait_active(conn, lb.id)
    made = OccmLoadBalancer(lb.id, lb.vip_port_id, lb_name)
    for i, p in enumerate(ports):
        listener = conn.load_balancer.create_listener(
            name=f"listener_{i}_{lb_name}",
            loadbalancer_id=lb.id,
            protocol=p.protocol,
            protocol_port=p.port,
            connection_limit=-1,
            timeout_client_data=50000,
            timeout_member_connect=5000,
            timeout_member_data=50000,
            timeout_tcp_inspect=0,
            allowed_cidrs=["0.0.0.0/0"],
            tags=[lb_name],
        )
        wait_active(conn, lb.id)
        pool = conn.load_balancer.create_pool(
            name=f"pool_{i}_{lb_name}",
            listener_id=listener.id,
            protocol=p.protocol,
            lb_algorithm=p.lb_algorithm,
        )
        wait_active(conn, lb.id)
        made.listeners[p.port], made.pools[p.port] = listener.id, pool.id
        made.members[p.port] = []
        for node, address in nodes:
            member = conn.load_balancer.create_member(
                pool.id, name=node, address=address, protocol_port=p.node_port, subnet_id=subnet
            )
            made.members[p.port].append(member.id)
            wait_active(conn, lb.id)
        if p.monitor:
            monitor = conn.load_balancer.create_health_monitor(
                name=f"monitor_{i}_{lb_name}",
                pool_id=pool.id,
                type=p.protocol,
                delay=5,
                timeout=3,
                max_retries=1,
                max_retries_down=3,
            )
            made.monitors[p.port] = monitor.id
            wait_active(conn, lb.id)
    if floating_ip:
        fip = conn.network.create_ip(
            floating_network_id=topo["external_network_id"],
            port_id=lb.vip_port_id,
            description=(
                f"Floating IP for Kubernetes external service {namespace}/{name} "
                f"from cluster {cluster}"
            ),
        )
        made.fip_id, made.fip_address = fip.id, fip.floating_ip_address
    return made


def remove(conn: Any, made: OccmLoadBalancer) -> None:
    """Delete what :func:`make` made (what is still there)."""
    if made.fip_id and conn.network.find_ip(made.fip_id) is not None:
        conn.network.delete_ip(made.fip_id)
    if conn.load_balancer.find_load_balancer(made.lb_id) is not None:
        conn.load_balancer.delete_load_balancer(made.lb_id, cascade=True)


def snapshot(inventory: dict[str, list[dict[str, Any]]]) -> dict[str, list[tuple[Any, ...]]]:
    """What must not change in the cloud during a dry run: ids and the fields that matter."""
    keys = {
        "loadbalancers": ("id", "name", "vip_port_id", "vip_address", "provisioning_status"),
        "listeners": ("id", "name", "protocol_port", "default_pool_id", "connection_limit"),
        "pools": ("id", "name", "lb_algorithm", "healthmonitor_id"),
        "members": ("id", "name", "address", "protocol_port"),
        "healthmonitors": ("id", "name", "delay", "timeout"),
        "floatingips": ("id", "floating_ip_address", "port_id", "description"),
    }
    return {
        kind: sorted(tuple(r.get(k) for k in fields) for r in inventory.get(kind, []))
        for kind, fields in keys.items()
    }

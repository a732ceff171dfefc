"""The reference: OCCM's load balancer sequence, made with direct API calls (openstacksdk).

What the benchmark compares the controller with. It follows
``pkg/openstack/loadbalancer.go`` and ``pkg/util/openstack/loadbalancer.go`` of
kubernetes/cloud-provider-openstack (``ensureOctaviaLoadBalancer``,
``updateOctaviaLoadBalancer``, ``ensureLoadBalancerDeleted``):

* **ensure**: find the load balancer by name (``kube_service_<cluster>_<ns>_<name>``, ignoring
  ``DELETED``/``PENDING_DELETE``), else create it (description, provider, VIP subnet, its name as
  tag) and wait for ``ACTIVE``; then per Service port: listener, pool, members (one batch
  ``PUT``, only when they differ), health monitor, each followed by a wait for ``ACTIVE``; then the
  floating IP on the VIP port (created with OCCM's description when none is there).
* **update** (Nodes changed): the pools' members and monitors only.
* **delete**: the floating IP (only when its description says OCCM made it), then the load
  balancer with ``cascade=true``, then wait until it is gone.

Every wait is OCCM's: ``wait.ExponentialBackoff`` with 1 s, factor 1.2, 23 steps for ``ACTIVE``
and 24 for deletion; the first check is immediate. Two simplifications, both in the baseline's
favour or neutral, are stated in docs/performance.md: the load balancer is created empty and
filled object by object (OCCM's path for an existing or serial-API load balancer; its single-call
"fully populated" create is not emulated), and the security group look-up that OCCM runs at the
end of every ensure (``manage-security-groups`` off) is left out.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import openstack
from openstack import exceptions as os_exc

from reconciler.model import naming
from stacks.vocabulary import FIP_DESCRIPTION_MARKER

ACTIVE, ERROR = "ACTIVE", "ERROR"
ACTIVE_STEPS, DELETE_STEPS = 23, 24  # waitLoadbalancerActiveSteps / waitLoadbalancerDeleteSteps


class BaselineError(RuntimeError):
    """A step failed; OCCM would return the error and the service controller retry later."""


@dataclass(frozen=True)
class Port:
    protocol: str  # TCP or UDP
    port: int
    node_port: int


@dataclass(frozen=True)
class ServiceShape:
    """What OCCM reads from a Service and its Nodes."""

    namespace: str
    name: str
    ports: tuple[Port, ...]
    nodes: tuple[tuple[str, str], ...]  # (node name, InternalIP)


@dataclass(frozen=True)
class Settings:
    """The cloud.conf values the sequence needs (OCCM's defaults otherwise)."""

    cluster: str
    subnet_id: str
    floating_network_id: str
    create_monitor: bool = True
    provider: str = "amphora"
    lb_method: str = "ROUND_ROBIN"


def backoff_delays(*, steps: int, initial: float = 1.0, factor: float = 1.2) -> list[float]:
    """The sleeps of ``wait.ExponentialBackoff``: ``steps`` checks, a sleep between two."""
    return [initial * factor**i for i in range(max(steps - 1, 0))]


def poll(check: Callable[[], bool], *, steps: int, sleep: Callable[[float], None]) -> bool:
    """Run ``check`` now and after each backoff delay until it is true; False on timeout."""
    if check():
        return True
    for delay in backoff_delays(steps=steps):
        sleep(delay)
        if check():
            return True
    return False


def connect(topology: dict[str, Any]) -> Any:
    """An openstacksdk connection as the emulator's demo user, authenticated now."""
    conn = openstack.connect(
        auth_url=topology["auth_url"],
        username=topology["username"],
        password=topology["password"],
        project_name=topology["project_name"],
        user_domain_name=topology["user_domain_name"],
        project_domain_name=topology["project_domain_name"],
        region_name=topology["region_name"],
    )
    conn.authorize()
    return conn


class Occm:
    """OCCM's EnsureLoadBalancer, UpdateLoadBalancer and EnsureLoadBalancerDeleted."""

    def __init__(
        self, *, conn: Any, settings: Settings, sleep: Callable[[float], None] = time.sleep
    ) -> None:
        self.conn = conn
        self.lb = conn.load_balancer
        self.settings = settings
        self.sleep = sleep

    def name(self, svc: ServiceShape) -> str:
        return naming.lb_name(
            cluster_name=self.settings.cluster, namespace=svc.namespace, name=svc.name
        )

    # -- the three entry points --------------------------------------------------------------

    def ensure(self, svc: ServiceShape) -> str:
        """Create or complete the load balancer; return the address for the Service status."""
        name = self.name(svc)
        lb = self._find(name)
        if lb is None:
            created = self.lb.create_load_balancer(
                name=name,
                description=naming.lb_description(
                    cluster_name=self.settings.cluster, namespace=svc.namespace, name=svc.name
                ),
                provider=self.settings.provider,
                vip_subnet_id=self.settings.subnet_id,
                tags=[name],
            )
            lb = self._wait_active(created.id)
        if lb.provisioning_status != ACTIVE:
            raise BaselineError(f"load balancer {lb.id} is {lb.provisioning_status}, not ACTIVE")
        listeners = {(li["protocol"], li["protocol_port"]): li for li in self._listeners(lb.id)}
        for index, port in enumerate(svc.ports):
            listener = listeners.get((port.protocol, port.port))
            if listener is None:
                listener = self._create_listener(lb.id, name, index, port)
            self._ensure_pool(lb, name, index, port, listener["id"], svc.nodes)
        return self._ensure_floating_ip(lb, svc)

    def update(self, svc: ServiceShape) -> None:
        """The Nodes changed: bring every pool's members (and monitor) up to date."""
        lb = self._find(self.name(svc))
        if lb is None:
            raise BaselineError(f"no load balancer {self.name(svc)}")
        if lb.provisioning_status != ACTIVE:
            raise BaselineError(f"load balancer {lb.id} is {lb.provisioning_status}, not ACTIVE")
        listeners = {(li["protocol"], li["protocol_port"]): li for li in self._listeners(lb.id)}
        for index, port in enumerate(svc.ports):
            listener = listeners.get((port.protocol, port.port))
            if listener is None:
                raise BaselineError(f"load balancer {lb.id} has no listener for {port.port}")
            self._ensure_pool(lb, lb.name, index, port, listener["id"], svc.nodes)

    def delete(self, svc: ServiceShape) -> None:
        """Floating IP (if OCCM made it), then the load balancer with cascade; wait until gone."""
        lb = self._find(self.name(svc))
        if lb is None:
            return
        if lb.provisioning_status not in (ACTIVE, ERROR):
            raise BaselineError(f"load balancer {lb.id} is {lb.provisioning_status} (immutable)")
        if lb.vip_port_id:
            for fip in self.conn.network.ips(port_id=lb.vip_port_id):
                if FIP_DESCRIPTION_MARKER in (fip.description or ""):
                    self.conn.network.delete_ip(fip.id)
                break  # GetFloatingIPByPortID: the first one
        with contextlib.suppress(os_exc.NotFoundException):
            self.lb.delete_load_balancer(lb.id, cascade=True)
        if not poll(lambda: self._gone(lb.id), steps=DELETE_STEPS, sleep=self.sleep):
            raise BaselineError(f"load balancer {lb.id} failed to delete within the allotted time")

    # -- steps -------------------------------------------------------------------------------

    def _find(self, name: str) -> Any:
        found = [
            lb
            for lb in self.lb.load_balancers(name=name)
            if lb.provisioning_status not in ("DELETED", "PENDING_DELETE")
        ]
        if len(found) > 1:
            raise BaselineError(f"{len(found)} load balancers named {name}")
        return found[0] if found else None

    def _wait_active(self, lb_id: str) -> Any:
        latest: list[Any] = []

        def active() -> bool:
            try:
                lb = self.lb.get_load_balancer(lb_id)
            except os_exc.SDKException:
                return False  # OCCM logs the failed GET and polls again
            latest[:] = [lb]
            if lb.provisioning_status == ERROR:
                raise BaselineError(f"loadbalancer {lb_id} has gone into ERROR state")
            return bool(lb.provisioning_status == ACTIVE)

        if not poll(active, steps=ACTIVE_STEPS, sleep=self.sleep):
            raise BaselineError(f"timeout waiting for the loadbalancer {lb_id} ACTIVE")
        return latest[0]

    def _gone(self, lb_id: str) -> bool:
        try:
            self.lb.get_load_balancer(lb_id)
        except os_exc.NotFoundException:
            return True
        return False

    def _listeners(self, lb_id: str) -> list[dict[str, Any]]:
        # gophercloud's listeners.ListOpts{LoadbalancerID}: the query key is loadbalancer_id
        return list(self._get("/lbaas/listeners", "listeners", loadbalancer_id=lb_id))

    def _get(self, path: str, key: str, **params: str) -> Iterator[dict[str, Any]]:
        response = self.lb.get(path, params=params)
        if response.status_code != 200:
            raise BaselineError(f"GET {path}: HTTP {response.status_code} {response.text[:200]}")
        yield from response.json()[key]

    def _create_listener(self, lb_id: str, name: str, index: int, port: Port) -> dict[str, Any]:
        listener = self.lb.create_listener(
            name=naming.listener_name(index=index, lb=name),
            loadbalancer_id=lb_id,
            protocol=port.protocol,
            protocol_port=port.port,
            connection_limit=-1,
            timeout_client_data=50000,
            timeout_member_connect=5000,
            timeout_member_data=50000,
            timeout_tcp_inspect=0,
            allowed_cidrs=["0.0.0.0/0"],
            tags=[name],
        )
        self._wait_active(lb_id)
        return {"id": listener.id, "protocol": port.protocol, "protocol_port": port.port}

    def _ensure_pool(
        self,
        lb: Any,
        name: str,
        index: int,
        port: Port,
        listener_id: str,
        nodes: Sequence[tuple[str, str]],
    ) -> None:
        pool = next(
            (
                p
                for p in self.lb.pools(loadbalancer_id=lb.id)
                if any(li["id"] == listener_id for li in p.listeners or [])
            ),
            None,
        )
        if pool is None:
            pool = self.lb.create_pool(
                name=naming.pool_name(index=index, lb=name),
                listener_id=listener_id,
                protocol=port.protocol,
                lb_algorithm=self.settings.lb_method,
            )
            self._wait_active(lb.id)
        current = {(m.name, m.address, m.protocol_port) for m in self.lb.members(pool.id)}
        wanted = [
            {
                "name": node,
                "address": ip,
                "protocol_port": port.node_port,
                "subnet_id": lb.vip_subnet_id,
            }
            for node, ip in nodes
        ]
        if current != {(m["name"], m["address"], m["protocol_port"]) for m in wanted}:
            response = self.lb.put(f"/lbaas/pools/{pool.id}/members", json={"members": wanted})
            if response.status_code != 202:
                raise BaselineError(f"batch member update of pool {pool.id}: {response.text[:200]}")
            self._wait_active(lb.id)
        if self.settings.create_monitor and not pool.health_monitor_id:
            self.lb.create_health_monitor(
                name=naming.monitor_name(index=index, lb=name),
                pool_id=pool.id,
                type="UDP-CONNECT" if port.protocol == "UDP" else port.protocol,
                delay=5,
                timeout=3,
                max_retries=1,
                max_retries_down=3,
            )
            self._wait_active(lb.id)
        elif pool.health_monitor_id:
            self.lb.get_health_monitor(pool.health_monitor_id)  # OCCM compares; nothing differs

    def _ensure_floating_ip(self, lb: Any, svc: ServiceShape) -> str:
        for fip in self.conn.network.ips(port_id=lb.vip_port_id):
            return str(fip.floating_ip_address)
        fip = self.conn.network.create_ip(
            floating_network_id=self.settings.floating_network_id,
            port_id=lb.vip_port_id,
            description=naming.floating_ip_description(
                cluster_name=self.settings.cluster, namespace=svc.namespace, name=svc.name
            ),
        )
        return str(fip.floating_ip_address)

"""The emulated cloud: one store, one clock, the three service models and the fault injector.

:class:`Cloud` wires the models together and seeds the topology into an empty store (a state
file that already holds a cloud is used as it is, so a restart keeps everything). It also
answers the admin questions tests ask: what exists (:meth:`Cloud.inventory`) and the IDs of the
default topology (:meth:`Cloud.topology_info`), and what the APIs were asked (``requests``,
:mod:`emulator.request_log`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from emulator.barbican.models import Barbican
from emulator.faults import FaultConfig, FaultInjector
from emulator.keystone.models import Keystone
from emulator.neutron.models import Neutron
from emulator.octavia.models import Octavia
from emulator.request_log import RequestLog
from emulator.store import Store
from emulator.timing import INSTANT, Clock, SystemClock, TimingProfile
from emulator.topology import Topology, load_topology, stable_id

INVENTORY_KINDS = {
    "project": "projects",
    "user": "users",
    "application_credential": "application_credentials",
    "network": "networks",
    "subnet": "subnets",
    "port": "ports",
    "floatingip": "floatingips",
    "security_group": "security_groups",
    "security_group_rule": "security_group_rules",
    "loadbalancer": "loadbalancers",
    "listener": "listeners",
    "pool": "pools",
    "member": "members",
    "healthmonitor": "healthmonitors",
    "secret": "secrets",
    "container": "containers",
}
_SEED_MARK = "seeded"


@dataclass(frozen=True)
class EmulatorConfig:
    """How to build a cloud: timing, faults, topology, where to keep state, and the largest
    page a Neutron or Octavia list answers (their ``pagination_max_limit``; None: no limit, as
    Neutron's default, while Octavia's is 1000)."""

    timing: TimingProfile = INSTANT
    faults: FaultConfig = field(default_factory=FaultConfig)
    topology: Topology = field(default_factory=load_topology)
    state_file: Path | None = None
    pagination_max_limit: int | None = None

    def __post_init__(self) -> None:
        if self.pagination_max_limit is not None and self.pagination_max_limit < 1:
            raise ValueError(
                f"pagination_max_limit must be 1 or more (or None), got {self.pagination_max_limit}"
            )


class Cloud:
    def __init__(self, *, config: EmulatorConfig, clock: Clock | None = None) -> None:
        self.config = config
        self.clock: Clock = clock or SystemClock()
        self.store = Store(path=config.state_file)
        self.faults = FaultInjector(config.faults)
        self.requests = RequestLog()  # what the APIs were asked (GET /admin/requests)
        self.keystone = Keystone(store=self.store, clock=self.clock)
        self.neutron = Neutron(store=self.store, clock=self.clock)
        self.barbican = Barbican(store=self.store, clock=self.clock)
        self.octavia = Octavia(
            store=self.store,
            clock=self.clock,
            timing=config.timing,
            faults=self.faults,
            neutron=self.neutron,
            options=config.topology.octavia,
            barbican=self.barbican,
        )
        with self.store.lock:
            if self.store.get("meta", _SEED_MARK) is None:
                self._seed()

    def _seed(self) -> None:
        topology = self.config.topology
        self.keystone.seed(topology)
        self.neutron.seed(topology, self.keystone)
        seeded = {kind: [r["id"] for r in self.store.all(kind)] for kind in INVENTORY_KINDS}
        self.store.put("meta", {"id": _SEED_MARK, "ids": seeded})

    def advance(self) -> None:
        with self.store.lock:
            self.octavia.advance()

    def inventory(self) -> dict[str, Any]:
        """Everything that exists, and what was created after the topology was seeded."""
        with self.store.lock:
            self.octavia.advance()
            seed = (self.store.get("meta", _SEED_MARK) or {}).get("ids", {})
            resources: dict[str, list[dict[str, Any]]] = {}
            created: dict[str, list[str]] = {}
            for kind, plural in INVENTORY_KINDS.items():
                records = self.store.all(kind)
                resources[plural] = [
                    {k: v for k, v in r.items() if not k.startswith("_")} for r in records
                ]
                new = [r["id"] for r in records if r["id"] not in set(seed.get(kind, []))]
                if new:
                    created[plural] = new
            return {"resources": resources, "created": created}

    def forget_created(self) -> dict[str, list[str]]:
        """Remove everything created after the topology was seeded (what :meth:`inventory`
        lists as ``created``), with no cascade, no status and no cloud logic: a test harness's
        reset, so that one test that leaves something behind fails alone instead of every test
        after it. Returns what was removed, by kind."""
        removed: dict[str, list[str]] = self.inventory()["created"]
        plural_kind = {plural: kind for kind, plural in INVENTORY_KINDS.items()}
        with self.store.lock:
            for plural, ids in removed.items():
                for rid in ids:
                    self.store.delete(plural_kind[plural], rid)
        return removed

    def topology_info(self, *, auth_url: str) -> dict[str, Any]:
        """IDs and credentials of the default topology, for clients and the demo."""
        data = self.config.topology.data
        user = data["users"][0]
        project = next(iter(user.get("projects", {})), data["projects"][0]["name"])
        nets = data["networks"]
        external = next((n for n in nets if n.get("external")), None)
        tenant = next((n for n in nets if not n.get("external")), None)

        def net_ids(net: dict[str, Any] | None) -> tuple[str | None, str | None]:
            if net is None:
                return None, None
            subnets = net.get("subnets") or [{}]
            sub = subnets[0]
            return (
                net.get("id") or stable_id("network", net["name"]),
                sub.get("id") or (stable_id("subnet", sub["name"]) if sub else None),
            )

        ext_net, ext_sub = net_ids(external)
        net, sub = net_ids(tenant)
        info: dict[str, Any] = {
            "auth_url": auth_url,
            "region_name": self.config.topology.region,
            "user_domain_name": "Default",
            "project_domain_name": "Default",
            "username": user["name"],
            "password": user["password"],
            "project_name": project,
            "project_id": self.keystone.project_by_name(project)["id"],
            "external_network_id": ext_net,
            "external_subnet_id": ext_sub,
            "network_id": net,
            "subnet_id": sub,
        }
        creds = data.get("application_credentials") or []
        if creds:
            info["application_credential_id"] = creds[0].get("id") or stable_id(
                "application_credential", creds[0]["name"]
            )
            info["application_credential_secret"] = creds[0]["secret"]
        return info

    def close(self) -> None:
        self.store.close()

"""Octavia's shared rules: lookups, quotas and the provisioning status machine.

Status machine (as in Octavia's API layer): a create, update or delete of a load balancer or any
of its children marks the LB ``PENDING_CREATE``/``PENDING_UPDATE``/``PENDING_DELETE`` (and the
touched children, and their parents, ``PENDING_*``) and records one pending operation on the LB:
when it is due, what the LB becomes (``ACTIVE``, ``DELETED`` or ``ERROR``) and what each touched
child becomes.

Which changes are accepted (Octavia's ``constants.py`` ``MUTABLE_STATUSES``/``DELETABLE_STATUSES``/
``FAILOVERABLE_STATUSES``, ``repositories.py`` ``test_and_set_provisioning_status``): a child
create/update/delete needs the LB ``ACTIVE`` (409 ``Load Balancer <id> is immutable and cannot be
updated.``), and a member or health monitor change also its pool ``ACTIVE`` (409 ``Pool <id> is
immutable ...``); an LB update needs ``ACTIVE``, an LB delete or failover ``ACTIVE`` or ``ERROR``
(409 ``Invalid state <status> of loadbalancer resource <id>``).

A failed operation (fault outcome ``error``) ends as Octavia's flows end: an LB create, update or
failover leaves the LB (and what it touched) ``ERROR``; a child operation's revert
(``lifecycle_tasks.py`` ``*ToErrorOnRevertTask``) marks the child it acted on ``ERROR`` (kept,
even when it was being deleted), its pool and listeners ``ACTIVE`` and the LB ``ACTIVE``.

Nothing runs in the background: :meth:`OctaviaBase.advance` applies every due operation and is
called before each request is served. Due times come from the :class:`TimingProfile`; the fault
injector can make an operation end in ``ERROR`` or never end (stuck ``PENDING_*``).
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Mapping
from typing import Any

from emulator.barbican.models import Barbican
from emulator.context import AuthContext
from emulator.errors import Conflict, Forbidden, NotFound
from emulator.faults import FaultInjector
from emulator.neutron.models import Neutron
from emulator.query import filter_records, sort_records
from emulator.store import Record, Store
from emulator.timeutil import iso_no_z
from emulator.timing import Clock, TimingProfile

TITLES = {
    "loadbalancer": "Load Balancer",
    "listener": "Listener",
    "pool": "Pool",
    "member": "Member",
    "healthmonitor": "Health Monitor",
    "l7policy": "L7 Policy",
}
QUOTA_KEYS = ("loadbalancer", "listener", "pool", "member", "healthmonitor", "l7policy", "l7rule")
QUOTA_TITLES = {
    "loadbalancer": "Load Balancer",
    "listener": "Listener",
    "pool": "Pool",
    "member": "Member",
    "healthmonitor": "Health Monitor",
}


class OctaviaBase:
    def __init__(
        self,
        *,
        store: Store,
        clock: Clock,
        timing: TimingProfile,
        faults: FaultInjector,
        neutron: Neutron,
        options: Mapping[str, Any],
        barbican: Barbican | None = None,
    ) -> None:
        self.store = store
        self.clock = clock
        self.timing = timing
        self.faults = faults
        self.neutron = neutron
        self.options = options
        self.barbican = barbican  # certificate references are checked against it

    # -- lookups --------------------------------------------------------------------------

    def get(self, kind: str, rid: str, ctx: AuthContext) -> Record:
        record = self.store.get(kind, rid)
        if record is None or not (ctx.is_admin or record["project_id"] == ctx.project_id):
            raise NotFound(f"{TITLES[kind]} {rid} not found.")
        return record

    def list_records(
        self, kind: str, ctx: AuthContext, query: Mapping[str, list[str]], **match: str
    ) -> list[Record]:
        records = self.store.all(
            kind,
            lambda r: (
                (ctx.is_admin or r["project_id"] == ctx.project_id)
                and all(r.get(k) == v for k, v in match.items())
            ),
        )
        lb_ids = query.get("loadbalancer_id")
        if lb_ids and kind != "loadbalancer":
            # Octavia maps this filter to the child's load_balancer_id column; the API body
            # shows it only as loadbalancers: [{"id": ...}]
            records = [r for r in records if r.get("_lb_id") in lb_ids]
        allowed = frozenset(records[0]) if records else frozenset(query)
        records = filter_records(records, query, allowed=allowed, strict=False)
        return sort_records(records, query)

    def children(self, kind: str, lb_id: str) -> list[Record]:
        return self.store.all(kind, lambda r: r["_lb_id"] == lb_id)

    @staticmethod
    def view(record: Record) -> Record:
        return {k: v for k, v in record.items() if not k.startswith("_")}

    def lb_for(self, record: Record) -> Record:
        lb = self.store.get("loadbalancer", record["_lb_id"])
        if lb is None:
            raise NotFound(f"Load Balancer {record['_lb_id']} not found.")
        return lb

    @staticmethod
    def ensure_mutable(lb: Record, *, pool: Record | None = None) -> None:
        """A child create/update/delete: the LB (and a member's or monitor's pool) ``ACTIVE``."""
        if pool is not None and pool["provisioning_status"] != "ACTIVE":
            raise Conflict(f"Pool {pool['id']} is immutable and cannot be updated.")
        if lb["provisioning_status"] != "ACTIVE":
            raise Conflict(f"Load Balancer {lb['id']} is immutable and cannot be updated.")

    @staticmethod
    def ensure_lb_state(lb: Record, *, allowed: tuple[str, ...] = ("ACTIVE",)) -> None:
        """An operation on the LB itself: update needs ``ACTIVE``, delete/failover ``ERROR`` too."""
        status = lb["provisioning_status"]
        if status not in allowed:
            raise Conflict(f"Invalid state {status} of loadbalancer resource {lb['id']}")

    def new_record(
        self, kind: str, ctx: AuthContext, body: Mapping[str, Any], defaults: Mapping[str, Any]
    ) -> Record:
        project_id = str(body.get("project_id") or ctx.project_id)
        if project_id != ctx.project_id and not ctx.is_admin:
            raise Forbidden("Policy does not allow this request to be performed.")
        self.check_quota(kind, project_id)
        now = iso_no_z(self.clock.now())
        record: Record = {"id": str(uuid.uuid4())}
        for key, default in defaults.items():
            value = body.get(key, default)
            record[key] = default if value is None and default is not None else value
        record.update(
            {
                "project_id": project_id,
                "provisioning_status": "PENDING_CREATE",
                "operating_status": "OFFLINE",
                "created_at": now,
                "updated_at": None,
                "tags": list(body.get("tags") or []),
                "name": str(body.get("name") or ""),
                "admin_state_up": bool(body.get("admin_state_up", True)),
            }
        )
        if "description" in defaults:  # members and health monitors have none
            record["description"] = str(body.get("description") or "")
        return record

    def touch(self, record: Record) -> None:
        """Set ``updated_at``: Octavia's rows take oslo.db's ``TimestampMixin``, whose
        ``updated_at`` is set by every UPDATE of the row (``onupdate``), and by nothing else."""
        record["updated_at"] = iso_no_z(self.clock.now())

    def mark(self, kind: str, record: Record, status: str) -> None:
        """Write a new ``provisioning_status`` (an update of the row: ``updated_at`` too)."""
        record["provisioning_status"] = status
        self.touch(record)
        self.store.put(kind, record)

    # -- quotas ---------------------------------------------------------------------------

    def quota(self, project_id: str) -> dict[str, int]:
        override = self.store.get("octavia_quota", project_id) or {}
        return {k: int(override.get(k, -1)) for k in QUOTA_KEYS}

    def check_quota(self, kind: str, project_id: str) -> None:
        limit = self.quota(project_id).get(kind, -1)
        used = self.store.count(kind, lambda r: r["project_id"] == project_id)
        if limit >= 0 and used >= limit:
            raise Forbidden(f"Quota has been met for resources: {QUOTA_TITLES.get(kind, kind)}")

    # -- status machine -------------------------------------------------------------------

    def schedule(
        self,
        lb: Record,
        *,
        phase: str,
        delay: float,
        children: list[tuple[str, str, str]],
    ) -> None:
        """Mark ``lb`` (and ``children``: kind, id, final status) pending until ``delay`` passes.

        ``phase`` is ``create``, ``update`` or ``delete`` for the LB itself; child changes pass
        ``update`` (the LB goes ``PENDING_UPDATE`` and back to ``ACTIVE``). For a child change,
        ``children`` starts with the child(ren) acted on, then their parents (pool, listeners):
        if the operation fails, only the former end ``ERROR``, as Octavia's revert tasks do.
        """
        outcome = self.faults.lb_outcome(name=lb["name"], phase=phase)
        lb_to = {"create": "ACTIVE", "update": "ACTIVE", "delete": "DELETED"}[phase]
        if outcome == "error" and children:  # a child flow: the child fails, the LB is freed
            subject = children[0][0]
            children = [(k, i, "ERROR" if k == subject else "ACTIVE") for k, i, _to in children]
        elif outcome == "error":  # an LB flow (create, update, failover, delete)
            lb_to = "ERROR"
        due = math.inf if outcome == "stuck" else self.clock.now() + delay
        lb["provisioning_status"] = f"PENDING_{phase.upper()}"
        lb["_op"] = {
            "due": None if due == math.inf else due,
            "lb_to": lb_to,
            "children": [list(c) for c in children],
        }
        if phase != "create":  # a create inserts the row: its updated_at stays null
            self.touch(lb)
        self.store.put("loadbalancer", lb)

    def advance(self) -> None:
        """Apply every pending operation whose time has come."""
        now = self.clock.now()

        def due(lb: Record) -> bool:
            op = lb.get("_op")
            if not op or op["due"] is None:
                return False
            return bool(op["due"] <= now)

        for lb in self.store.all("loadbalancer", due):
            self._finish(lb, lb["_op"])

    def _finish(self, lb: Record, op: dict[str, Any]) -> None:
        if op["lb_to"] == "DELETED":
            self.purge_lb(lb)
            return
        for kind, rid, final in op["children"]:
            record = self.store.get(kind, rid)
            if record is None:
                continue
            if final == "DELETED":
                self.purge(kind, record)
            else:  # the worker's Mark*ActiveInDB (or a revert's *ToErrorOnRevertTask)
                self.mark(kind, record, final)
        lb = self.store.get("loadbalancer", lb["id"]) or lb
        lb.pop("_op", None)
        self.mark("loadbalancer", lb, op["lb_to"])
        self.refresh_operating_status(lb["id"])

    def purge_lb(self, lb: Record) -> None:
        """Remove a load balancer, everything under it and the VIP port it made."""
        for kind in ("healthmonitor", "member", "pool", "listener"):
            for record in self.children(kind, lb["id"]):
                self.store.delete(kind, record["id"])
        if lb.get("_owns_vip_port"):
            self.neutron.remove_port(lb["vip_port_id"])
        self.store.delete("loadbalancer", lb["id"])

    def purge(self, kind: str, record: Record) -> None:
        """Remove a child and what hangs from it, and unlink it from its parents."""
        if kind == "pool":
            for member in self.store.all("member", lambda m: m["_pool_id"] == record["id"]):
                self.store.delete("member", member["id"])
            if record.get("healthmonitor_id"):
                self.store.delete("healthmonitor", record["healthmonitor_id"])
            for listener in self.children("listener", record["_lb_id"]):
                if listener["default_pool_id"] == record["id"]:
                    listener["default_pool_id"] = None
                    self.store.put("listener", listener)
        if kind == "member":
            pool = self.store.get("pool", record["_pool_id"])
            if pool is not None:
                pool["members"] = [m for m in pool["members"] if m["id"] != record["id"]]
                self.store.put("pool", pool)
        if kind == "healthmonitor":
            pool = self.store.get("pool", record["_pool_id"])
            if pool is not None:
                pool["healthmonitor_id"] = None
                self.store.put("pool", pool)
        if kind == "listener":
            for pool in self.children("pool", record["_lb_id"]):
                pool["listeners"] = [x for x in pool["listeners"] if x["id"] != record["id"]]
                self.store.put("pool", pool)
        lb = self.store.get("loadbalancer", record["_lb_id"])
        if lb is not None and kind in ("listener", "pool"):
            key = f"{kind}s"
            lb[key] = [x for x in lb[key] if x["id"] != record["id"]]
            self.store.put("loadbalancer", lb)
        self.store.delete(kind, record["id"])

    def refresh_operating_status(self, lb_id: str) -> None:
        """Derive operating_status as a healthy Octavia would report it.

        Octavia's health manager (``amphorae/drivers/health/heartbeat_udp.py``) sets it from
        the amphora's report, which holds the listeners and the pools they use: a pool no
        listener uses is not in it, so it is ``OFFLINE`` (as created, ``db/prepare.py``, or
        again once its last listener is gone), and its members keep the status they have
        (``NO_MONITOR``, or ``OFFLINE`` when created under a monitor). A record whose status
        changes is an update of its row: ``updated_at`` moves; one that keeps it is untouched.
        """
        lb = self.store.get("loadbalancer", lb_id)
        if lb is None:
            return
        lb_up = lb["provisioning_status"] not in ("PENDING_CREATE", "ERROR")
        self._set_operating("loadbalancer", lb, self._operating(lb, lb_up))
        monitored = set()
        for hm in self.children("healthmonitor", lb_id):
            self._set_operating("healthmonitor", hm, self._operating(hm, lb_up))
            if hm["provisioning_status"] == "ACTIVE" and hm["admin_state_up"]:
                monitored.add(hm["_pool_id"])
        for listener in self.children("listener", lb_id):
            self._set_operating("listener", listener, self._operating(listener, lb_up))
        reported = set()
        for pool in self.children("pool", lb_id):
            status = self._operating(pool, lb_up)
            if pool["listeners"]:
                reported.add(pool["id"])
            elif status != "ERROR":
                status = "OFFLINE"
            self._set_operating("pool", pool, status)
        for member in self.children("member", lb_id):
            status = self._operating(member, lb_up)
            if member["_pool_id"] not in reported and status != "ERROR":
                continue  # no report of its pool: the member keeps its status
            if status == "ONLINE" and member["_pool_id"] not in monitored:
                status = "NO_MONITOR"
            self._set_operating("member", member, status)

    def _set_operating(self, kind: str, record: Record, status: str) -> None:
        if record["operating_status"] != status:
            record["operating_status"] = status
            self.touch(record)
            self.store.put(kind, record)

    @staticmethod
    def _operating(record: Record, lb_up: bool) -> str:
        if record["provisioning_status"] == "ERROR":
            return "ERROR"
        if not lb_up or not record["admin_state_up"]:
            return "OFFLINE"
        if record["provisioning_status"] == "PENDING_CREATE":
            return "OFFLINE"
        return "ONLINE"

"""Emulator-only admin routes under ``/admin`` (no token; the server listens on loopback only).

* ``GET /admin/health``: liveness.
* ``GET /admin/inventory``: every resource, and the IDs created since the topology was seeded
  (``created``), so a test can prove nothing was orphaned; ``DELETE /admin/inventory/created``
  removes those (no cascade, no statuses: a test harness's reset after a test that left
  something behind) and returns what it removed.
* ``GET /admin/topology``: the default topology's IDs and credentials.
* ``GET /admin/requests[?since=N]``: the requests to Keystone, Neutron and Octavia, oldest first
  (sequence number, time, method, path, query, status; :mod:`emulator.request_log`), and
  ``next``, the number to pass as ``since`` next time; ``DELETE /admin/requests`` forgets them.
* ``GET|PUT|DELETE /admin/faults``: read, replace or clear the fault configuration (same shape
  as the faults file); ``POST /admin/faults/rules`` and ``POST /admin/faults/loadbalancers``
  append one rule; ``GET /admin/faults/fired`` counts how often each rule fired.
* ``PUT /admin/loadbalancers/{id}/status``: force ``provisioning_status`` (and optionally
  ``operating_status``) of an existing LB, e.g. ``{"provisioning_status": "ERROR"}``. Forced to
  ``ACTIVE`` or ``ERROR``, its listeners, pools, members and monitors still ``PENDING_*`` get the
  same status: what an Octavia operator does in the database to un-stick a load balancer whose
  operation never finished (otherwise a listener created under it would stay
  ``PENDING_CREATE`` for ever). ``DELETED`` removes it and everything under it, as finishing
  a delete that never ended does. With ``"children": "all"``, every child gets the status, not
  only the pending ones: the database fix for a load balancer that a failed flow left in
  ``ERROR`` with children in ``ERROR`` too.
"""

from __future__ import annotations

from typing import Any

from emulator.cloud import Cloud
from emulator.errors import ApiError, BadRequest, NotFound
from emulator.faults import FaultConfig, FaultRule, LbFault, unmatched
from emulator.web import Request, Response, Router

_PROVISIONING = ("ACTIVE", "ERROR", "PENDING_CREATE", "PENDING_UPDATE", "PENDING_DELETE")


def render_error(error: ApiError) -> Response:
    return Response(error.status, {"error": {"code": error.status, "message": error.message}})


class AdminResponses:
    def __init__(self, *, cloud: Cloud, operations: frozenset[str]) -> None:
        self.cloud = cloud
        self.operations = operations  # the API's operation names, for the fault rules
        self.router = Router()
        r = self.router
        r.add("GET", "/health", lambda req: Response(200, {"status": "ok"}), op="admin.health")
        r.add("GET", "/inventory", self.inventory, op="admin.inventory")
        r.add("DELETE", "/inventory/created", self.forget_created, op="admin.inventory")
        r.add("GET", "/topology", self.topology, op="admin.topology")
        r.add("GET", "/requests", self.requests, op="admin.requests")
        r.add("DELETE", "/requests", self.clear_requests, op="admin.requests")
        r.add("GET", "/faults", self.faults, op="admin.faults")
        r.add("PUT", "/faults", self.set_faults, op="admin.faults")
        r.add("DELETE", "/faults", self.clear_faults, op="admin.faults")
        r.add("GET", "/faults/fired", self.fired, op="admin.faults")
        r.add("POST", "/faults/rules", self.add_rule, op="admin.faults")
        r.add("POST", "/faults/loadbalancers", self.add_lb_fault, op="admin.faults")
        r.add("PUT", "/loadbalancers/{id}/status", self.force_status, op="admin.lb_status")

    def inventory(self, req: Request) -> Response:
        return Response(200, self.cloud.inventory())

    def forget_created(self, req: Request) -> Response:
        return Response(200, {"removed": self.cloud.forget_created()})

    def topology(self, req: Request) -> Response:
        return Response(200, self.cloud.topology_info(auth_url=f"{req.base_url}/identity/v3"))

    def requests(self, req: Request) -> Response:
        raw = (req.query.get("since") or ["0"])[0]
        try:
            since = int(raw)
        except ValueError:
            raise BadRequest(f"since must be a whole number, got {raw!r}.") from None
        return Response(200, self.cloud.requests.since(since))

    def clear_requests(self, req: Request) -> Response:
        self.cloud.requests.clear()
        return Response(204)

    def faults(self, req: Request) -> Response:
        return Response(200, self.cloud.faults.config.to_dict())

    def _body(self, req: Request) -> dict[str, Any]:
        body = req.json()
        if not isinstance(body, dict):
            raise BadRequest("Send a JSON object.")
        return body

    def set_faults(self, req: Request) -> Response:
        try:
            config = FaultConfig.from_dict(self._body(req))
        except ValueError as exc:
            raise BadRequest(str(exc)) from exc
        self._check(config.rules)
        self.cloud.faults.configure(config)
        return Response(200, config.to_dict())

    def clear_faults(self, req: Request) -> Response:
        self.cloud.faults.configure(FaultConfig(seed=self.cloud.faults.config.seed))
        return Response(204)

    def fired(self, req: Request) -> Response:
        return Response(200, self.cloud.faults.fired())

    def add_rule(self, req: Request) -> Response:
        try:
            rule = FaultRule(**self._body(req))
        except (TypeError, ValueError) as exc:
            raise BadRequest(f"invalid fault rule: {exc}") from exc
        self._check((rule,))
        return Response(201, self.cloud.faults.extend(rules=(rule,)).to_dict())

    def _check(self, rules: tuple[FaultRule, ...]) -> None:
        problem = unmatched(rules, self.operations)
        if problem is not None:
            raise BadRequest(problem)

    def add_lb_fault(self, req: Request) -> Response:
        try:
            fault = LbFault(**self._body(req))
        except (TypeError, ValueError) as exc:
            raise BadRequest(f"invalid load balancer fault: {exc}") from exc
        return Response(201, self.cloud.faults.extend(loadbalancers=(fault,)).to_dict())

    def force_status(self, req: Request) -> Response:
        body = self._body(req)
        status = body.get("provisioning_status")
        if status not in (*_PROVISIONING, "DELETED"):
            allowed = ", ".join((*_PROVISIONING, "DELETED"))
            raise BadRequest(f"provisioning_status must be one of {allowed}.")
        store = self.cloud.store
        with store.lock:
            lb = store.get("loadbalancer", req.params["id"])
            if lb is None:
                raise NotFound(f"Load Balancer {req.params['id']} not found.")
            if status == "DELETED":  # a delete that never finished, finished by hand
                self.cloud.octavia.purge_lb(lb)
                return Response(204)
            lb["provisioning_status"] = status
            if status.startswith("PENDING_"):
                lb["_op"] = {"due": None, "lb_to": "ACTIVE", "children": []}
            else:
                lb.pop("_op", None)
            store.put("loadbalancer", lb)
            if not status.startswith("PENDING_"):
                self._settle_children(lb["id"], status, every=body.get("children") == "all")
                self.cloud.octavia.refresh_operating_status(lb["id"])
                lb = store.get("loadbalancer", lb["id"]) or lb
            if body.get("operating_status"):
                lb["operating_status"] = str(body["operating_status"])
            elif status == "ERROR":
                lb["operating_status"] = "ERROR"
            store.put("loadbalancer", lb)
        return Response(
            200, {"loadbalancer": {k: v for k, v in lb.items() if not k.startswith("_")}}
        )

    def _settle_children(self, lb_id: str, status: str, *, every: bool) -> None:
        store = self.cloud.store
        for kind in ("listener", "pool", "member", "healthmonitor"):
            for record in self.cloud.octavia.children(kind, lb_id):
                current = str(record.get("provisioning_status", ""))
                if every or current.startswith("PENDING_"):
                    record["provisioning_status"] = status
                    store.put(kind, record)

"""Octavia v2 HTTP routes (served under ``/load-balancer``, at ``/v2`` and ``/v2.0``).

Follows the Octavia v2 api-ref: ``GET /`` version discovery (reports the current 2.x version),
``/lbaas/loadbalancers`` (+ ``/status``, ``/stats``, ``/failover``, ``?cascade=true``),
``/lbaas/listeners`` (+ ``/stats``), ``/lbaas/pools`` and ``/lbaas/pools/{id}/members`` (with
the batch ``PUT``), ``/lbaas/healthmonitors``, ``/lbaas/quotas``, ``/lbaas/providers``,
``/lbaas/flavors``, ``/lbaas/availabilityzones``, and empty ``/lbaas/l7policies`` and
``/octavia/amphorae``. Lists take filters, ``fields``, sorting and ``limit``/``marker``, and
always carry ``<collection>_links``. Errors use ``{"faultcode", "faultstring", "debuginfo"}``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from emulator.errors import ApiError
from emulator.octavia.models import Octavia
from emulator.query import paginate, select_fields
from emulator.store import Record
from emulator.web import Request, Response, Router

CURRENT_VERSION = "v2.27"
_COLLECTIONS = {
    "loadbalancer": "loadbalancers",
    "listener": "listeners",
    "pool": "pools",
    "healthmonitor": "healthmonitors",
}


def render_error(error: ApiError) -> Response:
    return Response(
        error.status,
        {
            "faultcode": "Client" if error.status < 500 else "Server",
            "faultstring": error.message,
            "debuginfo": None,
        },
    )


class OctaviaResponses:
    def __init__(self, *, octavia: Octavia, max_limit: int | None = None) -> None:
        self.octavia = octavia
        self.max_limit = max_limit  # Octavia's [api_settings] pagination_max_limit
        self.router = Router()
        r = self.router
        r.add("GET", "/", self.versions, op="octavia.versions", public=True)
        for prefix in ("/v2", "/v2.0"):
            r.add("GET", prefix, self.versions, op="octavia.versions", public=True)
            lb = f"{prefix}/lbaas"
            for kind, plural in _COLLECTIONS.items():
                r.add("GET", f"{lb}/{plural}", self._list(kind), op=f"octavia.{kind}.list")
                r.add("POST", f"{lb}/{plural}", self._create(kind), op=f"octavia.{kind}.create")
                r.add("GET", f"{lb}/{plural}/{{id}}", self._show(kind), op=f"octavia.{kind}.show")
                r.add(
                    "PUT", f"{lb}/{plural}/{{id}}", self._update(kind), op=f"octavia.{kind}.update"
                )
                r.add(
                    "DELETE",
                    f"{lb}/{plural}/{{id}}",
                    self._delete(kind),
                    op=f"octavia.{kind}.delete",
                )
            r.add(
                "GET",
                f"{lb}/loadbalancers/{{id}}/status",
                self.status,
                op="octavia.loadbalancer.status",
            )
            r.add(
                "GET",
                f"{lb}/loadbalancers/{{id}}/stats",
                self._stats("loadbalancer"),
                op="octavia.loadbalancer.stats",
            )
            r.add(
                "PUT",
                f"{lb}/loadbalancers/{{id}}/failover",
                self.failover,
                op="octavia.loadbalancer.failover",
            )
            r.add(
                "GET",
                f"{lb}/listeners/{{id}}/stats",
                self._stats("listener"),
                op="octavia.listener.stats",
            )
            members = f"{lb}/pools/{{pool_id}}/members"
            r.add("GET", members, self.list_members, op="octavia.member.list")
            r.add("POST", members, self.create_member, op="octavia.member.create")
            r.add("PUT", members, self.batch_members, op="octavia.member.batch_update")
            r.add("GET", members + "/{id}", self.show_member, op="octavia.member.show")
            r.add("PUT", members + "/{id}", self.update_member, op="octavia.member.update")
            r.add("DELETE", members + "/{id}", self.delete_member, op="octavia.member.delete")
            r.add("GET", f"{lb}/quotas", self.quotas, op="octavia.quota.list")
            r.add("GET", f"{lb}/quotas/defaults", self.quota_defaults, op="octavia.quota.show")
            r.add("GET", f"{lb}/quotas/{{project_id}}", self.quota, op="octavia.quota.show")
            r.add("PUT", f"{lb}/quotas/{{project_id}}", self.set_quota, op="octavia.quota.update")
            r.add(
                "DELETE", f"{lb}/quotas/{{project_id}}", self.reset_quota, op="octavia.quota.delete"
            )
            r.add("GET", f"{lb}/providers", self.providers, op="octavia.provider.list")
            r.add("GET", f"{lb}/flavors", self.flavors, op="octavia.flavor.list")
            r.add("GET", f"{lb}/availabilityzones", self.zones, op="octavia.availabilityzone.list")
            r.add("GET", f"{lb}/l7policies", self._empty("l7policies"), op="octavia.l7policy.list")
            r.add(
                "GET",
                f"{prefix}/octavia/amphorae",
                self._empty("amphorae"),
                op="octavia.amphora.list",
            )

    # -- discovery ------------------------------------------------------------------------

    def versions(self, req: Request) -> Response:
        href = f"{req.service_url}/v2"
        return Response(
            200,
            {
                "versions": [
                    {
                        "id": "v2.0",
                        "status": "SUPPORTED",
                        "updated": "2016-12-11T00:00:00Z",
                        "links": [{"href": href, "rel": "self"}],
                    },
                    {
                        "id": CURRENT_VERSION,
                        "status": "CURRENT",
                        "updated": "2023-06-14T00:00:00Z",
                        "links": [{"href": href, "rel": "self"}],
                    },
                ]
            },
        )

    # -- generic --------------------------------------------------------------------------

    def _page(self, req: Request, plural: str, records: list[Record]) -> Response:
        page, links = paginate(
            records,
            req.query,
            collection=plural,
            url=f"{req.service_url}{req.path}",
            max_limit=self.max_limit,
        )
        items = [select_fields(self.octavia.view(r), req.query) for r in page]
        return Response(200, {plural: items, f"{plural}_links": links})

    def _list(self, kind: str) -> Callable[[Request], Response]:
        plural = _COLLECTIONS[kind]

        def handler(req: Request) -> Response:
            return self._page(req, plural, self.octavia.list_records(kind, req.ctx, req.query))

        return handler

    def _create(self, kind: str) -> Callable[[Request], Response]:
        creators: dict[str, Callable[..., Record]] = {
            "loadbalancer": self.octavia.create_loadbalancer,
            "listener": self.octavia.create_listener,
            "pool": self.octavia.create_pool,
            "healthmonitor": self.octavia.create_healthmonitor,
        }

        def handler(req: Request) -> Response:
            record = creators[kind](req.ctx, req.json_object(kind))
            return Response(201, {kind: self.octavia.view(record)})

        return handler

    def _show(self, kind: str) -> Callable[[Request], Response]:
        def handler(req: Request) -> Response:
            record = self.octavia.get(kind, req.params["id"], req.ctx)
            return Response(200, {kind: select_fields(self.octavia.view(record), req.query)})

        return handler

    def _update(self, kind: str) -> Callable[[Request], Response]:
        updaters: dict[str, Callable[..., Record]] = {
            "loadbalancer": self.octavia.update_loadbalancer,
            "listener": self.octavia.update_listener,
            "pool": self.octavia.update_pool,
            "healthmonitor": self.octavia.update_healthmonitor,
        }

        def handler(req: Request) -> Response:
            record = updaters[kind](req.ctx, req.params["id"], req.json_object(kind))
            return Response(200, {kind: self.octavia.view(record)})

        return handler

    def _delete(self, kind: str) -> Callable[[Request], Response]:
        def handler(req: Request) -> Response:
            rid = req.params["id"]
            if kind == "loadbalancer":
                cascade = (req.first("cascade") or "false").lower() == "true"
                self.octavia.delete_loadbalancer(req.ctx, rid, cascade=cascade)
            elif kind == "listener":
                self.octavia.delete_listener(req.ctx, rid)
            elif kind == "pool":
                self.octavia.delete_pool(req.ctx, rid)
            else:
                self.octavia.delete_healthmonitor(req.ctx, rid)
            return Response(204)

        return handler

    # -- load balancer extras -------------------------------------------------------------

    def status(self, req: Request) -> Response:
        return Response(200, {"statuses": self.octavia.status_tree(req.ctx, req.params["id"])})

    def _stats(self, kind: str) -> Callable[[Request], Response]:
        def handler(req: Request) -> Response:
            return Response(200, {"stats": self.octavia.stats(req.ctx, kind, req.params["id"])})

        return handler

    def failover(self, req: Request) -> Response:
        self.octavia.failover_loadbalancer(req.ctx, req.params["id"])
        return Response(202)

    # -- members --------------------------------------------------------------------------

    def list_members(self, req: Request) -> Response:
        pool_id = req.params["pool_id"]
        self.octavia.get("pool", pool_id, req.ctx)
        return self._page(
            req,
            "members",
            self.octavia.list_records("member", req.ctx, req.query, _pool_id=pool_id),
        )

    def create_member(self, req: Request) -> Response:
        member = self.octavia.create_member(
            req.ctx, req.params["pool_id"], req.json_object("member")
        )
        return Response(201, {"member": self.octavia.view(member)})

    def show_member(self, req: Request) -> Response:
        member = self.octavia.get_member(req.ctx, req.params["pool_id"], req.params["id"])
        return Response(200, {"member": select_fields(self.octavia.view(member), req.query)})

    def update_member(self, req: Request) -> Response:
        member = self.octavia.update_member(
            req.ctx, req.params["pool_id"], req.params["id"], req.json_object("member")
        )
        return Response(200, {"member": self.octavia.view(member)})

    def delete_member(self, req: Request) -> Response:
        self.octavia.delete_member(req.ctx, req.params["pool_id"], req.params["id"])
        return Response(204)

    def batch_members(self, req: Request) -> Response:
        body = req.json()
        items = body.get("members") if isinstance(body, dict) else None
        additive = (req.first("additive_only") or "false").lower() == "true"
        self.octavia.batch_update_members(
            req.ctx, req.params["pool_id"], items, additive_only=additive
        )
        return Response(202)

    # -- quotas and catalogues ------------------------------------------------------------

    def quotas(self, req: Request) -> Response:
        items = [
            {**self.octavia.quota_view(q["id"]), "project_id": q["id"]}
            for q in self.octavia.store.all("octavia_quota")
            if req.ctx.is_admin or q["id"] == req.ctx.project_id
        ]
        return Response(200, {"quotas": items, "quotas_links": []})

    def quota_defaults(self, req: Request) -> Response:
        return Response(200, {"quota": self.octavia.quota_view("")})

    def quota(self, req: Request) -> Response:
        return Response(200, {"quota": self.octavia.quota_view(req.params["project_id"])})

    def set_quota(self, req: Request) -> Response:
        project_id = req.params["project_id"]
        self.octavia.set_quota(req.ctx, project_id, req.json_object("quota"))
        return Response(202, {"quota": self.octavia.quota_view(project_id)})

    def reset_quota(self, req: Request) -> Response:
        self.octavia.set_quota(req.ctx, req.params["project_id"], {})
        self.octavia.store.delete("octavia_quota", req.params["project_id"])
        return Response(204)

    def providers(self, req: Request) -> Response:
        items = [
            {"name": n, "description": d} for n, d in self.octavia.options["providers"].items()
        ]
        return Response(200, {"providers": items})

    def flavors(self, req: Request) -> Response:
        items: list[dict[str, Any]] = [
            {
                "id": f["id"],
                "name": f.get("name", f["id"]),
                "description": "",
                "enabled": bool(f.get("enabled", True)),
                "flavor_profile_id": None,
            }
            for f in self.octavia.options.get("flavors", [])
        ]
        return Response(200, {"flavors": items, "flavors_links": []})

    def zones(self, req: Request) -> Response:
        items = [
            {
                "name": z["name"],
                "description": "",
                "enabled": bool(z.get("enabled", True)),
                "availability_zone_profile_id": None,
            }
            for z in self.octavia.options.get("availability_zones", [])
        ]
        return Response(200, {"availability_zones": items, "availability_zones_links": []})

    def _empty(self, plural: str) -> Callable[[Request], Response]:
        def handler(req: Request) -> Response:
            return Response(200, {plural: [], f"{plural}_links": []})

        return handler

"""Neutron v2.0 HTTP routes (served under ``/networking``) and its JSON shapes.

Follows the Networking API v2.0 reference: ``GET /`` version discovery, ``/v2.0/extensions``,
CRUD for ``networks``, ``subnets``, ``ports``, ``floatingips``, ``security-groups`` and
``security-group-rules``, the tag API (``/v2.0/{collection}/{id}/tags[/{tag}]``) and quotas
(``/v2.0/quotas/{project_id}[/details|/default]``). Errors use the ``NeutronError`` body.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from emulator.errors import ApiError, NotFound
from emulator.neutron.base import DEFAULT_QUOTAS
from emulator.neutron.models import Neutron
from emulator.query import paginate, select_fields
from emulator.store import Record
from emulator.web import Request, Response, Router

# URL collection -> (store kind, JSON singular key)
COLLECTIONS = {
    "networks": ("network", "network"),
    "subnets": ("subnet", "subnet"),
    "ports": ("port", "port"),
    "floatingips": ("floatingip", "floatingip"),
    "security-groups": ("security_group", "security_group"),
    "security-group-rules": ("security_group_rule", "security_group_rule"),
}
TAGGABLE = ("networks", "subnets", "ports", "floatingips", "security-groups")
EXTENSIONS = (
    ("external-net", "Neutron external network"),
    ("router", "Neutron L3 Router"),
    ("security-group", "security-group"),
    ("quotas", "Quota management support"),
    ("quota_details", "Quota details management support"),
    ("standard-attr-tag", "Tag support for resources with standard attribute"),
    ("standard-attr-description", "standard-attr-description"),
    ("standard-attr-revisions", "Resource revision numbers"),
    ("standard-attr-timestamp", "Resource timestamps"),
    ("port-security", "Port Security"),
    ("binding", "Port Binding"),
    ("allowed-address-pairs", "Allowed Address Pairs"),
    ("extra_dhcp_opt", "Neutron Extra DHCP options"),
    ("project-id", "project_id field enabled"),
    ("pagination", "Pagination support"),
    ("sorting", "Sorting support"),
    ("fip-port-details", "Floating IP Port Details Extension"),
    ("filter-validation", "Filter parameters validation"),
    ("net-mtu", "Network MTU"),
    ("stateful-security-group", "Stateful security group"),
)


def render_error(error: ApiError) -> Response:
    return Response(
        error.status,
        {"NeutronError": {"type": error.kind, "message": error.message, "detail": ""}},
    )


class NeutronResponses:
    def __init__(self, *, neutron: Neutron, max_limit: int | None = None) -> None:
        self.neutron = neutron
        self.max_limit = max_limit  # Neutron's pagination_max_limit
        self.router = Router()
        r = self.router
        r.add("GET", "/", self.versions, op="neutron.versions", public=True)
        r.add("GET", "/v2.0", self.resources, op="neutron.resources")
        r.add("GET", "/v2.0/extensions", self.extensions, op="neutron.extension.list")
        r.add("GET", "/v2.0/extensions/{alias}", self.extension, op="neutron.extension.show")
        for collection, (kind, _key) in COLLECTIONS.items():
            base = f"/v2.0/{collection}"
            r.add("GET", base, self._list(collection), op=f"neutron.{kind}.list")
            r.add("POST", base, self._create(collection), op=f"neutron.{kind}.create")
            r.add("GET", base + "/{id}", self._show(collection), op=f"neutron.{kind}.show")
            r.add("PUT", base + "/{id}", self._update(collection), op=f"neutron.{kind}.update")
            r.add("DELETE", base + "/{id}", self._delete(collection), op=f"neutron.{kind}.delete")
        for collection in TAGGABLE:
            kind = COLLECTIONS[collection][0]
            base = f"/v2.0/{collection}/{{id}}/tags"
            r.add("GET", base, self._tags(kind), op=f"neutron.{kind}.tags")
            r.add("PUT", base, self._set_tags(kind), op=f"neutron.{kind}.tags")
            r.add("DELETE", base, self._clear_tags(kind), op=f"neutron.{kind}.tags")
            r.add("GET", base + "/{tag}", self._has_tag(kind), op=f"neutron.{kind}.tags")
            r.add("PUT", base + "/{tag}", self._add_tag(kind), op=f"neutron.{kind}.tags")
            r.add("DELETE", base + "/{tag}", self._remove_tag(kind), op=f"neutron.{kind}.tags")
        r.add("GET", "/v2.0/quotas", self.quotas, op="neutron.quota.list")
        r.add("GET", "/v2.0/quotas/{project_id}", self.quota, op="neutron.quota.show")
        r.add("PUT", "/v2.0/quotas/{project_id}", self.set_quota, op="neutron.quota.update")
        r.add("DELETE", "/v2.0/quotas/{project_id}", self.reset_quota, op="neutron.quota.delete")
        r.add(
            "GET", "/v2.0/quotas/{project_id}/details", self.quota_details, op="neutron.quota.show"
        )
        r.add(
            "GET", "/v2.0/quotas/{project_id}/default", self.quota_default, op="neutron.quota.show"
        )

    # -- discovery ------------------------------------------------------------------------

    def versions(self, req: Request) -> Response:
        link = {"href": f"{req.service_url}/v2.0/", "rel": "self"}
        return Response(200, {"versions": [{"id": "v2.0", "status": "CURRENT", "links": [link]}]})

    def resources(self, req: Request) -> Response:
        items = [
            {
                "name": key,
                "collection": collection,
                "links": [{"href": f"{req.service_url}/v2.0/{collection}", "rel": "self"}],
            }
            for collection, (_kind, key) in COLLECTIONS.items()
        ]
        return Response(200, {"resources": items})

    @staticmethod
    def _extension(alias: str, name: str) -> dict[str, Any]:
        return {
            "alias": alias,
            "name": name,
            "description": name,
            "links": [],
            "updated": "2013-01-01T10:00:00-00:00",
        }

    def extensions(self, req: Request) -> Response:
        return Response(200, {"extensions": [self._extension(a, n) for a, n in EXTENSIONS]})

    def extension(self, req: Request) -> Response:
        for alias, name in EXTENSIONS:
            if alias == req.params["alias"]:
                return Response(200, {"extension": self._extension(alias, name)})
        raise NotFound(
            f"Extension with alias {req.params['alias']} does not exist", kind="HTTPNotFound"
        )

    # -- CRUD -----------------------------------------------------------------------------

    def _view(self, kind: str, record: Record) -> Record:
        if kind == "security_group":
            return self.neutron.view_security_group(record)
        return self.neutron.view(kind, record)

    def _list(self, collection: str) -> Callable[[Request], Response]:
        kind, _key = COLLECTIONS[collection]
        plural = collection.replace("-", "_")

        def handler(req: Request) -> Response:
            if kind == "security_group":
                records = self.neutron.list_security_groups(req.ctx, req.query)
            else:
                records = self.neutron.list_records(kind, req.ctx, req.query)
            page, links = paginate(
                records,
                req.query,
                collection=plural,
                url=f"{req.service_url}/v2.0/{collection}",
                marker_error=NotFound,
                max_limit=self.max_limit,
            )
            body: dict[str, Any] = {
                plural: [select_fields(self._view(kind, r), req.query) for r in page]
            }
            if links:
                body[f"{plural}_links"] = links
            return Response(200, body)

        return handler

    def _create(self, collection: str) -> Callable[[Request], Response]:
        kind, key = COLLECTIONS[collection]
        creators: dict[str, Callable[..., Record]] = {
            "network": self.neutron.create_network,
            "subnet": self.neutron.create_subnet,
            "port": self.neutron.create_port,
            "floatingip": self.neutron.create_floatingip,
            "security_group": self.neutron.create_security_group,
            "security_group_rule": self.neutron.create_security_group_rule,
        }

        def handler(req: Request) -> Response:
            record = creators[kind](req.ctx, req.json_object(key))
            return Response(201, {key: self._view(kind, record)})

        return handler

    def _show(self, collection: str) -> Callable[[Request], Response]:
        kind, key = COLLECTIONS[collection]

        def handler(req: Request) -> Response:
            record = self.neutron.get(kind, req.params["id"], req.ctx)
            return Response(200, {key: select_fields(self._view(kind, record), req.query)})

        return handler

    def _update(self, collection: str) -> Callable[[Request], Response]:
        kind, key = COLLECTIONS[collection]
        updaters: dict[str, Callable[..., Record]] = {
            "network": self.neutron.update_network,
            "subnet": self.neutron.update_subnet,
            "port": self.neutron.update_port,
            "floatingip": self.neutron.update_floatingip,
            "security_group": self.neutron.update_security_group,
        }

        def handler(req: Request) -> Response:
            if kind not in updaters:
                raise ApiError(f"Updating {collection} is not supported.", kind="NotImplemented")
            record = updaters[kind](req.ctx, req.params["id"], req.json_object(key))
            return Response(200, {key: self._view(kind, record)})

        return handler

    def _delete(self, collection: str) -> Callable[[Request], Response]:
        kind, _key = COLLECTIONS[collection]
        deleters: dict[str, Callable[..., None]] = {
            "network": self.neutron.delete_network,
            "subnet": self.neutron.delete_subnet,
            "port": self.neutron.delete_port,
            "floatingip": self.neutron.delete_floatingip,
            "security_group": self.neutron.delete_security_group,
            "security_group_rule": self.neutron.delete_security_group_rule,
        }

        def handler(req: Request) -> Response:
            deleters[kind](req.ctx, req.params["id"])
            return Response(204)

        return handler

    # -- tags -----------------------------------------------------------------------------

    def _tags(self, kind: str) -> Callable[[Request], Response]:
        def handler(req: Request) -> Response:
            return Response(
                200, {"tags": self.neutron.get(kind, req.params["id"], req.ctx)["tags"]}
            )

        return handler

    def _set_tags(self, kind: str) -> Callable[[Request], Response]:
        def handler(req: Request) -> Response:
            body = req.json()
            tags = body.get("tags") if isinstance(body, dict) else None
            return Response(
                200, {"tags": self.neutron.set_tags(kind, req.params["id"], req.ctx, tags)}
            )

        return handler

    def _clear_tags(self, kind: str) -> Callable[[Request], Response]:
        def handler(req: Request) -> Response:
            self.neutron.set_tags(kind, req.params["id"], req.ctx, [])
            return Response(204)

        return handler

    def _has_tag(self, kind: str) -> Callable[[Request], Response]:
        def handler(req: Request) -> Response:
            if req.params["tag"] not in self.neutron.get(kind, req.params["id"], req.ctx)["tags"]:
                raise NotFound(f"Tag {req.params['tag']} could not be found.", kind="TagNotFound")
            return Response(204)

        return handler

    def _add_tag(self, kind: str) -> Callable[[Request], Response]:
        def handler(req: Request) -> Response:
            self.neutron.add_tag(kind, req.params["id"], req.ctx, req.params["tag"])
            return Response(201)

        return handler

    def _remove_tag(self, kind: str) -> Callable[[Request], Response]:
        def handler(req: Request) -> Response:
            self.neutron.remove_tag(kind, req.params["id"], req.ctx, req.params["tag"])
            return Response(204)

        return handler

    # -- quotas ---------------------------------------------------------------------------

    def quotas(self, req: Request) -> Response:
        items = [
            {**self.neutron.quota(q["id"]), "project_id": q["id"], "tenant_id": q["id"]}
            for q in self.neutron.store.all("quota")
            if req.ctx.is_admin
        ]
        return Response(200, {"quotas": items})

    def _own_or_admin(self, req: Request) -> str:
        project_id = req.params["project_id"]
        if project_id != req.ctx.project_id and not req.ctx.is_admin:
            raise NotFound("The resource could not be found.", kind="HTTPNotFound")
        return project_id

    def quota(self, req: Request) -> Response:
        return Response(200, {"quota": self.neutron.quota(self._own_or_admin(req))})

    def quota_default(self, req: Request) -> Response:
        self._own_or_admin(req)
        return Response(200, {"quota": dict(DEFAULT_QUOTAS)})

    def quota_details(self, req: Request) -> Response:
        return Response(200, {"quota": self.neutron.quota_details(self._own_or_admin(req))})

    def set_quota(self, req: Request) -> Response:
        project_id = req.params["project_id"]
        self.neutron.set_quota(project_id, req.ctx, req.json_object("quota"))
        return Response(200, {"quota": self.neutron.quota(project_id)})

    def reset_quota(self, req: Request) -> Response:
        if not req.ctx.is_admin:
            raise NotFound("The resource could not be found.", kind="HTTPNotFound")
        self.neutron.store.delete("quota", req.params["project_id"])
        return Response(204)

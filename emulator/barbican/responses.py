"""Barbican v1 HTTP routes (served under ``/key-manager``): ``GET /`` and ``GET /v1`` versions,
``/v1/secrets`` (create, list, show, delete; no ``/payload``: nothing here reads one) and
``/v1/containers`` (create, list, show, delete). Errors use Barbican's body
``{"code", "title", "description"}``."""

from __future__ import annotations

from typing import Any

from emulator.barbican.models import Barbican
from emulator.errors import ApiError
from emulator.store import Record
from emulator.web import Request, Response, Router

_TITLES = {400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found"}


def render_error(error: ApiError) -> Response:
    title = _TITLES.get(error.status, "Internal Server Error")
    return Response(
        error.status, {"code": error.status, "title": title, "description": error.message}
    )


def _public(record: Record) -> dict[str, Any]:
    """What Barbican shows of a record: no payload, no project."""
    return {k: v for k, v in record.items() if not k.startswith("_") and k != "project_id"}


class BarbicanResponses:
    def __init__(self, *, barbican: Barbican) -> None:
        self.barbican = barbican
        self.router = Router()
        r = self.router
        r.add("GET", "/", self.versions, op="barbican.versions", public=True)
        r.add("GET", "/v1", self.version, op="barbican.versions", public=True)
        r.add("POST", "/v1/secrets", self.create_secret, op="barbican.secret.create")
        r.add("GET", "/v1/secrets", self.secrets, op="barbican.secret.list")
        r.add("GET", "/v1/secrets/{id}", self.secret, op="barbican.secret.show")
        r.add("DELETE", "/v1/secrets/{id}", self.delete_secret, op="barbican.secret.delete")
        r.add("POST", "/v1/containers", self.create_container, op="barbican.container.create")
        r.add("GET", "/v1/containers", self.containers, op="barbican.container.list")
        r.add("GET", "/v1/containers/{id}", self.container, op="barbican.container.show")
        r.add(
            "DELETE", "/v1/containers/{id}", self.delete_container, op="barbican.container.delete"
        )

    def versions(self, req: Request) -> Response:
        link = {"rel": "self", "href": f"{req.service_url}/v1/"}
        version = {"id": "v1", "status": "stable", "links": [link]}
        return Response(300, {"versions": {"values": [version]}})

    def version(self, req: Request) -> Response:
        link = {"rel": "self", "href": f"{req.service_url}/v1/"}
        return Response(200, {"version": {"id": "v1", "status": "stable", "links": [link]}})

    @staticmethod
    def _secret_view(req: Request, s: Record) -> dict[str, Any]:
        view = _public(s)
        view["secret_ref"] = f"{req.service_url}/v1/secrets/{s['id']}"
        view["content_types"] = {"default": s["_content_type"]} if s["_content_type"] else None
        return view

    @staticmethod
    def _container_view(req: Request, c: Record) -> dict[str, Any]:
        view = _public(c)
        view["container_ref"] = f"{req.service_url}/v1/containers/{c['id']}"
        return view

    def create_secret(self, req: Request) -> Response:
        secret = self.barbican.create_secret(req.ctx, req.json() or {})
        return Response(201, {"secret_ref": f"{req.service_url}/v1/secrets/{secret['id']}"})

    def secrets(self, req: Request) -> Response:
        found = [self._secret_view(req, s) for s in self.barbican.list("secret", req.ctx)]
        return Response(200, {"secrets": found, "total": len(found)})

    def secret(self, req: Request) -> Response:
        return Response(
            200, self._secret_view(req, self.barbican.secret(req.ctx, req.params["id"]))
        )

    def delete_secret(self, req: Request) -> Response:
        self.barbican.delete_secret(req.ctx, req.params["id"])
        return Response(204)

    def create_container(self, req: Request) -> Response:
        made = self.barbican.create_container(req.ctx, req.json() or {}, req.service_url)
        return Response(201, {"container_ref": f"{req.service_url}/v1/containers/{made['id']}"})

    def containers(self, req: Request) -> Response:
        found = [self._container_view(req, c) for c in self.barbican.list("container", req.ctx)]
        return Response(200, {"containers": found, "total": len(found)})

    def container(self, req: Request) -> Response:
        made = self.barbican.container(req.ctx, req.params["id"])
        return Response(200, self._container_view(req, made))

    def delete_container(self, req: Request) -> Response:
        self.barbican.delete_container(req.ctx, req.params["id"])
        return Response(204)

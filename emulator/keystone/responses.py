"""Keystone v3 HTTP routes (served under ``/identity``) and its JSON shapes.

Follows the Identity API v3 reference: ``GET /`` (300, version list), ``GET /v3``,
``POST/GET/HEAD/DELETE /v3/auth/tokens`` with ``X-Subject-Token``, ``GET /v3/auth/catalog``,
``GET /v3/auth/projects`` and read-only ``projects``, ``domains`` and ``users/{id}``.
"""

from __future__ import annotations

from typing import Any

from emulator.errors import ApiError
from emulator.keystone.models import SERVICES, Keystone
from emulator.store import Record
from emulator.timeutil import iso_micro
from emulator.topology import stable_id
from emulator.web import Request, Response, Router

_TITLES = {
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    409: "Conflict",
}


def render_error(error: ApiError) -> Response:
    title = _TITLES.get(error.status, "Internal Server Error")
    return Response(
        error.status,
        {"error": {"code": error.status, "message": error.message, "title": title}},
    )


def version_entry(service_url: str) -> dict[str, Any]:
    return {
        "id": "v3.14",
        "status": "stable",
        "updated": "2020-04-07T00:00:00Z",
        "links": [{"rel": "self", "href": f"{service_url}/v3/"}],
        "media-types": [
            {"base": "application/json", "type": "application/vnd.openstack.identity-v3+json"}
        ],
    }


# Where each interface of the catalog serves the services: a public endpoint is the service's
# prefix itself (``/networking``), an internal or admin one sits under a path of its own
# (``/internal/networking``), as a real cloud gives each interface its own URL. A client that is
# told to use the internal interface can so be seen using it, and a fault rule can fail one
# interface only (emulator.faults, ``interface``).
INTERFACE_PATHS = {"public": "", "internal": "internal/", "admin": "admin-interface/"}


def catalog(*, base_url: str, region: str) -> list[dict[str, Any]]:
    entries = []
    for service_type, name, prefix in SERVICES:
        entries.append(
            {
                "id": stable_id("service", service_type),
                "type": service_type,
                "name": name,
                "endpoints": [
                    {
                        "id": stable_id("endpoint", f"{service_type}:{interface}"),
                        "interface": interface,
                        "region": region,
                        "region_id": region,
                        "url": f"{base_url}/{path}{prefix}",
                    }
                    for interface, path in INTERFACE_PATHS.items()
                ],
            }
        )
    return entries


class KeystoneResponses:
    def __init__(self, *, keystone: Keystone, region: str) -> None:
        self.keystone = keystone
        self.region = region
        self.router = Router()
        r = self.router
        r.add("GET", "/", self.versions, op="keystone.versions", public=True)
        r.add("GET", "/v3", self.version, op="keystone.version", public=True)
        r.add("POST", "/v3/auth/tokens", self.issue, op="keystone.token.create", public=True)
        r.add("GET", "/v3/auth/tokens", self.check, op="keystone.token.show")
        r.add("DELETE", "/v3/auth/tokens", self.revoke, op="keystone.token.delete")
        r.add("GET", "/v3/auth/catalog", self.get_catalog, op="keystone.catalog.show")
        r.add("GET", "/v3/auth/projects", self.auth_projects, op="keystone.project.list")
        r.add("GET", "/v3/projects", self.projects, op="keystone.project.list")
        r.add("GET", "/v3/projects/{project_id}", self.project, op="keystone.project.show")
        r.add("GET", "/v3/domains", self.domains, op="keystone.domain.list")
        r.add("GET", "/v3/domains/{domain_id}", self.domain, op="keystone.domain.show")
        r.add("GET", "/v3/users/{user_id}", self.user, op="keystone.user.show")

    def versions(self, req: Request) -> Response:
        return Response(300, {"versions": {"values": [version_entry(req.service_url)]}})

    def version(self, req: Request) -> Response:
        return Response(200, {"version": version_entry(req.service_url)})

    def token_body(self, token: Record, base_url: str) -> dict[str, Any]:
        ks = self.keystone
        user = ks.user(token["user_id"])
        domain = ks.domain(user["domain_id"])
        body: dict[str, Any] = {
            "methods": token["methods"],
            "user": {
                "id": user["id"],
                "name": user["name"],
                "domain": {"id": domain["id"], "name": domain["name"]},
                "password_expires_at": None,
            },
            "audit_ids": [token["audit_id"]],
            "issued_at": iso_micro(token["issued_at"]),
            "expires_at": iso_micro(token["expires_at"]),
        }
        if token["project_id"]:
            project = ks.project(token["project_id"])
            pdom = ks.domain(project["domain_id"])
            body["project"] = {
                "id": project["id"],
                "name": project["name"],
                "domain": {"id": pdom["id"], "name": pdom["name"]},
            }
            body["is_domain"] = False
            body["roles"] = [{"id": stable_id("role", n), "name": n} for n in ks.roles(token)]
            body["catalog"] = catalog(base_url=base_url, region=self.region)
        elif token["domain_id"]:
            dom = ks.domain(token["domain_id"])
            body["domain"] = {"id": dom["id"], "name": dom["name"]}
            body["roles"] = [{"id": stable_id("role", "admin"), "name": "admin"}]
            body["catalog"] = catalog(base_url=base_url, region=self.region)
        if token["application_credential_id"]:
            cred = ks.store.get("application_credential", token["application_credential_id"])
            if cred is not None:
                body["application_credential"] = {
                    "id": cred["id"],
                    "name": cred["name"],
                    "restricted": True,
                }
        return {"token": body}

    def issue(self, req: Request) -> Response:
        token = self.keystone.authenticate(req.json())
        return Response(
            201, self.token_body(token, req.base_url), headers={"X-Subject-Token": token["id"]}
        )

    def check(self, req: Request) -> Response:
        self.keystone.validate_record(req.header("x-auth-token") or "")
        subject = self.keystone.validate_subject(req.header("x-subject-token") or "")
        return Response(
            200, self.token_body(subject, req.base_url), headers={"X-Subject-Token": subject["id"]}
        )

    def revoke(self, req: Request) -> Response:
        self.keystone.validate_record(req.header("x-auth-token") or "")
        self.keystone.revoke(req.header("x-subject-token") or "")
        return Response(204)

    def get_catalog(self, req: Request) -> Response:
        self.keystone.validate_record(req.header("x-auth-token") or "")
        return Response(200, {"catalog": catalog(base_url=req.base_url, region=self.region)})

    @staticmethod
    def _project_view(p: Record, base_url: str) -> dict[str, Any]:
        view = {k: v for k, v in p.items() if not k.startswith("_")}
        view["links"] = {"self": f"{base_url}/identity/v3/projects/{p['id']}"}
        return view

    def auth_projects(self, req: Request) -> Response:
        token = self.keystone.validate_record(req.header("x-auth-token") or "")
        user = self.keystone.user(token["user_id"])
        projects = [
            self._project_view(p, req.base_url)
            for p in self.keystone.store.all("project")
            if p["id"] in user["_roles"]
        ]
        return Response(200, {"projects": projects, "links": {"self": None, "next": None}})

    def projects(self, req: Request) -> Response:
        self.keystone.validate_record(req.header("x-auth-token") or "")
        name = req.first("name")
        projects = [
            self._project_view(p, req.base_url)
            for p in self.keystone.store.all("project")
            if name is None or p["name"] == name
        ]
        return Response(200, {"projects": projects, "links": {"self": None, "next": None}})

    def project(self, req: Request) -> Response:
        self.keystone.validate_record(req.header("x-auth-token") or "")
        project = self.keystone.project(req.params["project_id"])
        return Response(200, {"project": self._project_view(project, req.base_url)})

    def domains(self, req: Request) -> Response:
        self.keystone.validate_record(req.header("x-auth-token") or "")
        return Response(200, {"domains": self.keystone.store.all("domain")})

    def domain(self, req: Request) -> Response:
        self.keystone.validate_record(req.header("x-auth-token") or "")
        return Response(200, {"domain": self.keystone.domain(req.params["domain_id"])})

    def user(self, req: Request) -> Response:
        self.keystone.validate_record(req.header("x-auth-token") or "")
        user = self.keystone.user(req.params["user_id"])
        return Response(200, {"user": {k: v for k, v in user.items() if not k.startswith("_")}})

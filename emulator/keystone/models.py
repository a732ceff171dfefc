"""Keystone v3 state and rules: users, projects, application credentials and tokens.

Supported authentication (``POST /v3/auth/tokens``): ``password`` (user by id, or by name and
domain), ``application_credential`` (by id, or by name and user) and ``token`` (re-scoping), each
scoped to a project (by id, or by name and domain) or a domain, or unscoped. A project-scoped
token needs a role on the project, as in Keystone. Tokens are opaque random strings stored with
their scope, so they survive a restart with a SQLite state file, and every request to Neutron and
Octavia is checked against them (:meth:`Keystone.validate`).
"""

from __future__ import annotations

import secrets
from typing import Any

from emulator.context import AuthContext
from emulator.errors import NotFound, Unauthorized
from emulator.store import Record, Store
from emulator.timing import Clock
from emulator.topology import Topology, stable_id

TOKEN_TTL_SECONDS = 24 * 3600
_AUTH_FAILED = "The request you have made requires authentication."
SERVICES = (
    ("identity", "keystone", "identity"),
    ("network", "neutron", "networking"),
    ("load-balancer", "octavia", "load-balancer"),
    ("key-manager", "barbican", "key-manager"),
)


class Keystone:
    def __init__(self, *, store: Store, clock: Clock) -> None:
        self.store = store
        self.clock = clock

    # -- seeding -------------------------------------------------------------------------

    def seed(self, topology: Topology) -> None:
        data = topology.data
        self.store.put("region", {"id": topology.region})
        for dom in data["domains"]:
            self.store.put(
                "domain",
                {"id": dom["id"], "name": dom["name"], "enabled": True, "description": ""},
            )
        for proj in data["projects"]:
            domain_id = self._domain(proj.get("domain", "default"))["id"]
            pid = proj.get("id") or stable_id("project", proj["name"])
            self.store.put(
                "project",
                {
                    "id": pid,
                    "name": proj["name"],
                    "domain_id": domain_id,
                    "parent_id": domain_id,
                    "enabled": True,
                    "is_domain": False,
                    "description": proj.get("description", ""),
                    "tags": [],
                },
            )
        for user in data["users"]:
            domain_id = self._domain(user.get("domain", "default"))["id"]
            roles = {
                self.project_by_name(name)["id"]: list(role_names)
                for name, role_names in user.get("projects", {}).items()
            }
            self.store.put(
                "user",
                {
                    "id": user.get("id") or stable_id("user", user["name"]),
                    "name": user["name"],
                    "domain_id": domain_id,
                    "enabled": True,
                    "password_expires_at": None,
                    "_password": user["password"],
                    "_roles": roles,
                },
            )
        for cred in data.get("application_credentials", []):
            owner = self._user_by_name(cred["user"], "default")
            project = self.project_by_name(cred["project"])
            self.store.put(
                "application_credential",
                {
                    "id": cred.get("id") or stable_id("application_credential", cred["name"]),
                    "name": cred["name"],
                    "user_id": owner["id"],
                    "project_id": project["id"],
                    "_secret": cred["secret"],
                },
            )

    # -- lookups ---------------------------------------------------------------------------

    def _domain(self, ref: str | dict[str, Any]) -> Record:
        ref_id = ref if isinstance(ref, str) else ref.get("id")
        ref_name = None if isinstance(ref, str) else ref.get("name")
        for dom in self.store.all("domain"):
            if dom["id"] == ref_id or dom["name"] == ref_name or dom["name"] == ref_id:
                return dom
        raise Unauthorized(f"Could not find domain: {ref_id or ref_name}.")

    def project_by_name(self, name: str) -> Record:
        for proj in self.store.all("project"):
            if proj["name"] == name:
                return proj
        raise NotFound(f"Could not find project: {name}.")

    def project(self, project_id: str) -> Record:
        proj = self.store.get("project", project_id)
        if proj is None:
            raise NotFound(f"Could not find project: {project_id}.")
        return proj

    def _user_by_name(self, name: str, domain: str | dict[str, Any]) -> Record:
        domain_id = self._domain(domain)["id"]
        for user in self.store.all("user"):
            if user["name"] == name and user["domain_id"] == domain_id:
                return user
        raise Unauthorized(_AUTH_FAILED)

    def _user_ref(self, ref: dict[str, Any]) -> Record:
        if ref.get("id"):
            user = self.store.get("user", str(ref["id"]))
            if user is None:
                raise Unauthorized(_AUTH_FAILED)
            return user
        if ref.get("name") and isinstance(ref.get("domain"), dict):
            return self._user_by_name(ref["name"], ref["domain"])
        raise Unauthorized("Provide the user 'id', or its 'name' and 'domain'.")

    # -- authentication -----------------------------------------------------------------

    def authenticate(self, body: dict[str, Any]) -> Record:
        """A new token record for a ``POST /v3/auth/tokens`` body, or 401."""
        auth = body.get("auth")
        if not isinstance(auth, dict) or not isinstance(auth.get("identity"), dict):
            raise Unauthorized("Expecting to find auth.identity in the request body.")
        identity = auth["identity"]
        methods = identity.get("methods") or []
        scope = auth.get("scope")
        app_cred_id: str | None = None
        if "password" in methods:
            pw = identity.get("password", {}).get("user", {})
            user = self._user_ref(pw)
            if not secrets.compare_digest(str(pw.get("password", "")), user["_password"]):
                raise Unauthorized(_AUTH_FAILED)
        elif "application_credential" in methods:
            user, cred = self._app_cred(identity.get("application_credential", {}))
            if scope:
                raise Unauthorized("Application credentials cannot request a scope.")
            app_cred_id = cred["id"]
            scope = {"project": {"id": cred["project_id"]}}
        elif "token" in methods:
            old = self.validate_record(str(identity.get("token", {}).get("id", "")))
            user = self._user_ref({"id": old["user_id"]})
        else:
            raise Unauthorized(
                f"Unsupported auth methods {methods}; use password, application_credential or "
                "token."
            )
        project_id, domain_id = self._scope(user, scope)
        now = self.clock.now()
        token = {
            "id": "gAAAAA" + secrets.token_urlsafe(48),
            "user_id": user["id"],
            "project_id": project_id,
            "domain_id": domain_id,
            "methods": list(methods),
            "application_credential_id": app_cred_id,
            "issued_at": now,
            "expires_at": now + TOKEN_TTL_SECONDS,
            "audit_id": secrets.token_urlsafe(16),
        }
        self.store.put("token", token)
        return token

    def _app_cred(self, ref: dict[str, Any]) -> tuple[Record, Record]:
        cred: Record | None = None
        if ref.get("id"):
            cred = self.store.get("application_credential", str(ref["id"]))
        elif ref.get("name") and isinstance(ref.get("user"), dict):
            owner = self._user_ref(ref["user"])
            cred = next(
                (
                    c
                    for c in self.store.all("application_credential")
                    if c["name"] == ref["name"] and c["user_id"] == owner["id"]
                ),
                None,
            )
        if cred is None or not secrets.compare_digest(str(ref.get("secret", "")), cred["_secret"]):
            raise Unauthorized(_AUTH_FAILED)
        return self._user_ref({"id": cred["user_id"]}), cred

    def _scope(self, user: Record, scope: Any) -> tuple[str | None, str | None]:
        if not scope:
            return None, None
        if not isinstance(scope, dict):
            raise Unauthorized("auth.scope must be an object with 'project' or 'domain'.")
        if "project" in scope:
            ref = scope["project"]
            if ref.get("id"):
                project = self.store.get("project", str(ref["id"]))
            else:
                domain_id = self._domain(ref.get("domain", {}))["id"]
                project = next(
                    (
                        p
                        for p in self.store.all("project")
                        if p["name"] == ref.get("name") and p["domain_id"] == domain_id
                    ),
                    None,
                )
            if project is None:
                raise Unauthorized(f"Could not find project: {ref.get('id') or ref.get('name')}.")
            if project["id"] not in user["_roles"]:
                raise Unauthorized(f"User {user['id']} has no access to project {project['id']}.")
            return project["id"], None
        if "domain" in scope:
            return None, self._domain(scope["domain"])["id"]
        raise Unauthorized(
            "auth.scope must name a 'project' or a 'domain'; system scope is not emulated."
        )

    def validate_record(self, token_id: str) -> Record:
        """The caller's token (``X-Auth-Token``), or 401 (missing, unknown, expired, revoked)."""
        token = self.store.get("token", token_id) if token_id else None
        if token is None or not self._live(token):
            raise Unauthorized(_AUTH_FAILED)
        return token

    def _live(self, token: Record) -> bool:
        """Neither revoked nor expired."""
        return not token.get("_revoked") and token["expires_at"] > self.clock.now()

    def validate_subject(self, token_id: str) -> Record:
        """The token asked about (``X-Subject-Token``), or 404 ``TokenNotFound`` in Keystone
        30's words (``token/provider.py`` ``validate_token``, the Fernet provider)."""
        if not token_id:
            raise NotFound("No token in the request", kind="TokenNotFound")
        token = self.store.get("token", token_id)
        if token is None:
            raise NotFound("Could not recognize Fernet token", kind="TokenNotFound")
        if not self._live(token):
            raise NotFound("Failed to validate token", kind="TokenNotFound")
        return token

    def validate(self, token_id: str | None) -> AuthContext:
        """The caller behind ``X-Auth-Token``, or 401 (missing, unknown, expired, unscoped)."""
        token = self.validate_record(token_id or "")
        if token["project_id"] is None:
            raise Unauthorized("This service needs a project-scoped token.")
        return AuthContext(
            user_id=token["user_id"],
            project_id=token["project_id"],
            roles=tuple(self.roles(token)),
        )

    def revoke(self, token_id: str) -> None:
        """Revoke the token: kept, marked, so that validating it says it was revoked (a
        Fernet token is never forgotten, only listed in the revocation events)."""
        token = self.validate_subject(token_id)
        token["_revoked"] = True
        self.store.put("token", token)

    def roles(self, token: Record) -> list[str]:
        user = self.store.get("user", token["user_id"])
        if user is None or token["project_id"] is None:
            return []
        return list(user["_roles"].get(token["project_id"], []))

    def user(self, user_id: str) -> Record:
        user = self.store.get("user", user_id)
        if user is None:
            raise NotFound(f"Could not find user: {user_id}.")
        return user

    def domain(self, domain_id: str) -> Record:
        dom = self.store.get("domain", domain_id)
        if dom is None:
            raise NotFound(f"Could not find domain: {domain_id}.")
        return dom

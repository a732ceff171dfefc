"""Framework-free request/response types and a small path router, shared by every service.

The HTTP framework (aiohttp, :mod:`emulator.front`) stays outside: :mod:`emulator.app` builds a
:class:`Request` from plain values, service route modules only see :class:`Request` and return
:class:`Response`, so they can be unit-tested by calling them directly. :class:`Router` maps
``(method, "/path/{param}")`` templates to handlers; a path that matches a template with another
method answers 405, as the real services do.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from emulator.context import AuthContext
from emulator.errors import BadRequest, MethodNotAllowed, Unauthorized


@dataclass(frozen=True)
class Request:
    """One HTTP request, with the service prefix already removed from ``path``."""

    method: str
    path: str
    query: Mapping[str, list[str]]
    headers: Mapping[str, str]  # lower-case names
    body: bytes = b""
    base_url: str = "http://127.0.0.1"
    service_url: str = "http://127.0.0.1"  # base URL of this service (with its prefix)
    interface: str = "public"  # the catalog interface whose URL was used (public, internal, admin)
    params: Mapping[str, str] = field(default_factory=dict)
    auth: AuthContext | None = None  # set by the app after Keystone validated X-Auth-Token

    @property
    def ctx(self) -> AuthContext:
        """The caller; routes that need one are only reached with a valid token."""
        if self.auth is None:
            raise Unauthorized("The request you have made requires authentication.")
        return self.auth

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())

    def json(self) -> Any:
        """The body parsed as JSON; a 400 that says so if it is not."""
        if not self.body:
            raise BadRequest("The request body is empty; send a JSON object.")
        try:
            return json.loads(self.body)
        except ValueError as exc:
            raise BadRequest(f"The request body is not valid JSON: {exc}.") from exc

    def json_object(self, key: str) -> dict[str, Any]:
        """``body[key]`` as a dict, or a 400 that names the missing key."""
        data = self.json()
        if not isinstance(data, dict) or not isinstance(data.get(key), dict):
            raise BadRequest(f"Request body must be a JSON object with a '{key}' object.")
        value: dict[str, Any] = data[key]
        return value

    def first(self, name: str) -> str | None:
        values = self.query.get(name)
        return values[0] if values else None

    def with_params(self, params: Mapping[str, str]) -> Request:
        return replace(self, params=dict(params))

    def with_auth(self, auth: AuthContext) -> Request:
        return replace(self, auth=auth)


@dataclass
class Response:
    """An HTTP response: ``body`` is JSON-serialised unless it is ``None``."""

    status: int
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    dropped: bool = False  # carried out, but the connection is dropped without this answer

    def encoded(self) -> bytes:
        if self.body is None:
            return b""
        return json.dumps(self.body).encode()


Handler = Callable[[Request], Response]
"""A route handler: models in, a :class:`Response` out; errors are raised as ApiError."""


@dataclass(frozen=True)
class Route:
    """One route; ``op`` names it for fault rules, ``public`` routes need no token."""

    method: str
    pattern: re.Pattern[str]
    handler: Handler
    op: str
    public: bool = False


class Router:
    """Path templates (``/lbaas/pools/{pool_id}/members``) to handlers."""

    def __init__(self) -> None:
        self._routes: list[Route] = []

    def add(
        self, method: str, template: str, handler: Handler, *, op: str, public: bool = False
    ) -> None:
        """Route ``method template`` to ``handler``; ``op`` names it for fault rules."""
        regex = re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", template.rstrip("/") or "")
        self._routes.append(Route(method, re.compile(f"^{regex}/?$"), handler, op, public))

    def operations(self) -> frozenset[str]:
        """The ``op`` names of the routes: what a fault rule's ``operation`` can name."""
        return frozenset(route.op for route in self._routes)

    def resolve(self, request: Request) -> tuple[Route, Request]:
        """The route and the request with its path params; LookupError if no path matches."""
        path_matched = False
        for route in self._routes:
            match = route.pattern.match(request.path)
            if match is None:
                continue
            path_matched = True
            if route.method == request.method or (
                request.method == "HEAD" and route.method == "GET"
            ):
                return route, request.with_params(match.groupdict())
        if path_matched:
            raise MethodNotAllowed(
                f"The method {request.method} is not allowed for {request.path}."
            )
        raise LookupError(request.path)

"""The WSGI application: one port, one path prefix per service.

``/identity`` is Keystone, ``/networking`` Neutron, ``/load-balancer`` Octavia and ``/admin`` the
emulator's own endpoints. For each request the app, in order: applies due Octavia transitions,
finds the route (404/405 in the service's own error shape), validates ``X-Auth-Token`` with
Keystone for Neutron and Octavia (401 otherwise), asks the fault injector (latency, error,
quota, dropped connection), then calls the route under the store lock. Every response carries
``X-OpenStack-Request-Id``.

Being plain WSGI, the app runs under any WSGI server; :mod:`emulator.server` uses the standard
library's threaded one so the emulator needs no extra dependency.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qs

from emulator import admin
from emulator.cloud import Cloud
from emulator.errors import (
    ApiError,
    Conflict,
    Forbidden,
    InjectedError,
    NotFound,
    Unauthorized,
)
from emulator.keystone import responses as keystone_responses
from emulator.neutron import responses as neutron_responses
from emulator.octavia import responses as octavia_responses
from emulator.octavia.base import QUOTA_TITLES
from emulator.web import Request, Response, Router

log = logging.getLogger("emulator")
StartResponse = Callable[[str, list[tuple[str, str]]], Any]
DROP_KEY = "emulator.socket"


@dataclass(frozen=True)
class Service:
    name: str
    router: Router
    render_error: Callable[[ApiError], Response]
    needs_token: bool


class EmulatorApp:
    def __init__(self, *, cloud: Cloud) -> None:
        self.cloud = cloud
        self.services = {
            "identity": Service(
                "keystone",
                keystone_responses.KeystoneResponses(
                    keystone=cloud.keystone, region=cloud.config.topology.region
                ).router,
                keystone_responses.render_error,
                needs_token=False,
            ),
            "networking": Service(
                "neutron",
                neutron_responses.NeutronResponses(neutron=cloud.neutron).router,
                neutron_responses.render_error,
                needs_token=True,
            ),
            "load-balancer": Service(
                "octavia",
                octavia_responses.OctaviaResponses(octavia=cloud.octavia).router,
                octavia_responses.render_error,
                needs_token=True,
            ),
            "admin": Service(
                "admin", admin.AdminResponses(cloud=cloud).router, admin.render_error, False
            ),
        }

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        request_id = f"req-{uuid.uuid4()}"
        request, service = self._request(environ)
        response = self._handle(request, service, environ)
        if response is None:  # dropped: the socket is shut, so these writes go nowhere
            start_response("500 Internal Server Error", [("Content-Length", "0")])
            return []
        body = b"" if request.method == "HEAD" else response.encoded()
        headers = {
            "X-OpenStack-Request-Id": request_id,
            **response.headers,
        }
        if response.body is not None:
            headers["Content-Type"] = "application/json"
        headers["Content-Length"] = str(len(response.encoded()) if response.body is not None else 0)
        status = f"{response.status} {HTTPStatus(response.status).phrase}"
        start_response(status, list(headers.items()))
        log.info(
            "%s %s -> %s (%s)",
            request.method,
            environ.get("PATH_INFO"),
            response.status,
            request_id,
        )
        return [body]

    def _request(self, environ: dict[str, Any]) -> tuple[Request, Service | None]:
        path = environ.get("PATH_INFO") or "/"
        host = environ.get("HTTP_HOST") or (
            f"{environ.get('SERVER_NAME', '127.0.0.1')}:{environ.get('SERVER_PORT', '80')}"
        )
        base_url = f"{environ.get('wsgi.url_scheme', 'http')}://{host}"
        prefix, _, rest = path.lstrip("/").partition("/")
        service = self.services.get(prefix)
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length) if length > 0 else b""
        headers = {
            key[5:].replace("_", "-").lower(): value
            for key, value in environ.items()
            if key.startswith("HTTP_")
        }
        if environ.get("CONTENT_TYPE"):
            headers["content-type"] = environ["CONTENT_TYPE"]
        request = Request(
            method=environ.get("REQUEST_METHOD", "GET").upper(),
            path="/" + rest if service is not None else path,
            query=parse_qs(environ.get("QUERY_STRING") or "", keep_blank_values=True),
            headers=headers,
            body=body,
            base_url=base_url,
            service_url=f"{base_url}/{prefix}",
        )
        return request, service

    def _handle(
        self, request: Request, service: Service | None, environ: dict[str, Any]
    ) -> Response | None:
        if service is None:
            return Response(
                404,
                {
                    "error": f"No service at {request.path}; use /identity, /networking, "
                    "/load-balancer or /admin."
                },
            )
        try:
            self.cloud.advance()
            try:
                route, request = service.router.resolve(request)
            except LookupError:
                raise NotFound(f"The resource could not be found: {request.path}") from None
            if service.needs_token and not route.public:
                try:
                    with self.cloud.store.lock:
                        ctx = self.cloud.keystone.validate(request.header("x-auth-token"))
                except Unauthorized as error:  # keystonemiddleware answers, in its shape
                    return keystone_responses.render_error(error)
                request = request.with_auth(ctx)
            if service.name != "admin":
                decision = self.cloud.faults.decide(route.op)
                if decision.latency:
                    time.sleep(decision.latency)
                if decision.drop:
                    self._drop(environ)
                    return None
                if decision.rule is not None:
                    raise self._injected(
                        route.op, decision.rule.status, decision.rule.quota, decision.rule.message
                    )
            with self.cloud.store.lock:
                return route.handler(request)
        except ApiError as error:
            return service.render_error(error)
        except Exception:
            log.exception("unhandled error on %s %s", request.method, request.path)
            return service.render_error(ApiError("Internal Server Error"))

    @staticmethod
    def _injected(op: str, status: int, quota: bool, message: str) -> ApiError:
        if not quota:
            return InjectedError(message, status=status)
        service, _, rest = op.partition(".")
        resource = rest.partition(".")[0]
        if service == "octavia":
            return Forbidden(
                f"Quota has been met for resources: {QUOTA_TITLES.get(resource, resource)}"
            )
        return Conflict(f"Quota exceeded for resources: ['{resource}'].", kind="OverQuota")

    @staticmethod
    def _drop(environ: dict[str, Any]) -> None:
        sock = environ.get(DROP_KEY)
        if isinstance(sock, socket.socket):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

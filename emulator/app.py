"""The emulator's transport-independent core: one port, one path prefix per service.

``/identity`` is Keystone, ``/networking`` Neutron, ``/load-balancer`` Octavia and ``/admin`` the
emulator's own endpoints. Those are the catalog's public endpoints; its internal and admin
endpoints are the same services under ``/internal/...`` and ``/admin-interface/...``
(:data:`~emulator.keystone.responses.INTERFACE_PATHS`). For each request the app, in order:
applies due Octavia transitions, finds the route (404/405 in the service's own error shape),
validates ``X-Auth-Token`` with Keystone for Neutron and Octavia (401 otherwise), asks the fault
injector (latency, error, quota, dropped connection), then calls the route under the store lock.
Every response carries ``X-OpenStack-Request-Id``. Every request but the emulator's own
``/admin`` ones is logged in ``cloud.requests`` (:mod:`emulator.request_log`).

:meth:`EmulatorApp.handle` takes a request as plain values and returns a
:class:`~emulator.web.Response`, or ``None`` when the fault injector wants the connection
dropped without an answer. It blocks (the models take the store lock; the latency fault
sleeps), so the HTTP front (:mod:`emulator.front`, aiohttp) runs it in a thread pool and does
the drop on the socket itself. Tests can call it directly, with no server.
"""

from __future__ import annotations

import dataclasses
import logging
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from urllib.parse import parse_qs

from emulator import admin
from emulator.barbican import responses as barbican_responses
from emulator.cloud import Cloud
from emulator.errors import (
    ApiError,
    Conflict,
    Forbidden,
    InjectedError,
    NotFound,
    Unauthorized,
)
from emulator.faults import unmatched
from emulator.keystone import responses as keystone_responses
from emulator.keystone.responses import INTERFACE_PATHS
from emulator.neutron import responses as neutron_responses
from emulator.octavia import responses as octavia_responses
from emulator.octavia.base import QUOTA_TITLES
from emulator.web import Request, Response, Router

log = logging.getLogger("emulator")


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
                neutron_responses.NeutronResponses(
                    neutron=cloud.neutron, max_limit=cloud.config.pagination_max_limit
                ).router,
                neutron_responses.render_error,
                needs_token=True,
            ),
            "load-balancer": Service(
                "octavia",
                octavia_responses.OctaviaResponses(
                    octavia=cloud.octavia, max_limit=cloud.config.pagination_max_limit
                ).router,
                octavia_responses.render_error,
                needs_token=True,
            ),
            "key-manager": Service(
                "barbican",
                barbican_responses.BarbicanResponses(barbican=cloud.barbican).router,
                barbican_responses.render_error,
                needs_token=True,
            ),
        }
        operations = frozenset().union(*(s.router.operations() for s in self.services.values()))
        problem = unmatched(cloud.faults.config.rules, operations)
        if problem is not None:
            raise ValueError(problem)
        self.services["admin"] = Service(
            "admin",
            admin.AdminResponses(cloud=cloud, operations=operations).router,
            admin.render_error,
            False,
        )

    def handle(
        self,
        *,
        method: str,
        path: str,
        query_string: str,
        headers: Mapping[str, str],
        body: bytes,
        base_url: str,
    ) -> Response | None:
        """Serve one request; ``None`` means: drop the connection without an answer.

        ``path`` is percent-decoded, ``query_string`` is raw, ``headers`` may use any case and
        ``base_url`` is ``scheme://host[:port]`` as the client addressed the server. The
        returned response carries ``X-OpenStack-Request-Id`` (and ``Content-Type`` when it has
        a body); the transport sends it as it is (a HEAD answer drops the body).
        """
        request_id = f"req-{uuid.uuid4()}"
        interface, under = _interface_of(path)
        prefix, _, rest = under.lstrip("/").partition("/")
        service = self.services.get(prefix)
        if service is not None and service.name == "admin" and interface != "public":
            service = None  # the emulator's own endpoints are in no catalog
        request = Request(
            method=method.upper(),
            path="/" + rest if service is not None else path,
            query=parse_qs(query_string, keep_blank_values=True),
            headers={key.lower(): value for key, value in headers.items()},
            body=body,
            base_url=base_url,
            service_url=f"{base_url}/{INTERFACE_PATHS[interface]}{prefix}",
            interface=interface,
        )
        response = self._handle(request, service)
        if service is None or service.name != "admin":
            answered = None if response is None or response.dropped else response.status
            self.cloud.requests.add(
                at=self.cloud.clock.now(),
                method=request.method,
                path=path,
                query=query_string,
                status=answered,
            )
        if response is None or response.dropped:
            lost = f" after {response.status}{made(response)}" if response is not None else ""
            log.info("%s %s -> dropped%s (%s)", request.method, path, lost, request_id)
            return None
        response.headers = {"X-OpenStack-Request-Id": request_id, **response.headers}
        if response.body is not None:
            response.headers["Content-Type"] = "application/json"
        log.info(
            "%s %s -> %s%s (%s)", request.method, path, response.status, made(response), request_id
        )
        return response

    def _handle(self, request: Request, service: Service | None) -> Response | None:
        if service is None:
            return Response(
                404,
                {
                    "error": f"No service at {request.path}; use /identity, /networking, "
                    "/load-balancer, /key-manager or /admin."
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
                decision = self.cloud.faults.decide(route.op, interface=request.interface)
                if decision.latency:
                    time.sleep(decision.latency)
                if decision.hold is not None:
                    decision.hold.wait()
                if decision.drop:
                    return None
                if decision.lose_answer:  # carried out; the answer (logged) is dropped
                    with self.cloud.store.lock:
                        done = route.handler(request)
                    return dataclasses.replace(done, dropped=True)
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


def _interface_of(path: str) -> tuple[str, str]:
    """The catalog interface a path was addressed through, and the path without its part."""
    stripped = path.lstrip("/")
    for interface, part in INTERFACE_PATHS.items():
        if part and stripped.startswith(part):
            return interface, "/" + stripped.removeprefix(part)
    return "public", path


def made(response: Response) -> str:
    """`` id=<ID>`` of the object a create answered with (``{"<kind>": {"id": ...}}``), so the
    request log names what each POST made (the chaos run's evidence); empty otherwise."""
    body = response.body
    if response.status not in (200, 201, 202) or not isinstance(body, dict) or len(body) != 1:
        return ""
    (record,) = body.values()
    return f" id={record['id']}" if isinstance(record, dict) and record.get("id") else ""

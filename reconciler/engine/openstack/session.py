"""The engine's connection to OpenStack: a keystoneauth1 session, its errors, its pages.

keystoneauth1 (the library under openstacksdk and the ``openstack`` CLI) does the HTTP and the
login, from the settings :mod:`reconciler.engine.openstack.auth` reads out of cloud.conf
``[Global]``:

* Keystone v3 login (password, token, application credential; see
  :mod:`reconciler.engine.openstack.auth`), the token kept and renewed before it expires, and a new
  login when the cloud answers 401 to a token it no longer honours (keystoneauth invalidates it and
  asks once more);
* the catalog's endpoint of each service for ``os-endpoint-type`` and ``region``;
* ``ca-file``/``tls-insecure`` and the client certificate (``cert-file``, ``key-file``);
* retries with exponential backoff (0.5 s, doubling; ``Retry-After`` honoured): of an answer 409
  (Octavia while a load balancer is ``PENDING_*``), 429 or 5xx, :data:`STATUS_RETRIES` times, and
  of a connection that failed, :data:`CONNECT_RETRIES` times. Only reads, deletes and tag
  updates go through this client, which are all safe to repeat;
* lists followed page by page through their ``<collection>_links`` (:meth:`CloudSession.pages`),
  so a cloud whose ``pagination_max_limit`` cuts them short is read whole.

A failed request is an :class:`OpenStackRestError` with the cloud's ``status``, the method and path,
and the cloud's own message (Octavia's ``faultstring``, Neutron's ``message``, Keystone's
``error.message``): the Warning Events quote it. Its ``failure_kind`` says how the controller
retries it, as for the same answer reported by the provider
(:func:`reconciler.engine.errors.fault_class`). A login that fails is a :class:`LoginError` that
names the settings used and what to check. The token and credentials are never logged nor put into a
message.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import urlsplit

from keystoneauth1 import adapter, session
from keystoneauth1 import exceptions as ks_exc
from keystoneauth1.identity import v3

from reconciler.config import AuthConfig
from reconciler.engine.errors import FailureKind, fault_class
from reconciler.engine.failure_text import CloudFault, body_message
from reconciler.engine.openstack.auth import (
    client_cert,
    interface_of,
    login_failure,
    login_method,
    missing_endpoint,
    tls_verify,
)

__all__ = [
    "CONNECT_RETRIES",
    "RETRIED_STATUSES",
    "STATUS_RETRIES",
    "TIMEOUT",
    "CloudSession",
    "LoginError",
    "OpenStackRestError",
]

TIMEOUT = 30.0  # seconds per request
STATUS_RETRIES = 4  # after 0.5, 1, 2 and 4 s: about 8 s of waiting at most
RETRIED_STATUSES = (409, 429, 500, 502, 503, 504)
CONNECT_RETRIES = 3
SERVICES = ("load-balancer", "network")


class OpenStackRestError(Exception):
    """A request to the cloud failed. ``status``: the HTTP status of the cloud's answer (None
    when there was none: unreachable, TLS, timeout); ``cloud_message``: the cloud's own words;
    ``kind``: Neutron's error type (``OverQuota``), Keystone's title."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        method: str = "",
        path: str = "",
        cloud_message: str = "",
        kind: str = "",
    ) -> None:
        super().__init__(message)
        self.status = status
        self.method = method
        self.path = path
        self.cloud_message = cloud_message
        self.kind = kind

    @property
    def not_found(self) -> bool:
        return self.status == 404

    @property
    def conflict(self) -> bool:
        """409: Octavia while the load balancer is ``PENDING_*``, a Neutron conflict."""
        return self.status == 409

    @property
    def failure_kind(self) -> FailureKind:
        """How the controller retries it: as the same answer reported by the provider."""
        if self.status is None:
            return "backoff"
        fault = CloudFault(self.status, self.method, self.path, self.cloud_message, self.kind)
        return fault_class(fault).failure_kind


class LoginError(OpenStackRestError):
    """The client could not log in, or the catalog has no endpoint to use; the message names
    the cloud.conf settings to check."""


def _answer_error(method: str, path: str, status: int, body: str) -> OpenStackRestError:
    message, kind = body_message(body)
    fault = CloudFault(status, method, path, message, kind)
    return OpenStackRestError(
        fault.describe(),
        status=status,
        method=method,
        path=path,
        cloud_message=message,
        kind=kind,
    )


class CloudSession:
    """One login to the cloud, shared by every request of one engine (keystoneauth's session
    is safe to use from several threads; a token is fetched once at a time)."""

    def __init__(self, auth: AuthConfig) -> None:
        self.auth = auth
        method, arguments = login_method(auth)
        plugin: Any
        if method.plugin == "application_credential":
            plugin = v3.ApplicationCredential(**arguments)  # type: ignore[arg-type]
        elif method.plugin == "token":
            plugin = v3.Token(**arguments)  # type: ignore[arg-type]
        else:
            plugin = v3.Password(**arguments)  # type: ignore[arg-type]
        self._session = session.Session(
            auth=plugin,
            verify=tls_verify(auth),
            cert=client_cert(auth),
            timeout=TIMEOUT,
            app_name="lb-reconciler",
        )
        self._adapters = {
            service: adapter.Adapter(
                self._session,
                service_type=service,
                interface=interface_of(auth.endpoint_type),
                region_name=auth.region or None,
                status_code_retries=STATUS_RETRIES,
                retriable_status_codes=list(RETRIED_STATUSES),
                connect_retries=CONNECT_RETRIES,
            )
            for service in SERVICES
        }
        self._lock = threading.Lock()
        self._checked = False
        self._endpoints: dict[str, tuple[str, str]] = {}  # service -> (token, endpoint)

    def login(self) -> None:
        """Log in and find an endpoint of each service, or raise :class:`LoginError` saying
        what went wrong with which settings. Done once; a later token is fetched when due."""
        with self._lock:
            if self._checked:
                return
            try:
                self._session.get_token()
            except ks_exc.HttpError as exc:
                body = exc.response.text if exc.response is not None else ""
                message, _kind = body_message(body)
                status = int(exc.http_status or 0) or None
                text = login_failure(self.auth, status=status, cloud_message=message)
                raise LoginError(text, status=status, cloud_message=message) from None
            except ks_exc.ClientException as exc:
                text = login_failure(self.auth, status=None, reason=_reason(exc))
                raise LoginError(text) from None
            for service, client in self._adapters.items():
                try:
                    found = client.get_endpoint()
                except ks_exc.ClientException:
                    found = None
                if not found:
                    raise LoginError(missing_endpoint(self.auth, service))
            self._checked = True

    def roles(self) -> tuple[list[str], str]:
        """The roles of the token (logged in first) on its project, and the project's name
        (its ID when the token has no name): what a policy check of Octavia sees."""
        self.login()
        access = self._session.auth.get_access(self._session)  # type: ignore[union-attr]
        project = str(access.project_name or access.project_id or "")
        return [str(r) for r in access.role_names or []], project

    def request(
        self,
        service: str,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: Any = None,
    ) -> Any:
        """The JSON answer (None when empty) of ``method path`` (relative to the service's
        endpoint, or a full URL); an answer >= 400 raises :class:`OpenStackRestError`."""
        self.login()
        shown = _shown_path(path)
        try:
            response = self._adapters[service].request(
                path,
                method,
                params=dict(params or {}),
                json=body,
                headers={"Accept": "application/json"},
                raise_exc=False,
                endpoint_override=self._endpoint(service),
            )
        except ks_exc.EndpointNotFound:
            raise LoginError(missing_endpoint(self.auth, service)) from None
        except ks_exc.HttpError as exc:  # the token could not be renewed: Keystone said no
            status = int(exc.http_status or 0) or None
            body_text = exc.response.text if exc.response is not None else ""
            message, _kind = body_message(body_text)
            text = login_failure(self.auth, status=status, cloud_message=message)
            raise LoginError(text, status=status, cloud_message=message) from None
        except ks_exc.ClientException as exc:
            raise OpenStackRestError(
                f"{method} {shown}: the cloud could not be reached: {_reason(exc)}",
                method=method,
                path=shown,
            ) from None
        if response.status_code >= 400:
            raise _answer_error(method, shown, response.status_code, response.text)
        if not response.content:
            return None
        try:
            return response.json()
        except ValueError:
            raise OpenStackRestError(
                f"{method} {shown}: the cloud answered {response.status_code} with a body that "
                f"is not JSON: {response.text[:200]!r}",
                status=response.status_code,
                method=method,
                path=shown,
            ) from None

    def _endpoint(self, service: str) -> str | None:
        """The service's endpoint in the catalog of the current token, looked up once per
        token rather than per request (keystoneauth copies the whole catalog for each lookup:
        a twentieth of a members change's CPU time); escaped for keystoneauth, which formats
        ``%`` in an override. None (keystoneauth's own lookup, and its error) when not found."""
        token = self._session.get_token()
        cached = self._endpoints.get(service)
        if cached is None or cached[0] != token:
            found = self._adapters[service].get_endpoint()
            if not found:
                return None
            cached = (str(token), str(found).replace("%", "%%"))
            self._endpoints[service] = cached
        return cached[1]

    def pages(
        self, service: str, path: str, key: str, *, params: Mapping[str, str] | None = None
    ) -> Iterator[dict[str, Any]]:
        """Every object of the list ``path`` (its JSON key ``key``), page after page, following
        the ``<key>_links`` ``next`` hrefs (Neutron and Octavia paginate alike)."""
        url, query = path, dict(params or {})
        seen: set[str] = set()
        while True:
            payload = self.request(service, "GET", url, params=query) or {}
            yield from payload.get(key) or ()
            links = payload.get(f"{key}_links") or ()
            following = next((str(li["href"]) for li in links if li.get("rel") == "next"), "")
            if not following or following in seen:  # a cloud that links in a circle
                return
            seen.add(following)
            url, query = following, {}  # the href carries the query


def _shown_path(path: str) -> str:
    """A request's path for messages: no scheme, host or query."""
    return urlsplit(path).path if "://" in path else "/" + path.lstrip("/").split("?")[0]


def _reason(exc: Exception) -> str:
    """keystoneauth's words for a request without an answer, on one line."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text[:400]

"""Raw JSON calls to the Kubernetes API: dicts in, dicts out, no decisions.

The controller's decisions work on plain dicts shaped like the API's JSON (:mod:`reconciler.model`
reads those), so the calls here skip the typed models of the ``kubernetes`` client: they use its
``ApiClient`` for the connection, TLS and credentials (kubeconfig or in-cluster, token refresh)
and nothing else. Errors become :class:`KubeError` with the HTTP status and the API server's
``Status`` reason and message; transport failures (connection refused, reset, timeout) become
:class:`KubeUnavailableError`, which the watch treats as "reconnect" and the workers as "retry
soon".

Patch types are explicit: ``merge`` (RFC 7386; what the controller uses, with
``metadata.resourceVersion`` in the body when the patch replaces a list someone else may write)
and ``strategic``. No PUT of a whole object: that could drop fields other writers own.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import urllib3
from kubernetes import client

__all__ = ["KubeApi", "KubeError", "KubeUnavailableError"]

_PATCH_TYPES = {
    "merge": "application/merge-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "json": "application/json-patch+json",
}


class KubeError(Exception):
    """The API server answered with an error ``status`` (409 Conflict, 404, 410 Gone, ...)."""

    def __init__(self, *, status: int, reason: str, message: str) -> None:
        super().__init__(f"{status} {reason}: {message}")
        self.status = status
        self.reason = reason
        self.message = message

    @property
    def conflict(self) -> bool:
        return self.status == 409

    @property
    def not_found(self) -> bool:
        return self.status == 404

    @property
    def gone(self) -> bool:
        return self.status == 410


class KubeUnavailableError(Exception):
    """No answer from the API server: connection refused or dropped, timeout."""


def _error(status: int, data: bytes) -> KubeError:
    reason, message = "", data.decode("utf-8", errors="replace")[:500]
    try:
        body = json.loads(data)
        if isinstance(body, dict):
            reason = str(body.get("reason") or "")
            message = str(body.get("message") or message)
    except ValueError:
        pass
    return KubeError(status=status, reason=reason, message=message)


class KubeApi:
    """A few verbs over one ``kubernetes.client.ApiClient``. Thread-safe as the client is."""

    def __init__(self, *, api_client: client.ApiClient, request_timeout: float = 30.0) -> None:
        self._api = api_client
        self._timeout = request_timeout

    def _send(
        self,
        *,
        method: str,
        path: str,
        query: Mapping[str, str | int | bool] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        timeout: Any = None,
    ) -> Any:
        params = [
            (k, str(v).lower() if isinstance(v, bool) else v) for k, v in (query or {}).items()
        ]
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = content_type
        try:
            req = self._api.param_serialize(
                method=method,
                resource_path=path,
                query_params=params,
                header_params=headers,
                body=body,
                auth_settings=["BearerToken"],
            )
            return self._api.call_api(
                *req, _request_timeout=timeout if timeout is not None else self._timeout
            )
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise KubeUnavailableError(f"{method} {path}: {exc}") from exc
        except client.ApiException as exc:
            if exc.status in (0, None):
                raise KubeUnavailableError(f"{method} {path}: {exc.reason}") from exc
            raise

    def request(
        self,
        *,
        method: str,
        path: str,
        query: Mapping[str, str | int | bool] | None = None,
        body: Any = None,
        content_type: str = "application/json",
    ) -> dict[str, Any]:
        resp = self._send(
            method=method, path=path, query=query, body=body, content_type=content_type
        )
        try:
            data = resp.read()
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise KubeUnavailableError(f"{method} {path}: {exc}") from exc
        if not 200 <= resp.status <= 299:
            raise _error(resp.status, data)
        out = json.loads(data) if data else {}
        return out if isinstance(out, dict) else {}

    def stream(
        self,
        *,
        path: str,
        query: Mapping[str, str | int | bool],
        timeout: float,
        on_open: Callable[[Any], None] | None = None,
    ) -> Iterator[dict[str, Any]]:
        """A watch: one dict per line of the response. Ends when the server closes it.
        ``on_open`` gets the raw response, whose ``shutdown()`` ends the stream from elsewhere."""
        resp = self._send(method="GET", path=path, query=query, timeout=(10.0, timeout))
        raw = resp.response
        if on_open is not None:
            on_open(raw)
        try:
            if not 200 <= resp.status <= 299:
                raise _error(resp.status, raw.read())
            buffer = b""
            for chunk in raw.stream(amt=None, decode_content=False):
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    if line.strip():
                        event = json.loads(line)
                        if isinstance(event, dict):
                            yield event
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise KubeUnavailableError(f"watch {path}: {exc}") from exc
        finally:
            raw.release_conn()

    # -- the verbs the controller uses --------------------------------------------------------

    def get(self, path: str) -> dict[str, Any]:
        return self.request(method="GET", path=path)

    def list(
        self, path: str, *, query: Mapping[str, str | int | bool] | None = None
    ) -> dict[str, Any]:
        return self.request(method="GET", path=path, query=query)

    def patch(self, path: str, body: Any, *, kind: str = "merge") -> dict[str, Any]:
        return self.request(method="PATCH", path=path, body=body, content_type=_PATCH_TYPES[kind])

    def create(self, path: str, body: Mapping[str, Any]) -> dict[str, Any]:
        return self.request(method="POST", path=path, body=dict(body))

    def close(self) -> None:
        self._api.close()  # type: ignore[no-untyped-call]

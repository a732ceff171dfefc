"""The controller's HTTP endpoints for the kubelet and Prometheus: liveness, readiness, metrics.

======================  ==============================================================  =========
path                    answer                                                          on error
======================  ==============================================================  =========
``GET /healthz``        200 and the reason (``ok``): the process works                  500
``GET /readyz``         200 and the reason: caches synced, or a healthy standby         503
``GET /metrics``        200 and Prometheus' text format (see :mod:`.metrics`)           500
anything else           404
======================  ==============================================================  =========

``HEAD`` answers as ``GET`` without the body; other methods get 501 from the standard library.
Bodies of the probes are ``text/plain``: the reason the callable gave, so ``kubectl describe pod``
shows why a probe failed. What "live" and "ready" mean is the caller's: :class:`HealthServer`
only calls ``live()`` / ``ready()`` per request; one that raises counts as failed, with the
exception as the reason.

The server is the standard library's :class:`http.server.ThreadingHTTPServer` (one thread per
request) in a daemon thread: a slow scrape cannot hold up a probe, and nothing here keeps the
process alive. Its per-request log lines go to the ``reconciler.controller.health`` logger at DEBUG
instead of stderr, so probes every few seconds do not flood the log.
"""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from reconciler.controller.metrics import Metrics

__all__ = ["Check", "HealthServer"]

_log = logging.getLogger(__name__)

Check = Callable[[], tuple[bool, str]]
"""A probe: ``(healthy, reason)``; the reason is the response body."""

_TEXT = "text/plain; charset=utf-8"


class HealthServer:
    """``/healthz``, ``/readyz`` and ``/metrics`` on ``host:port`` (port 0: a free one)."""

    def __init__(
        self,
        host: str = "0.0.0.0",
        port: int = 8080,
        *,
        metrics: Metrics,
        live: Check,
        ready: Check,
    ) -> None:
        self.host = host
        self._port = port
        self.metrics = metrics
        self.live = live
        self.ready = ready
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        """The port listened on: the one the OS chose when 0 was asked for (after start)."""
        if self._server is not None:
            return int(self._server.server_address[1])
        return self._port

    @property
    def url(self) -> str:
        """``http://host:port`` to reach the server (a wildcard host reads as loopback)."""
        host = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(self.host, self.host)
        if ":" in host:
            host = f"[{host}]"
        return f"http://{host}:{self.port}"

    def start(self) -> None:
        """Bind and serve in a daemon thread; an unusable address raises :class:`OSError` here."""
        if self._server is not None:
            raise RuntimeError("the health server is already started")
        server = _Server((self.host, self._port), _Handler, owner=self)
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.1}, name="http", daemon=True
        )
        self._thread.start()
        _log.debug("health server listening", extra={"url": self.url})

    def stop(self, timeout: float = 5.0) -> None:
        """Stop serving and close the socket; a no-op when not started."""
        server, thread = self._server, self._thread
        if server is None:
            return
        server.shutdown()
        server.server_close()
        if thread is not None:
            thread.join(timeout)
        self._server = self._thread = None

    def __enter__(self) -> HealthServer:
        self.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()


class _Server(ThreadingHTTPServer):
    daemon_threads = True  # a hung client must not keep the process from exiting

    def __init__(self, address: tuple[str, int], handler: Any, *, owner: HealthServer) -> None:
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        self.owner = owner
        super().__init__(address, handler)


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"  # keep-alive for Prometheus; every answer has Content-Length
    server_version = "lb-reconciler"
    sys_version = ""

    def do_GET(self) -> None:
        self._answer(head=False)

    def do_HEAD(self) -> None:
        self._answer(head=True)

    def _answer(self, *, head: bool) -> None:
        owner = self.server.owner
        path = self.path.split("?", 1)[0]
        if path == "/healthz":
            status, body, ctype = self._probe(owner.live, HTTPStatus.INTERNAL_SERVER_ERROR)
        elif path == "/readyz":
            status, body, ctype = self._probe(owner.ready, HTTPStatus.SERVICE_UNAVAILABLE)
        elif path == "/metrics":
            try:
                body, ctype = owner.metrics.render()
                status = HTTPStatus.OK
            except Exception as exc:
                _log.exception("rendering /metrics failed")
                status, body, ctype = HTTPStatus.INTERNAL_SERVER_ERROR, _line(str(exc)), _TEXT
        else:
            status, body, ctype = HTTPStatus.NOT_FOUND, _line(f"not found: {path}"), _TEXT
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        if not head:
            self.wfile.write(body)

    @staticmethod
    def _probe(check: Check, failed: HTTPStatus) -> tuple[HTTPStatus, bytes, str]:
        try:
            ok, reason = check()
        except Exception as exc:
            _log.warning("a health check raised", exc_info=True)
            ok, reason = False, f"check failed: {type(exc).__name__}: {exc}"
        status = HTTPStatus.OK if ok else failed
        return status, _line(reason or ("ok" if ok else "failed")), _TEXT

    def log_message(self, format: str, *args: Any) -> None:
        _log.debug(format, *args, extra={"client": self.client_address[0]})


def _line(text: str) -> bytes:
    return (text.rstrip("\n") + "\n").encode()

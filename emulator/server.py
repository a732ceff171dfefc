"""Run the emulator: a threaded WSGI server on loopback, started in a background thread.

:func:`start` is the entry point for tests and the CLI::

    handle = start(port=0, config=CloudConfig(timing=CLOUDLIKE))
    handle.url            # http://127.0.0.1:PORT
    handle.auth_url       # http://127.0.0.1:PORT/identity/v3
    handle.write_clouds_yaml(path=...)
    handle.stop()

The server is the standard library's ``wsgiref`` server with one thread per connection (the
emulator adds no runtime dependency; the app is plain WSGI, so any WSGI server can host it). A
request handler exposes its socket to the app so the fault injector can drop a connection
without an answer.
"""

from __future__ import annotations

import logging
import socketserver
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer

from emulator.app import DROP_KEY, EmulatorApp
from emulator.cloud import Cloud, CloudConfig
from emulator.clouds import write_clouds_yaml, write_env_file

log = logging.getLogger("emulator.server")


class _Handler(WSGIRequestHandler):
    def get_environ(self) -> dict[str, Any]:
        environ = super().get_environ()
        environ[DROP_KEY] = self.connection
        return environ

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s " + format, self.client_address[0], *args)


class _Server(socketserver.ThreadingMixIn, WSGIServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        log.debug("connection error from %s", client_address, exc_info=True)


@dataclass
class EmulatorHandle:
    """A running emulator."""

    cloud: Cloud
    host: str
    port: int
    _server: _Server
    _thread: threading.Thread

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def auth_url(self) -> str:
        return f"{self.url}/identity/v3"

    def topology(self) -> dict[str, Any]:
        return self.cloud.topology_info(auth_url=self.auth_url)

    def write_clouds_yaml(self, *, path: Path, cloud_name: str = "emulator") -> Path:
        """Write ``clouds.yaml`` (and ``topology.json`` next to it) for this emulator."""
        return write_clouds_yaml(path=path, cloud_name=cloud_name, info=self.topology())

    def write_env_file(self, *, path: Path) -> Path:
        """Write an ``openrc``-style file of ``OS_*`` variables for this emulator."""
        return write_env_file(path=path, info=self.topology())

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)
        self.cloud.close()


def start(
    *, host: str = "127.0.0.1", port: int = 0, config: CloudConfig | None = None
) -> EmulatorHandle:
    """Start the emulator in a background thread; ``port=0`` picks a free port."""
    cloud = Cloud(config=config or CloudConfig())
    server = _Server((host, port), _Handler)
    server.set_app(EmulatorApp(cloud=cloud))
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.1}, name="emulator", daemon=True
    )
    thread.start()
    return EmulatorHandle(
        cloud=cloud, host=host, port=server.server_address[1], _server=server, _thread=thread
    )

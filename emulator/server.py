"""Run the emulator: aiohttp on loopback, its event loop in a background thread.

:func:`start` is the entry point for tests and the CLI::

    handle = start(port=0, config=EmulatorConfig(timing=CLOUDLIKE))
    handle.url            # http://127.0.0.1:PORT
    handle.auth_url       # http://127.0.0.1:PORT/identity/v3
    handle.write_clouds_yaml(path=...)
    handle.stop()

The caller stays synchronous: :func:`start` binds the listening socket itself (so ``port=0``
gives the real port at once), starts a thread that owns a fresh event loop, and waits until the
aiohttp site serves. Requests run :class:`~emulator.app.EmulatorApp` on a thread pool owned by
the handle. :meth:`EmulatorHandle.stop` closes the site and every connection (idle keep-alive
ones at once, busy ones after at most ``SHUTDOWN_TIMEOUT`` seconds), stops the loop, joins the
thread, shuts the pool down and closes the store: nothing is left running; a second ``stop`` does
nothing. :meth:`EmulatorHandle.restart` stops and serves the same configuration again on the same
host and port (so clients' auth URLs stay valid); with a ``state_file`` the cloud comes back as
it was, as a restarted ``python -m emulator --state-file ... --port ...`` does.

With an ``ssl_context`` (:func:`tls_context`: a serving certificate and key, and optionally the
CA whose client certificates it requires) the emulator serves HTTPS: ``url`` and every URL of
the catalog are ``https://``, so clients are checked for their CA file and client certificate
settings as a cloud behind TLS checks them.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
import ssl
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web

from emulator.app import EmulatorApp
from emulator.cloud import Cloud, EmulatorConfig
from emulator.clouds import write_clouds_yaml, write_env_file
from emulator.front import make_web_app

log = logging.getLogger("emulator.server")
SHUTDOWN_TIMEOUT = 5.0
START_TIMEOUT = 30.0
WORKERS = 32


@dataclass
class _Serving:
    """The running parts that :meth:`EmulatorHandle.stop` takes down, in reverse order."""

    loop: asyncio.AbstractEventLoop
    thread: threading.Thread
    runner: web.AppRunner
    executor: ThreadPoolExecutor

    def close(self) -> None:
        try:
            future = asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop)
            future.result(timeout=SHUTDOWN_TIMEOUT + 5)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(timeout=10)
            if not self.thread.is_alive():
                self.loop.close()
            self.executor.shutdown(wait=True, cancel_futures=True)


@dataclass
class EmulatorHandle:
    """A running emulator."""

    cloud: Cloud
    host: str
    port: int
    _serving: _Serving
    ssl_context: ssl.SSLContext | None = None
    _stopped: bool = field(default=False, repr=False)

    @property
    def url(self) -> str:
        scheme = "https" if self.ssl_context is not None else "http"
        return f"{scheme}://{self.host}:{self.port}"

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
        """Stop serving and release everything: connections, socket, threads, store."""
        if self._stopped:
            return
        self._stopped = True
        self.cloud.faults.release()  # a held request would keep the pool from shutting down
        try:
            self._serving.close()
        finally:
            self.cloud.close()

    def restart(self, *, timeout: float = 30.0) -> EmulatorHandle:
        """Stop, then serve ``self.cloud.config`` again on the same host and port: a new handle.

        The cloud is what the config's ``state_file`` kept (without one it is freshly seeded);
        the fault rules are those of the config, with fresh counts, as after a process restart.
        The port may be briefly taken (a client's outgoing connection can hold it): binding is
        retried until ``timeout``.
        """
        self.stop()
        deadline = time.monotonic() + timeout
        while True:
            try:
                return start(
                    host=self.host,
                    port=self.port,
                    config=self.cloud.config,
                    ssl_context=self.ssl_context,
                )
            except OSError as exc:
                if exc.errno != errno.EADDRINUSE or time.monotonic() > deadline:
                    raise
                time.sleep(0.2)


def tls_context(
    *, cert_file: Path, key_file: Path, client_ca_file: Path | None = None
) -> ssl.SSLContext:
    """A server-side TLS context: this certificate and key; with ``client_ca_file``, every
    client must show a certificate that CA signed (a cloud that asks for client certificates)."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(certfile=str(cert_file), keyfile=str(key_file))
    if client_ca_file is not None:
        context.load_verify_locations(cafile=str(client_ca_file))
        context.verify_mode = ssl.CERT_REQUIRED
    return context


async def _serve(
    *, app: web.Application, sock: socket.socket, ssl_context: ssl.SSLContext | None
) -> web.AppRunner:
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=SHUTDOWN_TIMEOUT)
    await runner.setup()
    await web.SockSite(runner, sock, ssl_context=ssl_context).start()
    return runner


def start(
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    config: EmulatorConfig | None = None,
    ssl_context: ssl.SSLContext | None = None,
) -> EmulatorHandle:
    """Start the emulator in a background thread; ``port=0`` picks a free port; with an
    ``ssl_context`` (:func:`tls_context`) it serves HTTPS."""
    cloud = Cloud(config=config or EmulatorConfig())
    try:
        sock = socket.create_server((host, port), reuse_port=False)
    except OSError:
        cloud.close()
        raise
    executor = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="emulator-worker")
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="emulator", daemon=True)
    thread.start()
    app = make_web_app(core=EmulatorApp(cloud=cloud), executor=executor)
    try:
        runner = asyncio.run_coroutine_threadsafe(
            _serve(app=app, sock=sock, ssl_context=ssl_context), loop
        ).result(timeout=START_TIMEOUT)
    except BaseException:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        loop.close()
        sock.close()
        executor.shutdown(wait=True)
        cloud.close()
        raise
    bound_port = sock.getsockname()[1]
    log.debug("emulator serving on %s:%s", host, bound_port)
    return EmulatorHandle(
        cloud=cloud,
        host=host,
        port=bound_port,
        _serving=_Serving(loop=loop, thread=thread, runner=runner, executor=executor),
        ssl_context=ssl_context,
    )

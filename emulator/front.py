"""The HTTP front: an aiohttp application that hands every request to :class:`EmulatorApp`.

One catch-all route reads the request (method, decoded path, raw query string, headers, body,
the base URL the client used) and runs :meth:`EmulatorApp.handle` in a thread pool: the core
blocks (the store lock; the latency fault sleeps), and the event loop must keep serving other
connections meanwhile. aiohttp does HTTP/1.1 keep-alive, so clients (requests sessions,
gophercloud's ``net/http``) reuse their connections as they would with a real cloud.

When the core answers ``None`` (the fault injector's "dropped connection"), the front resets
the TCP connection: ``SO_LINGER`` with a zero timeout, then ``transport.abort()``, so the client
reads a connection reset and no response at all, as when a load balancer in front of a real API
drops a backend mid-request. The handler then raises :class:`DroppedConnection` so aiohttp
writes nothing more on that connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
from concurrent.futures import Executor
from functools import partial

from aiohttp import web

from emulator.app import EmulatorApp
from emulator.web import Response


class DroppedConnection(web.HTTPException):
    """Raised after the connection was reset on purpose; aiohttp cannot send it anywhere."""

    status_code = 500


def reset_connection(request: web.Request) -> None:
    """Close the request's connection with a TCP reset (RST), sending nothing."""
    transport = request.transport
    if transport is None:
        return
    sock = transport.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    transport.abort()


def to_aiohttp(response: Response) -> web.Response:
    return web.Response(
        status=response.status,
        body=response.encoded() if response.body is not None else None,
        headers=response.headers,
    )


def make_web_app(*, core: EmulatorApp, executor: Executor) -> web.Application:
    """An aiohttp application serving every path through ``core`` on ``executor``."""

    async def serve(request: web.Request) -> web.Response:
        body = await request.read()
        call = partial(
            core.handle,
            method=request.method,
            path=request.path,
            query_string=request.rel_url.raw_query_string,
            headers=dict(request.headers),
            body=body,
            base_url=f"{request.scheme}://{request.host}",
        )
        response = await asyncio.get_running_loop().run_in_executor(executor, call)
        if response is None:
            reset_connection(request)
            raise DroppedConnection()
        return to_aiohttp(response)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", serve)
    return app

"""The aiohttp front and the server lifecycle: keep-alive, dropped connections, clean stops.

These run their own emulators (not the session one), since they stop them.
"""

from __future__ import annotations

import contextlib
import gc
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
import requests

import emulator.__main__ as emulator_main
from emulator.cloud import EmulatorConfig
from emulator.faults import FaultConfig, FaultRule
from emulator.server import EmulatorHandle, start
from tests.emulated import EmulatorAdmin, wait_until


def open_fds() -> int:
    gc.collect()  # sockets of earlier tests' clients that are only waiting for collection
    return len(os.listdir("/proc/self/fd"))


def test_start_and_stop_repeatedly_leaves_no_threads_or_sockets() -> None:
    before_threads = {t.ident for t in threading.enumerate()}
    before_fds = open_fds()
    for _ in range(4):
        handle = start()
        with requests.Session() as session:
            for _ in range(3):
                assert session.get(f"{handle.url}/admin/health", timeout=10).status_code == 200
        idle = http.client.HTTPConnection(handle.host, handle.port, timeout=10)
        idle.request("GET", "/identity/")  # an idle keep-alive connection at stop time
        idle.getresponse().read()
        port = handle.port
        handle.stop()
        idle.close()
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", port), timeout=2).close()
    leftover = [t.name for t in threading.enumerate() if t.ident not in before_threads]
    assert leftover == []  # no event loop thread, no worker thread
    assert open_fds() <= before_fds  # four servers later: no socket left open


def test_keep_alive_serves_many_requests_on_one_connection() -> None:
    handle = start()
    try:
        conn = http.client.HTTPConnection(handle.host, handle.port, timeout=10)
        conn.request("GET", "/admin/health")
        first = conn.getresponse()
        assert first.status == 200
        first.read()
        assert conn.sock is not None
        local = conn.sock.getsockname()
        for path in ("/identity/v3", "/load-balancer/", "/admin/topology"):
            conn.request("GET", path)
            response = conn.getresponse()
            response.read()
            assert response.status == 200
            assert response.getheader("X-OpenStack-Request-Id", "").startswith("req-")
            assert conn.sock.getsockname() == local  # same TCP connection
        conn.close()
    finally:
        handle.stop()


def test_dropped_connection_is_a_reset_without_a_response() -> None:
    faults = FaultConfig(rules=(FaultRule(operation="keystone.token.create", drop=True),))
    handle = start(config=EmulatorConfig(faults=faults))
    try:
        sock = socket.create_connection((handle.host, handle.port), timeout=10)
        body = json.dumps({"auth": {}}).encode()
        sock.sendall(
            b"POST /identity/v3/auth/tokens HTTP/1.1\r\nHost: x\r\n"
            b"Content-Type: application/json\r\nContent-Length: "
            + str(len(body)).encode()
            + b"\r\n\r\n"
            + body
        )
        try:
            answer: bytes | None = sock.recv(65536)
        except ConnectionResetError:
            answer = None  # a TCP reset, and no response bytes before it
        finally:
            sock.close()
        assert answer is None
        with requests.Session() as session:  # the server itself goes on serving
            assert session.get(f"{handle.url}/admin/health", timeout=10).status_code == 200
    finally:
        handle.stop()


def _held_get(handle: EmulatorHandle) -> tuple[threading.Thread, list[int]]:
    """``GET /identity/`` on a thread, once a ``hold`` rule has it (its answer's status, or
    nothing, lands in the list)."""
    answers: list[int] = []

    def get() -> None:
        with contextlib.suppress(requests.ConnectionError):  # the server stopped under it
            answers.append(requests.get(f"{handle.url}/identity/", timeout=30).status_code)

    thread = threading.Thread(target=get)
    thread.start()
    admin = EmulatorAdmin(handle)
    wait_until(lambda: admin.get("/faults/fired").get("rules[0]") == 1, timeout=30)
    return thread, answers


def test_a_held_request_goes_on_when_the_faults_are_cleared() -> None:
    faults = FaultConfig(rules=(FaultRule(operation="keystone.versions", hold=True, status=200),))
    handle = start(config=EmulatorConfig(faults=faults))
    try:
        thread, answers = _held_get(handle)
        with requests.Session() as admin:  # the server serves others meanwhile
            assert admin.get(f"{handle.url}/admin/health", timeout=10).status_code == 200
            assert answers == []  # still held: nothing has cleared the rule
            assert admin.delete(f"{handle.url}/admin/faults", timeout=10).status_code == 204
        thread.join(timeout=30)
        assert answers == [300]  # then answered as without the rule
    finally:
        handle.stop()


def test_stop_lets_a_held_request_go() -> None:
    faults = FaultConfig(rules=(FaultRule(operation="keystone.versions", hold=True, status=200),))
    handle = start(config=EmulatorConfig(faults=faults))
    thread, _answers = _held_get(handle)
    handle.stop()  # returns: the pool is not kept waiting by the held request
    thread.join(timeout=30)
    assert not thread.is_alive()


def test_head_answers_headers_without_a_body() -> None:
    handle = start()
    try:
        response = requests.head(f"{handle.url}/load-balancer/", timeout=10)
        assert response.status_code == 200
        assert response.content == b""
        assert int(response.headers["Content-Length"]) > 0
    finally:
        handle.stop()


def test_python_m_emulator_serves_and_stops_on_sigterm(tmp_path: Path) -> None:
    clouds = tmp_path / "clouds.yaml"
    proc = subprocess.Popen(
        [sys.executable, "-m", "emulator", "--clouds-yaml", str(clouds)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert first.startswith("auth_url: http://127.0.0.1:")
        auth_url = first.split(": ", 1)[1].strip()
        assert clouds.exists()  # written before the auth URL is printed
        assert requests.get(auth_url, timeout=10).json()["version"]["id"].startswith("v3")
        proc.terminate()
        assert proc.wait(timeout=15) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        if proc.stdout is not None:
            proc.stdout.close()


class _PrintedError(Exception):
    pass


def test_sigterm_is_handled_before_the_auth_url_is_printed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A parent may stop ``python -m emulator`` the moment it has read the URL (a CI run did,
    right after one GET, and got exit -15 instead of 0): the handler must be in place by then.
    Checked at the print itself, so the test does not depend on winning a race."""
    seen: list[object] = []
    handles: list[Any] = []
    real_start = emulator_main.start

    def start(**kwargs: Any) -> Any:
        handles.append(real_start(**kwargs))
        return handles[-1]

    def fake_print(*args: object, **_kwargs: object) -> None:
        if args and str(args[0]).startswith("auth_url: "):
            seen.append(signal.getsignal(signal.SIGTERM))
            raise _PrintedError

    before = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    monkeypatch.setattr(emulator_main, "start", start)
    monkeypatch.setattr(emulator_main, "print", fake_print, raising=False)
    try:
        with pytest.raises(_PrintedError):
            emulator_main.main(["--clouds-yaml", str(tmp_path / "clouds.yaml")])
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)
        for handle in handles:
            handle.stop()
    assert len(seen) == 1
    assert seen[0] not in (signal.SIG_DFL, signal.SIG_IGN, None, before[signal.SIGTERM])


def test_restart_serves_the_state_file_on_the_same_port(tmp_path: Path) -> None:
    handle = start(config=EmulatorConfig(state_file=tmp_path / "cloud.db"))
    try:
        topo = handle.topology()
        with handle.cloud.store.lock:
            lb = {"id": "lb-1", "name": "kept", "provisioning_status": "ACTIVE"}
            handle.cloud.store.put("loadbalancer", lb)
        port = handle.port
        restarted = handle.restart()
        handle.stop()  # a second stop does nothing
        assert restarted.port == port
        assert restarted.topology() == topo  # the clients' auth URL and IDs stay valid
        assert requests.get(f"{restarted.url}/admin/health", timeout=10).status_code == 200
        assert restarted.cloud.inventory()["created"] == {"loadbalancers": ["lb-1"]}
        handle = restarted
    finally:
        handle.stop()

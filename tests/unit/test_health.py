"""reconciler.controller.health: real HTTP requests to a HealthServer on a free loopback port."""

from __future__ import annotations

import logging
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from email.message import Message

import pytest

from reconciler.controller.health import HealthServer
from reconciler.controller.metrics import CONTENT_TYPE, Metrics


@dataclass
class Probes:
    live: tuple[bool, str] = (True, "ok")
    ready: tuple[bool, str] = (True, "ok")
    raise_in_ready: Exception | None = None
    ready_gate: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        self.ready_gate.set()

    def get_live(self) -> tuple[bool, str]:
        return self.live

    def get_ready(self) -> tuple[bool, str]:
        assert self.ready_gate.wait(10)
        if self.raise_in_ready is not None:
            raise self.raise_in_ready
        return self.ready


@dataclass
class Reply:
    status: int
    body: str
    headers: Message


@pytest.fixture
def probes() -> Probes:
    return Probes()


@pytest.fixture
def metrics() -> Metrics:
    return Metrics(process_metrics=False)


@pytest.fixture
def server(probes: Probes, metrics: Metrics) -> Iterator[HealthServer]:
    srv = HealthServer(
        "127.0.0.1", 0, metrics=metrics, live=probes.get_live, ready=probes.get_ready
    )
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()


def request(server: HealthServer, path: str, method: str = "GET") -> Reply:
    # the server's own loopback http:// URL
    req = urllib.request.Request(server.url + path, method=method)  # noqa: S310
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:  # noqa: S310
            return Reply(resp.status, resp.read().decode(), resp.headers)
    except urllib.error.HTTPError as err:
        with err:
            return Reply(err.code, err.read().decode(), err.headers)


def test_port_and_url(server: HealthServer) -> None:
    assert server.port > 0
    assert server.url == f"http://127.0.0.1:{server.port}"


def test_url_of_a_wildcard_host_is_loopback(probes: Probes, metrics: Metrics) -> None:
    srv = HealthServer(port=0, metrics=metrics, live=probes.get_live, ready=probes.get_ready)
    assert srv.host == "0.0.0.0"
    assert srv.url.startswith("http://127.0.0.1:")


def test_healthz_ok(server: HealthServer) -> None:
    reply = request(server, "/healthz")
    assert (reply.status, reply.body) == (200, "ok\n")
    assert reply.headers["Content-Type"] == "text/plain; charset=utf-8"


def test_healthz_failing_gives_500_and_the_reason(server: HealthServer, probes: Probes) -> None:
    probes.live = (False, "threads ended: worker-0")
    reply = request(server, "/healthz")
    assert (reply.status, reply.body) == (500, "threads ended: worker-0\n")


def test_readyz(server: HealthServer, probes: Probes) -> None:
    reply = request(server, "/readyz")
    assert (reply.status, reply.body) == (200, "ok\n")
    probes.ready = (False, "starting: waiting for the Service and Node lists")
    reply = request(server, "/readyz")
    assert reply.status == 503
    assert reply.body == "starting: waiting for the Service and Node lists\n"
    probes.ready = (True, "standby: another replica leads")
    reply = request(server, "/readyz")
    assert (reply.status, reply.body) == (200, "standby: another replica leads\n")


def test_a_raising_check_fails_the_probe(
    server: HealthServer, probes: Probes, caplog: pytest.LogCaptureFixture
) -> None:
    probes.raise_in_ready = RuntimeError("cache gone")
    reply = request(server, "/readyz")
    assert reply.status == 503
    assert reply.body == "check failed: RuntimeError: cache gone\n"
    assert "a health check raised" in caplog.text


def test_empty_reason(server: HealthServer, probes: Probes) -> None:
    probes.live = (False, "")
    assert request(server, "/healthz").body == "failed\n"
    probes.live = (True, "")
    assert request(server, "/healthz").body == "ok\n"


def test_metrics_endpoint_follows_the_metrics(server: HealthServer, metrics: Metrics) -> None:
    reply = request(server, "/metrics")
    assert reply.status == 200
    assert reply.headers["Content-Type"] == CONTENT_TYPE
    assert 'lbr_reconciles_total{result="success"} 0.0' in reply.body
    assert "lbr_leader 0.0" in reply.body
    metrics.reconcile("success", 0.2)
    metrics.set_leader(True)
    metrics.set_queue_depth_source(lambda: 4)
    body = request(server, "/metrics").body
    assert 'lbr_reconciles_total{result="success"} 1.0' in body
    assert "lbr_leader 1.0" in body
    assert "lbr_workqueue_depth 4.0" in body


def test_a_failing_render_gives_500(
    server: HealthServer, metrics: Metrics, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken() -> tuple[bytes, str]:
        raise RuntimeError("registry broken")

    monkeypatch.setattr(metrics, "render", broken)
    reply = request(server, "/metrics")
    assert (reply.status, reply.body) == (500, "registry broken\n")


@pytest.mark.parametrize("path", ["/", "/health", "/healthz/x", "/metricsz", "/readyz/"])
def test_unknown_paths_are_404(server: HealthServer, path: str) -> None:
    reply = request(server, path)
    assert reply.status == 404
    assert reply.body == f"not found: {path}\n"


def test_a_query_string_is_ignored(server: HealthServer) -> None:
    assert request(server, "/healthz?verbose=1").status == 200


@pytest.mark.parametrize("path", ["/healthz", "/readyz", "/metrics", "/nope"])
def test_head_answers_like_get_without_a_body(server: HealthServer, path: str) -> None:
    get = request(server, path)
    head = request(server, path, method="HEAD")
    assert head.status == get.status
    assert head.body == ""
    assert head.headers["Content-Type"] == get.headers["Content-Type"]
    if path != "/metrics":  # the metrics body may grow between two scrapes
        assert int(head.headers["Content-Length"]) == len(get.body.encode())


def test_other_methods_are_not_implemented(server: HealthServer) -> None:
    assert request(server, "/healthz", method="POST").status == 501


def test_a_slow_probe_does_not_block_others(server: HealthServer, probes: Probes) -> None:
    probes.ready_gate.clear()
    slow: list[Reply] = []
    t = threading.Thread(target=lambda: slow.append(request(server, "/readyz")))
    t.start()
    try:
        assert request(server, "/healthz").status == 200
        assert request(server, "/metrics").status == 200
    finally:
        probes.ready_gate.set()
        t.join(10)
    assert slow[0].status == 200


def test_request_log_goes_to_logging_at_debug(
    server: HealthServer, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    with caplog.at_level(logging.DEBUG, logger="reconciler.controller.health"):
        request(server, "/healthz")
        request(server, "/nope")
    lines = [r for r in caplog.records if r.name == "reconciler.controller.health"]
    assert any('"GET /healthz HTTP/1.1" 200' in r.getMessage() for r in lines)
    assert any('"GET /nope HTTP/1.1" 404' in r.getMessage() for r in lines)
    assert all(r.levelno == logging.DEBUG for r in lines)
    assert all(r.client == "127.0.0.1" for r in lines)  # type: ignore[attr-defined]
    assert capsys.readouterr().err == ""


def test_stop_closes_the_port(probes: Probes, metrics: Metrics) -> None:
    srv = HealthServer(
        "127.0.0.1", 0, metrics=metrics, live=probes.get_live, ready=probes.get_ready
    )
    srv.start()
    url = srv.url
    assert request(srv, "/healthz").status == 200
    srv.stop()
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(url + "/healthz", timeout=2)  # noqa: S310 (loopback http)
    srv.stop()  # a second stop is a no-op


def test_start_twice_is_an_error(server: HealthServer) -> None:
    with pytest.raises(RuntimeError, match="already started"):
        server.start()


def test_context_manager_and_restart(probes: Probes, metrics: Metrics) -> None:
    srv = HealthServer(
        "127.0.0.1", 0, metrics=metrics, live=probes.get_live, ready=probes.get_ready
    )
    with srv:
        assert request(srv, "/healthz").status == 200
    with srv:  # stopped servers can start again
        assert request(srv, "/readyz").status == 200


def test_an_address_in_use_fails_at_start(server: HealthServer, probes: Probes) -> None:
    other = HealthServer(
        "127.0.0.1",
        server.port,
        metrics=Metrics(process_metrics=False),
        live=probes.get_live,
        ready=probes.get_ready,
    )
    with pytest.raises(OSError, match="in use"):
        other.start()

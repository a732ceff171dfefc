"""The transport-independent core, called directly: no server, no socket."""

from __future__ import annotations

import json

from emulator.app import EmulatorApp
from emulator.cloud import Cloud
from emulator.faults import FaultConfig, FaultRule


def test_handle_answers_with_request_id_and_json(cloud: Cloud) -> None:
    response = EmulatorApp(cloud=cloud).handle(
        method="GET",
        path="/identity/v3",
        query_string="",
        headers={"Accept": "application/json"},
        body=b"",
        base_url="http://emu:1",
    )
    assert response is not None
    assert response.status == 200
    assert response.headers["X-OpenStack-Request-Id"].startswith("req-")
    assert response.headers["Content-Type"] == "application/json"
    links = json.loads(response.encoded())["version"]["links"]
    assert links[0]["href"].startswith("http://emu:1/identity/v3")


def test_unknown_prefix_is_404_and_a_missing_token_401(cloud: Cloud) -> None:
    app = EmulatorApp(cloud=cloud)
    for path, status in (("/nowhere", 404), ("/networking/v2.0/networks", 401)):
        response = app.handle(
            method="GET", path=path, query_string="", headers={}, body=b"", base_url="http://e"
        )
        assert response is not None
        assert response.status == status


def test_drop_fault_answers_none(cloud: Cloud) -> None:
    cloud.faults.configure(
        FaultConfig(rules=(FaultRule(operation="keystone.versions", drop=True, count=1),))
    )
    app = EmulatorApp(cloud=cloud)
    answers = [
        app.handle(
            method="GET", path="/identity/", query_string="", headers={}, body=b"", base_url="x"
        )
        for _ in range(2)
    ]
    assert answers[0] is None  # drop the connection
    assert answers[1] is not None  # count=1: once only
    assert answers[1].status == 300

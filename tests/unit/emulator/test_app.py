"""The transport-independent core, called directly: no server, no socket."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from emulator.__main__ import main as emulator_main
from emulator.app import EmulatorApp, made
from emulator.cloud import Cloud
from emulator.context import AuthContext
from emulator.faults import FaultConfig, FaultRule, LbFault
from emulator.request_log import RequestLog
from emulator.timing import ManualClock
from emulator.web import Response


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


def test_a_fault_rule_that_names_no_operation_is_refused(cloud: Cloud) -> None:
    """``octavia.loadbalancer.get`` is not an operation (``show`` is): a hold that never fired
    let a person's refresh run free, and the test that needed it failed by timing."""
    app = EmulatorApp(cloud=cloud)

    def post(path: str, body: object) -> tuple[int, str]:
        response = app.handle(
            method="POST" if path.endswith("rules") else "PUT",
            path=path,
            query_string="",
            headers={"Content-Type": "application/json"},
            body=json.dumps(body).encode(),
            base_url="http://e",
        )
        assert response is not None
        return response.status, response.encoded().decode()

    status, text = post("/admin/faults/rules", {"operation": "octavia.loadbalancer.get"})
    assert status == 400
    assert "'octavia.loadbalancer.get' matches no operation" in text
    assert "octavia.loadbalancer.show" in text  # what it could have been
    status, _ = post("/admin/faults", {"rules": [{"operation": "neutron.floatingip.*"}]})
    assert status == 200  # a glob that matches some is taken
    status, text = post("/admin/faults", {"rules": [{"operation": "nova.server.show"}]})
    assert status == 400
    assert "no such service" in text
    assert cloud.faults.config.rules == (FaultRule(operation="neutron.floatingip.*"),)
    bad = FaultConfig(rules=(FaultRule(operation="octavia.lb.show"),))
    cloud.faults.configure(bad)  # as a faults file at start gives it
    with pytest.raises(ValueError, match=r"'octavia\.lb\.show' matches no operation"):
        EmulatorApp(cloud=cloud)


def test_a_faults_file_naming_no_operation_stops_the_start(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    faults = tmp_path / "faults.yaml"
    faults.write_text('rules:\n  - {operation: "octavia.loadbalancer.get", hold: true}\n')
    assert emulator_main(["--faults", str(faults), "--port", "0"]) == 2
    assert "'octavia.loadbalancer.get' matches no operation" in capsys.readouterr().err


def _force(cloud: Cloud, lb_id: str, body: dict[str, str]) -> int:
    """``PUT /admin/loadbalancers/{id}/status``; the answer's status code."""
    response = EmulatorApp(cloud=cloud).handle(
        method="PUT",
        path=f"/admin/loadbalancers/{lb_id}/status",
        query_string="",
        headers={"Content-Type": "application/json"},
        body=json.dumps(body).encode(),
        base_url="http://e",
    )
    assert response is not None
    return response.status


def test_forcing_a_stuck_lb_active_settles_its_pending_children(
    cloud: Cloud, clock: ManualClock, ctx: AuthContext, topo: dict[str, str]
) -> None:
    """What an operator does in Octavia's database when an operation never finishes."""
    lb = cloud.octavia.create_loadbalancer(ctx, {"name": "lb", "vip_subnet_id": topo["subnet_id"]})
    clock.advance(5)
    cloud.advance()
    cloud.faults.configure(FaultConfig(loadbalancers=(LbFault(outcome="stuck", phase="update"),)))
    listener = cloud.octavia.create_listener(
        ctx, {"loadbalancer_id": lb["id"], "protocol": "TCP", "protocol_port": 80}
    )
    clock.advance(3600)
    cloud.advance()
    assert cloud.octavia.get("listener", listener["id"], ctx)["provisioning_status"] == (
        "PENDING_CREATE"
    )
    assert _force(cloud, lb["id"], {"provisioning_status": "ACTIVE"}) == 200
    shown = cloud.octavia.get("loadbalancer", lb["id"], ctx)
    assert (shown["provisioning_status"], shown["operating_status"]) == ("ACTIVE", "ONLINE")
    assert cloud.octavia.get("listener", listener["id"], ctx)["provisioning_status"] == "ACTIVE"
    cloud.octavia.delete_loadbalancer(ctx, lb["id"], cascade=True)  # mutable again


def test_forcing_an_errored_lb_active_with_all_children(
    cloud: Cloud, clock: ManualClock, ctx: AuthContext, topo: dict[str, str]
) -> None:
    """The database fix for a failed flow: ERROR children are settled only when asked."""
    lb = cloud.octavia.create_loadbalancer(ctx, {"name": "lb", "vip_subnet_id": topo["subnet_id"]})
    clock.advance(5)
    cloud.advance()
    # a failed listener create (the listener goes ERROR, the LB ACTIVE), then a failed LB update
    fault = LbFault(outcome="error", phase="update", count=2)
    cloud.faults.configure(FaultConfig(loadbalancers=(fault,)))
    listener = cloud.octavia.create_listener(
        ctx, {"loadbalancer_id": lb["id"], "protocol": "TCP", "protocol_port": 80}
    )
    clock.advance(5)
    cloud.advance()
    cloud.octavia.update_loadbalancer(ctx, lb["id"], {"name": "renamed"})
    clock.advance(5)
    cloud.advance()

    def statuses() -> tuple[str, str]:
        return (
            cloud.octavia.get("loadbalancer", lb["id"], ctx)["provisioning_status"],
            cloud.octavia.get("listener", listener["id"], ctx)["provisioning_status"],
        )

    assert statuses() == ("ERROR", "ERROR")
    assert _force(cloud, lb["id"], {"provisioning_status": "ACTIVE"}) == 200
    assert statuses() == ("ACTIVE", "ERROR")  # only PENDING children follow by default
    assert _force(cloud, lb["id"], {"provisioning_status": "ACTIVE", "children": "all"}) == 200
    assert statuses() == ("ACTIVE", "ACTIVE")
    cloud.octavia.delete_loadbalancer(ctx, lb["id"], cascade=True)


def test_forcing_a_stuck_delete_to_deleted_removes_the_lb(
    cloud: Cloud, clock: ManualClock, ctx: AuthContext, topo: dict[str, str]
) -> None:
    lb = cloud.octavia.create_loadbalancer(ctx, {"name": "lb", "vip_subnet_id": topo["subnet_id"]})
    clock.advance(5)
    cloud.advance()
    cloud.octavia.create_listener(
        ctx, {"loadbalancer_id": lb["id"], "protocol": "TCP", "protocol_port": 80}
    )
    clock.advance(5)
    cloud.advance()
    cloud.faults.configure(FaultConfig(loadbalancers=(LbFault(outcome="stuck", phase="delete"),)))
    cloud.octavia.delete_loadbalancer(ctx, lb["id"], cascade=True)
    clock.advance(3600)
    cloud.advance()
    assert cloud.store.get("loadbalancer", lb["id"])["provisioning_status"] == "PENDING_DELETE"
    assert _force(cloud, lb["id"], {"provisioning_status": "DELETED"}) == 204
    assert cloud.store.get("loadbalancer", lb["id"]) is None
    assert cloud.store.all("listener") == []
    assert lb["vip_port_id"] not in {p["id"] for p in cloud.store.all("port")}


def test_the_request_log_names_what_a_create_made_even_when_its_answer_is_lost() -> None:
    """The chaos run's evidence for a cloud orphan quotes the lines naming its ID: a POST's
    path has none, so the log line carries the new object's (also for a lost answer)."""
    assert made(Response(201, {"floatingip": {"id": "f-1", "port_id": None}})) == " id=f-1"
    assert made(Response(202, {"loadbalancer": {"id": "lb-1"}})) == " id=lb-1"
    assert made(Response(200, {"floatingips": [{"id": "f-1"}]})) == ""
    assert made(Response(409, {"NeutronError": {"message": "x"}})) == ""
    assert made(Response(204)) == ""


def test_a_lost_answer_is_logged_with_the_id_it_would_have_carried(
    cloud: Cloud, caplog: pytest.LogCaptureFixture
) -> None:
    cloud.faults.configure(
        FaultConfig(
            rules=(FaultRule(operation="keystone.versions", drop=True, after=True, count=1),)
        )
    )
    app = EmulatorApp(cloud=cloud)
    with caplog.at_level(logging.INFO, logger="emulator"):
        answer = app.handle(
            method="GET", path="/identity/", query_string="", headers={}, body=b"", base_url="x"
        )
    assert answer is None  # carried out, the connection dropped
    assert "GET /identity/ -> dropped after 300" in caplog.text


def test_the_request_log_lists_cloud_requests_in_order_and_not_admin_ones(
    cloud: Cloud, clock: ManualClock
) -> None:
    app = EmulatorApp(cloud=cloud)

    def call(method: str, path: str, query: str = "") -> Response | None:
        return app.handle(
            method=method, path=path, query_string=query, headers={}, body=b"", base_url="http://e"
        )

    start = json.loads(_admin_body(call("GET", "/admin/requests")))["next"]
    call("GET", "/identity/v3")
    clock.advance(1.5)
    call("get", "/load-balancer/v2/lbaas/loadbalancers", "name=x")  # 401: logged all the same
    call("GET", "/admin/inventory")  # the emulator's own: not logged
    cloud.faults.configure(
        FaultConfig(rules=(FaultRule(operation="keystone.versions", drop=True, count=1),))
    )
    call("GET", "/identity/")  # dropped: no status
    log = json.loads(_admin_body(call("GET", "/admin/requests", f"since={start}")))
    rows = [(r["method"], r["path"], r["query"], r["status"]) for r in log["requests"]]
    assert rows == [
        ("GET", "/identity/v3", "", 200),
        ("GET", "/load-balancer/v2/lbaas/loadbalancers", "name=x", 401),
        ("GET", "/identity/", "", None),
    ]
    seqs = [r["seq"] for r in log["requests"]]
    assert seqs == [start + 1, start + 2, start + 3]
    assert log["next"] == start + 3
    assert log["requests"][0]["time"] == "2023-11-14T22:13:20.000000Z"  # the cloud's clock
    assert log["requests"][1]["time"] == "2023-11-14T22:13:21.500000Z"
    later = json.loads(_admin_body(call("GET", "/admin/requests", f"since={start + 2}")))
    assert [r["seq"] for r in later["requests"]] == [start + 3]
    bad = call("GET", "/admin/requests", "since=x")
    assert bad is not None
    assert bad.status == 400
    cleared = call("DELETE", "/admin/requests")
    assert cleared is not None
    assert cleared.status == 204
    after = json.loads(_admin_body(call("GET", "/admin/requests")))
    assert after == {"requests": [], "next": start + 3}


def test_the_request_log_keeps_the_last_entries_only() -> None:
    log = RequestLog(limit=2)
    for i in range(3):
        log.add(at=0.0, method="get", path=f"/p{i}", query="", status=200)
    assert [r["path"] for r in log.since()["requests"]] == ["/p1", "/p2"]
    assert log.since()["next"] == 3


def _admin_body(response: Response | None) -> bytes:
    assert response is not None
    assert response.status == 200, response
    return response.encoded()

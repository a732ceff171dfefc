"""Drift, with the real engine against the emulator: a property changed behind Pulumi's back.

``check_drift`` (``--drift=report``) runs ``pulumi refresh --preview-only``: it names what
differs (resource, property, the value in the state and the one in the cloud) and changes
nothing: the backend's files are the same bytes afterwards (no checkpoint, no history entry, no
backup) and so is the cloud. ``refresh`` followed by ``ensure`` (``--drift=repair``) puts the
cloud back, after which the check finds nothing.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from reconciler.engine.results import DriftedResource, DriftReport, PropertyDrift
from tests.builders import stored_service
from tests.emulated import connect, wait_until
from tests.integration.engine.conftest import Env, spec_for

# each test starts real pulumi runs or servers for many seconds: not in make test-fast
pytestmark = pytest.mark.slow


def files(root: Path) -> dict[str, str]:
    """Every file under ``root``, by path, as a digest of its bytes."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def settled(conn: Any, lb_id: str) -> dict[str, Any]:
    """The load balancer once it is ACTIVE again (a change by hand makes it PENDING_UPDATE)."""

    def active() -> Any:
        lb = conn.load_balancer.get_load_balancer(lb_id)
        return lb if lb.provisioning_status == "ACTIVE" else None

    return dict(wait_until(active))


def by_name(report: DriftReport) -> dict[str, DriftedResource]:
    return {r.name: r for r in report.resources}


def test_report_names_the_drift_and_changes_nothing_repair_restores(env: Env) -> None:
    config = env.config()
    web = stored_service("web")
    spec = spec_for(web, config)
    ss = env.engine(config).stack(service=spec.service)
    assert ss.check_drift() == DriftReport()  # no stack yet: nothing to compare
    ensured = ss.ensure(spec)
    lb_id = ensured.lb_id
    try:
        assert ss.check_drift() == DriftReport()  # just made: the cloud matches

        conn = connect(env.topo)
        (listener,) = conn.load_balancer.listeners(loadbalancer_id=lb_id)
        assert listener.connection_limit == -1
        description = settled(conn, lb_id)["description"]
        conn.load_balancer.update_listener(listener.id, connection_limit=7)  # by hand
        settled(conn, lb_id)
        conn.load_balancer.update_load_balancer(lb_id, description="changed by hand")
        settled(conn, lb_id)

        backend = env.state_dir / "backend"
        state_before, cloud_before = files(backend), env.cloud.inventory()
        report = ss.check_drift()
        assert files(backend) == state_before  # byte for byte: no checkpoint, history, backup
        assert env.cloud.inventory() == cloud_before  # nothing written to the cloud

        drifted = by_name(report)
        assert set(drifted) == {"listener-tcp-80", "lb"}, report
        assert drifted["listener-tcp-80"] == DriftedResource(
            name="listener-tcp-80",
            type="openstack:loadbalancer/listener:Listener",
            cloud_id=listener.id,
            properties=(PropertyDrift("connectionLimit", state=-1, cloud=7),),
        )
        assert drifted["listener-tcp-80"].kind == "Listener"
        assert drifted["lb"].properties == (
            PropertyDrift("description", state=description, cloud="changed by hand"),
        )
        assert drifted["lb"].cloud_id == lb_id
        assert ss.check_drift() == report  # still there: nothing was repaired
        assert files(backend) == state_before

        # repair mode: refresh, then the ensure that follows runs up and puts the cloud back
        changes = ss.refresh()
        assert changes.get("update") == 2, changes
        repaired = ss.ensure(spec)
        assert repaired.changed
        (listener,) = conn.load_balancer.listeners(loadbalancer_id=lb_id)
        assert listener.connection_limit == -1
        assert settled(conn, lb_id)["description"] == description
        assert ss.check_drift() == DriftReport()
    finally:
        ss.delete()


def test_report_names_a_listener_deleted_and_a_member_removed_by_hand(env: Env) -> None:
    config = env.config()
    web = stored_service("gone")
    spec = spec_for(web, config)
    ss = env.engine(config).stack(service=spec.service)
    lb_id = ss.ensure(spec).lb_id
    try:
        conn = connect(env.topo)
        (pool,) = conn.load_balancer.pools(loadbalancer_id=lb_id)
        members = sorted(conn.load_balancer.members(pool.id), key=lambda m: m.address)
        conn.load_balancer.delete_member(members[0].id, pool.id)
        settled(conn, lb_id)
        (listener,) = conn.load_balancer.listeners(loadbalancer_id=lb_id)
        conn.load_balancer.delete_listener(listener.id)
        settled(conn, lb_id)

        backend = env.state_dir / "backend"
        state_before = files(backend)
        drifted = by_name(ss.check_drift())
        assert files(backend) == state_before
        assert drifted["listener-tcp-80"].deleted
        assert drifted["listener-tcp-80"].cloud_id == listener.id
        assert drifted["listener-tcp-80"].properties == ()
        (change,) = drifted["members-tcp-80"].properties
        assert change.name == "members"
        assert [m["address"] for m in change.state] == ["10.0.0.11", "10.0.0.12"]
        assert [m["address"] for m in change.cloud] == ["10.0.0.12"]
        assert all("__defaults" not in m for m in change.state + change.cloud)
        assert conn.load_balancer.find_listener(listener.id) is None  # not put back
    finally:
        ss.delete()

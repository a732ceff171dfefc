"""Faults, list queries, persistence and configuration: the parts under every service."""

from __future__ import annotations

from pathlib import Path

import pytest

from emulator.cloud import Cloud, EmulatorConfig
from emulator.context import AuthContext
from emulator.faults import FaultConfig, FaultInjector, FaultRule
from emulator.query import paginate, select_fields
from emulator.store import Store
from emulator.timing import TimingProfile
from emulator.topology import load_topology


def draws(seed: int) -> list[bool]:
    injector = FaultInjector(FaultConfig(seed=seed, rules=(FaultRule(operation="a.*", rate=0.5),)))
    return [injector.decide("a.b").rule is not None for _ in range(40)]


def test_faults_are_deterministic_with_a_seed() -> None:
    assert draws(7) == draws(7)
    assert draws(7) != draws(8)
    assert 5 < sum(draws(7)) < 35


def test_fault_count_latency_and_matching() -> None:
    injector = FaultInjector(
        FaultConfig(
            rules=(
                FaultRule(operation="octavia.*", latency=0.25, status=200),
                FaultRule(operation="octavia.loadbalancer.create", status=503, count=1),
            )
        )
    )
    first = injector.decide("octavia.loadbalancer.create")
    assert (first.latency, first.rule is not None and first.rule.status) == (0.25, 503)
    assert injector.decide("octavia.loadbalancer.create").rule is None
    assert injector.decide("neutron.port.list").latency == 0.0
    assert injector.fired() == {"rules[0]": 2, "rules[1]": 1}


def test_invalid_fault_config_names_the_field() -> None:
    with pytest.raises(ValueError, match=r"'rate' must be within 0\.\.1"):
        FaultConfig.from_dict({"rules": [{"rate": 2}]})
    with pytest.raises(ValueError, match="unknown fault config keys"):
        FaultConfig.from_dict({"rulez": []})


def test_pagination_links_and_fields() -> None:
    records = [{"id": str(i), "name": f"n{i}"} for i in range(5)]
    page, links = paginate(records, {"limit": ["2"]}, collection="x", url="http://h/x")
    assert [r["id"] for r in page] == ["0", "1"]
    assert links[0]["rel"] == "next"
    assert "marker=1" in links[0]["href"]
    page, links = paginate(records, {"limit": ["2"], "marker": ["3"]}, collection="x", url="u")
    assert [r["id"] for r in page] == ["4"]
    assert [link["rel"] for link in links] == ["previous"]
    assert select_fields(records[0], {"fields": ["name"]}) == {"name": "n0"}


def test_pagination_max_limit_caps_pages_and_pages_a_list_asked_without_limit() -> None:
    records = [{"id": str(i)} for i in range(5)]
    page, links = paginate(records, {}, collection="x", url="u", max_limit=2)
    assert [r["id"] for r in page] == ["0", "1"]
    assert [link["rel"] for link in links] == ["next"]
    page, _links = paginate(records, {"limit": ["4"]}, collection="x", url="u", max_limit=2)
    assert len(page) == 2
    page, links = paginate(records, {"marker": ["3"]}, collection="x", url="u", max_limit=2)
    assert ([r["id"] for r in page], [link["rel"] for link in links]) == (["4"], ["previous"])
    assert paginate(records, {}, collection="x", url="u") == (records, [])
    with pytest.raises(ValueError, match="pagination_max_limit"):
        EmulatorConfig(pagination_max_limit=0)


def test_a_fault_rule_can_hold_for_one_catalog_interface_only() -> None:
    injector = FaultInjector(
        FaultConfig(rules=(FaultRule(operation="octavia.*", interface="public", status=403),))
    )
    assert injector.decide("octavia.loadbalancer.list").rule is not None
    assert injector.decide("octavia.loadbalancer.list", interface="internal").rule is None


def test_state_file_survives_restart(tmp_path: Path) -> None:
    config = EmulatorConfig(state_file=tmp_path / "state.db")
    first = Cloud(config=config)
    project = first.keystone.project_by_name("demo")["id"]
    ctx = AuthContext(user_id="u", project_id=project, roles=("member",))
    net = first.neutron.create_network(ctx, {"name": "kept"})
    first.close()
    second = Cloud(config=config)
    assert second.neutron.get("network", net["id"], ctx)["name"] == "kept"
    assert second.inventory()["created"] == {"networks": [net["id"]]}
    second.close()


def test_topology_file_replaces_networks(tmp_path: Path) -> None:
    path = tmp_path / "topo.yaml"
    path.write_text(
        "networks:\n  - name: ext\n    project: admin\n    external: true\n"
        "    subnets: [{name: ext-sub, cidr: 203.0.113.0/24}]\n"
    )
    cloud = Cloud(config=EmulatorConfig(topology=load_topology(path=path)))
    names = [n["name"] for n in cloud.store.all("network")]
    assert names == ["ext"]
    cloud.close()
    path.write_text("networks:\n  - name: bad\n    subnets: [{cidr: nope}]\n")
    with pytest.raises(ValueError, match=r"networks\[0\].subnets\[0\].cidr"):
        load_topology(path=path)


def test_unknown_timing_profile_lists_choices() -> None:
    with pytest.raises(ValueError, match="cloudlike, instant"):
        TimingProfile.named("fast")


def test_store_reads_copy_only_the_records_asked_for() -> None:
    """``Store.all(kind, where)`` and ``count``: the emulator looks records up on every request
    (due operations, a load balancer's children, quotas), so a lookup copies only what it
    returns, and what it returns is still a copy the caller may change."""
    store = Store()
    for i in range(5):
        store.put("member", {"id": f"m{i}", "_pool_id": "p1" if i % 2 else "p0", "weight": 1})
    seen: list[str] = []

    def in_p1(record: dict[str, object]) -> bool:
        seen.append(str(record["id"]))
        return record["_pool_id"] == "p1"

    found = store.all("member", in_p1)
    assert [r["id"] for r in found] == ["m1", "m3"]
    assert seen == ["m0", "m1", "m2", "m3", "m4"]  # oldest first, each looked at once
    found[0]["weight"] = 9
    assert store.get("member", "m1") == {"id": "m1", "_pool_id": "p1", "weight": 1}
    assert store.count("member", lambda r: r["_pool_id"] == "p0") == 3
    assert [r["id"] for r in store.all("member")] == ["m0", "m1", "m2", "m3", "m4"]

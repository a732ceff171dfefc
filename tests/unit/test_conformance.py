"""The conformance tier's pure parts: the workspace it writes and how it counts results.

The tier itself (``make conformance``) runs tempest in its own virtualenv; these tests hold
what it hands tempest (accounts that the emulator accepts, a tempest.conf with the documented
workarounds) and what it makes of the answers (a class whose setup failed counts each of its
tests, the gate looks at the gated modules only).
"""

from __future__ import annotations

import configparser
import re
from pathlib import Path

import pytest
import yaml

from conformance import results, workspace
from conformance.__main__ import selection_regex
from emulator.cloud import Cloud, EmulatorConfig
from emulator.topology import load_topology

PKG = results.PACKAGE
POOL_TEST = f"{PKG}.test_pool.PoolAPITest.test_pool_create[id-1,smoke]"
POOL_TEST2 = f"{PKG}.test_pool.PoolAPITest.test_pool_list[id-2]"
MEMBER_TEST = f"{PKG}.test_member.MemberAPITest1.test_member_create[id-3]"
AZ_TEST = f"{PKG}.test_availability_zone.AvailabilityZoneAPITest.test_az_show[id-4]"


@pytest.mark.parametrize("mode", workspace.MODES)
def test_every_account_logs_in_to_its_own_project_with_its_roles(mode: str, tmp_path: Path) -> None:
    path = tmp_path / "topology.yaml"
    path.write_text(yaml.safe_dump(workspace.topology(mode, workers=2)))
    cloud = Cloud(config=EmulatorConfig(topology=load_topology(path=path)))
    try:
        entries = workspace.accounts_yaml(mode, workers=2)
        assert len(entries) == 3 * len(workspace.personas(mode))  # workers + 1 sets
        assert len({e["project_name"] for e in entries}) == len(entries)
        assert all(e["roles"] == ["member"] for e in entries[:3])  # primary first
        for entry in entries:
            token = cloud.keystone.authenticate(
                {
                    "auth": {
                        "identity": {
                            "methods": ["password"],
                            "password": {
                                "user": {
                                    "name": entry["username"],
                                    "password": entry["password"],
                                    "domain": {"name": entry["user_domain_name"]},
                                }
                            },
                        },
                        "scope": {
                            "project": {
                                "name": entry["project_name"],
                                "domain": {"name": entry["project_domain_name"]},
                            }
                        },
                    }
                }
            )
            assert cloud.keystone.roles(token) == entry["roles"]
            assert ("admin" in entry.get("types", [])) == (entry["username"].endswith("-admin"))
    finally:
        cloud.close()


def test_advanced_mode_has_octavias_role_names() -> None:
    roles = {p.name: p.roles for p in workspace.personas("advanced")}
    assert roles["lb_admin"] == ("load-balancer_admin",)
    assert roles["lb_member2"] == ("load-balancer_member", "member")
    assert roles["lb_global_observer"] == ("load-balancer_global_observer", "reader")
    with pytest.raises(ValueError, match="owner_or_admin"):
        workspace.personas("owner_or_admin")


def test_tempest_conf_points_at_the_emulator_with_the_documented_workarounds() -> None:
    cloud = workspace.Cloud(
        auth_url="http://127.0.0.1:5/identity/v3",
        region="RegionOne",
        public_network_id="net-1",
        providers={"amphora": "The Octavia Amphora driver.", "ovn": "Octavia OVN driver."},
    )
    text = workspace.tempest_conf(
        mode="advanced", cloud=cloud, accounts_file="/w/a.yaml", lock_path="/w/l", log_file="/w/t"
    )
    conf = configparser.ConfigParser(interpolation=None)
    conf.optionxform = str  # type: ignore[assignment,method-assign]
    conf.read_string(text)
    assert conf["auth"]["use_dynamic_credentials"] == "false"
    assert conf["auth"]["test_accounts_file"] == "/w/a.yaml"
    assert conf["identity"]["uri_v3"] == cloud.auth_url
    lb = conf["load_balancer"]
    assert (lb["RBAC_test_type"], lb["provider"]) == ("advanced", "amphora")
    assert lb["log_user_roles"] == "false"
    assert lb["default_ipv6_subnetpool"] == ""
    assert "test_network_override" not in lb
    assert "test_subnet_override" not in lb
    assert lb["enabled_provider_drivers"] == (
        "amphora:The Octavia Amphora driver.,ovn:Octavia OVN driver."
    )
    assert conf["network"]["public_network_id"] == "net-1"


def test_the_selection_takes_modules_and_a_filter() -> None:
    every = re.compile(selection_regex(None, None))
    assert every.search(POOL_TEST)
    assert every.search(MEMBER_TEST)
    assert not every.search("tempest.api.network.test_networks.NetworksTest.test_list")
    pools = re.compile(selection_regex(["pool"], None))
    assert pools.search(POOL_TEST)
    assert not pools.search(MEMBER_TEST)
    one = re.compile(selection_regex(["pool", "member"], r"test_pool_create\["))
    assert one.search(POOL_TEST)
    assert not one.search(POOL_TEST2)
    assert not one.search(MEMBER_TEST)


def test_module_of_a_test_and_of_a_class_hook() -> None:
    assert results.module_of(POOL_TEST) == "pool"
    assert results.module_of(f"setUpClass ({PKG}.test_member.MemberAPITest1)") == "member"
    assert results.base_id(POOL_TEST) == f"{PKG}.test_pool.PoolAPITest.test_pool_create"


def test_a_failed_class_setup_fails_each_of_its_tests_and_a_skipped_one_skips_them() -> None:
    listed = [POOL_TEST, POOL_TEST2, MEMBER_TEST, AZ_TEST]
    trace = (
        "Traceback (most recent call last):\n  File x\n"
        "tempest.lib.exceptions.BadRequest: Bad request\n"
        "Details: {'faultstring': 'Pool 0b5f0b5e-1b8a-4b52-9a53-0d1f0c1e5a11 not found.'}"
    )
    outcomes = [
        results.Outcome(POOL_TEST.replace(",smoke", ""), "success"),
        results.Outcome(POOL_TEST2, "fail", traceback=trace),
        results.Outcome(f"setUpClass ({PKG}.test_member.MemberAPITest1)", "fail", traceback=trace),
        results.Outcome(
            f"setUpClass ({PKG}.test_availability_zone.AvailabilityZoneAPITest)", "skip"
        ),
        results.Outcome(f"tearDownClass ({PKG}.test_pool.PoolAPITest)", "fail", traceback=trace),
    ]
    report = results.build_report("none", listed=listed, outcomes=outcomes)
    counts = {n: (c.passed, c.failed, c.skipped) for n, c in report.modules.items() if c.total}
    assert counts == {"pool": (1, 1, 0), "member": (0, 1, 0), "availability_zone": (0, 0, 1)}
    cause = (
        "tempest.lib.exceptions.BadRequest: Bad request "
        "Details: {'faultstring': 'Pool <uuid> not found.'}"
    )
    assert report.failures[POOL_TEST2] == cause
    assert report.failures[MEMBER_TEST] == f"class setup failed: {cause}"
    assert report.teardown_errors == {f"{PKG}.test_pool.PoolAPITest": cause}
    assert results.top_causes(report) == [(cause, 1), (f"class setup failed: {cause}", 1)]
    assert report.gate_failures(["member", "healthmonitor"]) == {"member": 1}
    assert report.gate_failures(["availability_zone"]) == {}


def test_a_test_that_never_reported_is_failed() -> None:
    report = results.build_report("none", listed=[POOL_TEST], outcomes=[])
    assert report.modules["pool"].failed == 1
    assert "no result" in report.failures[POOL_TEST]


def test_the_table_marks_gated_modules_and_adds_up() -> None:
    report = results.build_report(
        "none",
        listed=[POOL_TEST, POOL_TEST2],
        outcomes=[results.Outcome(POOL_TEST, "success"), results.Outcome(POOL_TEST2, "skip")],
    )
    text = results.table([report], gated={"none": ("pool",)})
    assert "| pool | 1* | 0 | 1 |" in text.splitlines()
    assert text.splitlines()[-1] == "| **all 2** | **1** | **0** | **1** |"
    assert "| member |" not in text  # a module with no tests selected has no row

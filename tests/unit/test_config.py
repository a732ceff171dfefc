"""cloud.conf: gcfg syntax, OCCM defaults, warnings for unknown keys, errors for bad values."""

from __future__ import annotations

from datetime import timedelta

import pytest

from reconciler.config import (
    CloudConfig,
    ConfigResult,
    LoadBalancerConfig,
    Secret,
    default_config,
    parse_cloud_conf,
    parse_go_duration,
)

NET = "a57af0a0-da92-49be-a98a-345ceca004b3"
SUBNET = "fa6a4e6c-6ae4-4dde-ae86-3e2f452c1f03"

# The example from the OCCM docs (seed 003), verbatim.
OCCM_EXAMPLE = """
[Global]
auth-url="https://someurl"
domain-name="mydomain"
tenant-name="mytenant"
username="myuser"
password="mypassword"
[LoadBalancer]
floating-network-id="a57af0a0-da92-49be-a98a-345ceca004b3"
floating-subnet-id="a02eb6c3-fc69-46ae-a3fe-fb43c1563cbc"
subnet-id="fa6a4e6c-6ae4-4dde-ae86-3e2f452c1f03"
create-monitor=true
monitor-delay=60s
monitor-timeout=30s
monitor-max-retries=1
monitor-max-retries-down=3
[LoadBalancerClass "internetFacing"]
floating-network-id="c57af0a0-da92-49be-a98a-345ceca004b3"
floating-subnet-id="f90d2440-d3c6-417a-a696-04e55eeb9279"
[LoadBalancerClass "dmz"]
floating-subnet-id="a374bed4-e920-4c40-b646-2d8927f7f67b"
[LoadBalancerClass "office"]
floating-subnet-id="b374bed4-e920-4c40-b646-2d8927f7f67b"
"""


def ok(text: str) -> CloudConfig:
    result = parse_cloud_conf(text=text)
    assert result.errors == (), [str(e) for e in result.errors]
    assert result.config is not None
    return result.config


def failed(text: str) -> ConfigResult:
    result = parse_cloud_conf(text=text)
    assert result.config is None
    assert result.errors
    return result


def test_occm_documented_example() -> None:
    result = parse_cloud_conf(text=OCCM_EXAMPLE)
    assert result.errors == ()
    assert result.warnings == ()
    config = result.config
    assert config is not None
    assert config.auth.auth_url == "https://someurl"
    assert config.auth.domain_name == "mydomain"
    assert config.auth.tenant_name == "mytenant"
    assert config.auth.password.reveal() == "mypassword"
    lb = config.load_balancer
    assert lb.floating_network_id == NET
    assert lb.subnet_id == SUBNET
    assert lb.create_monitor is True
    assert lb.monitor_delay == timedelta(seconds=60)
    assert lb.monitor_timeout == timedelta(seconds=30)
    assert sorted(config.classes) == ["dmz", "internetFacing", "office"]
    assert config.classes["dmz"].floating_subnet_id == "a374bed4-e920-4c40-b646-2d8927f7f67b"
    assert config.classes["internetFacing"].floating_network_id.startswith("c57af0a0")


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("enabled", True),
        ("lb_method", "ROUND_ROBIN"),
        ("lb_provider", "amphora"),
        ("create_monitor", False),
        ("monitor_delay", timedelta(seconds=5)),
        ("monitor_timeout", timedelta(seconds=3)),
        ("monitor_max_retries", 1),
        ("monitor_max_retries_down", 3),
        ("internal_lb", False),
        ("max_shared_lb", 2),
        ("manage_security_groups", False),
        ("cascade_delete", True),
        ("enable_ingress_hostname", False),
        ("ingress_hostname_suffix", "nip.io"),
        ("container_store", "barbican"),
        ("provider_requires_serial_api_calls", False),
        ("node_selector", ""),
        ("subnet_id", ""),
        ("floating_network_id", ""),
        ("default_tls_container_ref", ""),
    ],
)
def test_occm_defaults(name: str, expected: object) -> None:
    assert getattr(ok("[Global]\n").load_balancer, name) == expected
    assert getattr(default_config().load_balancer, name) == expected


def test_empty_file_is_defaults() -> None:
    assert ok("") == default_config()


@pytest.mark.parametrize(
    ("line", "field", "expected"),
    [
        ("lb-method=LEAST_CONNECTIONS", "lb_method", "LEAST_CONNECTIONS"),
        ("lb-provider=ovn\nlb-method=SOURCE_IP_PORT", "lb_provider", "ovn"),
        ("create-monitor=yes", "create_monitor", True),
        ("create-monitor=On", "create_monitor", True),
        ("create-monitor=1", "create_monitor", True),
        ("create-monitor", "create_monitor", True),  # a blank value is true for booleans
        ("internal-lb=FALSE", "internal_lb", False),
        ("internal-lb=true", "internal_lb", True),
        ("monitor-delay=1m30s", "monitor_delay", timedelta(seconds=90)),
        ("monitor-delay=4500ms", "monitor_delay", timedelta(seconds=4.5)),
        ("monitor-max-retries=0x3", "monitor_max_retries", 3),
        ("max-shared-lb=5", "max_shared_lb", 5),
        ("manage-security-groups=true", "manage_security_groups", True),
        ("node-selector=env=prod, region", "node_selector", "env=prod, region"),
        ("enable-ingress-hostname=true", "enable_ingress_hostname", True),
        ("ingress-hostname-suffix=example.org", "ingress_hostname_suffix", "example.org"),
        ("flavor-id=" + NET, "flavor_id", NET),
        ("availability-zone=az1", "availability_zone", "az1"),
        ("lb-version=v2", "lb_version", "v2"),
        ("provider-requires-serial-api-calls=true", "provider_requires_serial_api_calls", True),
        (
            "default-tls-container-ref=https://kms/v1/containers/x",
            "default_tls_container_ref",
            "https://kms/v1/containers/x",
        ),
        ("member-subnet-id=" + SUBNET, "member_subnet_id", SUBNET),
        ("network-id=" + NET, "network_id", NET),
        ("floating-subnet=~^pub-.*$", "floating_subnet", "~^pub-.*$"),
        ("floating-subnet-tags=&a,b", "floating_subnet_tags", "&a,b"),
        ("cascade-delete=false", "cascade_delete", False),
        ("container-store=external", "container_store", "external"),
    ],
)
def test_load_balancer_keys(line: str, field: str, expected: object) -> None:
    assert getattr(ok(f"[LoadBalancer]\n{line}\n").load_balancer, field) == expected


@pytest.mark.parametrize(
    ("text", "field", "expected"),
    [
        ('[Global]\nusername = "a b" ; comment\n', "username", "a b"),
        ("[Global]\nusername = plain   # comment\n", "username", "plain"),
        ('[Global]\nusername = "semi;colon#hash"\n', "username", "semi;colon#hash"),
        ('[Global]\nusername = "q\\"uote"\n', "username", 'q"uote'),
        ('[Global]\nusername = "tab\\there"\n', "username", "tab\there"),
        ('[Global]\nusername = ab"c d"e\n', "username", "abc de"),
        ("[Global]\nusername = first \\\n second\n", "username", "first  second"),
        ("[GLOBAL]\nAuth-URL=https://k\n", "auth_url", "https://k"),
        ("[global]\nREGION=r1\n", "region", "r1"),
        ("\ufeff[Global]\nregion=r1\r\n", "region", "r1"),
        ("[Global]\nregion=a\nregion=b\n", "region", "b"),  # the last one wins
        ("[Global]\nproject-id=p1\n", "tenant_id", "p1"),  # alias of tenant-id
        ("[Global]\ntls-insecure=true\n", "tls_insecure", True),
        ("[Global]\nuse-clouds=true\nclouds-file=/c.yaml\ncloud=c\n", "cloud", "c"),
        ("[Global]\napplication-credential-id=ac\n", "application_credential_id", "ac"),
        ("[Global]\nuser-domain-name=Default\n", "user_domain_name", "Default"),
        ("[Global]\ntenant-domain-id=d\n", "tenant_domain_id", "d"),
        ("[Global]\nca-file=/etc/ca.pem\n", "ca_file", "/etc/ca.pem"),
    ],
)
def test_gcfg_syntax(text: str, field: str, expected: object) -> None:
    assert getattr(ok(text).auth, field) == expected


def test_sections_merge_and_class_names_are_case_sensitive() -> None:
    config = ok(
        "[LoadBalancer]\nlb-method=SOURCE_IP\n[loadbalancer]\nmax-shared-lb=3\n"
        '[LoadBalancerClass "Dmz"]\nsubnet-id=' + SUBNET + "\n"
        '[loadbalancerclass "dmz"]\nnetwork-id=' + NET + "\n"
    )
    assert (config.load_balancer.lb_method, config.load_balancer.max_shared_lb) == ("SOURCE_IP", 3)
    assert config.classes["Dmz"].subnet_id == SUBNET
    assert config.classes["dmz"].network_id == NET


def test_other_occm_sections_are_accepted_silently() -> None:
    text = "[Networking]\npublic-network-name=a\npublic-network-name=b\n[Route]\nrouter-id=r\n"
    text += "[Metadata]\nsearch-order=configDrive\n"
    result = parse_cloud_conf(text=text)
    assert result.errors == ()
    assert result.warnings == ()


@pytest.mark.parametrize(
    ("text", "section", "key"),
    [
        ("[LoadBalancer]\nbogus=1\n", "LoadBalancer", "bogus"),
        ("[Global]\nauthurl=x\n", "Global", "authurl"),
        ("[Nope]\n", "Nope", ""),
        ('[Global "x"]\n', "Global", ""),
        ("[Networking]\npublic-net=x\n", "Networking", "public-net"),
        ('[LoadBalancerClass "c"]\nlb-method=x\n', 'LoadBalancerClass "c"', "lb-method"),
        ("[LoadBalancer]\nlb-provider=acme\n", "LoadBalancer", "lb-provider"),
        ("[LoadBalancer]\ncontainer-store=vault\n", "LoadBalancer", "container-store"),
        ("[LoadBalancer]\nmax-shared-lb=0\n", "LoadBalancer", "max-shared-lb"),
    ],
)
def test_warnings(text: str, section: str, key: str) -> None:
    result = parse_cloud_conf(text=text)
    assert result.config is not None
    assert result.errors == ()
    assert [(w.section, w.key) for w in result.warnings] == [(section, key)]
    assert result.warnings[0].fix


def test_unknown_key_warning_never_shows_its_value() -> None:
    result = parse_cloud_conf(text="[Global]\npasword=hunter2\n")
    assert "hunter2" not in repr(result)
    assert "hunter2" not in str(result.warnings[0])


@pytest.mark.parametrize(
    ("text", "key", "value", "fix_contains"),
    [
        ("[LoadBalancer]\ncreate-monitor=maybe\n", "create-monitor", "maybe", "true or false"),
        ("[LoadBalancer]\nmonitor-delay=5\n", "monitor-delay", "5", "unit"),
        ("[LoadBalancer]\nmonitor-delay=-5s\n", "monitor-delay", "-5s", "positive"),
        ("[LoadBalancer]\nmonitor-max-retries=-1\n", "monitor-max-retries", "-1", "0 or more"),
        ("[LoadBalancer]\nmonitor-max-retries=11\n", "monitor-max-retries", "11", "1 to 10"),
        (
            "[LoadBalancer]\nmonitor-max-retries-down=0\n",
            "monitor-max-retries-down",
            "0",
            "1 to 10",
        ),
        ("[LoadBalancer]\nmax-shared-lb=two\n", "max-shared-lb", "two", "whole number"),
        ("[LoadBalancer]\nsubnet-id=not-a-uuid\n", "subnet-id", "not-a-uuid", "openstack"),
        ("[LoadBalancer]\nfloating-network-id=x\n", "floating-network-id", "x", "openstack"),
        ("[LoadBalancer]\nlb-method=RANDOM\n", "lb-method", "RANDOM", "ROUND_ROBIN"),
        ("[LoadBalancer]\nlb-provider=ovn\n", "lb-method", "ROUND_ROBIN", "SOURCE_IP_PORT"),
        ("[LoadBalancer]\nlb-version=v1\n", "lb-version", "v1", "remove"),
        (
            "[LoadBalancer]\nmonitor-delay=2s\nmonitor-timeout=3s\n",
            "monitor-timeout",
            "3s",
            "at most",
        ),
        ("[LoadBalancer]\nfloating-subnet=~[\n", "floating-subnet", "~[", "regular expression"),
        ("[Global]\nregion\n", "region", "", "key=value"),
        ('[LoadBalancerClass "c"]\nsubnet-id=zzz\n', "subnet-id", "zzz", "openstack"),
    ],
)
def test_errors_name_section_key_value_and_fix(
    text: str, key: str, value: str, fix_contains: str
) -> None:
    result = failed(text)
    assert len(result.errors) == 1, result.errors
    issue = result.errors[0]
    assert (issue.key, issue.value) == (key, value)
    assert issue.section
    assert fix_contains in issue.fix
    assert key in str(issue)


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("region=r\n", 1),  # a key before any section
        ("[Global\nregion=r\n", 1),
        ('[Global]\nregion="r\n', 2),
        ('[Global]\nregion="a\\qb"\n', 2),
        ("[Global]\n!bad\n", 2),
        ('[Global]\n\n[LoadBalancerClass ""]\n', 3),
        ("[Global]\nregion r\n", 2),
    ],
)
def test_syntax_errors_carry_line_numbers(text: str, line: int) -> None:
    result = failed(text)
    assert result.errors[0].line == line


def test_secrets_are_redacted() -> None:
    text = (
        "[Global]\npassword=p4ss\napplication-credential-secret=s3cret\n"
        "trustee-password=tr0st\ntoken=t0ken\n"
    )
    config = ok(text)
    shown = repr(config) + str(config) + repr(config.auth) + str(config.auth.password)
    for secret in ("p4ss", "s3cret", "tr0st", "t0ken"):
        assert secret not in shown
    assert config.auth.application_credential_secret.reveal() == "s3cret"
    assert config.auth.password == Secret("p4ss")
    assert not Secret("")
    assert bool(Secret("x"))


def test_secret_value_not_echoed_in_errors() -> None:
    result = parse_cloud_conf(text='[Global]\npassword="hunter2\n')
    assert result.errors
    assert "hunter2" not in repr(result)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("5s", 5),
        ("1m30s", 90),
        ("1h", 3600),
        ("250ms", 0.25),
        ("0", 0),
        ("1.5s", 1.5),
        ("2h45m", 9900),
        ("-1s", -1),
    ],
)
def test_go_durations(text: str, seconds: float) -> None:
    assert parse_go_duration(text) == timedelta(seconds=seconds)


@pytest.mark.parametrize("text", ["", "5", "s", "5x", "1m 30s", "--1s"])
def test_bad_go_durations(text: str) -> None:
    with pytest.raises(ValueError, match="invalid duration"):
        parse_go_duration(text)


def test_config_is_frozen() -> None:
    config = ok("[LoadBalancer]\n")
    with pytest.raises(AttributeError):
        config.load_balancer.lb_method = "x"  # type: ignore[misc]
    assert isinstance(config.load_balancer, LoadBalancerConfig)

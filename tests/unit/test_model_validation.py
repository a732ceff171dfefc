"""Bad input becomes ValidationErrors naming field, value and fix; the model never raises."""

from __future__ import annotations

import random
from typing import Any

import pytest

from reconciler.config import default_config
from reconciler.model import build_spec
from tests.builders import EXAMPLE_SERVICE, make_node
from tests.unit.model_helpers import UUID1, build, config_from

P = "loadbalancer.openstack.org/"


def ann(key: str) -> str:
    return f'metadata.annotations["{key}"]'


@pytest.mark.parametrize(
    ("annotations", "spec", "field", "value", "fix_contains"),
    [
        ({P + "connection-limit": "lots"}, {}, ann(P + "connection-limit"), "lots", "whole number"),
        ({P + "connection-limit": "-2"}, {}, ann(P + "connection-limit"), "-2", "-1"),
        (
            {P + "timeout-client-data": "1s"},
            {},
            ann(P + "timeout-client-data"),
            "1s",
            "milliseconds",
        ),
        ({P + "timeout-tcp-inspect": "-1"}, {}, ann(P + "timeout-tcp-inspect"), "-1", "0 or more"),
        ({P + "keep-floatingip": "True"}, {}, ann(P + "keep-floatingip"), "True", '"true"'),
        (
            {"service.beta.kubernetes.io/openstack-internal-load-balancer": "yes"},
            {},
            ann("service.beta.kubernetes.io/openstack-internal-load-balancer"),
            "yes",
            '"false"',
        ),
        ({P + "proxy-protocol": "v3"}, {}, ann(P + "proxy-protocol"), "v3", "v2"),
        (
            {P + "proxy-protocol": "true", P + "x-forwarded-for": "true"},
            {},
            ann(P + "proxy-protocol"),
            "true",
            "keep one",
        ),
        ({P + "class": "nope"}, {}, ann(P + "class"), "nope", "LoadBalancerClass"),
        ({P + "port-id": "port-1"}, {}, ann(P + "port-id"), "port-1", "UUID"),
        ({P + "subnet-id": "subnet"}, {}, ann(P + "subnet-id"), "subnet", "UUID"),
        ({P + "network-id": "1234"}, {}, ann(P + "network-id"), "1234", "UUID"),
        ({P + "member-subnet-id": "x"}, {}, ann(P + "member-subnet-id"), "x", "UUID"),
        (
            {P + "floating-network-id": "public"},
            {},
            ann(P + "floating-network-id"),
            "public",
            "UUID",
        ),
        ({P + "floating-subnet-id": "x"}, {}, ann(P + "floating-subnet-id"), "x", "UUID"),
        ({P + "flavor-id": "small"}, {}, ann(P + "flavor-id"), "small", "UUID"),
        ({P + "load-balancer-id": "lb1"}, {}, ann(P + "load-balancer-id"), "lb1", "UUID"),
        ({P + "floating-subnet": "~(("}, {}, ann(P + "floating-subnet"), "~((", "regular"),
        ({P + "floating-subnet": "~a(?=b)"}, {}, ann(P + "floating-subnet"), "~a(?=b)", "RE2"),
        ({P + "floating-subnet": "{a"}, {}, ann(P + "floating-subnet"), "{a", "glob"),
        ({P + "floating-subnet-tags": "!"}, {}, ann(P + "floating-subnet-tags"), "!", "no tag"),
        ({P + "floating-subnet-tags": "&!a"}, {}, ann(P + "floating-subnet-tags"), "&!a", "'!'"),
        ({P + "lb-method": "FASTEST"}, {}, ann(P + "lb-method"), "FASTEST", "ROUND_ROBIN"),
        ({P + "enable-health-monitor": "1"}, {}, ann(P + "enable-health-monitor"), "1", '"true"'),
        (
            {
                P + "enable-health-monitor": "true",
                P + "health-monitor-delay": "2",
                P + "health-monitor-timeout": "3",
            },
            {},
            ann(P + "health-monitor-timeout"),
            "3",
            "at most",
        ),
        (
            {P + "health-monitor-delay": "-5"},
            {},
            ann(P + "health-monitor-delay"),
            "-5",
            "0 or more",
        ),
        (
            {P + "health-monitor-max-retries": "0"},
            {},
            ann(P + "health-monitor-max-retries"),
            "0",
            "1 or more",
        ),
        (
            {P + "health-monitor-max-retries-down": "11"},
            {},
            ann(P + "health-monitor-max-retries-down"),
            "11",
            "1 to 10",
        ),
        (
            {P + "health-monitor-delay": "five"},
            {},
            ann(P + "health-monitor-delay"),
            "five",
            "whole number",
        ),
        (
            {P + "default-tls-container-ref": "my-cert"},
            {},
            ann(P + "default-tls-container-ref"),
            "my-cert",
            "containers",
        ),
        (
            {P + "node-selector": "env==prod"},
            {},
            ann(P + "node-selector"),
            "env==prod",
            "key=value",
        ),
        (
            {"service.beta.kubernetes.io/load-balancer-source-ranges": "10.0.0.0/33"},
            {},
            ann("service.beta.kubernetes.io/load-balancer-source-ranges"),
            "10.0.0.0/33",
            "CIDR",
        ),
        (
            {},
            {"loadBalancerSourceRanges": ["10.0.0.0/8", "bogus"]},
            "spec.loadBalancerSourceRanges[1]",
            "bogus",
            "CIDR",
        ),
        (
            {},
            {"loadBalancerSourceRanges": ["2001:db8::/32"]},
            "spec.loadBalancerSourceRanges[0]",
            "2001:db8::/32",
            "IPv4",
        ),
        ({}, {"loadBalancerIP": "not-an-ip"}, "spec.loadBalancerIP", "not-an-ip", "IP address"),
        ({}, {"loadBalancerIP": "2001:db8::1"}, "spec.loadBalancerIP", "2001:db8::1", "family"),
        ({}, {"ports": []}, "spec.ports", "[]", "add a port"),
        (
            {},
            {"ports": [{"port": 80, "protocol": "HTTP"}]},
            "spec.ports[0].protocol",
            "HTTP",
            "TCP, UDP or SCTP",
        ),
        ({}, {"ports": [{"port": 0}]}, "spec.ports[0].port", "0", "1 to 65535"),
        (
            {},
            {"ports": [{"port": 80, "nodePort": 70000}]},
            "spec.ports[0].nodePort",
            "70000",
            "1 to 65535",
        ),
        (
            {P + "x-forwarded-for": "true"},
            {"ports": [{"port": 53, "protocol": "UDP"}]},
            "spec.ports[0].protocol",
            "UDP",
            "use TCP",
        ),
    ],
)
def test_validation_errors(
    annotations: dict[str, str], spec: dict[str, Any], field: str, value: str, fix_contains: str
) -> None:
    result = build(annotations, **spec)
    assert result.spec is None
    matching = [e for e in result.errors if e.field == field]
    assert matching, [str(e) for e in result.errors]
    assert matching[0].value == value
    assert fix_contains in matching[0].fix or fix_contains in matching[0].reason
    assert matching[0].reason


def test_missing_name() -> None:
    result = build_spec(service={"spec": {}}, nodes=[], config=default_config(), cluster_name="c")
    assert [e.field for e in result.errors] == ["metadata.name"]


def test_no_vip_subnet_and_no_nodes() -> None:
    result = build(nodes=[])
    assert [e.field for e in result.errors] == ["nodes"]
    assert "subnet-id" in result.errors[0].fix


def test_no_nodes_with_a_subnet_is_a_notice_not_an_error() -> None:
    result = build(config=config_from(f"[LoadBalancer]\nsubnet-id={UUID1}\n"), nodes=[])
    assert result.spec is not None
    assert [n.field for n in result.notices] == ["nodes"]


def test_ovn_cannot_enforce_source_ranges_without_security_groups() -> None:
    config = config_from("[LoadBalancer]\nlb-provider=ovn\nlb-method=SOURCE_IP_PORT\n")
    result = build(config=config, loadBalancerSourceRanges=["10.0.0.0/8"])
    assert [e.field for e in result.errors] == ["spec.loadBalancerSourceRanges"]


def test_ovn_rejects_l7_annotations_and_other_methods() -> None:
    config = config_from("[LoadBalancer]\nlb-provider=ovn\nlb-method=SOURCE_IP_PORT\n")
    result = build({P + "proxy-protocol": "true", P + "lb-method": "ROUND_ROBIN"}, config=config)
    fields = {e.field for e in result.errors}
    assert ann(P + "proxy-protocol") in fields
    assert ann(P + "lb-method") in fields


@pytest.mark.parametrize("provider", ["amphora", "octavia", "amphorav2"])
def test_the_amphora_provider_refuses_source_ip_port_before_the_cloud(provider: str) -> None:
    """Octavia's amphora driver answers 501 to a pool with SOURCE_IP_PORT, after the load
    balancer was made: the annotation is refused with the provider named, nothing is built."""
    config = config_from(f"[LoadBalancer]\nlb-provider={provider}\n")
    result = build({P + "lb-method": "SOURCE_IP_PORT"}, config=config)
    assert result.spec is None
    (error,) = result.errors
    assert error.field == ann(P + "lb-method")
    assert error.value == "SOURCE_IP_PORT"
    assert f"not supported by the {provider} provider" in error.reason
    assert "SOURCE_IP" in error.fix
    assert build({P + "lb-method": "SOURCE_IP"}, config=config).spec is not None


def test_all_errors_are_reported_at_once() -> None:
    result = build({P + "connection-limit": "x", P + "lb-method": "y", P + "keep-floatingip": "z"})
    assert len(result.errors) == 3


def _mutate(rng: random.Random, value: Any, depth: int = 0) -> Any:
    choices: list[Any] = [None, 0, -1, 1.5, True, "", "x", "TCP", [], {}, ["a"], {"a": 1}]
    if depth > 3 or rng.random() < 0.15:
        return rng.choice(choices)
    if isinstance(value, dict):
        out = {k: _mutate(rng, v, depth + 1) if rng.random() < 0.3 else v for k, v in value.items()}
        if rng.random() < 0.2:
            out[rng.choice(["spec", "metadata", "annotations", "ports", "labels"])] = rng.choice(
                choices
            )
        return out
    if isinstance(value, list):
        return [_mutate(rng, v, depth + 1) for v in value]
    return rng.choice(choices) if rng.random() < 0.3 else value


def test_never_raises_on_mangled_input() -> None:
    rng = random.Random(20250101)
    base_service = dict(EXAMPLE_SERVICE)
    base_service["metadata"] = {
        **EXAMPLE_SERVICE["metadata"],
        "annotations": {P + "connection-limit": "5", P + "node-selector": "a=b"},
    }
    base_node = make_node("n", internal="10.0.0.1", labels={"a": "b"})
    for _ in range(2000):
        service = _mutate(rng, base_service)
        nodes = _mutate(rng, [base_node, base_node])
        result = build_spec(
            service=service if isinstance(service, dict) else {},
            nodes=nodes if isinstance(nodes, list) else [],
            config=default_config(),
            cluster_name="c",
        )
        assert (result.spec is None) == bool(result.errors)

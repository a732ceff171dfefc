"""Property-based tests of the model (hypothesis): it never raises, and its hash is stable.

The strategies draw Services around the example Service: any subset of the supported annotations
with values that are valid, borderline or garbage, any ports (protocols, numbers, node ports,
missing fields), and any source ranges; Nodes with random addresses and labels.
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reconciler.config import default_config
from reconciler.model import LoadBalancerSpec, build_spec
from reconciler.model import annotations as ann
from tests.builders import example_service, make_node

ANNOTATIONS = sorted(
    value
    for name, value in vars(ann).items()
    if name.isupper() and isinstance(value, str) and "/" in value
)
UUID = "11111111-1111-4111-8111-111111111111"
VALUES = st.one_of(
    st.sampled_from(
        [
            "",
            "true",
            "false",
            "True",
            "v1",
            "v2",
            "5",
            "-1",
            "0",
            "1s",
            "abc",
            UUID,
            "10.0.0.0/8",
            "10.0.0.0/33",
            "a=b",
            "ROUND_ROBIN",
            "SOURCE_IP",
            "x" * 300,
        ]
    ),
    st.text(max_size=40),
)
PORTS = st.lists(
    st.fixed_dictionaries(
        {"port": st.integers(min_value=-1, max_value=70000)},
        optional={
            "protocol": st.sampled_from(["TCP", "UDP", "SCTP", "HTTP", ""]),
            "nodePort": st.integers(min_value=0, max_value=70000),
            "name": st.text(max_size=10),
        },
    ),
    max_size=4,
)
NODES = st.lists(
    st.builds(
        lambda name, ip, excluded: make_node(
            name,
            internal=ip,
            labels={"node.kubernetes.io/exclude-from-external-load-balancers": ""}
            if excluded
            else {},
        ),
        st.text(alphabet="abcdefgh-", min_size=1, max_size=8),
        st.one_of(st.none(), st.ip_addresses(v=4).map(str), st.ip_addresses(v=6).map(str)),
        st.booleans(),
    ),
    max_size=4,
)


@st.composite
def services(draw: st.DrawFn) -> dict[str, Any]:
    service = example_service()
    service["metadata"]["annotations"] = draw(
        st.dictionaries(st.sampled_from(ANNOTATIONS), VALUES, max_size=8)
    )
    if draw(st.booleans()):
        service["spec"]["ports"] = draw(PORTS)
    if draw(st.booleans()):
        service["spec"]["loadBalancerSourceRanges"] = draw(
            st.lists(st.sampled_from(["10.0.0.0/8", "::/0", "bad", "1.2.3.4/32"]), max_size=3)
        )
    if draw(st.booleans()):
        service["spec"]["loadBalancerIP"] = draw(st.sampled_from(["", "172.24.4.10", "nope"]))
    if draw(st.booleans()):
        service["spec"]["externalTrafficPolicy"] = draw(st.sampled_from(["Local", "Cluster", "x"]))
        service["spec"]["healthCheckNodePort"] = draw(st.integers(min_value=-5, max_value=70000))
    if draw(st.booleans()):
        service["spec"]["sessionAffinity"] = draw(st.sampled_from(["ClientIP", "None", "?"]))
    return service


VALID_ANNOTATIONS = {
    ann.CONNECTION_LIMIT: st.integers(min_value=-1, max_value=100000).map(str),
    ann.KEEP_FLOATING_IP: st.sampled_from(["true", "false"]),
    ann.TIMEOUT_CLIENT_DATA: st.integers(min_value=0, max_value=86400000).map(str),
    ann.TIMEOUT_MEMBER_CONNECT: st.integers(min_value=0, max_value=86400000).map(str),
    ann.TIMEOUT_MEMBER_DATA: st.integers(min_value=0, max_value=86400000).map(str),
    ann.TIMEOUT_TCP_INSPECT: st.integers(min_value=0, max_value=86400000).map(str),
    ann.ENABLE_HEALTH_MONITOR: st.sampled_from(["true", "false"]),
    ann.LB_METHOD: st.sampled_from(["ROUND_ROBIN", "LEAST_CONNECTIONS", "SOURCE_IP"]),
    ann.NODE_SELECTOR: st.sampled_from(["", "a=b"]),
    ann.INTERNAL: st.sampled_from(["true", "false"]),
    ann.PROXY_PROTOCOL: st.sampled_from(["true", "v1", "v2", "false"]),
}


@st.composite
def valid_services(draw: st.DrawFn) -> dict[str, Any]:
    service = example_service()
    keys = draw(st.sets(st.sampled_from(sorted(VALID_ANNOTATIONS)), max_size=6))
    service["metadata"]["annotations"] = {k: draw(VALID_ANNOTATIONS[k]) for k in sorted(keys)}
    numbers = draw(
        st.lists(st.integers(min_value=1, max_value=65535), min_size=1, max_size=3, unique=True)
    )
    service["spec"]["ports"] = [
        {"name": f"p{i}", "port": n, "protocol": "TCP", "nodePort": 30000 + i}
        for i, n in enumerate(numbers)
    ]
    service["spec"]["loadBalancerSourceRanges"] = draw(
        st.lists(st.sampled_from(["10.0.0.0/8", "192.168.0.0/16", "1.2.3.4/32"]), max_size=2)
    )
    service["spec"]["sessionAffinity"] = draw(st.sampled_from(["ClientIP", "None"]))
    return service


VALID_NODES = st.lists(
    st.builds(
        lambda i, ip: make_node(f"node-{i}", internal=ip, labels={"a": "b"}),
        st.integers(min_value=0, max_value=50),
        st.ip_addresses(v=4).map(str),
    ),
    min_size=1,
    max_size=4,
    unique_by=lambda n: n["metadata"]["name"],
)


def _build(service: dict[str, Any], nodes: list[dict[str, Any]]) -> Any:
    return build_spec(service=service, nodes=nodes, config=default_config(), cluster_name="c")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(service=services(), nodes=NODES)
def test_never_raises_and_errors_name_a_field_and_a_fix(
    service: dict[str, Any], nodes: list[dict[str, Any]]
) -> None:
    result = _build(service, nodes)
    assert (result.spec is None) == bool(result.errors)
    for error in result.errors:
        assert error.field
        assert error.fix


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(service=valid_services(), nodes=VALID_NODES)
def test_valid_input_builds_and_its_hash_is_stable(
    service: dict[str, Any], nodes: list[dict[str, Any]]
) -> None:
    first = _build(service, nodes)
    assert first.spec is not None, [str(e) for e in first.errors]
    again = _build(copy.deepcopy(service), list(reversed(copy.deepcopy(nodes))))
    assert again.spec is not None
    assert first.spec.spec_hash() == again.spec.spec_hash()  # node order does not matter
    restored = LoadBalancerSpec.from_dict(first.spec.to_dict())
    assert restored == first.spec
    assert restored.spec_hash() == first.spec.spec_hash()

"""build_spec: the example Service, every annotation and spec field, and OCCM's defaults."""

from __future__ import annotations

from typing import Any

import pytest

from reconciler.model import LoadBalancerSpec, MemberSpec, MonitorSpec
from reconciler.model.traffic import warning_reason
from tests.builders import make_node
from tests.unit.model_helpers import UUID1, UUID2, UUID3, build, config_from, spec_of

P = "loadbalancer.openstack.org/"
LB = "kube_service_kubernetes_default_example-service"
SOURCE_RANGES = "service.beta.kubernetes.io/load-balancer-source-ranges"


def test_example_service_defaults() -> None:
    spec = spec_of()
    assert spec.name == LB
    assert spec.tags == (LB,)
    assert spec.description == (
        "Kubernetes external service default/example-service from cluster kubernetes"
    )
    assert (spec.service.namespace, spec.service.name) == ("default", "example-service")
    assert spec.provider == "amphora"
    assert spec.internal is False
    assert spec.ip_family == "IPv4"
    assert spec.existing_lb_id is None
    assert spec.flavor_id is None
    assert spec.vip_subnet_id is None
    assert spec.vip_autodetect_address == "10.0.0.11"
    assert spec.floating_ip is not None
    assert spec.floating_ip.network_id is None  # autodetect the external network
    assert spec.floating_ip.description.startswith("Floating IP for Kubernetes external service")
    (listener,) = spec.listeners
    assert listener.name == f"listener_0_{LB}"
    assert (listener.protocol, listener.protocol_port, listener.node_port) == ("TCP", 8765, 30593)
    assert listener.connection_limit == -1
    assert (listener.timeout_client_data, listener.timeout_member_connect) == (50000, 5000)
    assert (listener.timeout_member_data, listener.timeout_tcp_inspect) == (50000, 0)
    assert listener.allowed_cidrs == ("0.0.0.0/0",)
    assert listener.insert_headers == ()
    assert listener.default_tls_container_ref is None
    assert listener.tags == (LB,)
    pool = listener.pool
    assert (pool.name, pool.protocol, pool.lb_algorithm) == (f"pool_0_{LB}", "TCP", "ROUND_ROBIN")
    assert pool.session_persistence is None
    assert pool.monitor is None
    assert pool.members == (
        MemberSpec("worker-a", "10.0.0.11", 30593, None, None),
        MemberSpec("worker-b", "10.0.0.12", 30593, None, None),
    )
    assert spec.status.ip_mode == "VIP"
    assert spec.status.hostname is None
    assert spec.security_group is None
    assert spec.max_shared_lb == 2


def test_unapplied_manifest_still_builds() -> None:
    service: dict[str, Any] = {
        "metadata": {"name": "example-service"},
        "spec": {"type": "LoadBalancer", "ports": [{"port": 8765, "targetPort": 9376}]},
    }
    from reconciler.config import default_config
    from reconciler.model import build_spec

    result = build_spec(
        service=service,
        nodes=[],
        config=config_from(f"[LoadBalancer]\nsubnet-id={UUID1}\n"),
        cluster_name="c",
    )
    assert result.spec is not None
    assert result.spec.service.namespace == "default"
    assert result.spec.listeners[0].pool.members == ()  # no nodePort yet
    assert default_config() is not None


def test_names_are_cut_to_255_bytes() -> None:
    long = "n" * 250
    spec = spec_of()
    from reconciler.model import naming

    name = naming.lb_name(cluster_name="c", namespace="default", name=long)
    assert len(name.encode()) == 255
    assert name.startswith("kube_service_c_default_nnn")
    assert len(naming.listener_name(index=3, lb=name)) == 255
    assert spec.name == LB


@pytest.mark.parametrize(
    ("annotations", "check"),
    [
        ({P + "connection-limit": "100"}, lambda s: s.listeners[0].connection_limit == 100),
        ({P + "timeout-client-data": "1000"}, lambda s: s.listeners[0].timeout_client_data == 1000),
        (
            {P + "timeout-member-connect": "2000"},
            lambda s: s.listeners[0].timeout_member_connect == 2000,
        ),
        ({P + "timeout-member-data": "3000"}, lambda s: s.listeners[0].timeout_member_data == 3000),
        ({P + "timeout-tcp-inspect": "40"}, lambda s: s.listeners[0].timeout_tcp_inspect == 40),
        (
            {P + "lb-method": "LEAST_CONNECTIONS"},
            lambda s: s.listeners[0].pool.lb_algorithm == "LEAST_CONNECTIONS",
        ),
        ({P + "flavor-id": UUID1}, lambda s: s.flavor_id == UUID1),
        ({P + "availability-zone": "az-2"}, lambda s: s.availability_zone == "az-2"),
        ({P + "load-balancer-id": UUID2}, lambda s: s.existing_lb_id == UUID2),
        (
            {P + "port-id": UUID3},
            lambda s: (
                (s.vip_port_id, s.vip_subnet_id, s.vip_autodetect_address) == (UUID3, None, None)
            ),
        ),
        (
            {P + "subnet-id": UUID1},
            lambda s: (s.vip_subnet_id, s.member_subnet_id) == (UUID1, UUID1),
        ),
        ({P + "network-id": UUID2}, lambda s: s.vip_network_id == UUID2),
        (
            {P + "member-subnet-id": UUID3},
            lambda s: s.listeners[0].pool.members[0].subnet_id == UUID3,
        ),
        (
            {P + "floating-network-id": UUID1},
            lambda s: s.floating_ip is not None and s.floating_ip.network_id == UUID1,
        ),
        (
            {P + "floating-subnet-id": UUID2},
            lambda s: s.floating_ip is not None and s.floating_ip.subnet_id == UUID2,
        ),
        (
            {P + "floating-subnet": "public-*"},
            lambda s: s.floating_ip is not None and s.floating_ip.subnet_name_pattern == "public-*",
        ),
        (
            {P + "floating-subnet-tags": "&a,b"},
            lambda s: s.floating_ip is not None and s.floating_ip.subnet_tags == "&a,b",
        ),
        (
            {P + "floating-subnet-id": UUID2, P + "floating-subnet": "x"},
            lambda s: s.floating_ip is not None and s.floating_ip.subnet_name_pattern is None,
        ),
        (
            {P + "keep-floatingip": "true"},
            lambda s: s.floating_ip is not None and s.floating_ip.keep,
        ),
        (
            {"service.beta.kubernetes.io/openstack-internal-load-balancer": "true"},
            lambda s: s.internal and s.floating_ip is None,
        ),
        (
            {P + "proxy-protocol": "true"},
            lambda s: s.listeners[0].pool.protocol == "PROXY" and s.status.ip_mode == "Proxy",
        ),
        ({P + "proxy-protocol": "v1"}, lambda s: s.listeners[0].pool.protocol == "PROXY"),
        ({P + "proxy-protocol": "v2"}, lambda s: s.listeners[0].pool.protocol == "PROXYV2"),
        ({P + "proxy-protocol": "false"}, lambda s: s.listeners[0].pool.protocol == "TCP"),
        (
            {P + "x-forwarded-for": "true"},
            lambda s: (
                (s.listeners[0].protocol, s.listeners[0].pool.protocol) == ("HTTP", "HTTP")
                and s.listeners[0].insert_headers == (("X-Forwarded-For", "true"),)
            ),
        ),
        (
            {P + "default-tls-container-ref": f"https://kms/v1/containers/{UUID1}"},
            lambda s: (
                (s.listeners[0].protocol, s.listeners[0].pool.protocol)
                == ("TERMINATED_HTTPS", "HTTP")
                and s.listeners[0].default_tls_container_ref == f"https://kms/v1/containers/{UUID1}"
            ),
        ),
        (
            {
                P + "default-tls-container-ref": f"https://kms/v1/secrets/{UUID1}",
                P + "x-forwarded-for": "true",
            },
            lambda s: s.listeners[0].protocol == "TERMINATED_HTTPS",
        ),
        ({P + "hostname": "lb.example.org"}, lambda s: s.status.hostname == "lb.example.org"),
        (
            {P + "node-selector": "pool=edge"},
            lambda s: [m.name for m in s.listeners[0].pool.members] == ["edge-1"],
        ),
        ({P + "node-selector": ""}, lambda s: len(s.listeners[0].pool.members) == 3),
        (
            {SOURCE_RANGES: "10.1.0.0/16, 192.168.32.1/24"},
            lambda s: s.listeners[0].allowed_cidrs == ("10.1.0.0/16", "192.168.32.0/24"),
        ),
        (
            {P + "enable-health-monitor": "true"},
            lambda s: (
                s.listeners[0].pool.monitor == MonitorSpec(f"monitor_0_{LB}", "TCP", 5, 3, 1, 3)
            ),
        ),
        (
            {
                P + "enable-health-monitor": "true",
                P + "health-monitor-delay": "10",
                P + "health-monitor-timeout": "7",
                P + "health-monitor-max-retries": "2",
                P + "health-monitor-max-retries-down": "5",
            },
            lambda s: (
                s.listeners[0].pool.monitor == MonitorSpec(f"monitor_0_{LB}", "TCP", 10, 7, 2, 5)
            ),
        ),
        ({P + "enable-health-monitor": "false"}, lambda s: s.listeners[0].pool.monitor is None),
    ],
)
def test_each_annotation(annotations: dict[str, str], check: Any) -> None:
    nodes = [
        make_node("edge-1", internal="10.0.1.1", labels={"pool": "edge"}),
        make_node("core-1", internal="10.0.1.2", labels={"pool": "core"}),
        make_node("core-2", internal="10.0.1.3", labels={"pool": "core"}),
    ]
    spec = spec_of(annotations, nodes=nodes)
    assert check(spec), spec


def test_class_wins_over_annotations_and_config() -> None:
    config = config_from(
        f"[LoadBalancer]\nfloating-network-id={UUID1}\nsubnet-id={UUID1}\n"
        f'[LoadBalancerClass "dmz"]\nfloating-network-id={UUID2}\nfloating-subnet-id={UUID3}\n'
        f"subnet-id={UUID2}\nnetwork-id={UUID3}\nmember-subnet-id={UUID3}\n"
    )
    spec = spec_of(
        {P + "class": "dmz", P + "subnet-id": UUID3, P + "floating-network-id": UUID3},
        config=config,
    )
    assert spec.floating_ip is not None
    assert (spec.floating_ip.network_id, spec.floating_ip.subnet_id) == (UUID2, UUID3)
    assert (spec.vip_subnet_id, spec.vip_network_id, spec.member_subnet_id) == (UUID2, UUID3, UUID3)


def test_class_without_floating_settings_falls_back_to_annotations() -> None:
    config = config_from(f'[LoadBalancerClass "internal"]\nsubnet-id={UUID2}\n')
    spec = spec_of({P + "class": "internal", P + "floating-subnet": "pub*"}, config=config)
    assert spec.vip_subnet_id == UUID2
    assert spec.floating_ip is not None
    assert spec.floating_ip.subnet_name_pattern == "pub*"


def test_config_supplies_defaults() -> None:
    config = config_from(
        f"[LoadBalancer]\nfloating-network-id={UUID1}\nfloating-subnet-tags=public\n"
        f"subnet-id={UUID2}\nlb-method=SOURCE_IP\nflavor-id={UUID3}\navailability-zone=az1\n"
        "create-monitor=true\nmonitor-delay=9s\nmonitor-timeout=4s\n"
        "default-tls-container-ref=https://kms/v1/containers/" + UUID3 + "\n"
        "node-selector=pool=edge\n"
    )
    nodes = [
        make_node("e", internal="10.0.0.5", labels={"pool": "edge"}),
        make_node("c", internal="10.0.0.6"),
    ]
    spec = spec_of(config=config, nodes=nodes)
    assert spec.floating_ip is not None
    assert (spec.floating_ip.network_id, spec.floating_ip.subnet_tags) == (UUID1, "public")
    assert (spec.vip_subnet_id, spec.member_subnet_id) == (UUID2, UUID2)
    assert (spec.flavor_id, spec.availability_zone) == (UUID3, "az1")
    pool = spec.listeners[0].pool
    assert pool.lb_algorithm == "SOURCE_IP"
    assert pool.monitor is not None
    assert (pool.monitor.delay, pool.monitor.timeout) == (9, 4)
    assert spec.listeners[0].protocol == "TERMINATED_HTTPS"
    assert [m.name for m in pool.members] == ["e"]


def test_config_subnet_is_member_subnet_even_with_annotated_vip_subnet() -> None:
    config = config_from(f"[LoadBalancer]\nsubnet-id={UUID1}\n")
    spec = spec_of({P + "subnet-id": UUID2}, config=config)
    assert (spec.vip_subnet_id, spec.member_subnet_id) == (UUID2, UUID1)


def test_empty_floating_network_annotation_means_autodetect_not_config() -> None:
    config = config_from(f"[LoadBalancer]\nfloating-network-id={UUID1}\n")
    spec = spec_of({P + "floating-network-id": ""}, config=config)
    assert spec.floating_ip is not None
    assert spec.floating_ip.network_id is None


def test_internal_lb_config_forces_internal() -> None:
    config = config_from("[LoadBalancer]\ninternal-lb=true\n")
    internal = "service.beta.kubernetes.io/openstack-internal-load-balancer"
    spec = spec_of({internal: "false"}, config=config)
    assert spec.internal
    assert spec.floating_ip is None


def test_load_balancer_ip_reuses_floating_ip_and_drops_matchers() -> None:
    spec = spec_of({P + "floating-subnet": "pub*"}, loadBalancerIP="122.112.219.229")
    assert spec.floating_ip is not None
    assert spec.floating_ip.address == "122.112.219.229"
    assert spec.floating_ip.subnet_name_pattern is None
    assert spec.vip_address is None


def test_internal_load_balancer_ip_is_the_vip() -> None:
    internal = "service.beta.kubernetes.io/openstack-internal-load-balancer"
    spec = spec_of({internal: "true"}, loadBalancerIP="10.0.0.200")
    assert spec.vip_address == "10.0.0.200"
    assert spec.floating_ip is None


def test_ipv6_service() -> None:
    nodes = [make_node("a", internal="10.0.0.1", external="2001:db8::1")]
    spec = spec_of(nodes=nodes, ipFamilies=["IPv6", "IPv4"], loadBalancerIP="2001:db8::10")
    assert spec.ip_family == "IPv6"
    assert spec.floating_ip is None
    assert spec.vip_address == "2001:db8::10"
    assert spec.listeners[0].allowed_cidrs == ("::/0",)
    assert spec.listeners[0].pool.members[0].address == "2001:db8::1"


def test_source_ranges_field_wins_and_other_family_is_dropped() -> None:
    annotation = {"service.beta.kubernetes.io/load-balancer-source-ranges": "10.9.0.0/16"}
    spec = spec_of(annotation, loadBalancerSourceRanges=["192.168.32.1/24", "2001:db8::/32"])
    assert spec.listeners[0].allowed_cidrs == ("192.168.32.0/24",)


def test_session_affinity_client_ip() -> None:
    spec = spec_of(sessionAffinity="ClientIP")
    assert spec.listeners[0].pool.session_persistence == "SOURCE_IP"


def test_etp_local_with_monitor_uses_http_healthz() -> None:
    spec = spec_of(
        {P + "enable-health-monitor": "true"},
        externalTrafficPolicy="Local",
        healthCheckNodePort=32123,
    )
    pool = spec.listeners[0].pool
    assert pool.monitor == MonitorSpec(
        f"monitor_0_{LB}", "HTTP", 5, 3, 1, 3, "GET", "/healthz", "200"
    )
    assert {m.monitor_port for m in pool.members} == {32123}


def test_etp_local_without_monitor_is_a_notice_shown_as_a_warning() -> None:
    result = build(externalTrafficPolicy="Local", healthCheckNodePort=32123)
    assert result.spec is not None
    assert result.spec.listeners[0].pool.monitor is None
    (notice,) = [n for n in result.notices if n.field == "spec.externalTrafficPolicy"]
    assert warning_reason(notice) == "LoadBalancerHealthMonitorMissing"
    assert 'enable-health-monitor: "true"' in notice.message
    assert "create-monitor = true" in notice.message
    # other notices stay log lines
    ovn = config_from("[LoadBalancer]\nlb-provider=ovn\nlb-method=SOURCE_IP_PORT\n")
    other = build({P + "timeout-client-data": "1"}, config=ovn)
    assert other.notices
    assert [warning_reason(n) for n in other.notices] == [None] * len(other.notices)


def test_etp_local_with_monitor_or_cluster_has_no_warning() -> None:
    for result in (
        build({P + "enable-health-monitor": "true"}, externalTrafficPolicy="Local"),
        build(externalTrafficPolicy="Cluster"),
    ):
        assert [n for n in result.notices if warning_reason(n)] == []


@pytest.mark.parametrize(("protocol", "monitor"), [("UDP", "UDP-CONNECT"), ("SCTP", "SCTP")])
def test_udp_and_sctp_ports(protocol: str, monitor: str) -> None:
    ports = [{"port": 53, "protocol": protocol, "nodePort": 30053}]
    spec = spec_of({P + "enable-health-monitor": "true"}, ports=ports)
    listener = spec.listeners[0]
    assert (listener.protocol, listener.pool.protocol) == (protocol, protocol)
    assert listener.pool.monitor is not None
    assert listener.pool.monitor.type == monitor


def test_one_listener_and_pool_per_port_in_order() -> None:
    ports = [
        {"name": "http", "port": 80, "protocol": "TCP", "nodePort": 30080},
        {"name": "dns", "port": 53, "protocol": "UDP", "nodePort": 30053},
    ]
    spec = spec_of(ports=ports)
    assert [(li.index, li.protocol_port, li.pool.name) for li in spec.listeners] == [
        (0, 80, f"pool_0_{LB}"),
        (1, 53, f"pool_1_{LB}"),
    ]
    assert spec.listeners[1].pool.members[0].protocol_port == 30053


def test_allocate_load_balancer_node_ports_false_gives_empty_pools() -> None:
    ports = [{"port": 80, "protocol": "TCP"}]
    spec = spec_of(ports=ports, allocateLoadBalancerNodePorts=False)
    assert spec.listeners[0].node_port == 0
    assert spec.listeners[0].pool.members == ()


def test_members_sorted_whatever_the_node_order() -> None:
    nodes = [make_node(n, internal=f"10.0.0.{i}") for i, n in enumerate(["c", "a", "b"], 1)]
    first = spec_of(nodes=nodes)
    second = spec_of(nodes=list(reversed(nodes)))
    assert [m.name for m in first.listeners[0].pool.members] == ["a", "b", "c"]
    assert first == second
    assert first.spec_hash() == second.spec_hash()


def test_node_without_address_is_a_notice() -> None:
    result = build(nodes=[make_node("a", internal="10.0.0.1"), make_node("bare")])
    assert result.spec is not None
    assert [m.name for m in result.spec.listeners[0].pool.members] == ["a"]
    assert any("bare" in n.field for n in result.notices)


def test_manage_security_groups() -> None:
    config = config_from("[LoadBalancer]\nmanage-security-groups=true\n")
    spec = spec_of(config=config, healthCheckNodePort=32000, externalTrafficPolicy="Local")
    sg = spec.security_group
    assert sg is not None
    assert sg.name == "lb-sg-6d0ad3ad-4c8e-4a4e-9bb0-0c6b7d3e8f10-default-example-service"
    assert [(r.protocol, r.port_range_min, r.remote_ip_prefix) for r in sg.rules] == [
        ("tcp", 30593, None),
        ("tcp", 32000, None),
    ]


def test_ovn_provider() -> None:
    config = config_from(
        "[LoadBalancer]\nlb-provider=ovn\nlb-method=SOURCE_IP_PORT\nmanage-security-groups=true\n"
    )
    spec = spec_of(config=config, loadBalancerSourceRanges=["10.0.0.0/8"])
    listener = spec.listeners[0]
    assert listener.allowed_cidrs == ()
    assert listener.timeout_client_data is None
    assert spec.security_group is not None
    assert spec.security_group.rules[0].remote_ip_prefix == "10.0.0.0/8"


def test_proxy_with_ingress_hostname() -> None:
    config = config_from("[LoadBalancer]\nenable-ingress-hostname=true\n")
    spec = spec_of({P + "proxy-protocol": "true"}, config=config)
    assert spec.status.hostname_suffix == "nip.io"


def test_spec_is_a_loadbalancerspec() -> None:
    assert isinstance(spec_of(), LoadBalancerSpec)


@pytest.mark.parametrize("tags", ["a,,b", "a b", " a , b "])
def test_floating_subnet_tags_are_split_as_occm_splits_them(tags: str) -> None:
    spec = spec_of({P + "floating-subnet-tags": tags})
    assert spec.floating_ip is not None
    assert spec.floating_ip.subnet_tags == tags


def test_a_bad_annotation_pattern_is_named_over_a_good_cloud_conf_one() -> None:
    # the annotation wins over [LoadBalancer] (OCCM), so the error is the annotation's
    config = config_from("[LoadBalancer]\nfloating-subnet-tags=a\n")
    result = build({P + "floating-subnet": "~(?<=x)y"}, config=config)
    assert result.spec is None
    assert [e.field for e in result.errors] == [f'metadata.annotations["{P}floating-subnet"]']


def test_tag_annotations_as_occm_splits_them() -> None:
    """OCCM 2.36 (PR #3149): split at commas and white space, empty ones dropped."""
    spec = spec_of(
        {
            P + "load-balancer-tags": "env=prod, team=net,,env=prod",
            P + "listener-tags": "a b",
            P + "pool-tags": " p ",
        }
    )
    assert spec.tags == (LB,)  # the Service's name: what its security group carries too
    assert spec.extra_tags == ("env=prod", "team=net")
    assert spec.lb_tags() == (LB, "env=prod", "team=net")
    (listener,) = spec.listeners
    assert listener.tags == (LB, "a", "b")
    assert listener.pool.tags == ("p",)


def test_tag_annotations_add_nothing_to_a_spec_without_them() -> None:
    """A field added later must not change the hash of a spec that does not use it (one `up`
    for every Service after an upgrade) nor stop older specs from being read."""
    data = spec_of().to_dict()
    assert "extra_tags" not in data
    assert "tags" not in data["listeners"][0]["pool"]
    assert LoadBalancerSpec.from_dict(data) == spec_of()


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("x" * 256, "longer than 255 characters"),
        ("ok,kube_service_kubernetes_default_other", "how Services and clusters are counted"),
        ("kube_cluster_id_1234", "how Services and clusters are counted"),
    ],
)
@pytest.mark.parametrize("key", ["load-balancer-tags", "listener-tags", "pool-tags"])
def test_a_tag_the_cloud_cannot_take_is_refused_naming_the_annotation(
    key: str, value: str, said: str
) -> None:
    result = build({P + key: value})
    assert result.spec is None
    assert [e.field for e in result.errors] == [f'metadata.annotations["{P}{key}"]']
    assert said in str(result.errors[0])

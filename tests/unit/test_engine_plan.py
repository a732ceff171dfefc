"""Pure parts of the engine: stack names, tags, skip rule, provider config, crash leftovers."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from reconciler.config import AuthConfig, Secret
from reconciler.engine.errors import (
    ConflictError,
    InternalError,
    InvalidConfigError,
    QuotaError,
    error_class,
)
from reconciler.engine.lost import (
    carried_imports,
    lost_children,
    lost_lookups,
    pending_creates,
    unsettled,
)
from reconciler.engine.plan import (
    HASH_TAG,
    OWNS_TAG,
    VIP_SUBNET_TAG,
    output_tags,
    outputs_from_tags,
    should_skip,
    stack_name,
    stack_tags,
)
from reconciler.engine.provider_config import provider_config, secret_values
from reconciler.engine.redact import redact
from reconciler.engine.stack_spec import spec_for_stack
from tests.unit.model_helpers import UUID1, UUID2, spec_of

SAFE = st.from_regex(r"[a-z0-9]([a-z0-9-]{0,20}[a-z0-9])?", fullmatch=True)


def test_stack_name_is_readable_when_it_can_be() -> None:
    assert stack_name(cluster_name="prod", namespace="default", name="web") == "prod.default.web"


def test_stack_name_sanitizes_and_suffixes_a_digest() -> None:
    a = stack_name(cluster_name="prod.eu", namespace="default", name="web")
    b = stack_name(cluster_name="prod_eu", namespace="default", name="web")
    assert a != b
    assert a.startswith("prod_eu.default.web-")
    assert b == "prod_eu.default.web"


@given(cluster=st.text(min_size=1, max_size=120), namespace=SAFE, name=SAFE)
def test_stack_names_are_valid_and_stable(cluster: str, namespace: str, name: str) -> None:
    got = stack_name(cluster_name=cluster, namespace=namespace, name=name)
    assert len(got) <= 100
    assert all(c.isascii() and (c.isalnum() or c in "._-") for c in got)
    assert got == stack_name(cluster_name=cluster, namespace=namespace, name=name)


def test_long_names_do_not_collide() -> None:
    long = "n" * 63
    a = stack_name(cluster_name="c" * 40, namespace=long, name=long + "a"[:0])
    b = stack_name(cluster_name="c" * 40, namespace=long, name=long[:-1] + "m")
    assert a != b
    assert len(a) <= 100


def test_tags_and_skip() -> None:
    tags = stack_tags(cluster_name="c", namespace="ns", name="n", uid="u")
    assert tags == {"lbr:cluster": "c", "lbr:namespace": "ns", "lbr:name": "n", "lbr:uid": "u"}
    assert should_skip(tags={HASH_TAG: "abc"}, spec_hash="abc")
    assert not should_skip(tags={}, spec_hash="abc")
    assert not should_skip(tags={HASH_TAG: "abd"}, spec_hash="abc")


LB, SUBNET = UUID1, UUID2


def test_output_tags_round_trip_the_outputs_a_skip_reports() -> None:
    floating = {"lb_id": LB, "shared": False, "vip_subnet_id": SUBNET, "vip_address": "10.0.0.5"}
    floating["floating_ip"] = "172.24.4.10"
    floating["fip_keep"] = True
    tags = output_tags(floating)
    assert tags == {
        "lbr:lb-id": LB,
        "lbr:shared": "false",
        "lbr:owns-lb": LB,
        "lbr:vip-subnet": SUBNET,
        "lbr:vip-address": "10.0.0.5",
        "lbr:external-ip": "172.24.4.10",
        "lbr:keep-fip": "true",
    }
    assert outputs_from_tags(tags) == {
        "lb_id": LB,
        "vip_address": "10.0.0.5",
        "floating_ip": "172.24.4.10",
        "shared": False,
        "vip_subnet_id": SUBNET,
        "fip_keep": True,
    }
    internal = {"lb_id": LB, "shared": True, "vip_address": "10.0.0.5", "floating_ip": None}
    tags = output_tags(internal)
    assert "lbr:owns-lb" not in tags
    assert tags["lbr:external-ip"] == "10.0.0.5"
    assert outputs_from_tags(tags) == {
        "lb_id": LB,
        "vip_address": "10.0.0.5",
        "floating_ip": None,  # the external IP is the VIP: no floating IP
        "shared": True,
        "vip_subnet_id": None,
        "fip_keep": False,
    }


def test_outputs_from_tags_needs_every_tag() -> None:
    """A stack tagged before lbr:vip-address existed: read the outputs instead."""
    tags = output_tags({"lb_id": LB, "vip_address": "10.0.0.5"})
    for key in ("lbr:lb-id", "lbr:vip-address", "lbr:external-ip"):
        assert outputs_from_tags({k: v for k, v in tags.items() if k != key}) is None


def test_provider_config_holds_no_secret() -> None:
    auth = AuthConfig(
        auth_url="http://keystone/v3",
        username="demo",
        password=Secret("s3cret"),
        tenant_name="demo",
        application_credential_secret=Secret("appsecret"),
        tls_insecure=True,
    )
    config = provider_config(auth)
    assert config["openstack:authUrl"] == "http://keystone/v3"
    assert config["openstack:userName"] == "demo"
    assert config["openstack:insecure"] == "true"
    for key in ("password", "token", "applicationCredentialSecret"):
        assert f"openstack:{key}" not in config
    assert "s3cret" not in config.values()
    assert "appsecret" not in config.values()
    assert sorted(secret_values(auth)) == ["appsecret", "s3cret"]


def test_error_class() -> None:
    assert error_class("lb-reconciler invalid spec: max-shared-lb") is InvalidConfigError
    assert error_class("Expected HTTP response code [] ... 409 Invalid state PENDING_UPDATE") is (
        ConflictError
    )
    assert error_class("error: [Conflict] Quota has been met for resources") is QuotaError
    assert error_class("Bad request with: 400 Invalid input for field") is InvalidConfigError
    assert error_class("panic: nil pointer") is InternalError


def test_redact() -> None:
    assert redact("password=hunter2 ok", ["hunter2", ""]) == "password=[secret] ok"


def test_pending_creates() -> None:
    deployment = {
        "pending_operations": [
            {
                "type": "creating",
                "resource": {
                    "urn": "urn:pulumi:s::lb-reconciler::openstack:loadbalancer/loadBalancer:"
                    "LoadBalancer::lb",
                    "type": "openstack:loadbalancer/loadBalancer:LoadBalancer",
                    "inputs": {"name": "kube_service_c_ns_n", "vipSubnetId": "x"},
                },
            },
            {
                "type": "creating",
                "resource": {
                    "urn": "urn:...::members-tcp-80",
                    "type": "openstack:loadbalancer/members:Members",
                    "inputs": {"poolId": "p"},
                },
            },
            {"type": "updating", "resource": {"urn": "u", "type": "t", "inputs": {}}},
        ]
    }
    found = pending_creates(deployment)
    assert [(p.type.rsplit(":", 1)[-1], p.idempotent) for p in found] == [
        ("LoadBalancer", False),
        ("Members", True),
    ]
    assert found[0].find_by == {"name": "kube_service_c_ns_n"}
    assert [p.name for p in found] == ["lb", "members-tcp-80"]
    assert pending_creates({}) == []


def test_cut_off_updates_and_deletes_are_unsettled_creates_and_reads_are_not() -> None:
    ops = [
        {"type": kind, "resource": {"urn": f"urn:{kind}", "type": "t", "inputs": {}}}
        for kind in ("creating", "updating", "deleting", "reading", "importing")
    ]
    assert unsettled({"pending_operations": ops}) == ["urn:updating", "urn:deleting"]
    assert unsettled({}) == []


def test_a_pending_listener_is_found_by_its_port_too() -> None:
    """OCCM's listener names are by index: after a port change two listeners of one load
    balancer can carry the same name, so the port tells them apart."""
    inputs = {"name": "listener_0_x", "loadbalancerId": "lb-1", "protocol": "TCP"}
    resource = {
        "urn": "urn:...::listener-tcp-80",
        "type": "openstack:loadbalancer/listener:Listener",
        "inputs": {**inputs, "protocolPort": 80, "connectionLimit": -1},
    }
    found = pending_creates({"pending_operations": [{"type": "creating", "resource": resource}]})
    assert found[0].find_by == {**inputs, "protocolPort": "80"}


def test_lost_lookups_are_the_load_balancer_and_floating_ip_the_spec_wants() -> None:
    spec = spec_of()
    found = {p.name: (p.type.rsplit(":", 1)[-1], p.find_by) for p in lost_lookups(spec)}
    assert spec.floating_ip is not None
    assert found == {
        "lb": ("LoadBalancer", {"name": "kube_service_kubernetes_default_example-service"}),
        "fip": ("FloatingIp", {"description": spec.floating_ip.description}),
    }
    internal = spec_of({"service.beta.kubernetes.io/openstack-internal-load-balancer": "true"})
    assert [p.name for p in lost_lookups(internal)] == ["lb"]
    shared = spec_of({"loadbalancer.openstack.org/load-balancer-id": UUID1})
    assert lost_lookups(shared) == []  # another stack's load balancer: nothing of ours to find


def test_lost_children_include_those_of_the_spec_the_unfinished_up_was_given() -> None:
    """A port changed again before the retry: the old port's lost objects are looked for too
    (the CI chaos run's "2 pools for 1 listeners"), after the new spec's, each name once."""

    def ports(*numbers: int) -> list[dict[str, object]]:
        return [
            {"name": f"p{n}", "port": n, "protocol": "TCP", "nodePort": 30000 + n} for n in numbers
        ]

    now, before = spec_of(ports=ports(9443)), spec_of(ports=ports(80, 8443))
    names = [p.name for p in lost_children(now, before)]
    assert names == [
        "listener-tcp-9443",
        "pool-tcp-9443",
        "listener-tcp-80",
        "pool-tcp-80",
        "listener-tcp-8443",
        "pool-tcp-8443",
    ]
    assert [p.name for p in lost_children(now, now, None)] == names[:2]
    old_pool = lost_children(now, before)[5]
    assert old_pool.find_by["listenerId"] == "@listener-tcp-8443"  # its own listener's ID


def test_carried_imports_are_read_from_the_stack_config_file() -> None:
    key = "lb-reconciler:imports"
    text = f"""config:\n  {key}: '{{"lb": "lb-1", "listener-tcp-80": "li-1"}}'\n  x:y: z\n"""
    assert carried_imports(text, key=key) == {"lb": "lb-1", "listener-tcp-80": "li-1"}
    assert carried_imports(f"config:\n  {key}: '{{}}'\n", key=key) == {}
    assert carried_imports("config:\n  other: 1\n", key=key) == {}
    assert carried_imports("", key=key) == {}
    assert carried_imports(f"config:\n  {key}: 'not json'\n", key=key) == {}
    assert carried_imports(f"config:\n  {key}: '[1]'\n", key=key) == {}
    assert carried_imports("- a list\n", key=key) == {}


def test_own_load_balancer_id_is_not_a_shared_one() -> None:
    plain = spec_of()
    annotated = spec_of({"loadbalancer.openstack.org/load-balancer-id": UUID1})
    assert annotated.existing_lb_id == UUID1
    own = spec_for_stack(annotated, tags={OWNS_TAG: UUID1})
    assert own == plain
    assert own.spec_hash() == plain.spec_hash()
    # another Service's load balancer, or a stack that owns none, keeps the request to share
    assert spec_for_stack(annotated, tags={OWNS_TAG: UUID2}) == annotated
    assert spec_for_stack(annotated, tags={}) == annotated


def test_an_autodetected_vip_subnet_is_kept_once_detected() -> None:
    node_a = spec_of()  # the default config has no subnet-id: the first Node decides
    assert node_a.vip_autodetect_address is not None
    kept = spec_for_stack(node_a, tags={VIP_SUBNET_TAG: UUID2})
    assert kept.vip_subnet_id == UUID2
    assert kept.vip_autodetect_address is None
    # before the first up nothing was detected: the spec is applied as built
    assert spec_for_stack(node_a, tags={}) == node_a

"""A VIP subnet-id or network-id of the wrong IP family is an invalid spec, found in the cloud.

``stacks.lookups.check_vip_family`` runs inside a real Pulumi program (Automation API, the
toolchain's CLI and provider, the engine's backend and provider configuration) against the
emulator: the tenant network gets an IPv6 subnet, and an IPv6-only network is made, both by the
demo user. Each case previews a program that only runs the lookup for a spec whose first IP
family, subnet-id and network-id are set; a mismatch must fail with the lookup's message (the
field, the families and the fix), a match must pass. The cases share one stack, made and
configured once (a ``preview`` per case, not four ``pulumi`` starts).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest
from pulumi import automation as auto

from reconciler.engine.provider_config import provider_config
from reconciler.model import LoadBalancerSpec
from reconciler.toolchain import Toolchain
from stacks import lookups
from stacks.vocabulary import INVALID_SPEC_MARKER
from tests.builders import stored_service
from tests.emulated import connect
from tests.integration.engine.conftest import Cloud, Env, spec_for


@pytest.fixture(scope="module")
def env(
    toolchain: Toolchain,
    topo: dict[str, Any],
    cloud: Cloud,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Env]:
    """The engine's environment for the module's cases (its state folder, the emulator)."""
    state = tmp_path_factory.mktemp("lookup") / "lbr"
    yield Env(topo=topo, cloud=cloud, toolchain=toolchain, state_dir=state)
    cloud.wait_nothing_created(timeout=15)


@pytest.fixture(scope="module")
def nets(env: Env) -> Iterator[dict[str, str]]:
    t = env.topo
    conn = connect(t)
    v6 = conn.network.create_subnet(
        network_id=t["network_id"], name="private-v6", cidr="fd00:10::/64", ip_version=6
    )
    only_v6 = conn.network.create_network(name="v6-only")
    only_v6_subnet = conn.network.create_subnet(
        network_id=only_v6.id, name="v6-only-subnet", cidr="fd00:20::/64", ip_version=6
    )
    try:
        yield {
            "v4_subnet": t["subnet_id"],
            "v6_subnet": v6.id,
            "dual_network": t["network_id"],
            "v6_network": only_v6.id,
        }
    finally:
        conn.network.delete_subnet(only_v6_subnet.id)
        conn.network.delete_network(only_v6.id)
        conn.network.delete_subnet(v6.id)


@pytest.fixture(scope="module")
def lookup_stack(env: Env, tmp_path_factory: pytest.TempPathFactory) -> auto.Stack:
    """A stack of a lookup-only project, with the engine's backend and provider configuration."""
    config = env.config()
    engine = env.engine(config)
    work_dir = tmp_path_factory.mktemp("lookup-project")
    opts = auto.LocalWorkspaceOptions(
        work_dir=str(work_dir),
        pulumi_command=engine.pulumi_command,
        project_settings=auto.ProjectSettings(name="lbr-lookup-test", runtime="python"),
        env_vars=engine.env(),
        secrets_provider=engine.settings.secrets_provider,
    )
    stack = auto.create_stack(
        stack_name="vipfamily", project_name="lbr-lookup-test", program=lambda: None, opts=opts
    )
    # the credentials reach the provider in engine.env(), as the engine's own stacks get them
    stack.set_all_config({k: auto.ConfigValue(v) for k, v in provider_config(config.auth).items()})
    return stack


def _check(stack: auto.Stack, spec: LoadBalancerSpec) -> None:
    """Preview a program that runs only the lookup; raises auto.CommandError if it fails."""
    stack.preview(program=lambda: lookups.check_vip_family(spec))


def _spec(env: Env, family: str, **vip: Any) -> LoadBalancerSpec:
    spec = spec_for(stored_service("family"), env.config())
    fields = {"vip_subnet_id": None, "vip_network_id": None, **vip}
    return dataclasses.replace(spec, ip_family=family, **fields)


@pytest.mark.parametrize(
    ("family", "vip", "says"),
    [
        ("IPv4", {"vip_subnet_id": "v6_subnet"}, r"subnet-id \S+ is an IPv6 subnet.*IPv4"),
        ("IPv6", {"vip_subnet_id": "v4_subnet"}, r"subnet-id \S+ is an IPv4 subnet.*IPv6"),
        ("IPv4", {"vip_network_id": "v6_network"}, r"network-id \S+ has no IPv4 subnet"),
        ("IPv6", {"vip_network_id": "dual_network"}, r"network-id .*IPv4 .*set subnet-id"),
        (
            "IPv4",
            {"vip_subnet_id": "v6_subnet", "vip_network_id": "dual_network"},
            r"subnet-id \S+ is an IPv6 subnet",
        ),
    ],
)
def test_wrong_family_is_an_invalid_spec(
    env: Env,
    nets: dict[str, str],
    lookup_stack: auto.Stack,
    family: str,
    vip: dict[str, str],
    says: str,
) -> None:
    spec = _spec(env, family, **{k: nets[v] for k, v in vip.items()})
    with pytest.raises(auto.CommandError, match=INVALID_SPEC_MARKER + ".*" + says):
        _check(lookup_stack, spec)


@pytest.mark.parametrize(
    ("family", "vip"),
    [
        ("IPv4", {"vip_subnet_id": "v4_subnet"}),
        ("IPv6", {"vip_subnet_id": "v6_subnet"}),
        ("IPv4", {"vip_network_id": "dual_network"}),
        ("IPv6", {"vip_network_id": "v6_network"}),
        ("IPv6", {"vip_subnet_id": "v6_subnet", "vip_network_id": "dual_network"}),
    ],
)
def test_right_family_passes(
    env: Env, nets: dict[str, str], lookup_stack: auto.Stack, family: str, vip: dict[str, str]
) -> None:
    _check(lookup_stack, _spec(env, family, **{k: nets[v] for k, v in vip.items()}))


def test_a_subnet_that_does_not_exist_is_named(env: Env, lookup_stack: auto.Stack) -> None:
    missing = "0a0a0a0a-0000-4000-8000-000000000000"
    with pytest.raises(auto.CommandError, match=f"subnet-id {missing} does not exist"):
        _check(lookup_stack, _spec(env, "IPv4", vip_subnet_id=missing))

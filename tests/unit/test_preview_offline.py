"""A preview without the cloud and on a throw-away copy: the pure parts.

When the cloud is asked (:func:`reconciler.cli.preview_offline.has_credentials`), which lookups
an older stack's outputs still give (:func:`reconciler.engine.preview_offline.recorded_lookups`),
how a checkpoint is copied into the sandbox (:func:`reconciler.engine.sandbox.sandboxed_checkpoint`)
and the Nodes a stack was applied with (:func:`reconciler.cli.preview_plan.nodes_from_spec`).
"""

from __future__ import annotations

from typing import Any

import pytest

from reconciler.cli.preview_offline import has_credentials, offline_notes
from reconciler.cli.preview_plan import nodes_from_spec, selector_labels
from reconciler.config import AuthConfig, Secret, default_config, with_overrides
from reconciler.engine.preview_offline import recorded_lookups
from reconciler.engine.sandbox import SandboxError, sandboxed_checkpoint
from reconciler.model import build_spec
from tests.builders import example_nodes, stored_service
from tests.unit.model_helpers import spec_of

SECRET = {"4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", "ciphertext": "x"}


def test_the_cloud_is_asked_only_with_a_credential() -> None:
    assert not has_credentials(AuthConfig(auth_url="http://k", username="u"))
    assert has_credentials(AuthConfig(password=Secret("p")))
    assert has_credentials(AuthConfig(application_credential_secret=Secret("s")))
    assert has_credentials(AuthConfig(token=Secret("t")))


def test_a_new_service_says_what_only_the_cloud_knows() -> None:
    notes = offline_notes(["the external network"], new=True, name="kube_service_x")
    assert notes[0] == "not checked (no cloud credentials): the external network"
    assert "kube_service_x" in notes[1]
    assert "quotas" in notes[1]
    assert offline_notes([], new=False, name="x") == ()


def test_a_stack_s_recorded_lookups_win() -> None:
    recorded = {"external-network": "net"}
    assert recorded_lookups({"lookups": recorded, "spec": "{}"}) == recorded
    assert recorded_lookups(None) == {}
    assert recorded_lookups({"spec": None}) == {}


def test_an_older_stack_gives_the_lookups_that_decide_a_replacement() -> None:
    spec = spec_of()  # no subnet given: autodetected from a Node's port; a floating IP
    assert spec.vip_autodetect_address
    outputs = {
        "spec": spec.canonical_json(),
        "vip_subnet_id": "subnet-1",
        "fip_network_id": "net-1",
    }
    deployment = {
        "resources": [
            {"type": "openstack:networking/floatingIp:FloatingIp", "inputs": {"pool": "public"}}
        ]
    }
    assert recorded_lookups(outputs, deployment) == {
        f"vip-subnet {spec.vip_autodetect_address} {spec.ip_family}": "subnet-1",
        "external-network": "net-1",
        "network-name net-1": "public",
    }


def test_an_older_stack_s_vip_subnet_passed_its_check() -> None:
    spec = spec_of({"loadbalancer.openstack.org/subnet-id": "11111111-1111-4111-8111-111111111111"})
    found = recorded_lookups({"spec": spec.canonical_json(), "vip_subnet_id": spec.vip_subnet_id})
    assert found == {f"vip-family {spec.vip_subnet_id} None {spec.ip_family}": True}


def checkpoint(resources: list[dict[str, Any]]) -> dict[str, Any]:
    provider = {"type": "passphrase", "state": {"salt": "v1:theirs"}}
    latest = {"manifest": {}, "secrets_providers": provider, "resources": resources}
    return {"version": 3, "checkpoint": {"stack": "o/p/s", "latest": latest}}


def test_a_copy_without_secrets_takes_the_sandbox_s_salt() -> None:
    doc = checkpoint([{"urn": "u", "outputs": {"a": 1}}])
    copied = sandboxed_checkpoint(doc, salt_state="v1:ours", passphrase_known=False)
    latest = copied["checkpoint"]["latest"]
    assert latest["secrets_providers"] == {"type": "passphrase", "state": {"salt": "v1:ours"}}
    assert latest["resources"] == doc["checkpoint"]["latest"]["resources"]
    assert doc["checkpoint"]["latest"]["secrets_providers"]["state"]["salt"] == "v1:theirs"
    never = {"version": 3, "checkpoint": {"stack": "o/p/s"}}
    assert sandboxed_checkpoint(never, salt_state="v1:ours", passphrase_known=False) == never


def test_a_copy_with_secrets_needs_the_passphrase() -> None:
    doc = checkpoint([{"urn": "u", "inputs": {"password": SECRET}}])
    with pytest.raises(SandboxError, match="PULUMI_CONFIG_PASSPHRASE"):
        sandboxed_checkpoint(doc, salt_state="v1:ours", passphrase_known=False)
    kept = sandboxed_checkpoint(doc, salt_state="v1:ours", passphrase_known=True)
    assert kept == doc  # its own salt: the controller's passphrase opens it


def test_the_nodes_a_stack_was_applied_with() -> None:
    config = with_overrides(default_config(), node_selector="pool=lb")
    nodes = [
        {**n, "metadata": {**n["metadata"], "labels": {"pool": "lb"}}} for n in example_nodes()
    ]
    service = stored_service("web")
    applied = build_spec(service=service, nodes=nodes, config=config, cluster_name="c").spec
    assert applied is not None
    assert applied.listeners[0].pool.members  # the nodes' addresses on the service's node port
    labels = selector_labels(service, config)
    assert labels == {"pool": "lb"}
    rebuilt = nodes_from_spec(applied, labels)
    again = build_spec(service=service, nodes=rebuilt, config=config, cluster_name="c").spec
    assert again is not None
    assert again.listeners == applied.listeners  # the same members, addresses and ports
    assert again.vip_autodetect_address == applied.vip_autodetect_address
    assert nodes_from_spec(None, {}) == []

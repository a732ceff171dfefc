"""LoadBalancerSpec: JSON round trip, canonical form, and a hash stable across processes."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from reconciler.model import LoadBalancerSpec
from tests.unit.model_helpers import config_from, spec_of

P = "loadbalancer.openstack.org/"
ROOT = Path(__file__).resolve().parents[2]

RICH = {
    P + "x-forwarded-for": "true",
    P + "enable-health-monitor": "true",
    P + "keep-floatingip": "true",
    P + "floating-subnet-tags": "public",
    P + "hostname": "lb.example.org",
}


def rich_spec() -> LoadBalancerSpec:
    config = config_from("[LoadBalancer]\nmanage-security-groups=true\n")
    return spec_of(
        RICH,
        config=config,
        sessionAffinity="ClientIP",
        externalTrafficPolicy="Local",
        healthCheckNodePort=31000,
        loadBalancerSourceRanges=["10.0.0.0/8", "192.168.0.0/16"],
    )


@pytest.mark.parametrize("make", [spec_of, rich_spec])
def test_json_round_trip(make: object) -> None:
    spec = make()  # type: ignore[operator]
    data = json.loads(json.dumps(spec.to_dict()))
    again = LoadBalancerSpec.from_dict(data)
    assert again == spec
    assert again.spec_hash() == spec.spec_hash()
    assert data["version"] == 1


def test_to_dict_shapes() -> None:
    data = rich_spec().to_dict()
    listener = data["listeners"][0]
    assert listener["insert_headers"] == {"X-Forwarded-For": "true"}
    assert listener["allowed_cidrs"] == ["10.0.0.0/8", "192.168.0.0/16"]
    assert listener["pool"]["session_persistence"] == "SOURCE_IP"
    assert data["security_group"]["rules"][0]["protocol"] == "tcp"


def test_from_dict_rejects_wrong_version_and_shapes() -> None:
    data = spec_of().to_dict()
    with pytest.raises(ValueError, match="version"):
        LoadBalancerSpec.from_dict({**data, "version": 99})
    with pytest.raises(ValueError, match="missing"):
        LoadBalancerSpec.from_dict({k: v for k, v in data.items() if k != "name"})
    with pytest.raises(ValueError, match="expected int"):
        LoadBalancerSpec.from_dict({**data, "max_shared_lb": "2"})


def test_hash_changes_with_content_and_not_with_node_order() -> None:
    base = spec_of()
    assert spec_of({P + "connection-limit": "10"}).spec_hash() != base.spec_hash()
    assert spec_of().spec_hash() == base.spec_hash()
    assert len(base.spec_hash()) == 64


def test_canonical_json_is_sorted_and_compact() -> None:
    spec = spec_of()
    text = spec.canonical_json()
    assert text == json.dumps(spec.to_dict(), sort_keys=True, separators=(",", ":"))
    assert ", " not in text.replace(spec.description, "").replace(
        spec.floating_ip.description if spec.floating_ip else "", ""
    )
    assert list(json.loads(text)) == sorted(json.loads(text))


SCRIPT = """
from tests.unit.test_model_spec import rich_spec
print(rich_spec().spec_hash())
"""


def test_hash_is_equal_across_processes_and_hash_seeds() -> None:
    hashes = set()
    for seed in ("0", "1", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(ROOT)}
        out = subprocess.run(
            [sys.executable, "-c", SCRIPT],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
        hashes.add(out.stdout.strip())
    assert hashes == {rich_spec().spec_hash()}


def test_spec_is_frozen() -> None:
    spec = spec_of()
    with pytest.raises(AttributeError):
        spec.name = "x"  # type: ignore[misc]


def test_owning_clears_only_the_stacks_own_load_balancer() -> None:
    spec = replace(rich_spec(), existing_lb_id="lb-own")
    assert spec.owning("lb-own").existing_lb_id is None
    assert spec.owning("lb-own").spec_hash() == replace(spec, existing_lb_id=None).spec_hash()
    assert spec.owning("lb-other") is spec  # someone else's: a real request to share it
    assert spec.owning(None) is spec


def test_a_spec_stored_before_fields_were_removed_still_reads() -> None:
    """``serial_api_calls`` and ``cascade_delete`` were in every spec stored before their removal
    (the stack's ``spec`` output and config), always ``false`` and ``true``: cloud.conf refuses
    the other values. Such a spec reads as the same spec; its hash differs, which costs one
    ``up`` per stack after the upgrade (docs/engine.md, "Upgrades")."""
    from reconciler.engine.plan import applied_spec_from

    spec = rich_spec()
    stored = {**spec.to_dict(), "serial_api_calls": False, "cascade_delete": True}
    text = json.dumps(stored, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    assert LoadBalancerSpec.from_dict(json.loads(text)) == spec
    assert applied_spec_from({"spec": text}) == spec
    assert hashlib.sha256(text.encode("ascii")).hexdigest() != spec.spec_hash()

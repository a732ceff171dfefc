"""Barbican's secrets and containers, and Octavia's check of a listener's certificate
references against them (Octavia 19 ``api/v2/controllers/base.py`` ``_validate_tls_refs``)."""

from __future__ import annotations

import pytest

from emulator.cloud import Cloud
from emulator.context import AuthContext
from emulator.errors import BadRequest, NotFound
from emulator.timing import ManualClock
from tests.unit.emulator.test_octavia import active_lb, settle

BASE = "http://emu/key-manager"


def certificate(cloud: Cloud, ctx: AuthContext) -> str:
    """A certificate container of ``ctx``'s project, as ``openstack secret container create``
    makes one; its reference."""
    b = cloud.barbican
    cert = b.create_secret(
        ctx, {"name": "c", "payload": "PEM", "payload_content_type": "text/plain"}
    )
    key = b.create_secret(
        ctx, {"name": "k", "payload": "KEY", "payload_content_type": "text/plain"}
    )
    made = b.create_container(
        ctx,
        {
            "name": "web-tls",
            "type": "certificate",
            "secret_refs": [
                {"name": "certificate", "secret_ref": f"{BASE}/v1/secrets/{cert['id']}"},
                {"name": "private_key", "secret_ref": f"{BASE}/v1/secrets/{key['id']}"},
            ],
        },
        BASE,
    )
    return f"{BASE}/v1/containers/{made['id']}"


def test_secrets_and_containers_belong_to_their_project(cloud: Cloud, ctx: AuthContext) -> None:
    ref = certificate(cloud, ctx)
    other = AuthContext(user_id="o", project_id="another-project", roles=("member",))
    ident = ref.rsplit("/", 1)[1]
    assert cloud.barbican.container(ctx, ident)["type"] == "certificate"
    with pytest.raises(NotFound, match=r"^Secrets container not found\.$"):
        cloud.barbican.container(other, ident)
    assert cloud.barbican.readable(ref, ctx)
    assert not cloud.barbican.readable(ref, other)
    assert not cloud.barbican.readable(f"{BASE}/v1/containers/no-such", ctx)
    assert not cloud.barbican.readable("not a reference", ctx)
    with pytest.raises(NotFound, match=r"^Secret not found\.$"):
        cloud.barbican.create_container(
            ctx, {"secret_refs": [{"name": "x", "secret_ref": f"{BASE}/v1/secrets/gone"}]}, BASE
        )
    with pytest.raises(BadRequest, match="'payload_content_type' must also be supplied"):
        cloud.barbican.create_secret(ctx, {"payload": "x"})


def test_a_terminated_https_listener_needs_a_reference_barbican_knows(
    cloud: Cloud, clock: ManualClock, ctx: AuthContext, topo: dict[str, str]
) -> None:
    lb = active_lb(cloud, clock, ctx, topo)
    body = {"loadbalancer_id": lb["id"], "protocol": "TERMINATED_HTTPS", "protocol_port": 443}
    gone = f"{BASE}/v1/containers/0d1c7a52-0000-4000-8000-000000000000"
    with pytest.raises(BadRequest) as refused:
        cloud.octavia.create_listener(ctx, {**body, "default_tls_container_ref": gone})
    assert refused.value.message == f"Could not retrieve certificate: ['{gone}']"
    assert cloud.store.all("listener") == []  # nothing made
    ref = certificate(cloud, ctx)
    made = cloud.octavia.create_listener(ctx, {**body, "default_tls_container_ref": ref})
    settle(cloud, clock)
    with pytest.raises(BadRequest, match=r"Could not retrieve certificate: \['x'\]"):
        cloud.octavia.update_listener(ctx, made["id"], {"sni_container_refs": ["x"]})

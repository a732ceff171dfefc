"""Create-only fields (reconciler/model/frozen.py and engine/stack_spec.py): what the load
balancer was made with stays; each edit of such a field is listed, and hashes like no edit."""

from __future__ import annotations

import dataclasses

import pytest

from reconciler.engine.plan import (
    CLUSTER_ID_TAG,
    CREATE_ONLY_TAG,
    FIP_NETWORK_TAG,
    FIP_SUBNET_TAG,
    OWNS_TAG,
    output_tags,
)
from reconciler.engine.stack_spec import (
    create_only_record,
    create_only_tags,
    stack_spec,
    stale_create_only_tags,
    unprotect_before_up,
)
from reconciler.model import annotations as a
from reconciler.model.frozen import CreateOnly, freeze, made_with
from reconciler.model.naming import floating_ip_to_delete
from tests.unit.model_helpers import UUID1, UUID2, UUID3, config_from, spec_of

VIP_SUBNET = "44444444-4444-4444-8444-444444444444"
OUTPUTS = {
    "lb_id": UUID3,
    "vip_address": "10.0.0.50",
    "floating_ip": "172.24.4.10",
    "vip_subnet_id": VIP_SUBNET,
}


def _frozen(spec, *, tags):
    got = stack_spec(spec, tags=tags)
    return got.spec, got.frozen


def _no_member_subnet(spec):
    listeners = tuple(
        dataclasses.replace(
            li,
            pool=dataclasses.replace(
                li.pool,
                members=tuple(dataclasses.replace(m, subnet_id=None) for m in li.pool.members),
            ),
        )
        for li in spec.listeners
    )
    return dataclasses.replace(spec, member_subnet_id=None, listeners=listeners)


def _made(spec):  # the tags an up of `spec` records
    return {**output_tags(OUTPUTS), **create_only_tags(spec, OUTPUTS)}


@pytest.mark.parametrize(
    ("annotations", "field", "asked"),
    [
        ({a.AVAILABILITY_ZONE: "az-2"}, "availability_zone", "az-2"),
        ({a.FLAVOR_ID: UUID1}, "flavor_id", UUID1),
        ({a.SUBNET_ID: UUID1}, "vip_subnet_id", UUID1),
        ({a.NETWORK_ID: UUID1}, "vip_network_id", UUID1),
        ({a.PORT_ID: UUID1}, "vip_port_id", UUID1),
        ({a.LOAD_BALANCER_ID: UUID2}, "existing_lb_id", UUID2),
        ({a.FLOATING_NETWORK_ID: UUID1}, "floating_ip.network_id", UUID1),
        ({a.FLOATING_SUBNET_ID: UUID1}, "floating_ip.subnet_id", UUID1),
        ({a.FLOATING_SUBNET: "public-*"}, "floating_ip.subnet_name_pattern", "public-*"),
        ({a.FLOATING_SUBNET_TAGS: "a,b"}, "floating_ip.subnet_tags", "a,b"),
    ],
)
def test_an_annotation_edit_of_a_create_only_field_changes_nothing(annotations, field, asked):
    made = spec_of()
    tags = _made(made)
    edited = spec_of(annotations)
    kept, changes = _frozen(edited, tags=tags)
    # subnet-id is also the default member subnet, and members follow it (they are no LB)
    assert _no_member_subnet(kept) == _no_member_subnet(stack_spec(made, tags=tags).spec)
    assert [c.field for c in changes] == [field]
    (change,) = changes
    assert change.asked == asked
    assert change.in_use is None
    text = change.message()
    assert field in text
    assert repr(asked) in text
    assert "delete and re-create" in text


def test_a_cloud_conf_edit_is_frozen_too():
    made = spec_of()
    tags = _made(made)
    conf = "[Global]\nauth-url=http://x\n[LoadBalancer]\navailability-zone=az-other\n"
    edited = spec_of(config=config_from(conf))
    kept, changes = _frozen(edited, tags=tags)
    assert kept.availability_zone is None
    assert kept.spec_hash() == stack_spec(made, tags=tags).spec.spec_hash()
    (change,) = changes
    assert "availability-zone in cloud.conf" in change.source
    assert change.asked == "az-other"


def test_load_balancer_ip_of_an_external_service_is_frozen():
    made = spec_of(loadBalancerIP="172.24.4.20")
    tags = _made(made)
    kept, changes = _frozen(spec_of(loadBalancerIP="172.24.4.99"), tags=tags)
    assert kept.floating_ip is not None
    assert kept.floating_ip.address == "172.24.4.20"
    assert [(c.field, c.in_use, c.asked) for c in changes] == [
        ("floating_ip.address", "172.24.4.20", "172.24.4.99")
    ]


def test_what_is_not_create_only_still_changes():
    made = spec_of()
    tags = _made(made)
    edited = spec_of({a.CONNECTION_LIMIT: "100", a.KEEP_FLOATING_IP: "true"})
    kept, changes = _frozen(edited, tags=tags)
    assert changes == ()
    assert kept.listeners[0].connection_limit == 100
    assert kept.floating_ip is not None
    assert kept.floating_ip.keep is True


def test_own_load_balancer_id_written_back_is_no_change():
    made = spec_of()
    tags = {**_made(made), OWNS_TAG: UUID3}
    kept, changes = _frozen(spec_of({a.LOAD_BALANCER_ID: UUID3}), tags=tags)
    assert changes == ()
    assert kept.existing_lb_id is None


def test_shared_service_compares_only_which_load_balancer():
    made = spec_of({a.LOAD_BALANCER_ID: UUID2})
    tags = _made(made)
    conf = "[Global]\nauth-url=http://x\n[LoadBalancer]\nflavor-id=" + UUID1 + "\n"
    kept, changes = _frozen(
        spec_of({a.LOAD_BALANCER_ID: UUID2}, config=config_from(conf)), tags=tags
    )
    assert changes == ()
    assert kept.spec_hash() == stack_spec(made, tags=tags).spec.spec_hash()
    _, changes = _frozen(spec_of(), tags=tags)  # the annotation removed: still on UUID2
    assert [(c.field, c.in_use, c.asked) for c in changes] == [("existing_lb_id", UUID2, None)]


def test_internal_is_not_frozen_and_lifts_the_floating_ip_protection():
    made = spec_of()
    tags = _made(made)
    internal = spec_of({a.INTERNAL: "true"})
    kept, changes = _frozen(internal, tags=tags)
    assert kept.internal is True
    assert changes == ()
    assert unprotect_before_up(kept, tags=tags) == ["fip"]
    assert unprotect_before_up(stack_spec(made, tags=tags).spec, tags=tags) == []


def test_an_internal_service_made_external_gets_the_floating_ip_of_the_day():
    made = spec_of({a.INTERNAL: "true"})
    tags = create_only_tags(made, {**OUTPUTS, "floating_ip": None})
    external = spec_of({a.FLOATING_NETWORK_ID: UUID1})
    kept, changes = _frozen(external, tags=tags)
    assert changes == ()
    assert kept.floating_ip is not None
    assert kept.floating_ip.network_id == UUID1


def test_resolved_floating_network_and_subnet_stay():
    made = spec_of({a.FLOATING_SUBNET: "public-*"})
    tags = {**_made(made), FIP_NETWORK_TAG: UUID1, FIP_SUBNET_TAG: UUID2}
    kept, changes = _frozen(spec_of({a.FLOATING_SUBNET: "public-*"}), tags=tags)
    assert changes == ()
    assert kept.floating_ip is not None
    assert (kept.floating_ip.network_id, kept.floating_ip.subnet_id) == (UUID1, UUID2)
    assert kept.floating_ip.subnet_name_pattern is None
    assert stack_spec(kept, tags=tags).spec == kept


def test_no_record_freezes_nothing():
    spec = spec_of({a.AVAILABILITY_ZONE: "az-2"})
    assert freeze(spec, None) == (spec, ())
    assert _frozen(spec, tags={}) == (spec, ())


def test_record_round_trip_and_long_values_split_over_tags():
    spec = spec_of(
        {
            a.FLAVOR_ID: UUID1,
            a.SUBNET_ID: UUID2,
            a.NETWORK_ID: UUID3,
            a.PORT_ID: UUID1,
            a.FLOATING_NETWORK_ID: UUID2,
            a.FLOATING_SUBNET_ID: UUID3,
            a.FLOATING_SUBNET: "x" * 200,
            a.AVAILABILITY_ZONE: "zone-" + "z" * 60,
        }
    )
    tags = _made(spec)
    assert len(tags) > 1
    assert all(len(v) <= 256 for v in tags.values())
    assert create_only_record(tags) == made_with(spec)
    assert _frozen(spec, tags=tags)[1] == ()
    shorter = _made(spec_of())
    assert stale_create_only_tags(tags, shorter) == [f"{CREATE_ONLY_TAG}-2"]


def test_unreadable_record_is_none():
    assert CreateOnly.from_text("not json") is None
    assert CreateOnly.from_text('{"p": 1}') is None
    assert create_only_record({CREATE_ONLY_TAG: "[]"}) is None


def test_no_floating_ip_made_records_none():
    spec = spec_of()
    record = create_only_record(create_only_tags(spec, {**OUTPUTS, "floating_ip": None}))
    assert record is not None
    assert record.fip is None
    # a later floating-network edit is then no change: there is no floating IP to keep
    _, changes = _frozen(spec_of({a.FLOATING_NETWORK_ID: UUID1}), tags=create_only_tags(spec, {}))
    assert changes == ()


def test_frozen_spec_is_a_fixed_point():
    made = spec_of()
    tags = _made(made)
    edited = spec_of({a.AVAILABILITY_ZONE: "az-2", a.SUBNET_ID: UUID1})
    got = stack_spec(edited, tags=tags)
    assert got.requested.availability_zone is None
    assert got.requested.vip_subnet_id is None
    assert got.spec.vip_subnet_id == VIP_SUBNET  # the autodetected one, kept
    again = stack_spec(got.requested, tags=tags)
    assert (again.spec, again.frozen) == (got.spec, ())
    assert stack_spec(got.spec, tags=tags).spec == got.spec


def test_ip_families_left_out_ask_nothing():
    """A manifest in git often has no ipFamilies (the API server fills them in)."""
    made = spec_of()
    tags = _made(made)
    unset = dataclasses.replace(spec_of(), ip_family=None)
    kept, changes = _frozen(unset, tags=tags)
    assert changes == ()
    assert kept.ip_family == made.ip_family
    _, changes = _frozen(dataclasses.replace(spec_of(), ip_family="IPv6"), tags=tags)
    assert [(c.field, c.in_use, c.asked) for c in changes] == [("ip_family", "IPv4", "IPv6")]


def test_the_load_balancer_made_carries_the_cluster_identity():
    tags = {**_made(spec_of()), CLUSTER_ID_TAG: "uid-1"}
    own = stack_spec(spec_of(), tags=tags).spec
    assert own.tags == (own.name, "kube_cluster_id_uid-1")
    assert stack_spec(own, tags=tags).spec == own  # once
    shared = stack_spec(spec_of({a.LOAD_BALANCER_ID: UUID2}), tags={CLUSTER_ID_TAG: "uid-1"})
    assert shared.spec.tags == (shared.spec.name,)  # not ours to tag
    assert stack_spec(spec_of(), tags=_made(spec_of())).spec.tags == (own.name,)  # unknown


def test_only_this_clusters_unkept_floating_ips_go_with_a_load_balancer():
    ours = "Floating IP for Kubernetes external service default/web from cluster prod"
    assert floating_ip_to_delete({"description": ours}, cluster_name="prod")
    assert not floating_ip_to_delete({"description": ours}, cluster_name="stage")
    assert not floating_ip_to_delete(
        {"description": ours, "tags": ["lbr-keep-floatingip"]}, cluster_name="prod"
    )
    assert not floating_ip_to_delete({"description": "mine"}, cluster_name="prod")

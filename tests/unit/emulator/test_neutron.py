"""Neutron rules: IPAM, conflicts, floating IP association, security groups, tags, quotas."""

from __future__ import annotations

import pytest

from emulator.cloud import Cloud
from emulator.context import AuthContext
from emulator.errors import BadRequest, Conflict, NotFound


def test_subnet_overlap_and_version_mismatch_are_400(cloud: Cloud, ctx: AuthContext) -> None:
    net = cloud.neutron.create_network(ctx, {"name": "n"})
    cloud.neutron.create_subnet(ctx, {"network_id": net["id"], "cidr": "192.168.0.0/24"})
    with pytest.raises(BadRequest, match="overlaps"):
        cloud.neutron.create_subnet(ctx, {"network_id": net["id"], "cidr": "192.168.0.128/25"})
    with pytest.raises(BadRequest, match="IP version 6"):
        cloud.neutron.create_subnet(
            ctx, {"network_id": net["id"], "cidr": "192.168.1.0/24", "ip_version": 6}
        )


def test_port_ips_come_from_pool_and_conflict(
    cloud: Cloud, ctx: AuthContext, topo: dict[str, str]
) -> None:
    first = cloud.neutron.create_port(ctx, {"network_id": topo["network_id"]})
    assert first["fixed_ips"] == [{"subnet_id": topo["subnet_id"], "ip_address": "10.0.0.2"}]
    assert first["security_groups"] == [cloud.neutron.default_security_group(ctx.project_id)["id"]]
    with pytest.raises(Conflict) as err:
        cloud.neutron.create_port(
            ctx, {"network_id": topo["network_id"], "fixed_ips": [{"ip_address": "10.0.0.2"}]}
        )
    assert err.value.kind == "IpAddressAlreadyAllocated"
    with pytest.raises(Conflict, match="still in use"):
        cloud.neutron.delete_network(ctx, topo["network_id"])


def test_unknown_attribute_is_400_naming_it(cloud: Cloud, ctx: AuthContext) -> None:
    with pytest.raises(BadRequest, match="Unrecognized attribute\\(s\\) 'colour'"):
        cloud.neutron.create_network(ctx, {"name": "n", "colour": "red"})


def test_floating_ip_association_rules(
    cloud: Cloud, ctx: AuthContext, topo: dict[str, str]
) -> None:
    n = cloud.neutron
    port = n.create_port(ctx, {"network_id": topo["network_id"]})
    fip = n.create_floatingip(
        ctx,
        {"floating_network_id": topo["external_network_id"], "floating_ip_address": "172.24.4.77"},
    )
    assert (fip["floating_ip_address"], fip["status"], fip["port_id"]) == (
        "172.24.4.77",
        "DOWN",
        None,
    )
    fip = n.update_floatingip(ctx, fip["id"], {"port_id": port["id"]})
    assert fip["fixed_ip_address"] == port["fixed_ips"][0]["ip_address"]
    assert fip["status"] == "ACTIVE"
    other = n.create_floatingip(ctx, {"floating_network_id": topo["external_network_id"]})
    with pytest.raises(Conflict) as err:
        n.update_floatingip(ctx, other["id"], {"port_id": port["id"]})
    assert err.value.kind == "FloatingIPPortAlreadyAssociated"
    with pytest.raises(Conflict, match="already allocated"):
        n.create_floatingip(
            ctx,
            {
                "floating_network_id": topo["external_network_id"],
                "floating_ip_address": "172.24.4.77",
            },
        )
    n.delete_port(ctx, port["id"])
    assert n.get("floatingip", fip["id"], ctx)["port_id"] is None


def test_floating_ip_needs_external_network(
    cloud: Cloud, ctx: AuthContext, topo: dict[str, str]
) -> None:
    with pytest.raises(BadRequest, match="not a valid external network"):
        cloud.neutron.create_floatingip(ctx, {"floating_network_id": topo["network_id"]})


def test_security_group_defaults_and_duplicate_rule(cloud: Cloud, ctx: AuthContext) -> None:
    n = cloud.neutron
    sg = n.create_security_group(ctx, {"name": "web"})
    rules = n.view_security_group(sg)["security_group_rules"]
    assert sorted((r["direction"], r["ethertype"]) for r in rules) == [
        ("egress", "IPv4"),
        ("egress", "IPv6"),
    ]
    body = {
        "security_group_id": sg["id"],
        "direction": "ingress",
        "protocol": "TCP",
        "port_range_min": 80,
        "port_range_max": 80,
        "remote_ip_prefix": "0.0.0.0/0",
    }
    rule = n.create_security_group_rule(ctx, body)
    assert (rule["protocol"], rule["port_range_max"]) == ("tcp", 80)
    with pytest.raises(Conflict, match="already exists"):
        n.create_security_group_rule(ctx, body)
    with pytest.raises(BadRequest, match="Conflicting value ethertype"):
        n.create_security_group_rule(ctx, {**body, "remote_ip_prefix": "::/0"})


def test_tags_and_filters(cloud: Cloud, ctx: AuthContext) -> None:
    n = cloud.neutron
    a = n.create_network(ctx, {"name": "a", "tags": ["x", "y"]})
    n.create_network(ctx, {"name": "b", "tags": ["x"]})
    names = lambda q: [r["name"] for r in n.list_records("network", ctx, q)]  # noqa: E731
    assert names({"tags": ["x,y"]}) == ["a"]
    assert names({"tags-any": ["y"], "name": ["a", "b"]}) == ["a"]
    assert names({"not-tags": ["y"], "router:external": ["False"], "name": ["b"]}) == ["b"]
    n.remove_tag("network", a["id"], ctx, "y")
    assert names({"tags": ["y"]}) == []
    with pytest.raises(NotFound):
        n.remove_tag("network", a["id"], ctx, "y")
    with pytest.raises(BadRequest, match="invalid attribute for filtering"):
        n.list_records("network", ctx, {"colour": ["red"]})


def test_quota_exhaustion_is_409_over_quota(cloud: Cloud, ctx: AuthContext) -> None:
    admin = AuthContext(user_id="a", project_id=ctx.project_id, roles=("admin",))
    used = cloud.neutron.usage(ctx.project_id, "network")
    cloud.neutron.set_quota(ctx.project_id, admin, {"network": used})
    with pytest.raises(Conflict) as err:
        cloud.neutron.create_network(ctx, {"name": "over"})
    assert err.value.kind == "OverQuota"
    assert "['network']" in err.value.message


def test_a_floating_ip_s_own_port_is_of_no_project_and_counts_in_no_quota(
    cloud: Cloud, ctx: AuthContext, topo: dict[str, str]
) -> None:
    """As Neutron makes it (``tenant_id: ''``): a project with its port quota used up still
    gets floating IPs, and so does one whose external network's owner has used up its own; the
    port is seen by an admin only. (The bench's 501st floating IP was refused: the ports were
    counted against the external network's project, whose quota is Neutron's default, 500.)"""
    n = cloud.neutron
    admin = AuthContext(user_id="a", project_id=ctx.project_id, roles=("admin",))
    n.set_quota(ctx.project_id, admin, {"port": n.usage(ctx.project_id, "port")})
    owner = n.get("network", topo["external_network_id"], admin)["project_id"]
    n.set_quota(owner, admin, {"port": n.usage(owner, "port")})
    fip = n.create_floatingip(ctx, {"floating_network_id": topo["external_network_id"]})
    port = n.get("port", fip["_port"], admin)
    assert (port["project_id"], port["device_owner"]) == ("", "network:floatingip")
    with pytest.raises(NotFound):
        n.get("port", fip["_port"], ctx)
    with pytest.raises(Conflict, match=r"\['port'\]"):  # the project's own ports still count
        n.create_port(ctx, {"network_id": topo["network_id"]})

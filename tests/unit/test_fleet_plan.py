"""The fleet comparison (:mod:`reconciler.engine.fleet_plan`): a stack's checkpoint against the
cloud's lists. The stack's outputs are as the OpenStack provider writes them (camelCase, ``""``
for unset), the cloud's objects as Octavia and Neutron answer (snake_case, ``null``)."""

from __future__ import annotations

import copy
from typing import Any

from reconciler.engine.fleet_plan import CloudLists, compare_stack, member_pools
from stacks.vocabulary import (
    FIP_ASSOCIATION_TYPE,
    FIP_TYPE,
    LB_TYPE,
    LISTENER_TYPE,
    MEMBERS_TYPE,
    MONITOR_TYPE,
    POOL_TYPE,
    SECURITY_GROUP_TYPE,
)

LB, LI, POOL, MON, FIP, PORT = "lb-1", "li-1", "pool-1", "mon-1", "fip-1", "port-1"
M1, M2 = "m-1", "m-2"


def stack() -> list[dict[str, Any]]:
    """A Service's checkpoint resources (one port, two members, a monitor, a floating IP)."""
    member = {
        "address": "10.0.0.11",
        "adminStateUp": True,
        "backup": False,
        "id": M1,
        "monitorAddress": "",
        "monitorPort": 0,
        "name": "node-1",
        "protocolPort": 30600,
        "subnetId": "subnet-1",
        "weight": 1,
    }
    return [
        {"type": "pulumi:pulumi:Stack", "outputs": {"lb_id": LB}},
        {"type": "pulumi:providers:openstack", "id": "prov", "outputs": {"region": "R"}},
        {
            "type": LB_TYPE,
            "id": LB,
            "outputs": {
                "adminStateUp": True,
                "availabilityZone": "",
                "description": "Kubernetes external service default/web",
                "flavorId": "",
                "loadbalancerProvider": "amphora",
                "name": "kube_service_demo_default_web",
                "tags": ["kube_service_demo_default_web"],
                "vipAddress": "10.0.0.2",
                "vipNetworkId": "net-1",
                "vipPortId": PORT,
                "vipSubnetId": "subnet-1",
            },
        },
        {
            "type": LISTENER_TYPE,
            "id": LI,
            "outputs": {
                "adminStateUp": True,
                "allowedCidrs": ["10.0.0.0/8", "0.0.0.0/0"],
                "connectionLimit": -1,
                "defaultPoolId": "",
                "defaultTlsContainerRef": "",
                "insertHeaders": None,
                "loadbalancerId": LB,
                "name": "listener_0_kube_service_demo_default_web",
                "protocol": "TCP",
                "protocolPort": 80,
                "tags": ["a", "b"],
                "timeoutClientData": 50000,
            },
        },
        {
            "type": POOL_TYPE,
            "id": POOL,
            "outputs": {
                "adminStateUp": True,
                "lbMethod": "ROUND_ROBIN",
                "listenerId": LI,
                "name": "pool_0",
                "persistence": None,
                "protocol": "TCP",
                "tags": None,
            },
        },
        {
            "type": MEMBERS_TYPE,
            "id": POOL,
            "outputs": {
                "poolId": POOL,
                "members": [member, {**member, "id": M2, "address": "10.0.0.12", "name": "node-2"}],
            },
        },
        {
            "type": MONITOR_TYPE,
            "id": MON,
            "outputs": {
                "adminStateUp": True,
                "delay": 60,
                "expectedCodes": "",
                "httpMethod": "",
                "maxRetries": 1,
                "maxRetriesDown": 3,
                "name": "monitor_0",
                "poolId": POOL,
                "timeout": 30,
                "type": "TCP",
                "urlPath": "",
            },
        },
        {
            "type": FIP_TYPE,
            "id": FIP,
            "outputs": {
                "address": "172.24.4.10",
                "description": "Floating IP for web",
                "portId": "",
            },
        },
        {
            "type": FIP_ASSOCIATION_TYPE,
            "id": FIP,
            "outputs": {"fixedIp": "10.0.0.2", "floatingIp": "172.24.4.10", "portId": PORT},
        },
    ]


def cloud() -> CloudLists:
    """The same objects as the APIs list them, with what the stack does not declare besides."""
    member = {
        "id": M1,
        "name": "node-1",
        "address": "10.0.0.11",
        "protocol_port": 30600,
        "subnet_id": "subnet-1",
        "weight": 1,
        "backup": False,
        "monitor_address": None,
        "monitor_port": None,
        "admin_state_up": True,
        "operating_status": "ONLINE",
    }
    return CloudLists(
        loadbalancers={
            LB: {
                "id": LB,
                "name": "kube_service_demo_default_web",
                "description": "Kubernetes external service default/web",
                "vip_address": "10.0.0.2",
                "vip_subnet_id": "subnet-1",
                "vip_network_id": "net-1",
                "vip_port_id": PORT,
                "provider": "amphora",
                "flavor_id": None,
                "availability_zone": None,
                "admin_state_up": True,
                "tags": ["kube_service_demo_default_web", "kube_service_demo_default_other"],
                "provisioning_status": "ACTIVE",
                "operating_status": "ONLINE",
                "updated_at": "2026-11-28T01:00:00",
            }
        },
        listeners={
            LI: {
                "id": LI,
                "name": "listener_0_kube_service_demo_default_web",
                "protocol": "TCP",
                "protocol_port": 80,
                "connection_limit": -1,
                "timeout_client_data": 50000,
                "allowed_cidrs": ["0.0.0.0/0", "10.0.0.0/8"],
                "insert_headers": {},
                "default_tls_container_ref": None,
                "default_pool_id": POOL,
                "tags": ["b", "a"],
                "admin_state_up": True,
                "loadbalancers": [{"id": LB}],
            }
        },
        pools={
            POOL: {
                "id": POOL,
                "name": "pool_0",
                "protocol": "TCP",
                "lb_algorithm": "ROUND_ROBIN",
                "session_persistence": None,
                "tags": [],
                "admin_state_up": True,
                "listeners": [{"id": LI}],
                "members": [{"id": M1}, {"id": M2}],
            }
        },
        healthmonitors={
            MON: {
                "id": MON,
                "name": "monitor_0",
                "type": "TCP",
                "delay": 60,
                "timeout": 30,
                "max_retries": 1,
                "max_retries_down": 3,
                "http_method": None,
                "url_path": None,
                "expected_codes": None,
                "admin_state_up": True,
                "pools": [{"id": POOL}],
            }
        },
        floatingips={
            FIP: {
                "id": FIP,
                "floating_ip_address": "172.24.4.10",
                "description": "Floating IP for web",
                "port_id": PORT,
                "fixed_ip_address": "10.0.0.2",
            }
        },
        members={
            POOL: {
                M1: member,
                M2: {**member, "id": M2, "address": "10.0.0.12", "name": "node-2"},
            }
        },
    )


def changed(edit: Any) -> CloudLists:
    """``cloud()`` after ``edit(lists)`` changed it in place."""
    lists = copy.deepcopy(cloud())
    edit(lists)
    return lists


def test_a_stack_that_matches_the_cloud_is_the_same() -> None:
    """Unset, "" and [] are alike, CIDRs and tags in any order, monitor port 0 is unset; the
    listener's default pool and the load balancer's tags are not the program's to compare."""
    verdict = compare_stack(stack(), cloud())
    assert verdict.differs == ()
    assert verdict.uncovered == ()
    assert verdict.same


def test_a_listener_changed_by_hand_differs_naming_field_and_values() -> None:
    lists = changed(lambda c: c.listeners[LI].update(connection_limit=4242))
    assert compare_stack(stack(), lists).differs == (
        f"listener {LI}: connection_limit is 4242 in the cloud, -1 in the stack",
    )


def test_a_member_deleted_or_added_by_hand_differs() -> None:
    gone = changed(lambda c: c.members[POOL].pop(M2))
    assert compare_stack(stack(), gone).differs == (
        f"member {M2} of pool {POOL} is gone from the cloud",
    )

    def add(c: CloudLists) -> None:
        c.members[POOL]["m-3"] = {**c.members[POOL][M1], "id": "m-3"}  # type: ignore[index]

    assert compare_stack(stack(), changed(add)).differs == (
        f"member m-3 of pool {POOL} is only in the cloud",
    )


def test_a_member_s_weight_changed_by_hand_differs() -> None:
    lists = changed(lambda c: c.members[POOL][M1].update(weight=0))
    assert compare_stack(stack(), lists).differs == (
        f"member {M1} of pool {POOL}: weight is 0 in the cloud, 1 in the stack",
    )


def test_objects_gone_from_the_cloud_differ() -> None:
    def remove(c: CloudLists) -> None:
        c.healthmonitors.pop(MON)  # type: ignore[attr-defined]
        c.floatingips.pop(FIP)  # type: ignore[attr-defined]

    assert compare_stack(stack(), changed(remove)).differs == (
        f"health monitor {MON} is gone from the cloud",
        f"floating IP {FIP} is gone from the cloud",
        f"floating IP association {FIP} is gone from the cloud",
    )


def test_a_floating_ip_moved_to_another_port_differs() -> None:
    lists = changed(lambda c: c.floatingips[FIP].update(port_id="port-9", fixed_ip_address=None))
    assert compare_stack(stack(), lists).differs == (
        f'floating IP association {FIP}: port_id is "port-9" in the cloud, "{PORT}" in the stack',
        f'floating IP association {FIP}: fixed_ip_address is unset in the cloud, "10.0.0.2" in '
        "the stack",
    )


def test_a_pool_moved_to_another_listener_differs() -> None:
    lists = changed(lambda c: c.pools[POOL].update(listeners=[{"id": "li-9"}]))
    assert compare_stack(stack(), lists).differs == (
        f'pool {POOL}: its listener is "li-9" in the cloud, "{LI}" in the stack',
    )


def test_the_pool_gone_means_its_members_differ() -> None:
    def remove(c: CloudLists) -> None:
        c.pools.pop(POOL)  # type: ignore[attr-defined]
        c.members.pop(POOL)  # type: ignore[attr-defined]

    differs = compare_stack(stack(), changed(remove)).differs
    assert f"pool {POOL} is gone from the cloud" in differs
    assert any(f"pool {POOL}: its members were not listed" in d for d in differs)


def test_a_field_the_stack_does_not_record_is_not_compared() -> None:
    """An older provider's outputs without a field: the cloud's value is not held against it."""
    resources = stack()
    del resources[3]["outputs"]["connectionLimit"]
    lists = changed(lambda c: c.listeners[LI].update(connection_limit=10))
    assert compare_stack(resources, lists).differs == ()


def test_a_stack_with_a_security_group_is_uncovered() -> None:
    resources = [*stack(), {"type": SECURITY_GROUP_TYPE, "id": "sg-1", "outputs": {}}]
    verdict = compare_stack(resources, cloud())
    assert verdict.differs == ()
    assert verdict.uncovered == (SECURITY_GROUP_TYPE,)
    assert not verdict.same


def test_the_fingerprint_changes_with_what_is_compared_only() -> None:
    first = compare_stack(stack(), cloud()).fingerprint
    assert compare_stack(stack(), cloud()).fingerprint == first
    status = changed(lambda c: c.members[POOL][M1].update(operating_status="ERROR"))
    assert compare_stack(stack(), status).fingerprint == first
    weight = changed(lambda c: c.members[POOL][M1].update(weight=5))
    assert compare_stack(stack(), weight).fingerprint != first


def test_member_pools_are_the_pools_whose_members_the_stack_records() -> None:
    assert member_pools(stack()) == [POOL]

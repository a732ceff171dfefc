"""Which stacks are deleted directly (one cascade DELETE, the floating IP), and what goes."""

from __future__ import annotations

from typing import Any

from reconciler.engine.delete.direct_plan import DirectDeletion, direct_deletion
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

LB = "lb-1"


def res(kind: str, ident: str, **extra: Any) -> dict[str, Any]:
    return {"type": kind, "id": ident, "urn": f"urn:{kind}:{ident}", "custom": True, **extra}


def deployment(*extra: dict[str, Any], **top: Any) -> dict[str, Any]:
    return {
        "resources": [
            {"type": "pulumi:pulumi:Stack", "urn": "urn:stack"},
            res("pulumi:providers:openstack", "prov"),
            res(LB_TYPE, LB, protect=True),
            res(LISTENER_TYPE, "l1"),
            res(POOL_TYPE, "p1"),
            res(MEMBERS_TYPE, "p1"),
            res(MONITOR_TYPE, "m1"),
            *extra,
        ],
        **top,
    }


def test_the_load_balancer_tree_alone_is_deleted_directly() -> None:
    assert direct_deletion(deployment(), lb_id=LB, keep_floating_ip=None) == DirectDeletion(
        lb_id=LB, floating_ips=(), kept_floating_ips=()
    )


def test_the_floating_ip_the_stack_made_goes_unless_kept() -> None:
    fip = [res(FIP_TYPE, "f1", protect=True), res(FIP_ASSOCIATION_TYPE, "f1")]
    got = direct_deletion(deployment(*fip), lb_id=LB, keep_floating_ip=None)
    assert got is not None
    assert (got.floating_ips, got.kept_floating_ips) == (("f1",), ())
    kept = [res(FIP_TYPE, "f1", retainOnDelete=True), res(FIP_ASSOCIATION_TYPE, "f1")]
    got = direct_deletion(deployment(*kept), lb_id=LB, keep_floating_ip=None)
    assert got is not None
    assert (got.floating_ips, got.kept_floating_ips) == ((), ("f1",))


def test_the_services_keep_floatingip_now_wins_over_the_state() -> None:
    kept = [res(FIP_TYPE, "f1", retainOnDelete=True)]
    got = direct_deletion(deployment(*kept), lb_id=LB, keep_floating_ip=False)
    assert got is not None
    assert got.floating_ips == ("f1",)
    made = [res(FIP_TYPE, "f1")]
    got = direct_deletion(deployment(*made), lb_id=LB, keep_floating_ip=True)
    assert got is not None
    assert got.kept_floating_ips == ("f1",)


def test_anything_else_in_the_state_goes_through_destroy() -> None:
    with_group = deployment(res(SECURITY_GROUP_TYPE, "sg"))
    assert direct_deletion(with_group, lb_id=LB, keep_floating_ip=None) is None


def test_a_pending_operation_goes_through_destroy() -> None:
    creating = [{"resource": res(POOL_TYPE, "p2"), "type": "creating"}]
    pending = deployment(pending_operations=creating)
    assert direct_deletion(pending, lb_id=LB, keep_floating_ip=None) is None


def test_a_resource_read_rather_than_made_goes_through_destroy() -> None:
    read = deployment(res(FIP_TYPE, "f1", external=True))
    assert direct_deletion(read, lb_id=LB, keep_floating_ip=None) is None


def test_only_the_stacks_own_load_balancer() -> None:
    assert direct_deletion(deployment(), lb_id="other", keep_floating_ip=None) is None
    two = deployment(res(LB_TYPE, "lb-2"))
    assert direct_deletion(two, lb_id=LB, keep_floating_ip=None) is None
    none = {"resources": [{"type": "pulumi:pulumi:Stack", "urn": "urn:stack"}]}
    assert direct_deletion(none, lb_id=LB, keep_floating_ip=None) is None


def test_an_unknown_deployment_goes_through_destroy() -> None:
    assert direct_deletion(None, lb_id=LB, keep_floating_ip=None) is None
    idless = deployment(res(LISTENER_TYPE, ""))
    assert direct_deletion(idless, lb_id=LB, keep_floating_ip=None) is None

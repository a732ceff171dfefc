"""Sweep decisions: which stacks and cloud load balancers are orphans, and what is kept and why."""

from __future__ import annotations

import functools
from datetime import UTC, datetime, timedelta
from typing import Any

from reconciler.cli.sweep_plan import plan_sweep, service_of_lb_name
from reconciler.controller.sync_plan import ControllerSettings
from reconciler.engine.plan import StackInfo
from reconciler.model.predicates import FINALIZER
from tests.builders import make_service

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
SETTINGS = ControllerSettings(cluster_name="prod")


def stack(name: str, *, lb_id: str | None = "lb-" + "x", busy: bool = False) -> StackInfo:
    return StackInfo(
        stack=f"prod.default.{name}",
        namespace="default",
        name=name,
        uid="u",
        lb_id=lb_id,
        shared=False,
        owns_lb=lb_id,
        spec_hash="h",
        last_update=None,
        update_in_progress=busy,
        resource_count=3,
    )


# a Service of namespace default that holds the finalizer, as the sweep lists it
svc = functools.partial(
    make_service,
    namespace="default",
    finalizers=[FINALIZER],
    selector=None,
    ports=[{"port": 80}],
    header=False,
)


def lb(
    name: str, ident: str, *, age: float = 3600, status: str = "ACTIVE", tags: tuple[str, ...] = ()
) -> dict[str, Any]:
    """As OCCM (or this controller) makes one for Service default/<name> of cluster prod."""
    created = (NOW - timedelta(seconds=age)).strftime("%Y-%m-%dT%H:%M:%S")  # Octavia: no zone
    return {
        "id": ident,
        "name": f"kube_service_prod_default_{name}",
        "description": f"Kubernetes external service default/{name} from cluster prod",
        "tags": [f"kube_service_prod_default_{name}", *tags],
        "created_at": created,
        "provisioning_status": status,
        "vip_address": "10.0.0.5",
        "vip_port_id": f"port-{ident}",
    }


def plan(  # type: ignore[no-untyped-def]
    stacks: list[StackInfo],
    services: list[dict[str, Any]],
    lbs: list[dict[str, Any]],
    *,
    cluster_id: str = "",
):
    return plan_sweep(
        stacks=stacks,
        services={f"default/{s['metadata']['name']}": s for s in services},
        load_balancers=lbs,
        settings=SETTINGS,
        now=NOW,
        min_age=600,
        cluster_id=cluster_id,
    )


def test_lb_names_of_this_cluster_only() -> None:
    assert service_of_lb_name("kube_service_prod_default_web", cluster_name="prod") == (
        "default",
        "web",
    )
    # cluster "prod_eu" shares the prefix; the rest then has three parts
    assert service_of_lb_name("kube_service_prod_eu_default_web", cluster_name="prod") is None
    assert service_of_lb_name("kube_service_stage_default_web", cluster_name="prod") is None
    assert service_of_lb_name("kube_service_prod_default_", cluster_name="prod") is None
    assert service_of_lb_name("my-own-lb", cluster_name="prod") is None


def test_stack_orphans_follow_the_housekeeper() -> None:
    clusterip = svc("now-clusterip", type="ClusterIP")
    del clusterip["metadata"]["finalizers"]  # removed by hand: no cleanup will come
    stacks = [stack("gone"), stack("web"), stack("now-clusterip"), stack("busy", busy=True)]
    result = plan(stacks, [svc("web"), clusterip], [])
    assert [i.name for i in result.stacks] == ["gone", "now-clusterip"]
    assert [(k.kind, k.what, k.reason) for k in result.kept] == [
        ("stack", "prod.default.busy", "an operation is running on it")
    ]


def test_cloud_orphans_and_what_is_kept() -> None:
    stacks = [stack("web", lb_id="lb-web"), stack("half", lb_id=None), stack("dup", lb_id="lb-d1")]
    services = [
        svc("web"),
        svc("occm"),
        svc("other-class", loadBalancerClass="example.com/other"),
        svc("dup"),
    ]
    lbs = [
        lb("web", "lb-web"),  # the stack's own: not listed at all
        lb("gone", "lb-gone"),  # no Service, no stack: orphan
        lb("occm", "lb-occm"),  # Service served by us, no stack: adopt
        lb("other-class", "lb-oc"),  # Service of another class: not ours
        lb("half", "lb-half"),  # the stack has no LB recorded yet: its next up imports it
        lb("dup", "lb-d2"),  # the stack recorded another LB: a leaked duplicate
        lb("young", "lb-young", age=30),
        lb("pending", "lb-pending", status="PENDING_CREATE"),
        {**lb("x", "lb-foreign"), "name": "kube_service_stage_default_x"},
    ]
    result = plan(stacks, services, lbs)
    assert [o.lb_id for o in result.load_balancers] == ["lb-gone", "lb-d2"]
    assert result.load_balancers[0].vip_port_id == "port-lb-gone"
    kept = {k.ident: k.reason for k in result.kept}
    assert set(kept) == {"lb-occm", "lb-oc", "lb-half", "lb-young", "lb-pending"}
    assert "adopt it" in kept["lb-occm"]
    assert "not served by this controller" in kept["lb-oc"]
    assert "next up imports it" in kept["lb-half"]
    assert "less than 600s" in kept["lb-young"]
    assert kept["lb-pending"].startswith("PENDING_CREATE")


def test_a_shared_lb_in_use_is_not_an_orphan() -> None:
    user = stack("api", lb_id="lb-shared")
    user = StackInfo(**{**user.__dict__, "owns_lb": None, "shared": True})
    result = plan([user], [svc("api")], [lb("released-owner", "lb-shared")])
    assert result.empty
    assert result.kept == ()


OURS, THEIRS = "6f1c0d2e-0000-4000-8000-00000000a001", "9b7e5a44-0000-4000-8000-00000000b002"


def test_only_load_balancers_proven_this_clusters_are_swept() -> None:
    """Issue 13, across clusters (OCCM #3102): two clusters named "prod" in one project name
    their load balancers alike; only the identity tag (the kube-system UID, OCCM's PR #3103)
    and OCCM's description tell them apart. Nothing named for this cluster that fails the
    proof is deleted, and each is listed as kept with the reason."""
    lbs = [
        lb("gone", "lb-untagged"),  # OCCM before #3103: no identity tag, its description is ours
        lb("gone", "lb-ours", tags=(f"kube_cluster_id_{OURS}",)),  # the same name, ours
        lb("gone", "lb-theirs", tags=(f"kube_cluster_id_{THEIRS}",)),  # the same name, theirs
        {**lb("gone", "lb-by-hand"), "description": "my test load balancer"},
        {
            **lb("gone", "lb-other-desc"),
            "description": "Kubernetes external service default/gone from cluster stage",
        },
    ]
    result = plan([], [], lbs, cluster_id=OURS)
    assert [o.lb_id for o in result.load_balancers] == ["lb-untagged", "lb-ours"]
    kept = {k.ident: k.reason for k in result.kept}
    assert set(kept) == {"lb-theirs", "lb-by-hand", "lb-other-desc"}
    assert kept["lb-theirs"] == (
        f"not made by this cluster: it carries another cluster's identity tag "
        f"kube_cluster_id_{THEIRS} (this cluster's is kube_cluster_id_{OURS}): another cluster "
        "with the same --cluster-name in this project"
    )
    assert (
        "its description 'my test load balancer' is not OCCM's for cluster prod"
        in (kept["lb-by-hand"])
    )
    assert "is not OCCM's for cluster prod" in kept["lb-other-desc"]
    assert all(k.kind == "loadbalancer" and k.service == "default/gone" for k in result.kept)


def test_without_this_clusters_identity_no_tagged_load_balancer_is_swept() -> None:
    """The kube-system UID could not be read: an identity tag, even ours, is no proof."""
    lbs = [lb("gone", "lb-untagged"), lb("gone", "lb-ours", tags=(f"kube_cluster_id_{OURS}",))]
    result = plan([], [], lbs, cluster_id="")
    assert [o.lb_id for o in result.load_balancers] == ["lb-untagged"]
    (kept,) = result.kept
    assert kept.ident == "lb-ours"
    assert f"carries the cluster identity tag kube_cluster_id_{OURS}" in kept.reason
    assert "this cluster's identity (the kube-system namespace's UID) could not be read" in (
        kept.reason
    )


def test_another_clusters_load_balancer_is_kept_for_that_reason_first() -> None:
    """Its Service exists here too (the other cluster has the same namespace and name): the
    reason is that it is not ours, not "adopt it", which would be wrong advice."""
    theirs = lb("web", "lb-theirs", tags=(f"kube_cluster_id_{THEIRS}",))
    result = plan([], [svc("web")], [theirs], cluster_id=OURS)
    (kept,) = result.kept
    assert kept.reason.startswith("not made by this cluster: it carries another cluster's")
    assert "adopt" not in kept.reason


def test_a_stacks_own_load_balancer_is_never_listed() -> None:
    """Referenced by a stack: neither orphan nor kept, whatever its tags say."""
    theirs = lb("web", "lb-web", tags=(f"kube_cluster_id_{THEIRS}",))
    result = plan([stack("web", lb_id="lb-web")], [svc("web")], [theirs], cluster_id=OURS)
    assert result.empty
    assert result.kept == ()

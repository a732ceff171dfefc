"""The pure decisions of ``lb-reconciler adopt``: which OCCM object becomes which logical
resource (reconciler/engine/adopt/plan.py), whether a preview is acceptable, how a failed adoption
is undone (reconciler/engine/adopt/stack.py) and what the command prints and exits with
(reconciler/cli/adopt_report.py)."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from reconciler.cli.adopt_report import ServiceResult, exit_code, render_json, render_text
from reconciler.cli.terminal import Style
from reconciler.engine.adopt.ownership import (
    choose_load_balancer,
    foreign_problem,
    not_this_clusters,
    records_identity,
)
from reconciler.engine.adopt.plan import Chain, Found, plan_adoption
from reconciler.engine.adopt.preview import judge_preview, unchanged_problems
from reconciler.engine.adopt.stack import rollback_targets
from reconciler.engine.deployment import resources_of
from reconciler.engine.preview import PreviewOutcome, PropertyChange, ResourceStep
from reconciler.model import LoadBalancerSpec
from tests.unit.model_helpers import UUID1, UUID2, config_from, spec_of

A = "loadbalancer.openstack.org/"
LB = "kube_service_kubernetes_default_example-service"
FIP_DESCRIPTION = (
    "Floating IP for Kubernetes external service default/example-service from cluster kubernetes"
)
SUBNET = "5c5e6f2a-0000-4000-8000-00000000000a"


def lb(lb_id: str = "lb-1", name: str = LB, **extra: Any) -> dict[str, Any]:
    return {
        "id": lb_id,
        "name": name,
        "provisioning_status": "ACTIVE",
        "vip_port_id": "vip-port",
        "vip_subnet_id": SUBNET,
        **extra,
    }


def chain(
    port: int = 8765,
    *,
    protocol: str = "TCP",
    index: int = 0,
    tags: tuple[str, ...] = (LB,),
    members: int = 2,
    monitor: bool = False,
    pool: bool = True,
) -> Chain:
    listener = {
        "id": f"listener-{port}",
        "name": f"listener_{index}_{LB}",
        "protocol": protocol,
        "protocol_port": port,
        "tags": list(tags),
    }
    if not pool:
        return Chain(listener)
    return Chain(
        listener,
        {"id": f"pool-{port}", "name": f"pool_{index}_{LB}"},
        tuple({"id": f"member-{port}-{i}"} for i in range(members)),
        {"id": f"monitor-{port}", "name": f"monitor_{index}_{LB}"} if monitor else None,
    )


def fip(address: str = "203.0.113.5", description: str = FIP_DESCRIPTION) -> dict[str, Any]:
    return {"id": f"fip-{address}", "floating_ip_address": address, "description": description}


def spec(annotations: dict[str, str] | None = None, **service: Any) -> LoadBalancerSpec:
    return spec_of(annotations, **service)


def test_nothing_named_for_the_service_is_nothing_to_adopt() -> None:
    plan = plan_adoption(spec(), Found(None))
    assert not plan.found
    assert (plan.imports, plan.problems) == ({}, ())


def test_occm_load_balancer_maps_to_the_programs_logical_names() -> None:
    s = spec({A + "enable-health-monitor": "true", A + "load-balancer-id": UUID1})
    assert s.existing_lb_id == UUID1  # OCCM wrote the id back
    assert s.vip_autodetect_address is not None  # no subnet-id: OCCM's first-Node subnet
    found = Found(lb(UUID1), chains=(chain(monitor=True),), floating_ips=(fip(),))
    plan = plan_adoption(s, found)
    assert plan.problems == ()
    assert plan.imports == {
        "lb": UUID1,
        "listener-tcp-8765": "listener-8765",
        "pool-tcp-8765": "pool-8765",
        "members-tcp-8765": "pool-8765",  # the batch members resource imports by pool id
        "monitor-tcp-8765": "monitor-8765",
        "fip": "fip-203.0.113.5",
        "fip-association": "fip-203.0.113.5",  # by floating IP id
    }
    # its own load balancer, not a shared one; the VIP subnet OCCM detected is kept
    assert plan.spec.existing_lb_id is None
    assert (plan.spec.vip_subnet_id, plan.spec.vip_autodetect_address) == (SUBNET, None)
    assert plan.described["listener-tcp-8765"] == f"listener listener_0_{LB} TCP/8765"
    assert plan.notes == ()


def test_listeners_match_by_port_and_family_not_by_index() -> None:
    ports = [
        {"name": "b", "port": 443, "protocol": "TCP", "nodePort": 30443},
        {"name": "a", "port": 53, "protocol": "UDP", "nodePort": 30053},
    ]
    found = Found(
        lb(),
        chains=(
            chain(53, protocol="TCP", index=1),  # TCP/53: another family than the UDP port
            chain(443, protocol="HTTP", index=1),  # HTTP is TCP's family; index moved
            chain(8080, index=2),
        ),
        floating_ips=(fip(),),
    )
    plan = plan_adoption(spec(ports=ports), found)
    assert plan.imports["listener-tcp-443"] == "listener-443"
    assert "listener-udp-53" not in plan.imports
    assert any(n.startswith("port UDP/53: no listener on it") for n in plan.notes)
    left = [n for n in plan.notes if "is left as it is: the Service has no such port" in n]
    assert [n.split(" ")[1] for n in left] == [f"listener_1_{LB}", f"listener_2_{LB}"]


def test_a_listener_of_another_service_on_our_port_is_a_problem() -> None:
    other = "kube_service_kubernetes_default_other"
    plan = plan_adoption(spec(), Found(lb(), chains=(chain(tags=(other,)),)))
    assert len(plan.problems) == 1
    assert f"belongs to another Service ({other})" in plan.problems[0]


def test_untagged_listeners_of_old_occm_count_as_ours() -> None:
    plan = plan_adoption(spec(), Found(lb(), chains=(chain(tags=()),), floating_ips=(fip(),)))
    assert plan.imports["listener-tcp-8765"] == "listener-8765"


def test_missing_pieces_are_created_and_extra_ones_left_alone() -> None:
    no_pool = plan_adoption(spec(), Found(lb(), chains=(chain(pool=False),)))
    assert "pool-tcp-8765" not in no_pool.imports
    assert any("the listener has no pool; its pool is created" in n for n in no_pool.notes)
    assert any("one is created (a new address)" in n for n in no_pool.notes)

    wants_monitor = spec({A + "enable-health-monitor": "true"})
    plan = plan_adoption(wants_monitor, Found(lb(), chains=(chain(),), floating_ips=(fip(),)))
    assert "monitor-tcp-8765" not in plan.imports
    assert any("has no health monitor; one is created" in n for n in plan.notes)

    plan = plan_adoption(spec(), Found(lb(), chains=(chain(monitor=True),)))
    assert "monitor-tcp-8765" not in plan.imports
    assert any("monitor_0_" in n and "left as it is" in n for n in plan.notes)


def test_members_are_left_alone_when_the_service_has_none() -> None:
    config = config_from(f"[LoadBalancer]\nsubnet-id = {UUID1}\n")
    s = spec_of(config=config, nodes=[])
    plan = plan_adoption(s, Found(lb(), chains=(chain(),), floating_ips=(fip(),)))
    assert "members-tcp-8765" not in plan.imports
    assert any("2 members are left as they are" in n for n in plan.notes)


def test_choosing_the_load_balancer() -> None:
    s = spec()
    assert choose_load_balancer(s, named=[], annotated=None) == (None, False, [])
    two = [lb("a"), lb("b")]
    chosen, shared, problems = choose_load_balancer(s, named=two, annotated=None)
    assert (chosen, shared) == (None, False)
    assert "2 load balancers are named" in problems[0]
    assert "load-balancer-id" in problems[0]

    annotated = spec({A + "load-balancer-id": UUID2})
    chosen, shared, _ = choose_load_balancer(annotated, named=[*two, lb(UUID2)], annotated=None)
    assert (chosen, shared) == (lb(UUID2), False)
    other = lb(UUID2, name="kube_service_kubernetes_default_owner")
    assert choose_load_balancer(annotated, named=[], annotated=other) == (other, True, [])
    chosen, _, problems = choose_load_balancer(annotated, named=[], annotated=None)
    assert chosen is None
    assert f"names {UUID2}, which does not exist" in problems[0]


def test_a_shared_load_balancer_adopts_only_the_services_listeners() -> None:
    s = spec({A + "load-balancer-id": UUID2})
    owner = "kube_service_kubernetes_default_owner"
    found = Found(
        lb(UUID2, name=owner),
        shared=True,
        chains=(chain(80, tags=(owner,)), chain(tags=(LB,))),
        floating_ips=(),
    )
    plan = plan_adoption(s, found)
    assert plan.problems == ()
    assert set(plan.imports) == {"listener-tcp-8765", "pool-tcp-8765", "members-tcp-8765"}
    assert plan.spec.existing_lb_id == UUID2  # still shared
    assert any("only its listeners are adopted" in n for n in plan.notes)


OCCM_DESCRIPTION = "Kubernetes external service default/example-service from cluster kubernetes"
OURS, THEIRS = "6f1c0d2e-0000-4000-8000-00000000a001", "9b7e5a44-0000-4000-8000-00000000b002"


@pytest.mark.parametrize(
    ("extra", "cluster_id", "reason"),
    [
        ({}, OURS, None),  # OCCM before its PR #3103: no identity tag
        ({"tags": [LB, f"kube_cluster_id_{OURS}"]}, OURS, None),
        (
            {"tags": [LB, f"kube_cluster_id_{THEIRS}"]},
            OURS,
            f"it carries another cluster's identity tag kube_cluster_id_{THEIRS} (this "
            f"cluster's is kube_cluster_id_{OURS}): another cluster with the same "
            "--cluster-name in this project",
        ),
        (
            {"tags": [f"kube_cluster_id_{OURS}"]},
            "",
            f"it carries the cluster identity tag kube_cluster_id_{OURS}, and this cluster's "
            "identity (the kube-system namespace's UID) could not be read: grant get on "
            "namespaces/kube-system",
        ),
        (
            {"description": "made by hand"},
            OURS,
            "its description 'made by hand' is not OCCM's for cluster kubernetes ('Kubernetes "
            "external service <namespace>/<name> from cluster kubernetes'): made by hand, by "
            "another tool or for another cluster",
        ),
        (
            {"name": "kube_service_stage_default_example-service"},
            OURS,
            "its name is not kube_service_kubernetes_<namespace>_<name>",
        ),
    ],
)
def test_why_a_load_balancer_is_not_this_clusters(
    extra: dict[str, Any], cluster_id: str, reason: str | None
) -> None:
    found = lb(**{"description": OCCM_DESCRIPTION, **extra})
    assert not_this_clusters(found, cluster_name="kubernetes", cluster_id=cluster_id) == reason


def test_another_clusters_load_balancer_is_refused() -> None:
    """Issue 13, across clusters (OCCM #3102): the same --cluster-name in one project names
    both clusters' load balancers alike; the identity tag says whose it is."""
    theirs = lb(description=OCCM_DESCRIPTION, tags=[LB, f"kube_cluster_id_{THEIRS}"])
    found = Found(theirs, chains=(chain(),), floating_ips=(fip(),))
    problem = foreign_problem(found, cluster_name="kubernetes", cluster_id=OURS)
    assert problem is not None
    assert problem.startswith(f"load balancer {LB} (lb-1) was not made by this cluster: ")
    assert f"another cluster's identity tag kube_cluster_id_{THEIRS}" in problem
    assert "give this cluster a --cluster-name of its own" in problem
    ours = Found(lb(description=OCCM_DESCRIPTION, tags=[LB, f"kube_cluster_id_{OURS}"]))
    assert foreign_problem(ours, cluster_name="kubernetes", cluster_id=OURS) is None
    assert foreign_problem(Found(None), cluster_name="kubernetes", cluster_id=OURS) is None


def test_a_shared_load_balancer_is_not_checked_for_its_maker() -> None:
    """Only the Service's listeners are adopted on it: a user's own load balancer reached
    through load-balancer-id is shared this way, as with OCCM."""
    users = lb(UUID2, name="users-own-lb", description="", tags=[f"kube_cluster_id_{THEIRS}"])
    found = Found(users, shared=True)
    assert foreign_problem(found, cluster_name="kubernetes", cluster_id=OURS) is None


def test_a_load_balancer_that_is_not_active_is_refused() -> None:
    plan = plan_adoption(spec(), Found(lb(provisioning_status="PENDING_UPDATE")))
    assert "is PENDING_UPDATE; wait until it is ACTIVE" in plan.problems[0]


@pytest.mark.parametrize(
    ("service", "fips", "imports", "problem", "note"),
    [
        ({}, [fip(description="mine")], set(), "set spec.loadBalancerIP to it", ""),
        ({}, [fip(), fip("203.0.113.6")], set(), "2 floating IPs of this Service", ""),
        (
            {"loadBalancerIP": "203.0.113.5"},
            [fip(description="the user's")],
            {"fip-association"},  # a user's floating IP is only associated
            "",
            "",
        ),
        ({"loadBalancerIP": "203.0.113.5"}, [fip()], {"fip", "fip-association"}, "", ""),
        ({"loadBalancerIP": "203.0.113.9"}, [fip()], set(), "spec.loadBalancerIP is", ""),
        ({"loadBalancerIP": "203.0.113.9"}, [], set(), "", "203.0.113.9 is associated"),
    ],
)
def test_floating_ip_cases(
    service: dict[str, Any], fips: list[dict[str, Any]], imports: set[str], problem: str, note: str
) -> None:
    plan = plan_adoption(spec(**service), Found(lb(), chains=(chain(),), floating_ips=tuple(fips)))
    assert {n for n in plan.imports if n.startswith("fip")} == imports
    assert any(problem in p for p in plan.problems) if problem else plan.problems == ()
    if note:
        assert any(note in n for n in plan.notes), plan.notes


@pytest.mark.parametrize(
    ("detached", "imports", "problem", "note"),
    [
        ([], set(), "", "one is created (a new address)"),
        ([fip()], {"fip"}, "", "203.0.113.5 of this Service is on no port"),
        ([fip(), fip("203.0.113.6")], set(), "2 of this Service on no port", ""),
    ],
)
def test_a_floating_ip_detached_from_the_vip_is_kept(
    detached: list[dict[str, Any]], imports: set[str], problem: str, note: str
) -> None:
    """The Service's floating IP was detached from the VIP port: it is imported (and associated
    again), never replaced by a new address; two such are a question for the user."""
    found = Found(lb(), chains=(chain(),), detached_floating_ips=tuple(detached))
    plan = plan_adoption(spec(), found)
    assert {n for n in plan.imports if n.startswith("fip")} == imports
    assert any(problem in p for p in plan.problems) if problem else plan.problems == ()
    if note:
        assert any(note in n for n in plan.notes), plan.notes


def test_an_internal_service_leaves_a_floating_ip_alone() -> None:
    s = spec({"service.beta.kubernetes.io/openstack-internal-load-balancer": "true"})
    plan = plan_adoption(s, Found(lb(), chains=(chain(),), floating_ips=(fip(),)))
    assert "fip" not in plan.imports
    assert any("203.0.113.5 on the VIP port is left as it is" in n for n in plan.notes)


def test_security_group_and_its_rules() -> None:
    config = config_from("[LoadBalancer]\nmanage-security-groups = true\n")
    s = spec_of(config=config)
    assert s.security_group is not None
    rule = {
        "id": "rule-1",
        "direction": "ingress",
        "protocol": "tcp",
        "ethertype": "IPv4",
        "port_range_min": 30593,
        "port_range_max": 30593,
        "remote_ip_prefix": "10.0.0.0/24",
    }
    extra = {**rule, "id": "rule-2", "port_range_min": 22, "port_range_max": 22}
    group = {"id": "sg-1", "name": s.security_group.name, "security_group_rules": [rule, extra]}
    plan = plan_adoption(s, Found(lb(), chains=(chain(),), security_groups=(group,)))
    assert plan.imports["sg"] == "sg-1"
    assert plan.imports["sg-rule-tcp-30593-30593-ipv4-10.0.0.0/24"] == "rule-1"
    assert any("tcp-22-22-ipv4-10.0.0.0/24 is left as it is" in n for n in plan.notes)
    two = plan_adoption(s, Found(lb(), chains=(chain(),), security_groups=(group, group)))
    assert "2 security groups are named" in two.problems[0]


def step(
    name: str, op: str, *changes: PropertyChange, rtype: str = "openstack:x:X"
) -> ResourceStep:
    return ResourceStep(name=name, type=rtype, op=op, changes=changes)


def test_judge_preview() -> None:
    plan = plan_adoption(spec(), Found(lb(), chains=(chain(),), floating_ips=(fip(),)))
    engine = [step("stack", "create", rtype="pulumi:pulumi:Stack")]
    imports = [step(n, "import") for n in plan.imports]
    ok = PreviewOutcome({"import": 6}, tuple([*engine, *imports, step("monitor", "create")]))
    assert judge_preview(plan, ok) == []

    change = PropertyChange("lbMethod", "update", "LEAST_CONNECTIONS", "ROUND_ROBIN")
    update = PreviewOutcome({}, (*imports, step("pool-tcp-8765", "update", change)))
    (problem,) = judge_preview(plan, update)
    assert problem == (
        f"pool-tcp-8765 (pool pool_0_{LB}) differs from the Service and would be updated: "
        "lbMethod 'LEAST_CONNECTIONS' -> 'ROUND_ROBIN'; change the Service to match, or pass "
        "--allow-updates"
    )
    assert judge_preview(plan, update, allow_updates=True) == []

    replacing = PropertyChange("protocol", "update-replace", "HTTP", "TCP")
    name = "listener-tcp-8765"
    replace_steps = PreviewOutcome(
        {},
        (
            *imports,
            step(name, "delete-replaced"),
            step(name, "replace", replacing),
            step(name, "create-replacement", replacing),
            step("fip", "delete"),
        ),
    )
    problems = judge_preview(plan, replace_steps, allow_updates=True)
    assert problems == [
        "fip (floating IP 203.0.113.5) would be deleted",
        f"{name} (listener listener_0_{LB} TCP/8765) would be replaced: protocol 'HTTP' -> 'TCP'",
    ]

    missing = PreviewOutcome({}, tuple(s for s in imports if s.name != "fip"))
    (problem,) = judge_preview(plan, missing)
    assert problem.startswith("fip (floating IP 203.0.113.5) was found but the stack does not")


def test_adopting_a_load_balancer_without_identity_tags_it() -> None:
    """OCCM before its PR #3103 tagged no identity; adopting the load balancer tags it with this
    cluster's (the engine adds it after the import, as to every load balancer the controller
    serves: the program leaves the tags alone), so a later sweep can tell it is ours. One with
    an identity already, or a cluster whose own is unknown, gets none."""
    assert records_identity(lb(), cluster_id=OURS)
    assert not records_identity(lb(tags=[LB, f"kube_cluster_id_{OURS}"]), cluster_id=OURS)
    assert not records_identity(lb(), cluster_id="")
    assert not records_identity(None, cluster_id=OURS)


def test_unchanged_problems() -> None:
    assert unchanged_problems(PreviewOutcome({"same": 7}, ())) == []
    change = PropertyChange("lbMethod", "update", "A", "B")
    assert unchanged_problems(PreviewOutcome({"update": 1}, (step("pool", "update", change),))) == [
        "pool: update lbMethod 'A' -> 'B'"
    ]


DEPLOYMENT = {
    "resources": [
        {"urn": "urn:pulumi:s::p::pulumi:pulumi:Stack::p-s", "type": "pulumi:pulumi:Stack"},
        {
            "urn": "urn:pulumi:s::p::pulumi:providers:openstack::default",
            "type": "pulumi:providers:openstack",
            "custom": True,
            "id": "prov",
        },
        *(
            {"urn": f"urn:pulumi:s::p::{t}::{n}", "type": t, "custom": True, "id": i}
            for n, t, i in [
                ("lb", "openstack:loadbalancer/loadBalancer:LoadBalancer", "lb-1"),
                ("listener-tcp-443", "openstack:loadbalancer/listener:Listener", "new-l"),
                ("members-tcp-443", "openstack:loadbalancer/members:Members", "new-p"),
                ("fip", "openstack:networking/floatingIp:FloatingIp", "new-f"),
                (
                    "fip-association",
                    "openstack:networking/floatingIpAssociate:FloatingIpAssociate",
                    "new-f",
                ),
                (
                    "sg-port-10.0.0.11",
                    "openstack:networking/portSecGroupAssociate:PortSecGroupAssociate",
                    "port",
                ),
            ]
        ),
    ]
}


def test_what_a_failed_adoption_destroys() -> None:
    assert resources_of(DEPLOYMENT) == {
        "lb": "lb-1",
        "listener-tcp-443": "new-l",
        "members-tcp-443": "new-p",
        "fip": "new-f",
        "fip-association": "new-f",
        "sg-port-10.0.0.11": "port",
    }
    urn = "urn:pulumi:s::p::openstack:"
    # created objects go; imported ones and batch/association resources stay (forgotten)
    assert rollback_targets(DEPLOYMENT, {"lb": "lb-1"}) == [
        f"{urn}loadbalancer/listener:Listener::listener-tcp-443",
        f"{urn}networking/floatingIp:FloatingIp::fip",
        f"{urn}networking/portSecGroupAssociate:PortSecGroupAssociate::sg-port-10.0.0.11",
    ]
    # a group that existed before keeps its ports
    kept = rollback_targets(DEPLOYMENT, {"lb": "lb-1", "sg": "sg-1"})
    assert not any("sg-port" in u for u in kept)


def test_report_exit_codes_and_output() -> None:
    adoptable = ServiceResult(
        "default/web",
        "adoptable",
        lb_id="lb-1",
        lb_name=LB,
        imports={"lb": "lb-1"},
        described={"lb": f"load balancer {LB}"},
        creates=["monitor-tcp-80 (Monitor)"],
        preview={"import": 1, "create": 1},
    )
    managed = ServiceResult("default/old", "managed", notes=["stack x holds it"])
    refused = ServiceResult("default/bad", "refused", problems=["pool-tcp-80 differs"])
    assert exit_code([adoptable, managed], apply=False) == 2
    assert exit_code([replace(adoptable, status="adopted"), managed], apply=True) == 0
    assert exit_code([adoptable, refused], apply=False) == 1
    assert exit_code([], apply=False) == 0

    text = render_text([adoptable, refused], apply=False, style=Style(enabled=False))
    assert text.splitlines() == [
        f"default/web: adoptable  load balancer {LB} (lb-1)",
        f"    import  lb  lb-1  load balancer {LB}",
        "    create  monitor-tcp-80 (Monitor)",
        "    preview: create 1, import 1",
        "default/bad: refused",
        "    problem pool-tcp-80 differs",
        "1 adoptable, 1 refused",
        "dry run: nothing was changed; run again with --apply to adopt",
    ]
    (item,) = json.loads(render_json([adoptable]))
    assert item["imports"] == [{"name": "lb", "id": "lb-1", "what": f"load balancer {LB}"}]
    assert (item["status"], item["lbId"], item["controllerSkips"]) == ("adoptable", "lb-1", None)

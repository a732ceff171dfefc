"""The shadow mode's verdicts (``lb-reconciler preflight``): pure, from adopt's dry run of each
Service, its external IP and the load balancers named for it under other cluster names."""

from __future__ import annotations

import pytest

from reconciler.cli.adopt_report import ServiceResult
from reconciler.cli.preflight_plan import (
    Verdict,
    exit_code,
    render_prometheus,
    render_text,
    verdict_of,
)
from reconciler.cli.terminal import Style
from reconciler.model.naming import cluster_name_mismatch, named_under_other_clusters


def verdict(result: ServiceResult, ip: str | None = None, elsewhere: tuple[str, ...] = ()) -> str:
    return verdict_of(result, external_ip=ip, elsewhere=elsewhere, cluster_name="prod").verdict


def test_each_outcome_of_the_dry_run_has_its_verdict() -> None:
    assert verdict(ServiceResult("a/b", "managed")) == "managed"
    assert verdict(ServiceResult("a/b", "invalid", problems=["x"])) == "invalid"
    assert verdict(ServiceResult("a/b", "adoptable")) == "take-over"
    assert verdict(ServiceResult("a/b", "adoptable", updates=["lb: lbMethod"])) == "update"
    assert verdict(ServiceResult("a/b", "adoptable", creates=["listener-tcp-443"])) == "update"
    assert verdict(ServiceResult("a/b", "refused", problems=["another cluster's"])) == "refuse"
    assert verdict(ServiceResult("a/b", "failed", problems=["409"])) == "refuse"
    assert verdict(ServiceResult("a/b", "nothing")) == "create"


def test_a_take_over_that_creates_anything_is_an_update_with_the_creates_listed() -> None:
    """A Service with a port its OCCM load balancer has no listener for: the take-over creates
    the listener, its pool and members, so the load balancer is changed, not taken "as is"."""
    creates = ["listener-tcp-443 (Listener)", "pool-tcp-443 (Pool)", "members-tcp-443 (Members)"]
    found = verdict_of(
        ServiceResult("a/b", "adoptable", lb_id="lb1", creates=creates),
        external_ip="172.24.4.9",
        elsewhere=(),
        cluster_name="prod",
    )
    assert (found.verdict, found.creates, found.updates) == ("update", creates, [])
    assert exit_code([found]) == 2
    text = render_text([found], style=Style(enabled=False))
    assert "    create  listener-tcp-443 (Listener)" in text


def test_no_load_balancer_for_a_service_with_an_ip_is_a_new_ip() -> None:
    found = verdict_of(
        ServiceResult("a/b", "nothing"), external_ip="203.0.113.7", elsewhere=[], cluster_name="p"
    )
    assert found.verdict == "new-ip"
    assert "203.0.113.7" in found.reasons[0]


def test_one_named_under_another_cluster_name_is_a_second_load_balancer() -> None:
    found = verdict_of(
        ServiceResult("a/b", "nothing"),
        external_ip="203.0.113.7",
        elsewhere=["kube_service_kubernetes_a_b"],
        cluster_name="prod",
    )
    assert found.verdict == "second-lb"
    assert "kube_service_kubernetes_a_b" in found.reasons[0]
    assert "--cluster-name" in found.reasons[0]


def test_other_cluster_names_match_the_namespace_and_name_exactly() -> None:
    names = [
        "kube_service_prod_a_b",  # ours
        "kube_service_kubernetes_a_b",
        "kube_service_old_cluster_a_b",
        "kube_service_kubernetes_xa_b",  # another Service: namespace xa
        "kube_service_kubernetes_a_bb",  # another Service: name bb
        "kube_service__a_b",  # no cluster name at all
        "my-own-lb",
    ]
    assert named_under_other_clusters(names, namespace="a", name="b", cluster_name="prod") == {
        "kube_service_kubernetes_a_b": "kubernetes",
        "kube_service_old_cluster_a_b": "old_cluster",
    }


@pytest.mark.parametrize(
    ("verdicts", "code"),
    [
        (["take-over", "managed", "create"], 0),
        (["take-over", "update"], 2),
        (["take-over", "refuse"], 2),
        (["invalid"], 2),
        (["update", "new-ip"], 1),
        (["take-over", "second-lb"], 1),
        ([], 0),
    ],
)
def test_the_exit_code_is_worst_first(verdicts: list[str], code: int) -> None:
    assert exit_code([Verdict(f"a/{i}", v) for i, v in enumerate(verdicts)]) == code


def test_text_and_prometheus_forms() -> None:
    verdicts = [
        Verdict("a/b", "update", external_ip="203.0.113.7", updates=["lb: lbMethod x -> y"]),
        Verdict("a/c", "new-ip", reasons=["a new IP"]),
    ]
    text = render_text(verdicts, style=Style(enabled=False))
    assert "a/b: update  203.0.113.7\n    update  lb: lbMethod x -> y\n" in text
    assert text.endswith("1 update, 1 new-ip\n")
    metrics = render_prometheus(verdicts)
    assert 'lbr_preflight_services{verdict="take-over"} 0' in metrics
    assert 'lbr_preflight_services{verdict="new-ip"} 1' in metrics
    assert "lbr_preflight_exit_code 1" in metrics


def test_a_cluster_name_that_names_none_of_the_load_balancers_is_a_mismatch() -> None:
    lbs = ["kube_service_kubernetes_a_b", "kube_service_kubernetes_a_c", "user-lb"]
    services = [("a", "b"), ("a", "c"), ("a", "d")]
    assert cluster_name_mismatch(services, lbs, cluster_name="prod") == {
        "a/b": {"kube_service_kubernetes_a_b": "kubernetes"},
        "a/c": {"kube_service_kubernetes_a_c": "kubernetes"},
    }
    assert cluster_name_mismatch(services, lbs, cluster_name="kubernetes") == {}
    # one Service's load balancer carries this cluster name: OCCM's name it is (a stale one of
    # an old name beside it does not count)
    assert (
        cluster_name_mismatch(services, [*lbs, "kube_service_prod_a_d"], cluster_name="prod") == {}
    )
    assert cluster_name_mismatch([], lbs, cluster_name="prod") == {}  # no Service with an IP


def test_a_refusal_names_a_load_balancer_of_another_cluster_name() -> None:
    found = verdict_of(
        ServiceResult("a/b", "refused", problems=["port TCP/80 belongs to another Service"]),
        external_ip="203.0.113.7",
        elsewhere=["kube_service_kubernetes_a_b"],
        cluster_name="prod",
    )
    assert found.verdict == "refuse"
    assert found.reasons[0] == "port TCP/80 belongs to another Service"
    assert "kube_service_kubernetes_a_b" in found.reasons[1]
    assert "--cluster-name" in found.reasons[1]

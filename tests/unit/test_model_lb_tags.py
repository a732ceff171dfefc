"""The pure rules for a load balancer's tags (reconciler/model/naming.py), as OCCM keeps them."""

from __future__ import annotations

from reconciler.model.naming import others_listener, services_tagged, with_tags, without_tag

OURS = "kube_service_k_default_ours"
THEIRS = "kube_service_k_default_theirs"


def test_with_tags_adds_only_what_is_missing_and_keeps_the_rest() -> None:
    assert with_tags([OURS, "env=prod"], [OURS, "env=prod"]) is None
    assert with_tags([THEIRS, "x"], [OURS, "env=prod", OURS]) == [THEIRS, "x", OURS, "env=prod"]
    assert with_tags([], [OURS]) == [OURS]


def test_without_tag_takes_one_name_away_or_says_there_is_nothing_to_do() -> None:
    assert without_tag([OURS, THEIRS, "env=prod"], OURS) == [THEIRS, "env=prod"]
    assert without_tag([THEIRS], OURS) is None
    assert without_tag([OURS], OURS) == []


def test_the_services_on_a_load_balancer_are_its_service_names() -> None:
    tags = [OURS, THEIRS, "kube_cluster_id_1234", "env=prod"]
    assert services_tagged(tags) == {OURS, THEIRS}
    assert services_tagged(tags, but=OURS) == {THEIRS}


def test_a_listener_is_somebody_elses_when_it_has_tags_but_not_our_name() -> None:
    assert not others_listener([OURS, "listener-a"], ours=OURS)  # our listener-tags
    assert others_listener([THEIRS], ours=OURS)
    assert others_listener(["made-by-hand"], ours=OURS)
    assert not others_listener([], ours=OURS)  # before OCCM's tags, or by hand: nobody's

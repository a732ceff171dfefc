"""Which roles let a credential make load balancers (reconciler/engine/openstack/roles.py)."""

from __future__ import annotations

import pytest

from reconciler.engine.openstack.roles import forbidden_hint, missing_write_role


@pytest.mark.parametrize(
    "roles",
    [["member"], ["reader", "member"], ["load-balancer_member"], ["admin"], ["Member"]],
)
def test_a_role_of_either_octavia_policy_may_write(roles: list[str]) -> None:
    assert missing_write_role(roles, project="demo") is None


@pytest.mark.parametrize("roles", [["reader"], [], ["load-balancer_observer", "reader"]])
def test_a_credential_that_can_only_read_is_told_which_role_to_ask_for(roles: list[str]) -> None:
    why = missing_write_role(roles, project="demo")
    assert why is not None
    assert f"are {', '.join(sorted(roles)) or 'none'}:" in why
    assert "'member' on the project" in why
    assert "'load-balancer_member'" in why
    assert "openstack role add --user <user> --project demo member" in why


def test_a_403_says_what_the_credential_holds_and_what_the_policy_wants() -> None:
    hint = forbidden_hint(["reader"], project="demo")
    assert hint.startswith("the credential holds reader on project 'demo'; ")
    assert "'member'" in hint
    assert "'load-balancer_member'" in hint
    assert forbidden_hint(None, project="demo").startswith("the credential was refused; ")


def test_a_403_to_a_credential_with_a_write_role_blames_the_clouds_own_policy() -> None:
    hint = forbidden_hint(["member", "reader"], project="demo")
    assert hint == (
        "the credential holds member, reader on project 'demo', which Octavia's default and "
        "advanced policies let make load balancers; this cloud's policy refused it all the "
        "same: ask its administrator which role this needs"
    )

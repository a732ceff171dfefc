"""What the key manager's answer about a certificate reference means (engine/certificates.py)."""

from __future__ import annotations

from reconciler.engine.certificates import refusal

REF = "https://kms/v1/containers/0d1c7a52-0000-4000-8000-000000000000"


def test_an_unknown_reference_is_refused_naming_the_field_and_quoting_barbican() -> None:
    why = refusal(REF, 404, "Secrets container not found.")
    assert why is not None
    assert why.startswith(
        "loadbalancer.openstack.org/default-tls-container-ref (or cloud.conf [LoadBalancer] "
        f"default-tls-container-ref) {REF}: no such certificate container or secret (the key "
        "manager answered 404: Secrets container not found.); no listener was touched."
    )


def test_one_the_credential_may_not_read_is_refused_with_the_acl_to_give() -> None:
    for status in (401, 403):
        why = refusal(REF, status, "Forbidden")
        assert why is not None
        assert "this controller's credential may not read it" in why
        assert "openstack acl user add" in why


def test_an_answer_that_says_nothing_leaves_it_to_octavia() -> None:
    assert refusal(REF, 200, "") is None
    assert refusal(REF, None, "") is None  # no answer
    assert refusal(REF, 503, "down") is None

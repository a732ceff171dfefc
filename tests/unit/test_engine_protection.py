"""A plan Pulumi refused because the load balancer or floating IP is protected reads as what it
is (reconciler/engine/failure_text.py), classified as not retryable soon
(reconciler/engine/errors.py)."""

from __future__ import annotations

from reconciler.engine.errors import InvalidConfigError, error_class
from reconciler.engine.failure_text import headline, protected_refusal

URN = "urn:pulumi:itest.default.braces::lb-reconciler::openstack:loadbalancer/"
# What the real engine printed in tests/integration/engine/test_engine_create_only.py
REPLACE = f"""Updating (itest.default.braces):
    openstack:loadbalancer:LoadBalancer lb  error: unable to replace resource \
"{URN}loadBalancer:LoadBalancer::lb"
as it is currently marked for protection. To unprotect the resource, remove the `protect` flag \
from the resource in your Pulumi program and run `pulumi up`
    openstack:loadbalancer:LoadBalancer lb **failed** 1 error
error: unable to replace resource "{URN}loadBalancer:LoadBalancer::lb"
1 errored
"""
FIP = "urn:pulumi:s::lb-reconciler::openstack:networking/floatingIp:FloatingIp::fip"
DELETE = f'error: resource "{FIP}" cannot be deleted\nbecause it is protected.'


def test_a_refused_replacement_of_the_load_balancer_says_so() -> None:
    assert error_class(REPLACE) is InvalidConfigError
    line = headline(REPLACE)
    assert line.startswith("refused: the plan would replace the load balancer (lb) of a Service")
    assert "nothing was changed" in line
    assert "delete and re-create the Service" in line


def test_a_refused_deletion_of_the_floating_ip_says_so() -> None:
    assert error_class(DELETE) is InvalidConfigError
    assert "would delete the floating IP (fip)" in headline(DELETE)


def test_other_failures_are_no_refusal() -> None:
    assert protected_refusal("error: Bad request with: [POST http://x/v2/lbaas], error") == ""

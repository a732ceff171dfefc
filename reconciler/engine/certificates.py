"""A listener's certificate reference, checked with the key manager before ``up``.

Octavia validates ``default_tls_container_ref`` against Barbican when the listener is created
or updated (400 ``Could not retrieve certificate``), which is after the load balancer exists
and while other listeners are being changed. So the engine asks Barbican first, with the
Service's own credential: a reference it does not know (404), or may not read (401, 403), is a
refusal naming the field, before any listener is touched. A key manager that does not answer
(no Barbican in the catalog's host, 5xx) decides nothing here: Octavia's answer will.
"""

from __future__ import annotations

import logging

from reconciler.engine.errors import InvalidConfigError
from reconciler.engine.openstack.client import OpenStackRest
from reconciler.model.spec import LoadBalancerSpec

__all__ = ["check_certificates", "refusal"]

log = logging.getLogger("reconciler.engine.stack")

FIELD = (
    "loadbalancer.openstack.org/default-tls-container-ref (or cloud.conf [LoadBalancer] "
    "default-tls-container-ref)"
)


def refusal(ref: str, status: int | None, message: str) -> str | None:
    """What to tell the user about ``ref`` when the key manager answered ``status`` (None: no
    answer) with ``message``; None when it is known, or the answer decides nothing."""
    said = f"the key manager answered {status}" + (f": {message}" if message else "")
    if status == 404:
        return (
            f"{FIELD} {ref}: no such certificate container or secret ({said}); no listener "
            "was touched. Store the certificate in Barbican (openstack secret container "
            "create ...) and name its reference, or fix the field"
        )
    if status in (401, 403):
        return (
            f"{FIELD} {ref}: this controller's credential may not read it ({said}); no "
            "listener was touched. Give the credential's project access (openstack acl user "
            "add ...), or name a container of its own project"
        )
    return None


def check_certificates(spec: LoadBalancerSpec, rest: OpenStackRest, *, stack: str) -> None:
    """Raise :class:`InvalidConfigError` for the first certificate reference of ``spec`` that
    the key manager does not know or will not show (see the module)."""
    refs = sorted({li.default_tls_container_ref or "" for li in spec.listeners} - {""})
    for ref in refs:
        status, message = rest.reference_status(ref)
        why = refusal(ref, status, message)
        if why is not None:
            raise InvalidConfigError(why, stack=stack)
        if status is None or status >= 400:
            log.info("stack %s: the key manager did not say whether it knows %s", stack, ref)

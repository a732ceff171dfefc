"""What ``lb-reconciler run`` checks before it asks for the Lease, each a refusal with the fix
named rather than a controller that starts and does harm:

* the cluster's identity (the kube-system namespace's UID; a warning when it cannot be read);
* the OpenStack login and catalog (every delete depends on them), and a role that may make load
  balancers in the token (a ``reader``-only credential would accept Services it cannot serve:
  :mod:`reconciler.engine.openstack.roles`);
* ``--cluster-name``: when no Service with an external IP has a load balancer named for it under
  this cluster name and some have one under another name, the controller would give those
  Services new load balancers and new IPs beside OCCM's (OCCM ran with another
  ``--cluster-name``): it refuses to start, naming the load balancers and the name they carry
  (:func:`reconciler.model.naming.cluster_name_mismatch`), unless told to go on.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from reconciler.controller.kubeapi import KubeApi, KubeError, KubeUnavailableError
from reconciler.model.naming import cluster_name_mismatch
from reconciler.model.predicates import external_address, part

if TYPE_CHECKING:
    from reconciler.engine.stack import Engine

__all__ = [
    "EXIT_CONFIG",
    "EXIT_FAILURE",
    "check_cluster_name",
    "cloud_login",
    "cluster_identity",
    "read_cluster_identity",
    "write_role",
]

_log = logging.getLogger("reconciler.controller.runner")

EXIT_FAILURE, EXIT_CONFIG = 1, 2


def read_cluster_identity(kube: KubeApi) -> tuple[str, str]:
    """The cluster's identity: the kube-system namespace's UID (OCCM's ``kube_cluster_id_``
    tag), and "" with why when it cannot be read (then only names and descriptions tell this
    cluster's load balancers apart)."""
    try:
        uid = str(kube.get("/api/v1/namespaces/kube-system")["metadata"].get("uid") or "")
    except (KubeError, KubeUnavailableError, KeyError, TypeError) as exc:
        return "", str(exc) or type(exc).__name__
    return uid, "" if uid else "the kube-system namespace has no UID"


def cluster_identity(kube: KubeApi) -> str:
    """:func:`read_cluster_identity`, a failure logged as a warning (the controller goes on)."""
    uid, problem = read_cluster_identity(kube)
    if problem:
        _log.warning(
            "cannot read the kube-system namespace's UID (the cluster identity tagged on load "
            "balancers); going on without it: grant get on namespaces/kube-system "
            "(deploy/rbac.yaml)",
            extra={"error": problem},
        )
    return uid


def cloud_login(engine: Engine) -> int | None:
    """Log the engine's OpenStack client in (and find its endpoints) before the controller
    leads: every delete depends on it, and a controller that makes load balancers it cannot
    delete leaves finalizers stuck. None when it worked, else the exit code, after an error
    log saying with which settings and what the cloud answered."""
    from reconciler.engine.openstack.client import LoginError, OpenStackRestError

    try:
        engine.rest().login()
    except OpenStackRestError as exc:
        # a login or catalog that does not work with these settings: cloud.conf's to fix
        settings = isinstance(exc, LoginError) and (exc.status or 0) < 500
        _log.error(
            "cannot use the OpenStack cloud; not leading, exiting (the Deployment restarts "
            "the process, which tries again)",
            extra={"error": str(exc), "auth_url": engine.settings.auth.auth_url},
        )
        return EXIT_CONFIG if settings else EXIT_FAILURE
    _log.info("logged in to OpenStack", extra={"auth_url": engine.settings.auth.auth_url})
    return write_role(engine)


def write_role(engine: Engine) -> int | None:
    """None when the credential's token holds a role that may make load balancers
    (:mod:`reconciler.engine.openstack.roles`; read from the token, nothing is written), else
    :data:`EXIT_CONFIG` after an error log naming the role to grant."""
    from reconciler.engine.openstack.client import OpenStackRestError
    from reconciler.engine.openstack.roles import missing_write_role

    try:
        roles, project = engine.rest().roles()
    except OpenStackRestError as exc:
        _log.warning("cannot read the credential's roles; going on", extra={"error": str(exc)})
        return None
    why = missing_write_role(roles, project=project)
    if why is None:
        return None
    _log.error(f"{why}; not starting", extra={"auth_url": engine.settings.auth.auth_url})
    return EXIT_CONFIG


def _with_external_ip(services: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [
        (str(part(svc, "metadata").get("namespace")), str(part(svc, "metadata").get("name")))
        for svc in services
        if part(svc, "spec").get("type") == "LoadBalancer" and external_address(svc)
    ]


def check_cluster_name(
    engine: Engine, kube: KubeApi, *, cluster_name: str, namespace: str | None = None
) -> int | None:
    """None when ``--cluster-name`` fits the cloud (or it cannot be told); else
    :data:`EXIT_CONFIG` after an error log naming the Services, their load balancers and the
    cluster name those carry. Costs one list of Services (``namespace``'s: None, all) and one
    of load balancers."""
    from reconciler.engine.openstack.client import OpenStackRestError

    try:
        path = f"/api/v1/namespaces/{namespace}/services" if namespace else "/api/v1/services"
        services = kube.list(path).get("items") or []
        lb_names = [str(lb.get("name") or "") for lb in engine.rest().load_balancers()]
    except (KubeError, KubeUnavailableError, OpenStackRestError) as exc:
        _log.warning(
            "cannot check --cluster-name against the cloud; going on", extra={"error": str(exc)}
        )
        return None
    found = cluster_name_mismatch(_with_external_ip(services), lb_names, cluster_name=cluster_name)
    if not found:
        return None
    names = sorted({other for lbs in found.values() for other in lbs.values()})
    examples = [f"{svc}: {', '.join(lbs)}" for svc, lbs in sorted(found.items())[:5]]
    _log.error(
        f"--cluster-name {cluster_name!r} names none of the load balancers of the Services that "
        f"have an external IP, but {len(found)} of them have one named under "
        f"{' or '.join(repr(n) for n in names)}: OCCM's --cluster-name? With this one the "
        "controller would give them new load balancers and new IPs beside those. Start with "
        f"--cluster-name {names[0]} (docs/adopt.md), or, if those load balancers are another "
        "cluster's, with --skip-cluster-name-check; not starting",
        extra={"services": examples},
    )
    return EXIT_CONFIG

"""Whose a load balancer is: which one a Service's adoption takes, and whether this cluster
made it. Pure, over plain dicts shaped like the Octavia API's JSON.

Only a load balancer proven this cluster's is adopted (:func:`foreign_problem`, over
:func:`reconciler.model.naming.made_by_cluster`): OCCM's name alone is no proof, since two
clusters with the same ``--cluster-name`` in one project name theirs alike (OCCM #3102). Its
description must be OCCM's for this cluster and, when it carries cluster identity tags
(``kube_cluster_id_<uid>``, OCCM's PR #3103 and this controller), this cluster's must be among
them. :func:`not_this_clusters` says why one is not; ``lb-reconciler sweep`` uses it too. One
without any identity tag gets this cluster's after the adoption (:func:`records_identity`).

:func:`choose_load_balancer` picks the one to adopt: the Service's own load balancer id in
``loadbalancer.openstack.org/load-balancer-id`` (OCCM writes it, as the controller does) is not
a request to share; an annotation naming a load balancer that is not named for the Service means
the Service shares it (:mod:`reconciler.engine.adopt.plan` then adopts only its listeners).
"""

from __future__ import annotations

from collections.abc import Sequence

from reconciler.engine.adopt.plan import Found, Obj
from reconciler.model.annotations import LOAD_BALANCER_ID
from reconciler.model.naming import (
    CLUSTER_ID_TAG_PREFIX,
    SERVICE_PREFIX,
    cluster_id_tag,
    lb_description,
    made_by_cluster,
)
from reconciler.model.spec import LoadBalancerSpec

__all__ = ["choose_load_balancer", "foreign_problem", "not_this_clusters", "records_identity"]


def choose_load_balancer(
    spec: LoadBalancerSpec, *, named: Sequence[Obj], annotated: Obj | None
) -> tuple[Obj | None, bool, list[str]]:
    """The load balancer to adopt: (it or None, shared, problems).

    ``named``: the load balancers named for the Service; ``annotated``: the one its
    ``load-balancer-id`` annotation names (None when there is none or it does not exist).
    """
    wanted = spec.existing_lb_id
    if wanted:
        own = [lb for lb in named if lb.get("id") == wanted]
        if own:
            return own[0], False, []
        if annotated is None:
            problem = (
                f"{LOAD_BALANCER_ID} names {wanted}, which does not "
                "exist; remove the annotation (a new load balancer is then made) or correct it"
            )
            return None, False, [problem]
        return annotated, True, []
    if len(named) > 1:
        ids = ", ".join(str(lb.get("id")) for lb in named)
        return (
            None,
            False,
            [
                f"{len(named)} load balancers are named {spec.name} ({ids}); set "
                f"{LOAD_BALANCER_ID} to the one to adopt"
            ],
        )
    return (named[0], False, []) if named else (None, False, [])


def not_this_clusters(lb: Obj, *, cluster_name: str, cluster_id: str) -> str | None:
    """Why load balancer ``lb`` (as Octavia shows it) is not proven this cluster's by
    :func:`reconciler.model.naming.made_by_cluster`, or None when it is. ``cluster_id``: the
    kube-system namespace's UID, "" when it could not be read."""
    if made_by_cluster(lb, cluster_name=cluster_name, cluster_id=cluster_id):
        return None
    tags = [str(t) for t in lb.get("tags") or ()]
    identities = ", ".join(sorted(t for t in tags if t.startswith(CLUSTER_ID_TAG_PREFIX)))
    if identities and not cluster_id:
        return (
            f"it carries the cluster identity tag {identities}, and this cluster's identity (the "
            "kube-system namespace's UID) could not be read: grant get on namespaces/kube-system"
        )
    if identities:
        return (
            f"it carries another cluster's identity tag {identities} (this cluster's is "
            f"{cluster_id_tag(cluster_id)}): another cluster with the same --cluster-name in "
            "this project"
        )
    name = str(lb.get("name") or "")
    if not name.startswith(f"{SERVICE_PREFIX}{cluster_name}_"):
        return f"its name is not {SERVICE_PREFIX}{cluster_name}_<namespace>_<name>"
    wanted = lb_description(cluster_name=cluster_name, namespace="<namespace>", name="<name>")
    return (
        f"its description {lb.get('description') or ''!r} is not OCCM's for cluster "
        f"{cluster_name} ({wanted!r}): made by hand, by another tool or for another cluster"
    )


def foreign_problem(found: Found, *, cluster_name: str, cluster_id: str) -> str | None:
    """The problem that stops the adoption of a load balancer this cluster did not make, or
    None. A shared one (the ``load-balancer-id`` annotation names another Service's or a
    user's load balancer) is not checked: only its listeners are adopted, never it."""
    lb = found.load_balancer
    if lb is None or found.shared:
        return None
    why = not_this_clusters(lb, cluster_name=cluster_name, cluster_id=cluster_id)
    if why is None:
        return None
    return (
        f"load balancer {lb.get('name')} ({lb.get('id')}) was not made by this cluster: {why}; "
        "it is not adopted (a cluster adopts only its own). If it is another cluster's, give "
        "this cluster a --cluster-name of its own; if nobody uses it, delete it by hand"
    )


def records_identity(lb: Obj | None, *, cluster_id: str) -> bool:
    """The adoption tags load balancer ``lb`` with this cluster's identity (it has none): the
    engine adds it after the import's ``up`` (reconciler/engine/lb_tags.py)."""
    if lb is None or not cluster_id:
        return False
    return not any(str(t).startswith(CLUSTER_ID_TAG_PREFIX) for t in lb.get("tags") or ())

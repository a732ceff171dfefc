"""Which Keystone roles let a credential make load balancers, and what to say when it lacks them.
Pure; :mod:`reconciler.controller.startup` and ``lb-reconciler preflight`` check the token's
roles at start, and the engine adds :func:`forbidden_hint` to a 403's Warning.

Octavia 19 enforces oslo.policy's new defaults unless the cloud configures otherwise: creating a
load balancer needs ``member`` on the project (``admin`` is more); a cloud running Octavia's
*advanced* policy file wants ``load-balancer_member`` (or ``load-balancer_admin``) instead.
Neutron's default policy wants ``member`` for the floating IP and the security group. A token
cannot say which policy the cloud runs, so the start-time check passes with either role and
refuses a credential with neither (``reader`` only, or ``load-balancer_observer``): each of its
writes would be refused, and the Services it accepted would keep finalizers it cannot honour.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["WRITE_ROLES", "forbidden_hint", "missing_write_role"]

# any one of them lets the credential create load balancers under one of Octavia's policies
WRITE_ROLES = ("member", "load-balancer_member", "admin", "load-balancer_admin")

_NEEDED = (
    "the role 'member' on the project (Octavia's and Neutron's default policy), or "
    "'load-balancer_member' where the cloud runs Octavia's advanced policy"
)


def _held(roles: Sequence[str]) -> str:
    return ", ".join(sorted(roles)) if roles else "none"


def missing_write_role(roles: Sequence[str], *, project: str) -> str | None:
    """Why a credential with ``roles`` on ``project`` cannot make load balancers, naming the
    role to grant; None when it holds one of :data:`WRITE_ROLES`."""
    if any(role.lower() in WRITE_ROLES for role in roles):
        return None
    return (
        f"the OpenStack credential's roles on project {project!r} are {_held(roles)}: it can "
        f"read load balancers but not make them; it needs {_NEEDED}. Ask the cloud's "
        f"administrator: openstack role add --user <user> --project {project} member"
    )


def forbidden_hint(roles: Sequence[str] | None, *, project: str) -> str:
    """What to add to a 403 (not a quota) from the cloud: the roles the credential holds on
    ``project`` (None: unknown) and the ones the policy wants; when it holds one of those, that
    the cloud's own policy wants more."""
    if roles is not None and missing_write_role(roles, project=project) is None:
        return (
            f"the credential holds {_held(roles)} on project {project!r}, which Octavia's "
            "default and advanced policies let make load balancers; this cloud's policy "
            "refused it all the same: ask its administrator which role this needs"
        )
    held = f"holds {_held(roles)} on project {project!r}" if roles is not None else "was refused"
    return f"the credential {held}; making load balancers needs {_NEEDED}"

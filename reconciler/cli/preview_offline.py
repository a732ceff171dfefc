"""``lb-reconciler preview`` without the cloud (CI): when it asks the cloud, and what it says it
could not check. Pure.

A preview asks the cloud only when it is given cloud credentials: a password, token or
application-credential secret in cloud.conf (directly or through ``use-clouds``), which is where
the engine takes them from, as the controller does (the environment's ``OS_PASSWORD`` and the
like are not passed on to the provider). Without them it reads the backend and
nothing else: the program's lookups are replayed from what each stack's last ``up`` recorded
(:mod:`reconciler.engine.preview_offline`), and each Service's report says what was not checked.
"""

from __future__ import annotations

from collections.abc import Iterable

from reconciler.config import AuthConfig

__all__ = [
    "NODES_FROM_STATE_NOTE",
    "NO_CREDENTIALS_FOR_REFRESH",
    "TAKES_OVER_NOTE",
    "has_credentials",
    "new_service_nodes_note",
    "offline_notes",
]

NO_CREDENTIALS_FOR_REFRESH = (
    "--refresh reads the load balancers from the cloud, which needs cloud credentials: give "
    "a cloud.conf with its password (or application credential secret, or token); or leave "
    "--refresh out to preview from the state alone"
)
NODES_FROM_STATE_NOTE = "members: the Nodes the stack was last applied with (--nodes-from-state)"


def new_service_nodes_note(source: str) -> str:
    """Where a new Service's members come from with --nodes-from-state."""
    if not source:
        return (
            "members: none previewed (--nodes-from-state, and no stack of the cluster to take "
            "the Nodes from); the controller adds every eligible Node"
        )
    return (
        f"members: the Nodes the stack of {source} was last applied with (--nodes-from-state; "
        "a new Service has no state of its own)"
    )


TAKES_OVER_NOTE = (
    "takes over {what}, made before (by OCCM, or by a stack that was lost): its objects are "
    "imported, not created again, and its external IP stays (docs/adopt.md)"
)


def has_credentials(auth: AuthConfig) -> bool:
    """Whether a preview has cloud credentials (cloud.conf's) to ask the cloud with."""
    secrets = (auth.password, auth.token, auth.application_credential_secret)
    return any(s.reveal() for s in secrets)


def offline_notes(unchecked: Iterable[str], *, new: bool, name: str) -> tuple[str, ...]:
    """The notes of a Service previewed without the cloud: what the program could not replay,
    and for a new Service what only the cloud can say."""
    notes = [f"not checked (no cloud credentials): {what}" for what in unchecked]
    if new:
        notes.append(
            f"not checked (no cloud credentials): whether a load balancer named {name} exists "
            "(made by OCCM: the controller would take it over); quotas; free floating IPs and "
            "free addresses in the subnets"
        )
    return tuple(notes)

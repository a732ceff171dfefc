"""``lb-reconciler preview`` without the cloud (CI): when it asks the cloud, and what it says it
could not check. Pure.

A preview asks the cloud only when it is given cloud credentials (a password, token or
application-credential secret in cloud.conf, or ``OS_PASSWORD``, ``OS_TOKEN``,
``OS_APPLICATION_CREDENTIAL_SECRET`` in its environment). Without them it reads the backend and
nothing else: the program's lookups are replayed from what each stack's last ``up`` recorded
(:mod:`reconciler.engine.preview_offline`), and each Service's report says what was not checked.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from reconciler.config import AuthConfig

__all__ = [
    "CREDENTIAL_VARIABLES",
    "NEW_WITHOUT_NODES_NOTE",
    "NODES_FROM_STATE_NOTE",
    "NO_CREDENTIALS_FOR_REFRESH",
    "TAKES_OVER_NOTE",
    "has_credentials",
    "offline_notes",
]

# the environment variables by which the OpenStack provider and clients take a secret
CREDENTIAL_VARIABLES = ("OS_PASSWORD", "OS_TOKEN", "OS_APPLICATION_CREDENTIAL_SECRET")

NO_CREDENTIALS_FOR_REFRESH = (
    "--refresh reads the load balancers from the cloud, which needs cloud credentials: give "
    "cloud.conf with a password or application credential, or set OS_PASSWORD (or "
    "OS_APPLICATION_CREDENTIAL_SECRET); or leave --refresh out to preview from the state alone"
)
NODES_FROM_STATE_NOTE = "members: the Nodes the stack was last applied with (--nodes-from-state)"
NEW_WITHOUT_NODES_NOTE = (
    "members: none previewed (--nodes-from-state, and a new Service has no state); the "
    "controller adds every eligible Node"
)
TAKES_OVER_NOTE = (
    "takes over {what}, made before (by OCCM, or by a stack that was lost): its objects are "
    "imported, not created again, and its external IP stays (docs/adopt.md)"
)


def has_credentials(auth: AuthConfig, environ: Mapping[str, str]) -> bool:
    """Whether a preview has cloud credentials to ask the cloud with."""
    secrets = (auth.password, auth.token, auth.application_credential_secret)
    return any(s.reveal() for s in secrets) or any(environ.get(v) for v in CREDENTIAL_VARIABLES)


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

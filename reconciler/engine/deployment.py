"""What a Pulumi deployment (``pulumi stack export``, a checkpoint's ``latest``) contains, as
the engine reads it: the stack's own resource and the providers beside the cloud objects, and
how Pulumi marks a secret. Pure, at the bottom of the engine: it imports nothing of it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stacks.vocabulary import logical_name

__all__ = [
    "PROVIDER_PREFIX",
    "SECRET_SIG",
    "SIG_KEY",
    "STACK_TYPE",
    "holds_secret",
    "is_bookkeeping",
    "is_secret",
    "resources_of",
    "stack_resource",
]

STACK_TYPE = "pulumi:pulumi:Stack"  # the stack's own resource: its outputs are the stack's
PROVIDER_PREFIX = "pulumi:providers:"  # a provider resource's type token starts so
# Pulumi's special-value envelope: {SIG_KEY: <kind>, ...}; SECRET_SIG is the kind of a secret,
# {SIG_KEY: SECRET_SIG, "ciphertext": ...} in state, {..., "value": ...} in events
SIG_KEY = "4dabf18193072939515e22adb298388d"
SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270"  # noqa: S105 (a marker, not a secret)


def is_bookkeeping(resource_type: str) -> bool:
    """The stack's own resource or a provider: no cloud object."""
    return resource_type == STACK_TYPE or resource_type.startswith(PROVIDER_PREFIX)


def is_secret(value: Any) -> bool:
    """Whether ``value`` is Pulumi's envelope of a secret."""
    return isinstance(value, Mapping) and value.get(SIG_KEY) == SECRET_SIG


def holds_secret(value: Any) -> bool:
    """Whether ``value`` is or holds one of Pulumi's special values (a secret, as events and
    checkpoints mark them; an asset or a resource reference is marked the same way)."""
    if isinstance(value, Mapping):
        return SIG_KEY in value or any(holds_secret(v) for v in value.values())
    if isinstance(value, list):
        return any(holds_secret(v) for v in value)
    return False


def stack_resource(deployment: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The deployment's ``pulumi:pulumi:Stack`` resource (its outputs are the stack's); None."""
    for res in deployment.get("resources") or []:
        if res.get("type") == STACK_TYPE:
            return res  # type: ignore[no-any-return]
    return None


def resources_of(deployment: Mapping[str, Any]) -> dict[str, str]:
    """{logical name: cloud ID} of the cloud objects in a deployment (``stack export``)."""
    return {
        logical_name(str(r.get("urn", ""))): str(r.get("id") or "")
        for r in deployment.get("resources") or ()
        if r.get("custom") and not str(r.get("type", "")).startswith("pulumi:")
    }

"""Engine errors: one :class:`EngineError` subclass per kind of failure, and which kind a failed
run's output is.

Every failure of a stack operation reaches the controller as one of these. Each class's
``failure_kind`` says how the controller retries it (a :data:`FailureKind`: the values of
:class:`reconciler.controller.backend.Failure`, which reads it; the engine does not import the
controller), so that mapping is here, once, beside the class it is about:

* :class:`ConflictError` (``busy``: Warning, retry in seconds): the cloud or the stack is busy and
  will not be for long: the cloud answered 409 (Octavia while a load balancer is ``PENDING_*``),
  a wait ended on a ``PENDING_*`` state, or the stack is locked by a live operation;
* :class:`InterruptedOperationError` (``retry_soon``: no Event, retry in seconds): the controller
  is stopping; :class:`NotLeaderError`, one of them: this process no longer holds the Lease, so
  it refused to write (or killed its running operation); the new leader does the work;
* :class:`StackLockedError` (``backoff``): the stack is locked by a holder this controller
  cannot prove is its own (a person's or CI's ``pulumi``): never taken, reported by name;
* :class:`UpTimeoutError` (``backoff``): an operation or a wait for the cloud ran past its
  deadline;
* :class:`CloudUnavailableError` (``backoff``): the cloud answered 5xx, 408 or 429, or could not
  be reached;
* :class:`QuotaError` (``backoff``): a project quota is exhausted; someone must act;
* :class:`InvalidConfigError` (``backoff``): the cloud rejects what the Service asks for (any
  other 4xx: a zone, flavor or subnet that does not exist, 401, 403, 404), the program found the
  spec impossible (``lb-reconciler invalid spec:``, e.g. ``max-shared-lb``), or Pulumi refused a
  plan that would replace or delete a protected resource
  (:func:`~reconciler.engine.failure_text.protected_refusal`);
* :class:`InternalError` (``backoff``): anything else (a bug, a broken toolchain).

:func:`error_class` is pure: the class for the output of a failed run, from what the cloud and
the tools said went wrong (:mod:`.failure_text` reads that; when the cloud answered more than once,
the most severe answer wins). :func:`engine_error` builds the error, its message from
:func:`~reconciler.engine.failure_text.describe`. Messages are redacted
(:mod:`.redact`) before they are stored in an exception. :func:`fault_class` (one answer of
the cloud) is also how the engine's own OpenStack client says how its errors are retried
(:class:`~.openstack.session.OpenStackRestError` ``failure_kind``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

from reconciler.engine.failure_text import (
    CloudFault,
    cloud_faults,
    describe,
    error_lines,
    error_text,
    protected_refusal,
)
from reconciler.engine.state.layout import ORGANIZATION
from reconciler.engine.state.lock_plan import LockRecord, held_message
from stacks.vocabulary import INVALID_SPEC_MARKER, PROJECT

__all__ = [
    "CloudUnavailableError",
    "ConflictError",
    "EngineError",
    "FailureKind",
    "InternalError",
    "InterruptedOperationError",
    "InvalidConfigError",
    "NotLeaderError",
    "QuotaError",
    "StackLockedError",
    "UpTimeoutError",
    "engine_error",
    "error_class",
    "fault_class",
    "policy_refusal_in",
    "refused_by_policy",
]

# how the controller retries a failure (reconciler.controller.backend.Failure's values)
FailureKind = Literal["retry_soon", "busy", "backoff"]


class EngineError(Exception):
    """A stack operation failed. Every kind is retried, how soon its ``failure_kind`` says;
    ``reason`` is a short name for the kind."""

    reason = "Internal"
    failure_kind: FailureKind = "backoff"

    def __init__(self, message: str, *, stack: str = "") -> None:
        super().__init__(message)
        self.stack = stack


class ConflictError(EngineError):
    reason = "Conflict"
    failure_kind: FailureKind = "busy"


class StackLockedError(EngineError):
    """The stack is locked by a holder this controller cannot prove is its own (a person's or
    CI's ``pulumi``, another cluster's controller, a record it cannot read): the lock is never
    taken; the Service gets a Warning ``StackLocked`` naming the holder and how to free a dead
    one, and the operation is retried with backoff (:mod:`reconciler.engine.state.lock_plan`)."""

    reason = "StackLocked"
    event_reason = "StackLocked"  # the Warning's reason (else SyncLoadBalancerFailed)

    @classmethod
    def of(cls, stack: str, locks: Sequence[LockRecord], *, backend: str) -> StackLockedError:
        """The refusal of an operation on ``stack`` while ``locks``, not this controller's,
        hold it (``backend``: its URL without a password)."""
        fqn = f"{ORGANIZATION}/{PROJECT}/{stack}"
        return cls(held_message(fqn, locks, backend=backend), stack=stack)


class UpTimeoutError(EngineError):
    reason = "Timeout"


class InterruptedOperationError(EngineError):
    """The process is shutting down and interrupted the operation (see run_with_deadline)."""

    reason = "Interrupted"
    failure_kind: FailureKind = "retry_soon"


class NotLeaderError(InterruptedOperationError):
    """This process no longer holds the Lease (or its last renewal is older than the renew
    deadline): it must not write the stacks or the cloud; another replica leads."""

    reason = "NotLeader"


class CloudUnavailableError(EngineError):
    reason = "CloudUnavailable"


class QuotaError(EngineError):
    reason = "QuotaExceeded"


class InvalidConfigError(EngineError):
    """The cloud refused the request as made. Retried with backoff all the same: the cloud (a
    zone or subnet created) or cloud.conf may change without the Service changing."""

    reason = "InvalidConfiguration"


class InternalError(EngineError):
    reason = "Internal"


# -- which class ------------------------------------------------------------------------------


def fault_class(fault: CloudFault) -> type[EngineError]:
    """The class of one answer of the cloud, by its status (and quota words in its body)."""
    quota = fault.kind == "OverQuota" or re.search(r"quota", fault.message, re.IGNORECASE)
    if quota and fault.status in (403, 409, 413):
        return QuotaError
    if fault.status == 409:
        return ConflictError
    if fault.status == 501:  # Octavia's ProviderUnsupportedOptionError: a refusal, not an outage
        return InvalidConfigError
    if fault.status in (408, 429) or fault.status >= 500:
        return CloudUnavailableError
    if 400 <= fault.status < 500:
        return InvalidConfigError
    return InternalError


# what the error lines say, when no answer of the cloud is reported
_BUSY = re.compile(
    r"currently locked|ConcurrentUpdateError|another update is currently in progress|"
    r"unexpected state '?PENDING_(CREATE|UPDATE|DELETE)|Invalid state PENDING_",
    re.IGNORECASE,
)
_WAIT_TIMEOUT = re.compile(r"timeout while waiting for state|context deadline exceeded", re.I)
_UNREACHABLE = re.compile(
    r"connection (refused|reset)|connection error|no such host|i/o timeout|"
    r"TLS handshake timeout|network is unreachable|\bEOF\b",
    re.IGNORECASE,
)
_QUOTA = re.compile(r"\bquota\b|OverQuota", re.IGNORECASE)
_REFUSED = re.compile(
    r"Your query returned (no|more than one)\b|\bBad request\b|\bInvalid input\b", re.IGNORECASE
)

# the most severe wins: retry soon only when everything the cloud said was "busy"
_SEVERITY: tuple[type[EngineError], ...] = (
    QuotaError,
    InvalidConfigError,
    InternalError,
    UpTimeoutError,
    CloudUnavailableError,
    ConflictError,
)


def error_class(text: str) -> type[EngineError]:
    """The error class for the output of a failed operation (see the module docstring)."""
    lines = error_lines(text)
    if any(INVALID_SPEC_MARKER in line for line in lines) or protected_refusal(text):
        return InvalidConfigError
    faults = cloud_faults(text)
    if faults:
        classes = {fault_class(f) for f in faults}
        return next(cls for cls in _SEVERITY if cls in classes)
    said = "\n".join(error_text(line) for line in lines)  # not the resource and stack names
    for pattern, cls in (
        (_QUOTA, QuotaError),
        (_WAIT_TIMEOUT, UpTimeoutError),
        (_BUSY, ConflictError),
        (_UNREACHABLE, CloudUnavailableError),
        (_REFUSED, InvalidConfigError),
    ):
        if pattern.search(said):
            return cls
    return InternalError


def refused_by_policy(fault: CloudFault) -> bool:
    """A 403 that is not a quota: the cloud's policy refused the credential (a missing role)."""
    return fault.status == 403 and fault_class(fault) is not QuotaError


def policy_refusal_in(text: str) -> bool:
    """Whether the output of a failed operation holds a refusal by the cloud's policy."""
    return any(refused_by_policy(f) for f in cloud_faults(text))


def engine_error(text: str, *, doing: str, subject: str, stack: str) -> EngineError:
    """The classified error of a failed ``doing`` (``up``) of ``subject`` (``stack x``) whose
    output (already redacted) is ``text``."""
    return error_class(text)(f"{doing} of {subject} failed: {describe(text)}", stack=stack)

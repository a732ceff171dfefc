"""Engine errors, classified for the controller's backoff and Events.

Every failure of a stack operation reaches the controller as one :class:`EngineError` subclass:

* :class:`ConflictError` (retryable soon): Octavia's 409 while a load balancer is ``PENDING_*``,
  a stack locked by a live update, a 5xx or a dropped connection from the cloud;
* :class:`UpTimeoutError` (retryable): an operation that ran past its deadline and was interrupted;
* :class:`InterruptedOperationError` (retryable): interrupted because the controller stops;
* :class:`QuotaError` (retryable, slowly): a project quota is exhausted; someone must act;
* :class:`InvalidConfigError` (not retryable until the Service or cloud.conf changes): the cloud
  rejects what the Service asks for (400s, a missing network, max-shared-lb, ...);
* :class:`InternalError`: anything else (a bug, a broken toolchain).

:func:`classify` is pure: it maps the text of a failed ``pulumi`` run (the provider's error
bodies end up in it) to a class. Messages are passed through :func:`redact` before they are
stored in an exception, so a credential echoed by a tool never reaches a log or an Event.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = [
    "ConflictError",
    "EngineError",
    "InternalError",
    "InterruptedOperationError",
    "InvalidConfigError",
    "QuotaError",
    "UpTimeoutError",
    "classify",
    "redact",
]


class EngineError(Exception):
    """A stack operation failed. ``retryable``: whether the same request may succeed later."""

    retryable = False
    reason = "Internal"

    def __init__(self, message: str, *, stack: str = "") -> None:
        super().__init__(message)
        self.stack = stack


class ConflictError(EngineError):
    retryable = True
    reason = "Conflict"


class UpTimeoutError(EngineError):
    retryable = True
    reason = "Timeout"


class InterruptedOperationError(EngineError):
    """The process is shutting down and interrupted the operation (see run_with_deadline)."""

    retryable = True
    reason = "Interrupted"


class QuotaError(EngineError):
    retryable = True
    reason = "QuotaExceeded"


class InvalidConfigError(EngineError):
    reason = "InvalidConfiguration"


class InternalError(EngineError):
    reason = "Internal"


# Order matters: the first match wins (an invalid-spec marker beats the 400 it may contain).
_RULES: tuple[tuple[re.Pattern[str], type[EngineError]], ...] = (
    (re.compile(r"lb-reconciler invalid spec:"), InvalidConfigError),
    (re.compile(r"quota|OverQuota", re.IGNORECASE), QuotaError),
    (
        re.compile(
            r"\b409\b|PENDING_(CREATE|UPDATE|DELETE)|Invalid state|ConcurrentUpdateError|"
            r"currently (locked|in use)|\b50[0234]\b|connection reset|EOF|timeout",
            re.IGNORECASE,
        ),
        ConflictError,
    ),
    (
        re.compile(
            r"\b400\b|\b404\b|Bad Request|NotFound|not found|Invalid input|"
            r"Your query returned (no|more than one) result",
            re.IGNORECASE,
        ),
        InvalidConfigError,
    ),
)


def classify(text: str) -> type[EngineError]:
    """The error class for the output of a failed operation."""
    for pattern, cls in _RULES:
        if pattern.search(text):
            return cls
    return InternalError


def redact(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every non-empty secret replaced by ``[secret]``."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "[secret]")
    return text


def summarize(text: str, *, limit: int = 2000) -> str:
    """The lines of a pulumi run that say what failed, at most ``limit`` characters."""
    wanted = [
        line.strip()
        for line in text.splitlines()
        if re.search(r"error|failed|invalid spec|409|quota", line, re.IGNORECASE)
    ]
    body = "\n".join(dict.fromkeys(wanted)) or text.strip()
    return body[-limit:]

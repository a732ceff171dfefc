"""Engine errors, classified for the controller's retries and Events.

Every failure of a stack operation reaches the controller as one :class:`EngineError` subclass:

* :class:`ConflictError` (retry soon): the cloud or the stack is busy and will not be for long:
  the cloud answered 409 (Octavia while a load balancer is ``PENDING_*``), a wait ended on a
  ``PENDING_*`` state, or the stack is locked by a live operation;
* :class:`InterruptedOperationError` (retry soon, no Event): the controller is stopping;
* :class:`UpTimeoutError` (backoff): an operation or a wait for the cloud ran past its deadline;
* :class:`CloudUnavailableError` (backoff): the cloud answered 5xx, 408 or 429, or could not be
  reached;
* :class:`QuotaError` (backoff): a project quota is exhausted; someone must act;
* :class:`InvalidConfigError` (backoff): the cloud rejects what the Service asks for (any other
  4xx: a zone, flavor or subnet that does not exist, 401, 403, 404), the program found the
  spec impossible (``lb-reconciler invalid spec:``, e.g. ``max-shared-lb``), or Pulumi refused
  a plan that would replace or delete a protected resource (:func:`protected_refusal`);
* :class:`InternalError` (backoff): anything else (a bug, a broken toolchain).

:func:`classify` is pure and reads only what the cloud and the tools *said went wrong*: the HTTP
status and body of each cloud answer the provider reports (gophercloud's ``Expected HTTP
response code [...] when accessing [POST <url>], but got 400 instead: {"faultstring": ...}``,
and gophercloud v1's ``Bad request with: [...]``, ``Request forbidden: [...]``, ``Resource not
found``), else the error lines of the run. It never matches words anywhere in ``pulumi``'s
output: the output also holds the plan's diff and the stack's outputs, whose property names
(``timeout_client_data``) and values (a Service called ``quota-api``) say nothing about the
failure. That was the cause of a cloud 400 retried every 2 s without an Event: the diff of a
replacement listed the deleted listener's ``timeout_*`` properties, and ``timeout`` anywhere
meant "retry soon".

:func:`describe` turns the same text into the message a user reads: the cloud's own words first
(``the cloud answered 400 to POST /v2.0/lbaas/loadbalancers: Validation failure: Invalid
availability zone az-2.``), on one line, then the run's error lines for the log.

Messages are passed through :func:`redact` before they are stored in an exception, so a
credential echoed by a tool never reaches a log or an Event (see :func:`redact` for what counts
as one and how short or common secret values are handled).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from urllib.parse import quote, quote_plus, urlsplit

from stacks.vocabulary import FIP, INVALID_SPEC_MARKER, LB, logical_name

__all__ = [
    "CloudFault",
    "CloudUnavailableError",
    "ConflictError",
    "EngineError",
    "InternalError",
    "InterruptedOperationError",
    "InvalidConfigError",
    "QuotaError",
    "UpTimeoutError",
    "classify",
    "cloud_faults",
    "describe",
    "engine_error",
    "protected_refusal",
    "redact",
]


class EngineError(Exception):
    """A stack operation failed. Every kind is retried (how soon:
    :mod:`reconciler.controller.backend`); ``reason`` is a short name for the kind."""

    reason = "Internal"

    def __init__(self, message: str, *, stack: str = "") -> None:
        super().__init__(message)
        self.stack = stack


class ConflictError(EngineError):
    reason = "Conflict"


class UpTimeoutError(EngineError):
    reason = "Timeout"


class InterruptedOperationError(EngineError):
    """The process is shutting down and interrupted the operation (see run_with_deadline)."""

    reason = "Interrupted"


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


# -- what the cloud said ----------------------------------------------------------------------


@dataclass(frozen=True)
class CloudFault:
    """One error answer of the cloud, as the provider reported it."""

    status: int
    method: str  # "" when the report does not say (gophercloud v1's 404)
    path: str
    message: str  # Octavia's faultstring, Neutron's message, ... or the body as text
    kind: str = ""  # Neutron's error type (OverQuota), Keystone's title

    def describe(self) -> str:
        where = f" to {self.method} {self.path}" if self.method else ""
        said = f": {self.message}" if self.message else ""
        return f"the cloud answered {self.status}{where}{said}"

    def error_class(self) -> type[EngineError]:
        quota = self.kind == "OverQuota" or re.search(r"quota", self.message, re.IGNORECASE)
        if quota and self.status in (403, 409, 413):
            return QuotaError
        if self.status == 409:
            return ConflictError
        if self.status in (408, 429) or self.status >= 500:
            return CloudUnavailableError
        if 400 <= self.status < 500:
            return InvalidConfigError
        return InternalError


_URL = r"\[(?P<method>[A-Z]+) (?P<url>[^\s\]]+)\]"
_PROVIDER_SUFFIX = re.compile(r":\s*provider=\S+\s*$")
_FAULTS: tuple[tuple[re.Pattern[str], int | None], ...] = (
    # gophercloud v2 (the provider this toolchain builds)
    (
        re.compile(
            r"Expected HTTP response code \[[^\]]*\] when accessing " + _URL + r", but got "
            r"(?P<status>\d{3}) instead(?::\s*(?P<body>.*))?"
        ),
        None,
    ),
    # gophercloud v1 (older providers): the default errors of 400, 401, 403 and 404
    (re.compile(r"Bad request with: " + _URL + r", error message: (?P<body>.*)"), 400),
    (re.compile(r"Request forbidden: " + _URL + r", error message: (?P<body>.*)"), 403),
    (re.compile(r"\bAuthentication failed\b"), 401),
    (re.compile(r"\bResource not found\b"), 404),
)


def _message_of(value: object) -> tuple[str, str]:
    """(message, kind) from an OpenStack error body: Octavia ``{"faultstring": ...}``, Neutron
    ``{"NeutronError": {"type", "message"}}``, Keystone ``{"error": {"message", "title"}}``,
    Nova ``{"badRequest": {"message"}}``."""
    if isinstance(value, dict):
        kind = str(value.get("type") or value.get("title") or "")
        for key in ("faultstring", "message", "description"):
            text = value.get(key)
            if isinstance(text, str) and text.strip():
                return text.strip(), kind
        for inner in value.values():
            message, inner_kind = _message_of(inner)
            if message:
                return message, inner_kind or kind
    return "", ""


def _body_message(body: str) -> tuple[str, str]:
    body = _PROVIDER_SUFFIX.sub("", body).strip()
    if body.startswith("{"):
        try:
            parsed, _end = json.JSONDecoder().raw_decode(body)
        except ValueError:
            parsed = None
        message, kind = _message_of(parsed)
        if message:
            return message, kind
    return body[:300], ""


def cloud_faults(text: str) -> list[CloudFault]:
    """Every distinct error answer of the cloud reported in ``text``, in order."""
    found: dict[CloudFault, None] = {}
    for line in _relevant_lines(text):
        for pattern, fixed in _FAULTS:
            for m in pattern.finditer(line):
                groups = m.groupdict()
                status = fixed if fixed is not None else int(groups["status"])
                message, kind = _body_message(groups.get("body") or "")
                url = groups.get("url") or ""
                path = urlsplit(url).path if url else ""
                fault = CloudFault(status, groups.get("method") or "", path, message, kind)
                found.setdefault(fault, None)
    # gophercloud v1's bare "Resource not found" says less than a full answer about the same
    # thing; keep it only when nothing else was reported
    full = [f for f in found if f.method]
    return full or list(found)


# -- the error lines of a run -----------------------------------------------------------------

_SECTION = re.compile(r"^(Outputs|Resources|Duration|Diagnostics|Policies):|^ ?std(out|err):")


def _relevant_lines(text: str) -> list[str]:
    """The lines of ``text`` without the ``Outputs:`` section of pulumi's summary (the stack's
    values, which say nothing about the failure)."""
    out: list[str] = []
    skipping = False
    for line in text.splitlines():
        header = _SECTION.match(line)
        if header:
            skipping = header[1] == "Outputs"
        if not skipping:
            out.append(line)
    return out


def _is_error_line(line: str) -> bool:
    stripped = line.strip()
    return "error:" in stripped.lower() or stripped.startswith("* ")


def _error_lines(text: str) -> list[str]:
    lines = [line for line in _relevant_lines(text) if _is_error_line(line)]
    return lines or [line for line in text.splitlines() if line.strip()]


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
# Pulumi refusing a step on a protected resource (stacks/program.py protects lb and fip)
_PROTECTED = re.compile(
    r'unable to (?P<op>replace|delete) resource "(?P<urn>[^"]+)"|'
    r'resource "(?P<urn2>[^"]+)" cannot be (?P<op2>deleted)'
)
_PROTECTED_WHAT = {LB: "load balancer", FIP: "floating IP"}
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


def classify(text: str) -> type[EngineError]:
    """The error class for the output of a failed operation (see the module docstring)."""
    lines = _error_lines(text)
    if any(INVALID_SPEC_MARKER in line for line in lines) or protected_refusal(text):
        return InvalidConfigError
    faults = cloud_faults(text)
    if faults:
        classes = {f.error_class() for f in faults}
        return next(cls for cls in _SEVERITY if cls in classes)
    said = "\n".join(_said(line) for line in lines)  # not the resource and stack names
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


# -- what the user reads ----------------------------------------------------------------------

_GENERIC = re.compile(
    r"^(update failed|(.*: )?\d+ errors? occurred:?|an unhandled error occurred:.*)$",
    re.IGNORECASE,
)
_GO_PREFIX = re.compile(r"^(\S+\.go:\d+: )?(sdk\.helper_schema: )?")


def _said(line: str) -> str:
    """What an error line says, without pulumi's progress prefix and the provider's tags."""
    stripped = line.strip()
    lowered = stripped.lower()
    if "error:" in lowered and not stripped.startswith("* "):
        stripped = stripped[lowered.index("error:") + len("error:") :].strip()
    stripped = stripped.removeprefix("* ").strip()
    stripped = _GO_PREFIX.sub("", stripped)
    return _PROVIDER_SUFFIX.sub("", stripped).strip()


def protected_refusal(text: str) -> str:
    """What Pulumi refused because it is protected, said for a user: the plan would replace or
    delete the load balancer or floating IP of a Service that still wants it; "" when not."""
    found = _PROTECTED.search(text)
    if found is None:
        return ""
    urn = found.group("urn") or found.group("urn2") or ""
    name = logical_name(urn)
    op = found.group("op") or found.group("op2") or "replace"
    what = _PROTECTED_WHAT.get(name, f"resource {name}")
    return (
        f"refused: the plan would {op.removesuffix('d')} the {what} ({name}) of a Service that "
        "still wants it; it is protected, so nothing was changed. A field changed that forces "
        "a replacement and is not kept as made (a provider upgrade, or a bug): see "
        "docs/engine.md, 'Create-only fields and protection'; to replace it on purpose, delete "
        "and re-create the Service"
    )


def headline(text: str) -> str:
    """The one line that says what went wrong, in the cloud's (or the program's) own words."""
    refusal = protected_refusal(text)
    if refusal:
        return refusal
    lines = _error_lines(text)
    invalid = [
        line[line.index(INVALID_SPEC_MARKER) + len(INVALID_SPEC_MARKER) :].strip()
        for line in lines
        if INVALID_SPEC_MARKER in line
    ]
    if invalid:
        return "; ".join(dict.fromkeys(invalid))
    faults = cloud_faults(text)
    if faults:
        return "; ".join(f.describe() for f in faults[:3])
    said = [s for s in (_said(line) for line in lines) if s and not _GENERIC.match(s)]
    return "; ".join(list(dict.fromkeys(said))[:2])


_DURATION = re.compile(r" ?\(\d+(\.\d+)?s\)")


def summarize(text: str, *, limit: int = 2000) -> str:
    """The lines of a pulumi run that say what failed (no outputs, no timings), at most
    ``limit`` characters."""
    wanted = [
        _DURATION.sub("", line.strip())
        for line in _relevant_lines(text)
        if re.search(r"error|failed|invalid spec|quota", line, re.IGNORECASE)
    ]
    body = "\n".join(dict.fromkeys(w for w in wanted if w)) or text.strip()
    return body[:limit]


def describe(text: str) -> str:
    """The message of an engine error: :func:`headline` on the first line (what Events show),
    then :func:`summarize` (what logs show)."""
    first = headline(text)
    rest = summarize(text)
    return f"{first}\n{rest}" if first and rest else first or rest


def engine_error(text: str, *, doing: str, subject: str, stack: str) -> EngineError:
    """The classified error of a failed ``doing`` (``up``) of ``subject`` (``stack x``) whose
    output (already redacted) is ``text``."""
    return classify(text)(f"{doing} of {subject} failed: {describe(text)}", stack=stack)


# -- secrets ----------------------------------------------------------------------------------


def _encodings(secret: str) -> list[str]:
    """``secret`` as it may appear in text: raw, JSON-escaped (once and twice, ASCII-only or
    not, as in a body quoted inside another), URL-escaped (path and form style)."""
    forms = [secret]
    for form in list(forms):
        for ensure_ascii in (True, False):
            once = json.dumps(form, ensure_ascii=ensure_ascii)[1:-1]
            forms += [once, json.dumps(once, ensure_ascii=ensure_ascii)[1:-1]]
    forms += [quote(secret, safe=""), quote(secret), quote_plus(secret)]
    forms += [re.sub(r"%[0-9A-F]{2}", lambda m: m[0].lower(), f) for f in forms]  # %2f
    return sorted(dict.fromkeys(f for f in forms if f), key=len, reverse=True)


def _inside(span: tuple[int, int], spans: Sequence[tuple[int, int]]) -> bool:
    return any(start <= span[0] and span[1] <= end for start, end in spans)


def redact(text: str, secrets: Iterable[str], *, keep: Iterable[str] = ()) -> str:
    """``text`` with every occurrence of each secret, in each of its encodings, replaced by
    ``[secret]``, except occurrences that lie wholly inside one of the ``keep`` strings.

    ``keep`` names public identifiers the text is known to hold: the stack name and pulumi's
    name of its root resource (``lb-reconciler-<stack>``). A secret that happens to be part of
    one (the demo's passphrase ``lb-reconciler-demo`` is the root resource name of every stack
    of cluster ``demo``) used to turn ``demo.accept.frozen`` into ``[secret].accept.frozen``,
    which both wrecked every message and told the reader the passphrase. Everywhere else the
    exact secret is replaced whatever its length: a real secret must never leak, so a short
    or common one (a password ``demo``) costs readability, never confidentiality.
    """
    keep = [k for k in dict.fromkeys(keep) if k]
    for secret in sorted({s for s in secrets if s}, key=len, reverse=True):
        for form in _encodings(secret):
            if form not in text:
                continue
            protected = [
                (m.start(), m.end()) for k in keep for m in re.finditer(re.escape(k), text)
            ]
            pieces: list[str] = []
            last = 0
            for m in re.finditer(re.escape(form), text):
                if _inside((m.start(), m.end()), protected):
                    continue
                pieces += [text[last : m.start()], "[secret]"]
                last = m.end()
            text = "".join(pieces) + text[last:]
    return text

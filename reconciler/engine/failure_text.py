"""Reading the output of a failed ``pulumi`` run: what the cloud answered, which lines say what
went wrong, and the message a user reads. Pure; :mod:`.errors` classifies with it.

Only what the cloud and the tools *said went wrong* is read: the HTTP status and body of each
cloud answer the provider reports (:func:`cloud_faults`: gophercloud's ``Expected HTTP response
code [...] when accessing [POST <url>], but got 400 instead: {"faultstring": ...}``, and
gophercloud v1's ``Bad request with: [...]``, ``Request forbidden: [...]``, ``Resource not
found``), else the error lines of the run (:func:`error_lines`, without the ``Outputs:`` section).
Never words anywhere in ``pulumi``'s output: the output also holds the plan's diff and the
stack's outputs, whose property names (``timeout_client_data``) and values (a Service called
``quota-api``) say nothing about the failure. That was the cause of a cloud 400 retried every
2 s without an Event: the diff of a replacement listed the deleted listener's ``timeout_*``
properties, and ``timeout`` anywhere meant "retry soon".

:func:`describe` turns the text into the message a user reads: the cloud's own words first
(:func:`headline`: ``the cloud answered 400 to POST /v2.0/lbaas/loadbalancers: Validation
failure: Invalid availability zone az-2.``), on one line, then the run's error lines for the log
(:func:`summarize`). :func:`protected_refusal` says what Pulumi refused because it is protected.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from stacks.vocabulary import FIP, INVALID_SPEC_MARKER, LB, logical_name

__all__ = [
    "CloudFault",
    "body_message",
    "cloud_faults",
    "describe",
    "error_lines",
    "error_text",
    "headline",
    "protected_refusal",
    "relevant_lines",
    "summarize",
]

# how the program (stacks/lookups.py) says a spec cannot be made, e.g. ``max-shared-lb``

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


def body_message(body: str) -> tuple[str, str]:
    """(message, kind) of an error answer's body as the cloud wrote it (JSON of any service,
    else the text, cut short); the engine's OpenStack client reads its answers with it too."""
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
    for line in relevant_lines(text):
        for pattern, fixed in _FAULTS:
            for m in pattern.finditer(line):
                groups = m.groupdict()
                status = fixed if fixed is not None else int(groups["status"])
                message, kind = body_message(groups.get("body") or "")
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


def relevant_lines(text: str) -> list[str]:
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


def error_lines(text: str) -> list[str]:
    """The lines that say what went wrong (``error:`` lines, ``* `` items), without the
    ``Outputs:`` section; every non-blank line when there are none."""
    lines = [line for line in relevant_lines(text) if _is_error_line(line)]
    return lines or [line for line in text.splitlines() if line.strip()]


# -- what the user reads ----------------------------------------------------------------------

# Pulumi refusing a step on a protected resource (stacks/program.py protects lb and fip)
_PROTECTED = re.compile(
    r'unable to (?P<op>replace|delete) resource "(?P<urn>[^"]+)"|'
    r'resource "(?P<urn2>[^"]+)" cannot be (?P<op2>deleted)'
)
_PROTECTED_WHAT = {LB: "load balancer", FIP: "floating IP"}
_GENERIC = re.compile(
    r"^(update failed|(.*: )?\d+ errors? occurred:?|an unhandled error occurred:.*)$",
    re.IGNORECASE,
)
_GO_PREFIX = re.compile(r"^(\S+\.go:\d+: )?(sdk\.helper_schema: )?")


def error_text(line: str) -> str:
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
    lines = error_lines(text)
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
    said = [s for s in (error_text(line) for line in lines) if s and not _GENERIC.match(s)]
    return "; ".join(list(dict.fromkeys(said))[:2])


_DURATION = re.compile(r" ?\(\d+(\.\d+)?s\)")


def summarize(text: str, *, limit: int = 2000) -> str:
    """The lines of a pulumi run that say what failed (no outputs, no timings), at most
    ``limit`` characters."""
    wanted = [
        _DURATION.sub("", line.strip())
        for line in relevant_lines(text)
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

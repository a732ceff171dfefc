"""Credentials out of every message: :func:`redact`, applied to a tool's output before it is
stored in an exception (:meth:`reconciler.engine.context.EngineContext.error`), so a credential
echoed by ``pulumi`` or the provider never reaches a log or an Event. Pure.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from urllib.parse import quote, quote_plus

__all__ = ["redact"]


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

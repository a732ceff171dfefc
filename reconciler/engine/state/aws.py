"""botocore's clients from one session per process and profile.

botocore's session reads an API's model (S3's) from its JSON files when it makes its first client
of it (0.15-0.2 CPU s); from the same session, a client costs about 12 ms. Every ``s3://`` bucket
object (:mod:`.s3`), every S3 server's setup (:mod:`reconciler.local.backends`) and every test's
client made a session of its own. A session is not thread-safe: clients are made under a lock
(the clients themselves are).
"""

from __future__ import annotations

import threading
from typing import Any

__all__ = ["botocore_client"]

_sessions: dict[str | None, Any] = {}
_sessions_lock = threading.Lock()


def botocore_client(service: str, *, profile: str | None = None, **kwargs: Any) -> Any:
    """A botocore client of ``service`` ("s3", "sts"), ``kwargs`` as ``create_client`` takes
    them, from the process's session for ``profile``."""
    import botocore.session

    with _sessions_lock:
        session = _sessions.get(profile)
        if session is None:
            session = _sessions[profile] = botocore.session.Session(profile=profile)
        return session.create_client(service, **kwargs)

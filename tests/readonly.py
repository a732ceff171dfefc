"""Read-only credentials for a test's backend, made from ``examples/ci/`` as a team makes them.

A test's controller-side backend (:class:`tests.backends.Backend`: a database or a bucket of
its own on the session's servers) gets a read-only twin: the same database or bucket, reached
with credentials that can only read it.

* ``postgres://``: the role of ``examples/ci/readonly-postgres.sql``, made by running that very
  file with ``psql`` (the server's own client) as the docs say, one role per database
  (``<database>_ro``); the URL is the controller's with the role's name and password.
* ``s3://``: temporary credentials limited by ``examples/ci/readonly-s3-policy.json`` (its
  placeholders replaced by the bucket and the URL's path): MinIO's STS ``AssumeRole``, signed
  with the root credentials and carrying the policy as an inline session policy. A session of
  the root user with a session policy may do exactly what that policy allows (MinIO's
  ``IAMSys.IsAllowedSTS``); no ``mc`` or admin API needed. They expire after an hour.
* ``file://``: the same folder (read-only there is the file system's or the mount's).

Use the fixtures of ``tests/conftest.py``: ``readonly_backend`` (the twin of ``backend``, one run
per kind), ``postgres_backend`` and ``postgres_readonly``, ``s3_backend`` and ``s3_readonly``.
"""

from __future__ import annotations

import os
import secrets
import subprocess
from pathlib import Path
from urllib.parse import quote, urlsplit, urlunsplit

from reconciler.engine.state.bucket import key_prefix
from reconciler.local.backends import REGION, postgres_bin_dir
from tests.backends import Backend

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "ci"
POSTGRES_SQL = EXAMPLES / "readonly-postgres.sql"
S3_POLICY = EXAMPLES / "readonly-s3-policy.json"

# botocore asks for a role ARN; MinIO's AssumeRole reads none (the session is the caller's)
ROLE_ARN = "arn:aws:iam::000000000000:role/lbr-readonly"


def read_only(backend: Backend) -> Backend:
    """The read-only twin of ``backend``: the same database, bucket or folder."""
    if backend.kind == "postgres":
        return postgres_read_only(backend)
    if backend.kind == "s3":
        return s3_read_only(backend)
    return Backend(backend.kind, backend.url, dict(backend.env), backend.server)


def psql(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``psql <url> <args>`` with the server's own client, no ``~/.psqlrc``, no ``PG*`` of
    this process's environment."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    return subprocess.run(
        [str(postgres_bin_dir() / "psql"), "-X", "-q", url, *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )


def postgres_read_only(backend: Backend, *, role: str = "") -> Backend:
    """Make the read-only role of ``backend``'s database with ``examples/ci/readonly-
    postgres.sql`` (the state table made first, as the controller's or the CLI's first use of
    the backend makes it; no row is written) and return the backend as that role sees it."""
    parts = urlsplit(backend.url)
    database = parts.path.strip("/")
    role = role or f"{database}_ro"
    password = secrets.token_urlsafe(18)
    store = backend.store()
    try:
        store.bucket.prepare()  # the table, as the controller or pulumi makes it on first use
    finally:
        store.close()
    done = psql(
        backend.url, "-v", f"role={role}", "-v", f"password={password}", "-f", str(POSTGRES_SQL)
    )
    assert done.returncode == 0, f"psql -f {POSTGRES_SQL.name}: {done.stdout}{done.stderr}"
    host = f"{parts.hostname}:{parts.port}"
    netloc = f"{quote(role, safe='')}:{quote(password, safe='')}@{host}"
    url = urlunsplit((parts.scheme, netloc, parts.path, parts.query, ""))
    return Backend("postgres", url, dict(backend.env), backend.server)


def s3_policy(bucket: str, prefix: str) -> str:
    """``examples/ci/readonly-s3-policy.json`` for ``bucket`` and the key ``prefix`` (the
    backend URL's path, no slashes around it; "" for a backend at the bucket's top), as its
    placeholders say."""
    text = S3_POLICY.read_text().replace("STATE-BUCKET", bucket)
    return text.replace("STATE-PREFIX/", f"{prefix}/" if prefix else "")


def s3_read_only(backend: Backend, *, seconds: int = 3600) -> Backend:
    """Temporary credentials that may only read ``backend``'s bucket and prefix (MinIO's
    ``AssumeRole`` with the example policy as the session policy); the backend as they see it."""
    from reconciler.engine.state.aws import botocore_client

    server = backend.server
    assert server is not None
    bucket = urlsplit(backend.url).hostname or ""
    sts = botocore_client(
        "sts",
        endpoint_url=f"http://{server.endpoint}",
        region_name=REGION,
        aws_access_key_id=server.env["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=server.env["AWS_SECRET_ACCESS_KEY"],
    )
    try:
        answer = sts.assume_role(
            RoleArn=ROLE_ARN,
            RoleSessionName="lbr-readonly",
            Policy=s3_policy(bucket, key_prefix(backend.url).strip("/")),
            DurationSeconds=seconds,
        )
    finally:
        sts.close()
    creds = answer["Credentials"]
    keys = {
        "AWS_ACCESS_KEY_ID": creds["AccessKeyId"],
        "AWS_SECRET_ACCESS_KEY": creds["SecretAccessKey"],
        "AWS_SESSION_TOKEN": creds["SessionToken"],
    }
    return Backend("s3", backend.url, keys, server)

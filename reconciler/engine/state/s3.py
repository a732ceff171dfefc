"""An ``s3://`` state backend's objects (AWS S3 or any S3 API: MinIO, Ceph RGW, Swift's s3api).

See :mod:`reconciler.engine.state.bucket` for the rules every bucket follows; this one reaches the
objects with botocore, configured from the backend URL's gocloud parameters and the environment
the ``pulumi`` CLI gets.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import urlsplit

from reconciler.engine.state.aws import botocore_client
from reconciler.engine.state.bucket import (
    DEFAULT_TIMEOUT,
    BucketError,
    Guard,
    StoredObject,
    WriteConflictError,
    found_by_listing,
    is_true,
    key_prefix,
    redacted_url,
    unguarded,
    url_query,
)

__all__ = ["S3Bucket"]


class S3Bucket:
    """An ``s3://`` backend (AWS S3 or any S3 API: MinIO, Ceph RGW, Swift's s3api)."""

    def __init__(
        self, url: str, *, env: Mapping[str, str] | None = None, timeout: float = DEFAULT_TIMEOUT
    ) -> None:
        self.url = redacted_url(url)
        self.guard: Guard = unguarded
        # two attempts, each a connect and a read of at most a quarter of the timeout: one
        # request, retry included, ends within it (botocore's defaults: 60 s each, 5 attempts)
        self.timeout = timeout
        self.write_bound = timeout
        parts = urlsplit(url)
        self.bucket = parts.hostname or ""
        if not self.bucket:
            raise BucketError(f"backend {self.url}: no bucket name (s3://BUCKET/...)")
        self.prefix = key_prefix(url)
        self._query = url_query(url)
        self._env = dict(os.environ if env is None else env)
        self._client: Any = None
        self._lock = threading.Lock()

    def _s3(self) -> Any:
        with self._lock:
            if self._client is None:
                self._client = self._make_client()
            return self._client

    def _make_client(self) -> Any:
        from botocore.config import Config

        q, env = self._query, self._env
        insecure = is_true(q.get("disable_https")) or is_true(q.get("disableSSL"))
        endpoint = q.get("endpoint") or None
        if endpoint and "://" not in endpoint:
            endpoint = ("http://" if insecure else "https://") + endpoint
        path_style = is_true(q.get("use_path_style")) or is_true(q.get("s3ForcePathStyle"))
        region = q.get("region") or env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION")
        keys: dict[str, str] = {}
        if env.get("AWS_ACCESS_KEY_ID") and env.get("AWS_SECRET_ACCESS_KEY"):
            keys = {
                "aws_access_key_id": env["AWS_ACCESS_KEY_ID"],
                "aws_secret_access_key": env["AWS_SECRET_ACCESS_KEY"],
            }
            if env.get("AWS_SESSION_TOKEN"):
                keys["aws_session_token"] = env["AWS_SESSION_TOKEN"]
        config = Config(
            s3={"addressing_style": "path" if path_style else "auto"},
            # as the CLI sends to a store that is not AWS's own: no aws-chunked checksums
            request_checksum_calculation="when_required" if endpoint else "when_supported",
            response_checksum_validation="when_required" if endpoint else "when_supported",
            retries={"mode": "standard", "total_max_attempts": 2},
            connect_timeout=self.timeout / 4,
            read_timeout=self.timeout / 4,
            max_pool_connections=16,
        )
        return botocore_client(
            "s3",
            profile=q.get("profile") or env.get("AWS_PROFILE"),
            region_name=region or "us-east-1",
            endpoint_url=endpoint,
            config=config,
            **keys,
        )

    def _call(self, doing: str, fn: Any, /, *, conflict: bool = False, **kwargs: Any) -> Any:
        """``fn(**kwargs)``; None for a missing object. ``conflict``: a conditional request,
        whose 412 is a :class:`WriteConflictError`."""
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            return fn(**kwargs)
        except ClientError as exc:
            code = str(exc.response.get("Error", {}).get("Code", ""))
            if code in {"NoSuchKey", "404", "NotFound"}:
                return None
            if conflict and code in {"PreconditionFailed", "412", "ConditionalRequestConflict"}:
                raise WriteConflictError(f"{doing} in backend {self.url}: {exc}") from None
            raise BucketError(f"{doing} in backend {self.url}: {exc}") from None
        except BotoCoreError as exc:
            raise BucketError(f"{doing} in backend {self.url}: {exc}") from None

    def list(self, prefix: str) -> list[StoredObject]:
        s3, out = self._s3(), []
        token: str | None = None
        while True:
            args: dict[str, Any] = {"Bucket": self.bucket, "Prefix": self.prefix + prefix}
            if token:
                args["ContinuationToken"] = token
            page = self._call(f"listing {prefix}", s3.list_objects_v2, **args) or {}
            for item in page.get("Contents", []):
                key = str(item["Key"])[len(self.prefix) :]
                out.append(
                    StoredObject(key=key, size=int(item["Size"]), modified=item["LastModified"])
                )
            token = page.get("NextContinuationToken")
            if not page.get("IsTruncated") or not token:
                return sorted(out, key=lambda o: o.key)

    def read(self, key: str) -> bytes | None:
        got = self.read_versioned(key)
        return None if got is None else got[0]

    def read_versioned(self, key: str) -> tuple[bytes, str] | None:
        got = self._call(
            f"reading {key}", self._s3().get_object, Bucket=self.bucket, Key=self.prefix + key
        )
        if got is None:
            return None
        body = got["Body"]
        try:
            data: bytes = body.read()
        finally:
            body.close()
        return data, str(got.get("ETag") or "")

    def read_many(self, prefix: str, suffix: str) -> dict[str, bytes]:
        keys = [o.key for o in self.list(prefix) if o.key.endswith(suffix)]
        with ThreadPoolExecutor(max_workers=8) as pool:
            return {
                k: d for k, d in zip(keys, pool.map(self.read, keys), strict=True) if d is not None
            }

    def find(self, keys: Sequence[str]) -> Sequence[StoredObject]:
        return found_by_listing(self, keys)

    def exists(self, key: str) -> bool:
        head = self._s3().head_object
        return (
            self._call(f"reading {key}", head, Bucket=self.bucket, Key=self.prefix + key)
            is not None
        )

    def write(
        self, key: str, data: bytes, *, if_version: str | None = None, durable: bool = True
    ) -> str:
        """``PutObject``; with ``if_version``, ``If-Match`` on the ETag (S3's conditional
        write: AWS, MinIO, Ceph RGW answer 412 when the object changed, 404 when it is gone)."""
        doing = f"writing {key}"
        condition = {"IfMatch": if_version} if if_version is not None else {}
        with self.guard(doing, self.write_bound):
            put = self._call(
                doing,
                self._s3().put_object,
                Bucket=self.bucket,
                Key=self.prefix + key,
                Body=data,
                conflict=if_version is not None,
                **condition,
            )
        if put is None:  # 404: the object went
            raise WriteConflictError(f"{doing} in backend {self.url}: the object is gone")
        return str(put.get("ETag") or "")

    def delete(self, key: str) -> None:
        doing = f"deleting {key}"
        with self.guard(doing, self.write_bound):
            self._call(doing, self._s3().delete_object, Bucket=self.bucket, Key=self.prefix + key)

    def prepare(self) -> None:
        pass  # the CLI makes nothing either: the folder or bucket is there, or made by a write

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None

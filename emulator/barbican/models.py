"""Barbican's secrets and containers, scoped to a project (Barbican 23's API).

A secret keeps its payload; a container names secrets by reference (``certificate``: the
``certificate``, ``private_key``, ``intermediates`` and ``private_key_passphrase`` secrets).
:meth:`Barbican.readable` is what Octavia's ``_validate_tls_refs`` asks of a reference: a secret
or container of the caller's project, or any for an admin. Octavia 19 then parses the PKCS12
bundle of a secret reference (400 ``UnreadablePKCS12`` when it is not one); the emulator does
not parse payloads (docs/emulator.md).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from emulator.context import AuthContext
from emulator.errors import BadRequest, NotFound
from emulator.store import Record, Store
from emulator.timeutil import iso_no_z
from emulator.timing import Clock

SECRET_TYPES = ("symmetric", "public", "private", "passphrase", "certificate", "opaque")
CONTAINER_TYPES = ("generic", "rsa", "certificate")
SECRET_NOT_FOUND = "Secret not found."  # noqa: S105 (Barbican's 404 text, not a password)
CONTAINER_NOT_FOUND = "Secrets container not found."


def ref_id(ref: str, collection: str) -> str | None:
    """The ID in a reference ``.../v1/<collection>/<id>``; None when it is not one."""
    head, _, ident = str(ref).rstrip("/").rpartition("/")
    return ident if head.endswith(f"/{collection}") and ident else None


class Barbican:
    def __init__(self, *, store: Store, clock: Clock) -> None:
        self.store = store
        self.clock = clock

    @staticmethod
    def _visible(record: Record | None, ctx: AuthContext) -> bool:
        return record is not None and (record["project_id"] == ctx.project_id or ctx.is_admin)

    def _mine(self, kind: str, rid: str, ctx: AuthContext, missing: str) -> Record:
        record = self.store.get(kind, rid)
        if record is None or not self._visible(record, ctx):
            raise NotFound(missing)
        return record

    def _put(self, kind: str, ctx: AuthContext, body: Mapping[str, Any], **fields: Any) -> Record:
        """A new secret or container of ``ctx``'s project, with Barbican's common fields."""
        now = iso_no_z(self.clock.now())
        record: Record = {
            "id": str(uuid.uuid4()),
            "project_id": ctx.project_id,
            "creator_id": ctx.user_id,
            "name": body.get("name"),
            "status": "ACTIVE",
            "created": now,
            "updated": now,
            **fields,
        }
        self.store.put(kind, record)
        return record

    def create_secret(self, ctx: AuthContext, body: Mapping[str, Any]) -> Record:
        secret_type = body.get("secret_type") or "opaque"
        if secret_type not in SECRET_TYPES:
            raise BadRequest(
                f"Provided object does not match schema 'Secret': {secret_type!r} is not one "
                f"of {list(SECRET_TYPES)}. Invalid property: 'secret_type'"
            )
        payload = body.get("payload")
        if payload is not None and not body.get("payload_content_type"):
            raise BadRequest(
                "Provided object does not match schema 'Secret': If 'payload' is supplied, "
                "'payload_content_type' must also be supplied. Invalid property: "
                "'payload_content_type'"
            )
        return self._put(
            "secret",
            ctx,
            body,
            secret_type=secret_type,
            algorithm=body.get("algorithm"),
            bit_length=body.get("bit_length"),
            mode=body.get("mode"),
            expiration=body.get("expiration"),
            _payload=payload,
            _content_type=body.get("payload_content_type"),
        )

    def secret(self, ctx: AuthContext, rid: str) -> Record:
        return self._mine("secret", rid, ctx, SECRET_NOT_FOUND)

    def delete_secret(self, ctx: AuthContext, rid: str) -> None:
        self.secret(ctx, rid)
        self.store.delete("secret", rid)

    def create_container(self, ctx: AuthContext, body: Mapping[str, Any], base: str) -> Record:
        kind = body.get("type") or "generic"
        if kind not in CONTAINER_TYPES:
            raise BadRequest(
                f"Provided object does not match schema 'Container': {kind!r} is not one of "
                f"{list(CONTAINER_TYPES)}. Invalid property: 'type'"
            )
        refs = []
        for item in body.get("secret_refs") or []:
            ident = ref_id(str(item.get("secret_ref") or ""), "secrets")
            if ident is None:
                raise NotFound(SECRET_NOT_FOUND)
            self.secret(ctx, ident)  # 404 when missing or another project's
            refs.append({"name": item.get("name"), "secret_ref": f"{base}/v1/secrets/{ident}"})
        return self._put("container", ctx, body, type=kind, secret_refs=refs, consumers=[])

    def container(self, ctx: AuthContext, rid: str) -> Record:
        return self._mine("container", rid, ctx, CONTAINER_NOT_FOUND)

    def delete_container(self, ctx: AuthContext, rid: str) -> None:
        self.container(ctx, rid)
        self.store.delete("container", rid)

    def list(self, kind: str, ctx: AuthContext) -> list[Record]:
        return self.store.all(kind, lambda r: self._visible(r, ctx))

    def readable(self, ref: str, ctx: AuthContext) -> bool:
        """Whether ``ref`` names a secret or container ``ctx`` may read (Octavia's check of a
        listener's certificate references)."""
        for collection, kind in (("containers", "container"), ("secrets", "secret")):
            ident = ref_id(ref, collection)
            if ident is not None:
                return self._visible(self.store.get(kind, ident), ctx)
        return False

"""Shared Neutron rules: resource schemas, standard attributes, visibility, tags and quotas.

Each resource kind has a :class:`Schema`: its singular and plural names, the attributes a POST may
set (with defaults) and the ones a PUT may change. Unknown attributes answer 400 ``Unrecognized
attribute(s)`` and read-only ones ``Cannot update read-only attribute``, as Neutron does, so a
client bug shows up here and not first on a real cloud.

Every record carries Neutron's standard attributes (``id``, ``project_id``/``tenant_id``,
``description``, ``tags``, ``created_at``, ``updated_at``, ``revision_number``). A non-admin
caller sees its own project's resources, plus shared and external networks and their subnets.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from emulator.context import AuthContext
from emulator.errors import BadRequest, Conflict, NotFound
from emulator.query import filter_records, sort_records
from emulator.store import Record, Store
from emulator.timeutil import iso
from emulator.timing import Clock

STANDARD = ("description", "tags", "project_id", "tenant_id")
DEFAULT_QUOTAS: dict[str, int] = {
    "network": 100,
    "subnet": 100,
    "port": 500,
    "router": 10,
    "floatingip": 50,
    "security_group": 10,
    "security_group_rule": 100,
    "rbac_policy": 10,
    "subnetpool": -1,
}
MAX_TAG_LENGTH = 255


@dataclass(frozen=True)
class Schema:
    kind: str
    plural: str
    title: str  # for NotFound: "Network", "Floating IP"...
    not_found: str  # Neutron exception type
    create: Mapping[str, Any]  # attribute -> default
    update: frozenset[str]
    required: frozenset[str] = field(default_factory=frozenset)
    output: tuple[str, ...] = ()  # read-only attributes shown in responses
    taggable: bool = True  # security group rules have no ``tags`` (not a tag resource)

    @property
    def fields(self) -> frozenset[str]:
        names = set(self.create) | set(self.output) | set(STANDARD)
        names |= {"id", "created_at", "updated_at", "revision_number"}
        if not self.taggable:
            names.discard("tags")
        return frozenset(names)


class NeutronBase:
    """Store access with Neutron's rules; the resource modules build on it."""

    schemas: Mapping[str, Schema]  # set by the concrete class (read-only)

    def __init__(self, *, store: Store, clock: Clock) -> None:
        self.store = store
        self.clock = clock

    def default_security_group(self, project_id: str) -> Record:
        """The project's ``default`` group (implemented in :mod:`emulator.neutron.security`)."""
        raise NotImplementedError

    # -- generic CRUD ----------------------------------------------------------------------

    def _new(self, kind: str, ctx: AuthContext, body: Mapping[str, Any]) -> Record:
        schema = self.schemas[kind]
        unknown = sorted(set(body) - set(schema.create) - set(STANDARD))
        if unknown:
            raise BadRequest(
                f"Unrecognized attribute(s) '{', '.join(unknown)}'",
                kind="HTTPBadRequest",
            )
        missing = sorted(k for k in schema.required if body.get(k) is None)
        if missing:
            raise BadRequest(
                f"Failed to parse request. Required attribute '{missing[0]}' not specified",
                kind="HTTPBadRequest",
            )
        given = body.get("project_id", body.get("tenant_id"))
        project_id = str(ctx.project_id if given is None else given)
        if project_id != ctx.project_id and not ctx.is_admin:
            raise BadRequest(
                "Specifying 'project_id' or 'tenant_id' other than the authenticated project "
                "in request requires admin privileges",
                kind="HTTPBadRequest",
            )
        if project_id:  # an object of no project (a floating IP's own port) counts in no quota
            self.check_quota(kind, project_id)
        now = iso(self.clock.now())
        record: Record = {"id": str(uuid.uuid4())}
        for key, default in schema.create.items():
            record[key] = body.get(key, default)
        record.update(
            {
                "project_id": project_id,
                "tenant_id": project_id,
                "description": str(body.get("description") or ""),
                "tags": self._valid_tags(body.get("tags", [])),
                "created_at": now,
                "updated_at": now,
                "revision_number": 0,
            }
        )
        return record

    def _apply_update(self, kind: str, record: Record, body: Mapping[str, Any]) -> Record:
        schema = self.schemas[kind]
        for key in body:
            if key in schema.update or key == "description":
                continue
            if key in schema.fields:
                raise BadRequest(f"Cannot update read-only attribute {key}", kind="HTTPBadRequest")
            raise BadRequest(f"Unrecognized attribute(s) '{key}'", kind="HTTPBadRequest")
        record.update(body)
        if "description" in body:
            record["description"] = str(body["description"] or "")
        self.touch(record)
        return record

    def touch(self, record: Record) -> None:
        record["updated_at"] = iso(self.clock.now())
        record["revision_number"] = int(record.get("revision_number", 0)) + 1

    def visible(self, kind: str, record: Record, ctx: AuthContext) -> bool:
        if ctx.is_admin or record.get("project_id") == ctx.project_id:
            return True
        if kind == "network":
            return bool(record.get("shared") or record.get("router:external"))
        if kind == "subnet":
            net = self.store.get("network", record["network_id"])
            return net is not None and self.visible("network", net, ctx)
        return False

    def get(self, kind: str, rid: str, ctx: AuthContext) -> Record:
        record = self.store.get(kind, rid)
        if record is None or not self.visible(kind, record, ctx):
            schema = self.schemas[kind]
            raise NotFound(f"{schema.title} {rid} could not be found.", kind=schema.not_found)
        return record

    def list_records(
        self, kind: str, ctx: AuthContext, query: Mapping[str, list[str]]
    ) -> list[Record]:
        records = self.store.all(kind, lambda r: self.visible(kind, r, ctx))
        records = filter_records(records, query, allowed=self.schemas[kind].fields, strict=True)
        return sort_records(records, query)

    def save(self, kind: str, record: Record) -> Record:
        self.store.put(kind, record)
        return record

    def view(self, kind: str, record: Record) -> Record:
        view = {k: v for k, v in record.items() if not k.startswith("_")}
        if not self.schemas[kind].taggable:
            view.pop("tags", None)
        if kind == "subnet":  # the subnet-external-network extension: the network's flag
            network = self.store.get("network", record["network_id"]) or {}
            view["router:external"] = bool(network.get("router:external"))
        return view

    # -- tags ---------------------------------------------------------------------------

    @staticmethod
    def _valid_tags(tags: Any) -> list[str]:
        if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
            raise BadRequest("Invalid input for tags: expected a list of strings.")
        for tag in tags:
            if not tag or len(tag) > MAX_TAG_LENGTH or "," in tag:
                raise BadRequest(
                    f"Invalid input for tags. Reason: '{tag}' must be 1-{MAX_TAG_LENGTH} "
                    "characters without commas.",
                    kind="HTTPBadRequest",
                )
        return sorted(set(tags))

    def set_tags(self, kind: str, rid: str, ctx: AuthContext, tags: Any) -> list[str]:
        record = self.get(kind, rid, ctx)
        record["tags"] = self._valid_tags(tags)
        self.touch(record)
        self.save(kind, record)
        return list(record["tags"])

    def add_tag(self, kind: str, rid: str, ctx: AuthContext, tag: str) -> None:
        record = self.get(kind, rid, ctx)
        record["tags"] = self._valid_tags([*record["tags"], tag])
        self.touch(record)
        self.save(kind, record)

    def remove_tag(self, kind: str, rid: str, ctx: AuthContext, tag: str) -> None:
        record = self.get(kind, rid, ctx)
        if tag not in record["tags"]:
            raise NotFound(f"Tag {tag} could not be found.", kind="TagNotFound")
        record["tags"] = [t for t in record["tags"] if t != tag]
        self.touch(record)
        self.save(kind, record)

    # -- quotas -------------------------------------------------------------------------

    def quota(self, project_id: str) -> dict[str, int]:
        override = self.store.get("quota", project_id) or {}
        return {k: int(override.get(k, v)) for k, v in DEFAULT_QUOTAS.items()}

    def set_quota(self, project_id: str, ctx: AuthContext, values: Mapping[str, Any]) -> None:
        if not ctx.is_admin:
            raise NotFound("The resource could not be found.", kind="HTTPNotFound")
        unknown = sorted(set(values) - set(DEFAULT_QUOTAS))
        if unknown:
            raise BadRequest(f"Unrecognized attribute(s) '{', '.join(unknown)}'")
        record = self.store.get("quota", project_id) or {"id": project_id}
        for key, value in values.items():
            if not isinstance(value, int) or value < -1:
                raise BadRequest(f"Invalid input for {key}: quota must be an integer >= -1.")
            record[key] = value
        self.store.put("quota", record)

    def usage(self, project_id: str, kind: str) -> int:
        return self.store.count(kind, lambda r: r.get("project_id") == project_id)

    def check_quota(self, kind: str, project_id: str) -> None:
        limit = self.quota(project_id).get(kind, -1)
        if limit >= 0 and self.usage(project_id, kind) >= limit:
            raise Conflict(f"Quota exceeded for resources: ['{kind}'].", kind="OverQuota")

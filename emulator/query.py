"""List semantics shared by Neutron and Octavia: filters, tags, sorting, pagination and fields.

These are pure functions over lists of records, applied in the API's order: filter, sort, page,
then project fields. Conventions follow the two services:

* filters are ``field=value`` (a repeated key means any of the values); booleans compare
  case-insensitively (``admin_state_up=True``); ``fixed_ips=subnet_id=...`` and
  ``fixed_ips=ip_address=...`` filter ports as Neutron does;
* ``tags`` (all of), ``tags-any``, ``not-tags``, ``not-tags-any`` take comma-separated tags;
* ``sort_key``/``sort_dir`` (both) and ``sort=key:dir,key2`` (Octavia);
* ``limit``/``marker``/``page_reverse`` with ``<collection>_links`` ``next``/``previous`` hrefs;
  with a ``max_limit`` (the services' ``pagination_max_limit`` option) a page never holds more,
  and a request without ``limit`` gets pages of that size, as Neutron and Octavia do;
* ``fields`` (repeated, or comma-separated in Octavia) selects the keys returned.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlencode

from emulator.errors import ApiError, BadRequest

Record = dict[str, Any]

RESERVED = frozenset(
    {
        "limit",
        "marker",
        "page_reverse",
        "sort_key",
        "sort_dir",
        "sort",
        "fields",
        "tags",
        "tags-any",
        "not-tags",
        "not-tags-any",
        "cascade",
    }
)


def _as_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    return str(value)


def _match_value(actual: Any, wanted: Sequence[str]) -> bool:
    if isinstance(actual, bool):
        return any(w.lower() == _as_text(actual) for w in wanted)
    return any(w == _as_text(actual) for w in wanted)


def _split(values: Sequence[str]) -> list[str]:
    return [t for v in values for t in v.split(",") if t]


def _match_tags(record: Record, query: Mapping[str, list[str]]) -> bool:
    tags = set(record.get("tags") or [])
    if "tags" in query and not set(_split(query["tags"])) <= tags:
        return False
    if "tags-any" in query and not set(_split(query["tags-any"])) & tags:
        return False
    if "not-tags" in query and set(_split(query["not-tags"])) <= tags:
        return False
    return not ("not-tags-any" in query and set(_split(query["not-tags-any"])) & tags)


def _match_fixed_ips(record: Record, wanted: Sequence[str]) -> bool:
    for item in wanted:
        key, _, value = item.partition("=")
        if not any(ip.get(key) == value for ip in record.get("fixed_ips", [])):
            return False
    return True


def filter_records(
    records: list[Record],
    query: Mapping[str, list[str]],
    *,
    allowed: frozenset[str],
    strict: bool,
) -> list[Record]:
    """Records that match every filter; unknown filter fields are a 400 when ``strict``."""
    filters: dict[str, list[str]] = {}
    for key, values in query.items():
        if key in RESERVED:
            continue
        if key not in allowed:
            if strict:
                raise BadRequest(
                    f"[{key}] is invalid attribute for filtering; "
                    f"filter on one of: {', '.join(sorted(allowed))}.",
                    kind="HTTPBadRequest",
                )
            continue
        filters[key] = values
    result = []
    for record in records:
        if not _match_tags(record, query):
            continue
        ok = True
        for key, values in filters.items():
            if key == "fixed_ips":
                ok = _match_fixed_ips(record, values)
            elif key == "tenant_id" and "tenant_id" not in record:
                ok = _match_value(record.get("project_id"), values)
            else:
                ok = _match_value(record.get(key), values)
            if not ok:
                break
        if ok:
            result.append(record)
    return result


def sort_records(records: list[Record], query: Mapping[str, list[str]]) -> list[Record]:
    keys: list[tuple[str, bool]] = []
    for item in _split(query.get("sort", [])):
        key, _, direction = item.partition(":")
        keys.append((key, direction.lower() == "desc"))
    dirs = query.get("sort_dir", [])
    for i, key in enumerate(query.get("sort_key", [])):
        keys.append((key, i < len(dirs) and dirs[i].lower() == "desc"))
    for key, descending in reversed(keys):
        if records and key not in records[0]:
            raise BadRequest(f"Invalid sort key {key!r}: sort by a field of the resource.")
        records = sorted(records, key=lambda r: _as_text(r.get(key)), reverse=descending)
    return records


def paginate(
    records: list[Record],
    query: Mapping[str, list[str]],
    *,
    collection: str,
    url: str,
    marker_error: type[ApiError] = BadRequest,
    max_limit: int | None = None,
) -> tuple[list[Record], list[dict[str, str]]]:
    """One page of ``records`` and the ``<collection>_links`` list. ``max_limit``: the
    service's ``pagination_max_limit`` (None: unlimited), which caps ``limit`` and is the page
    size when the request gives none (Neutron's ``api_common.get_limit_and_marker``)."""
    limit_text = next(iter(query.get("limit") or []), None)
    marker = next(iter(query.get("marker") or []), None)
    reverse = (query.get("page_reverse") or ["false"])[0].lower() == "true"
    if limit_text is None and marker is None and not max_limit:
        return records, []
    try:
        limit = int(limit_text) if limit_text is not None else 0
    except ValueError:
        raise BadRequest(f"limit must be an integer, got {limit_text!r}.") from None
    if limit < 0:
        raise BadRequest(f"limit must be >= 0, got {limit}.")
    if max_limit:
        limit = min(limit, max_limit) if limit else max_limit
    ordered = list(reversed(records)) if reverse else records
    start = 0
    if marker is not None:
        ids = [r["id"] for r in ordered]
        if marker not in ids:
            raise marker_error(f"Marker {marker} could not be found.", kind="MarkerNotFound")
        start = ids.index(marker) + 1
    page = ordered[start : start + limit] if limit else ordered[start:]
    has_more = bool(limit) and start + limit < len(ordered)
    if reverse:
        page = list(reversed(page))
    links: list[dict[str, str]] = []
    base = {k: v for k, v in query.items() if k not in ("marker", "page_reverse")}

    def href(marker_id: str, backwards: bool) -> str:
        params = dict(base, marker=[marker_id])
        if backwards:
            params["page_reverse"] = ["True"]
        return f"{url}?{urlencode(params, doseq=True)}"

    if page:
        if has_more:
            links.append(
                {
                    "rel": "next",
                    "href": href(page[-1]["id"] if not reverse else page[0]["id"], reverse),
                }
            )
        if marker is not None:
            first = page[0]["id"] if not reverse else page[-1]["id"]
            links.append({"rel": "previous", "href": href(first, not reverse)})
    return page, links


def select_fields(record: Record, query: Mapping[str, list[str]]) -> Record:
    fields = _split(query.get("fields", []))
    if not fields:
        return record
    return {k: v for k, v in record.items() if k in fields}

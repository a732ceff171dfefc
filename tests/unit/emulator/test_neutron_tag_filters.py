"""Neutron's four tag filters on subnets, as the API reference defines them for several tags.

``tags`` = all of them, ``tags-any`` = at least one, ``not-tags`` = not all of them,
``not-tags-any`` = none of them; a comma-separated value and a repeated parameter mean the same
(``neutron/db/tag`` ``_apply_tag_filters``). OCCM's floating-subnet-tags queries rely on these.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from emulator.cloud import Cloud
from emulator.context import AuthContext


@pytest.fixture
def names(cloud: Cloud, ctx: AuthContext) -> Callable[[dict[str, list[str]]], list[str]]:
    n = cloud.neutron
    net = n.create_network(ctx, {"name": "tagged"})
    for i, tags in enumerate((["a"], ["b"], ["a", "b"], ["c"], [])):
        name = "s-" + ("".join(tags) or "none")
        n.create_subnet(
            ctx, {"network_id": net["id"], "cidr": f"192.168.{i}.0/24", "name": name, "tags": tags}
        )

    def listed(query: dict[str, list[str]]) -> list[str]:
        query = {"network_id": [net["id"]], **query}
        return sorted(r["name"] for r in n.list_records("subnet", ctx, query))

    return listed


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({"tags": ["a,b"]}, ["s-ab"]),
        ({"tags": ["a", "b"]}, ["s-ab"]),
        ({"tags-any": ["a,b"]}, ["s-a", "s-ab", "s-b"]),
        ({"tags-any": ["a", "b"]}, ["s-a", "s-ab", "s-b"]),
        ({"not-tags": ["a,b"]}, ["s-a", "s-b", "s-c", "s-none"]),
        ({"not-tags-any": ["a,b"]}, ["s-c", "s-none"]),
        ({"not-tags-any": ["a"], "tags-any": ["b,c"]}, ["s-b", "s-c"]),
    ],
)
def test_tag_filters(
    names: Callable[[dict[str, list[str]]], list[str]],
    query: dict[str, list[str]],
    expected: list[str],
) -> None:
    assert names(query) == expected

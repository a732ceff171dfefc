"""Which history entries and backups a stack keeps (reconciler.engine.state.retention)."""

from __future__ import annotations

import pytest

from reconciler.engine.state.retention import (
    backups_to_prune,
    history_to_prune,
    retention_bound,
)

H = ".pulumi/history/lb-reconciler/demo.default.web/"
B = ".pulumi/backups/lb-reconciler/demo.default.web/"


def _history(*times: int, attrs: bool = False) -> list[str]:
    keys = []
    for t in times:
        for kind in ("history", "checkpoint"):
            keys.append(f"{H}demo.default.web-{t}.{kind}.json")
            if attrs:
                keys.append(f"{H}demo.default.web-{t}.{kind}.json.attrs")
    return keys


def test_history_keeps_the_newest_entries_whole() -> None:
    keys = _history(1795540503519760323, 1795540503908914958, 1795540504344708115, attrs=True)
    pruned = history_to_prune(keys, stack="demo.default.web", keep=2)
    assert pruned == sorted(k for k in keys if "1795540503519760323" in k)
    assert len(pruned) == 4  # record + checkpoint copy, each with its sidecar


@pytest.mark.parametrize("keep", [0, 1, 3, 5])
def test_history_keeps_at_most_keep_entries(keep: int) -> None:
    keys = _history(*range(100, 104))
    left = set(keys) - set(history_to_prune(keys, stack="demo.default.web", keep=keep))
    assert {k.split("-")[-1].split(".")[0] for k in left} == {
        str(t) for t in range(100, 104)[::-1][:keep]
    }


def test_time_order_is_numeric_not_by_name() -> None:
    keys = _history(99, 100)  # "99" sorts after "100" as text
    assert history_to_prune(keys, stack="demo.default.web", keep=1) == sorted(_history(99))


def test_compressed_entries_count_too() -> None:
    keys = [f"{H}demo.default.web-1.history.json.gz", f"{H}demo.default.web-2.history.json.zst"]
    assert history_to_prune(keys, stack="demo.default.web", keep=1) == [keys[0]]


def test_keys_of_other_stacks_and_unknown_names_are_never_pruned() -> None:
    keys = [
        f"{H}demo.default.web-1.history.json",
        f"{H}demo.default.web-2.history.json",
        f"{H}demo.default.web2-1.history.json",  # a stack whose name extends ours
        f"{H}notes.txt",
        f"{H}demo.default.web-1.history.json.tmp",
    ]
    assert history_to_prune(keys, stack="demo.default.web", keep=1) == [keys[0]]


def test_backups_keep_the_newest() -> None:
    keys = [
        f"{B}demo.default.web.1795540503519760323.json",
        f"{B}demo.default.web.1795540503519760323.json.attrs",
        f"{B}demo.default.web.1795540504344708115.json",
        f"{B}demo.default.web.1795540504344708115.json.attrs",
        f"{B}demo.default.web.x.json",
    ]
    assert backups_to_prune(keys, stack="demo.default.web", keep=1) == keys[:2]
    assert backups_to_prune(keys, stack="demo.default.web", keep=2) == []


def test_a_dotted_stack_name_is_matched_literally() -> None:
    keys = [f"{B}demoXdefaultXweb.1.json", f"{B}demo.default.web.2.json"]
    assert backups_to_prune(keys, stack="demo.default.web", keep=0) == [keys[1]]


def test_the_bound_counts_every_kind_of_object() -> None:
    # checkpoint + .bak + tags + 2 x 10 history objects + 10 backups = 33 objects
    assert retention_bound(keep=10, checkpoint_bytes=1000) == 33_000
    assert retention_bound(keep=0, checkpoint_bytes=1000, sidecar_bytes=100) == 3 * 1100

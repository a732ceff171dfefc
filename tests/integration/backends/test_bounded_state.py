"""Bounded state: what each stack leaves in the backend stays within a stated bound.

Every ``up``, ``refresh`` and ``destroy`` makes the CLI add a history entry (a record and a copy of
the checkpoint) and a checkpoint backup, and ``stack rm`` leaves the backups; nothing removes
them. The engine prunes each stack to its newest ``keep`` entries and backups after each
operation (:meth:`reconciler.engine.state.store.StateStore.prune`, the call
``StackHandle.deadline`` makes) and removes what ``stack rm`` leaves
(:meth:`~reconciler.engine.state.store.StateStore.remove_leftovers`). The operations here are
real ``pulumi refresh`` runs of stacks of a project without resources (0.4 s each): the objects
they write are those an engine operation writes, at a fraction of the time.
"""

from __future__ import annotations

import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from reconciler.engine.state.retention import retention_bound
from reconciler.engine.state.stacks import prune, remove_leftovers
from reconciler.engine.state.store import StateStore
from reconciler.toolchain import Toolchain
from stacks.vocabulary import PROJECT
from tests.backends import Backend, BackendServers

# each test starts real pulumi runs or servers for many seconds: not in make test-fast
pytestmark = pytest.mark.slow

PASSPHRASE = "bounded-state-passphrase"


class Cli:
    def __init__(self, toolchain: Toolchain, backend: Backend, folder: Path) -> None:
        self.backend = backend
        self.folder = folder / "project"
        self.folder.mkdir(parents=True, exist_ok=True)
        (self.folder / "Pulumi.yaml").write_text(f"name: {PROJECT}\nruntime: yaml\n")
        self.pulumi = str(toolchain.path("pulumi"))
        self.env = {
            **toolchain.env(),
            **backend.cli_env(),
            "PULUMI_CONFIG_PASSPHRASE": PASSPHRASE,
            "PULUMI_SKIP_UPDATE_CHECK": "true",
        }

    def __call__(self, *args: str) -> str:
        done = subprocess.run(
            [self.pulumi, "--non-interactive", *args],
            cwd=self.folder,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    def operate(self, stack: str) -> None:
        self("refresh", "--yes", "--skip-preview", "--stack", stack)


def _history_entries(store: StateStore, stack: str) -> int:
    return sum(o.key.endswith(".history.json") for o in store.objects(store.history_prefix(stack)))


def test_each_stack_keeps_its_newest_entries_on_every_backend(
    toolchain: Toolchain, backend: Backend, tmp_path: Path
) -> None:
    cli = Cli(toolchain, backend, tmp_path)
    store = backend.store()
    stacks = [f"bounded.default.s{i}" for i in range(3)]
    try:
        for stack in stacks:
            cli("stack", "init", stack)
        for _round in range(4):  # each pruned twice over
            for stack in stacks:
                cli.operate(stack)
                prune(store, stack, keep=2)
        for stack in stacks:
            assert _history_entries(store, stack) == 2
            assert len(store.objects(store.backups_prefix(stack))) == 2
            # the CLI still reads what is left: the newest two operations
            history = cli("stack", "history", "--stack", stack, "--json")
            assert history.count('"kind": "refresh"') == 2

        cli("stack", "rm", "--yes", stacks[0])
        assert store.objects_of(stacks[0]) != []  # the CLI leaves the backups (and .bak)
        assert remove_leftovers(store, stacks[0]) > 0
        assert store.objects_of(stacks[0]) == []
        assert store.objects(f"{store.stacks_prefix()}{stacks[0]}") == []
        # a stack that exists is not touched
        before = store.objects_of(stacks[1])
        assert remove_leftovers(store, stacks[1]) == 0
        assert store.objects_of(stacks[1]) == before
    finally:
        store.close()


def test_without_pruning_the_backend_grows_with_every_operation(
    toolchain: Toolchain, backend_servers: BackendServers, tmp_path: Path
) -> None:
    """The premise of the bound, on the CLI we build: each operation adds a history entry and a
    backup, and nothing removes them."""
    backend = backend_servers.backend("file", folder=tmp_path)
    cli = Cli(toolchain, backend, tmp_path)
    store = backend.store()
    cli("stack", "init", "bounded.default.grows")
    for _ in range(5):
        cli.operate("bounded.default.grows")
    assert _history_entries(store, "bounded.default.grows") == 5
    assert len(store.objects(store.backups_prefix("bounded.default.grows"))) == 5


def test_many_operations_on_four_stacks_at_once_stay_within_the_bound(
    toolchain: Toolchain, backend_servers: BackendServers, tmp_path: Path
) -> None:
    """20 operations, 5 on each of 4 stacks, all four at once, each followed by the prune the
    engine makes (keep 3; ``--keep-history`` defaults to 5): every stack's history is pruned
    twice over, while the three others are operated on and pruned beside it. Afterwards every
    stack holds exactly its checkpoint, its ``.bak``, 3 history entries and 3 backups, and the
    backend's size is within ``retention_bound`` per stack. Without pruning it would hold 5
    entries and 5 backups per stack (previous test). (It ran 1,000 operations on 20 stacks,
    then 240, then 80, then 48 on 8 stacks, until the suite had to fit in 15 minutes: the same
    prunes, run concurrently, each stack pruned more than once.)"""
    keep, stacks_n, per_stack = 3, 4, 5
    backend = backend_servers.backend("file", folder=tmp_path)
    cli = Cli(toolchain, backend, tmp_path)
    store = backend.store()
    stacks = [f"bounded.default.s{i:02d}" for i in range(stacks_n)]
    for stack in stacks:
        cli("stack", "init", stack)

    def run(stack: str) -> None:
        for _ in range(per_stack):
            cli.operate(stack)
            prune(store, stack, keep=keep)

    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(run, stacks))

    root = Path(backend.url.removeprefix("file://"))
    files = [p for p in root.rglob("*") if p.is_file()]
    sidecars = [p for p in files if p.name.endswith(".attrs")]
    objects = [p for p in files if not p.name.endswith(".attrs")]
    biggest = max(p.stat().st_size for p in objects if "meta.yaml" not in p.name)
    biggest_sidecar = max(p.stat().st_size for p in sidecars)
    for stack in stacks:
        assert _history_entries(store, stack) == keep
        assert len(store.objects(store.backups_prefix(stack))) == keep
        # checkpoint + .bak + keep x (record + checkpoint copy) + keep backups
        assert len(store.objects_of(stack)) == 2 + 2 * keep + keep
    size = sum(p.stat().st_size for p in files)
    bound = stacks_n * retention_bound(
        keep=keep, checkpoint_bytes=biggest, sidecar_bytes=biggest_sidecar
    ) + sum(p.stat().st_size for p in root.glob(".pulumi/meta.yaml*"))
    assert size <= bound, (size, bound)
    store.close()


@pytest.mark.parametrize("keep", [0, 1])
def test_keep_zero_and_one(
    toolchain: Toolchain, backend_servers: BackendServers, tmp_path: Path, keep: int
) -> None:
    backend = backend_servers.backend("file", folder=tmp_path)
    cli = Cli(toolchain, backend, tmp_path)
    store = backend.store()
    cli("stack", "init", "bounded.default.k")
    for _ in range(3):
        cli.operate("bounded.default.k")
        prune(store, "bounded.default.k", keep=keep)
    assert _history_entries(store, "bounded.default.k") == keep
    assert len(store.objects(store.backups_prefix("bounded.default.k"))) == keep
    cli("stack", "history", "--stack", "bounded.default.k")  # readable, empty or not

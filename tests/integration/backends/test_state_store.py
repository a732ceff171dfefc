"""reconciler.engine.state.store on each kind of backend, against what the real `pulumi` CLI wrote.

The CLI (v3.259, the toolchain's) makes stacks, tags and locks on a `file://` folder, a real
PostgreSQL (`postgres://`) and a real S3 server (MinIO, `s3://<bucket>/state`); the store must
read them where the CLI put them, and what the store writes the CLI must read. A lock is real:
an `up` whose inline program waits holds it; a killed `pulumi` leaves it behind, the CLI then
refuses the stack, and the store's removal lets the next `up` run.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from pulumi import automation as auto

from reconciler.engine import run as engine_run
from reconciler.engine.cli import checked_command
from reconciler.engine.recovery import (
    children_running,
    descendants,
    send_signal,
)
from reconciler.engine.state.locks import Cleared, LeaderRule, clear_stale_locks, locked
from reconciler.engine.state.stacks import create_stack, remove_stack
from reconciler.engine.state.store import (
    META,
    BucketError,
    WriteConflictError,
    cli_settings,
    open_state_store,
)
from reconciler.toolchain import Toolchain
from stacks.vocabulary import PROJECT
from tests.backends import Backend, BackendServers

# each test starts real pulumi runs or servers for many seconds: not in make test-fast
pytestmark = pytest.mark.slow

PASSPHRASE = "store-test-passphrase"


def cli_env(toolchain: Toolchain, backend: Backend) -> dict[str, str]:
    return {
        **toolchain.env(),
        **cli_settings(backend.url),
        **backend.cli_env(),
        "PULUMI_CONFIG_PASSPHRASE": PASSPHRASE,
        "PULUMI_SKIP_UPDATE_CHECK": "true",
    }


def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir(exist_ok=True)
    (folder / "Pulumi.yaml").write_text(f"name: {PROJECT}\nruntime: python\n")
    return folder


def pulumi(
    toolchain: Toolchain, backend: Backend, where: Path, *args: str, ok: bool = True
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [str(toolchain.path("pulumi")), *args],
        cwd=where,
        env=cli_env(toolchain, backend),
        capture_output=True,
        text=True,
        check=False,
    )
    if ok:
        assert done.returncode == 0, done.stdout + done.stderr
    return done


def kill_pulumi(pid: int) -> None:
    """SIGKILL a ``pulumi`` child and its plugins, as a node lost in the middle of an ``up``:
    nothing is cleaned up."""
    tree = descendants(pid)
    send_signal(pid, signal.SIGKILL)
    for child, _started in tree:
        send_signal(child, signal.SIGKILL)


def test_stacks_and_tags_the_cli_wrote(
    toolchain: Toolchain, backend: Backend, tmp_path: Path
) -> None:
    where = project(tmp_path)
    store = backend.store()
    assert store.objects() == []  # an empty backend
    for stack in ("c.ns.web", "c.ns.db"):
        pulumi(toolchain, backend, where, "stack", "init", stack)
        pulumi(toolchain, backend, where, "stack", "tag", "set", "lbr:cluster", "c", "-s", stack)
        pulumi(toolchain, backend, where, "stack", "tag", "set", "lbr:name", stack[5:], "-s", stack)
    store.check_layout()  # meta.yaml version 1
    listed = json.loads(pulumi(toolchain, backend, where, "stack", "ls", "--json").stdout)
    assert store.stack_names() == sorted(s["name"] for s in listed) == ["c.ns.db", "c.ns.web"]
    assert store.stack_exists("c.ns.web")
    assert not store.stack_exists("c.ns.gone")
    web = store.tags("c.ns.web")
    assert web is not None
    assert {k: v for k, v in web.items() if k.startswith("lbr:")} == {
        "lbr:cluster": "c",
        "lbr:name": "web",
    }
    assert store.tags("c.ns.gone") == {}
    assert set(store.all_tags()) == {"c.ns.web", "c.ns.db"}
    assert store.all_tags()["c.ns.db"] == store.tags("c.ns.db")
    checkpoint = store.checkpoint("c.ns.web")
    assert checkpoint is not None
    assert checkpoint["version"] == 3
    objects = {o.key: o for o in store.objects()}
    assert ".pulumi/meta.yaml" in objects
    assert f".pulumi/stacks/{PROJECT}/c.ns.web.json" in objects
    assert all(o.size > 0 for o in objects.values())
    now = datetime.now(UTC)
    assert all(
        now - timedelta(minutes=5) < o.modified <= now + timedelta(minutes=1)
        for o in objects.values()
    )
    assert {o.key for o in store.objects_of("c.ns.web")} == {k for k in objects if "c.ns.web" in k}

    # what the store writes is what the CLI reads
    store.write_tags("c.ns.web", {"lbr:cluster": "c", "lbr:name": "web", "lbr:new": "1"})
    shown = json.loads(
        pulumi(toolchain, backend, where, "stack", "tag", "ls", "--json", "-s", "c.ns.web").stdout
    )
    assert {k: v for k, v in shown.items() if k.startswith("lbr:")} == {
        "lbr:cluster": "c",
        "lbr:name": "web",
        "lbr:new": "1",
    }
    listed = json.loads(
        pulumi(toolchain, backend, where, "stack", "ls", "--json", "--tag", "lbr:new=1").stdout
    )
    assert [s["name"] for s in listed] == ["c.ns.web"]

    pulumi(toolchain, backend, where, "stack", "rm", "c.ns.db", "--yes")
    assert not store.stack_exists("c.ns.db")
    assert store.stack_names() == ["c.ns.web"]  # its .bak and backups are no stack
    assert set(store.all_tags()) == {"c.ns.web"}
    assert store.list_locks("c.ns.web") == []
    assert store.all_locks() == {}


class BlockingUp:
    """An ``up`` through the Automation API whose inline program waits for :meth:`release`:
    the real ``pulumi up`` holds the stack's lock meanwhile."""

    def __init__(self, toolchain: Toolchain, backend: Backend, where: Path, stack: str) -> None:
        self.release_program = threading.Event()
        self.entered = threading.Event()

        def program() -> None:
            self.entered.set()
            self.release_program.wait(120)

        self.stack = auto.create_or_select_stack(
            stack_name=stack,
            project_name=PROJECT,
            program=program,
            opts=auto.LocalWorkspaceOptions(
                work_dir=str(where),
                pulumi_command=checked_command(str(toolchain.pulumi_root())),
                project_settings=auto.ProjectSettings(name=PROJECT, runtime="python"),
                env_vars=cli_env(toolchain, backend),
                secrets_provider="passphrase",
            ),
        )
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:  # as the engine runs it: no `stack output` and `stack history` after it
            engine_run.up(self.stack, on_output=lambda _line: None)
        except BaseException as exc:
            self.error = exc

    def start(self) -> BlockingUp:
        self.thread.start()
        assert self.entered.wait(120), "the program never ran"
        return self

    def release(self) -> None:
        self.release_program.set()
        self.thread.join(120)


def test_a_new_backend_is_set_up_as_the_cli_sets_it_up(
    toolchain: Toolchain, backend: Backend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The store sets up a new backend with the bytes the CLI writes when it first opens one
    (``meta.yaml``, the project layout), so the first stack of a new backend needs no
    ``pulumi``; the CLI then reads and lists what the store made. Where the CLI would choose
    the old layout (its stacks are there, or the user asks for it), the store writes nothing."""
    where = project(tmp_path)
    store = backend.store()
    pulumi(toolchain, backend, where, "stack", "ls")  # the CLI sets the new backend up
    by_cli = store.bucket.read(META)
    assert by_cli is not None
    store.bucket.delete(META)  # new again

    monkeypatch.setenv("PULUMI_DIY_BACKEND_LEGACY_LAYOUT", "true")
    assert not backend.store().set_up()
    assert store.bucket.read(META) is None
    monkeypatch.delenv("PULUMI_DIY_BACKEND_LEGACY_LAYOUT")
    store.bucket.write(".pulumi/stacks/old.json", b"{}")  # a stack of the old layout
    assert not backend.store().set_up()
    assert store.bucket.read(META) is None
    store.bucket.delete(".pulumi/stacks/old.json")

    fresh = backend.store()
    assert create_stack(fresh, "c.ns.first")  # sets it up, then makes the stack
    assert store.bucket.read(META) == by_cli
    fresh.check_layout()
    listed = json.loads(pulumi(toolchain, backend, where, "stack", "ls", "--json").stdout)
    assert [s["name"] for s in listed] == ["c.ns.first"]


def test_a_live_lock_and_one_a_killed_pulumi_left(
    toolchain: Toolchain, backend: Backend, tmp_path: Path
) -> None:
    where, name, host = project(tmp_path), "c.ns.locked", socket.gethostname()
    store = backend.store()
    running = BlockingUp(toolchain, backend, where, name).start()
    (pid,) = children_running(stack_name=name)
    (lock,) = store.list_locks(name)
    assert (lock.stack, lock.pid, lock.hostname) == (name, pid, host)
    assert lock.key.startswith(f".pulumi/locks/organization/{PROJECT}/{name}/")
    assert lock.key.endswith(".json")
    assert lock.timestamp is not None
    assert abs(datetime.now(UTC) - lock.timestamp) < timedelta(minutes=5)
    assert store.all_locks() == {name: [lock]}
    assert locked([lock], rule=None) is True  # its pulumi runs
    assert locked([lock], rule=LeaderRule()) is True  # a child of this process: the leader's own
    assert clear_stale_locks(store=store, rule=LeaderRule(), stack_name=name) == Cleared()

    kill_pulumi(pid)
    running.release()
    assert running.error is not None
    assert store.list_locks(name) == [lock]  # left behind
    assert locked([lock], rule=None) is False  # this host's, its process gone
    refused = pulumi(toolchain, backend, where, "up", "--yes", "-s", name, ok=False)
    assert "currently locked by 1 lock(s)" in refused.stdout + refused.stderr

    assert clear_stale_locks(store=store, rule=None, stack_name=name).removed == [lock]
    assert store.list_locks(name) == []
    again = BlockingUp(toolchain, backend, where, name).start()
    again.release()
    assert again.error is None
    assert store.list_locks(name) == []


def test_pulumi_cancel_is_the_human_force_unlock(
    toolchain: Toolchain, backend: Backend, tmp_path: Path
) -> None:
    where, name = project(tmp_path), "c.ns.cancel"
    store = backend.store()
    running = BlockingUp(toolchain, backend, where, name).start()
    (pid,) = children_running(stack_name=name)
    kill_pulumi(pid)
    running.release()
    assert len(store.list_locks(name)) == 1
    pulumi(toolchain, backend, where, "cancel", "--yes", "-s", name)
    assert store.list_locks(name) == []
    with pytest.raises(ValueError, match="not a lock"):
        store.delete_lock(f".pulumi/stacks/{PROJECT}/{name}.json")  # never anything else


def test_the_store_removes_a_stack_as_stack_rm_does(
    toolchain: Toolchain, backend: Backend, tmp_path: Path
) -> None:
    """``remove_stack``: everything of the stack goes (checkpoint, its ``.bak``, tags, history,
    backups), under a lock of this process while it works; the CLI no longer knows the stack
    and makes it anew; refused while a live ``pulumi`` holds the stack's lock."""
    where, name, other = project(tmp_path), "c.ns.gone", "c.ns.stays"
    store = backend.store()
    for stack in (name, other):
        for _ in range(2):  # history, backups and a .bak of the checkpoint
            BlockingUp(toolchain, backend, where, stack).start().release()
        pulumi(toolchain, backend, where, "stack", "tag", "set", "lbr:x", "1", "-s", stack)
    keys = {o.key for o in store.objects_of(name)}
    assert any("/history/" in k for k in keys), keys
    assert any("/backups/" in k for k in keys), keys
    assert any(k.endswith(f"{name}.json.bak") for k in keys), keys
    kept = {o.key for o in store.objects_of(other)}

    seen: list[list[tuple[int, str]]] = []
    real_delete = store.bucket.delete

    def delete(key: str) -> None:
        if not seen:
            seen.append([(lock.pid, lock.hostname) for lock in store.list_locks(name)])
        real_delete(key)

    store.bucket.delete = delete  # type: ignore[method-assign]
    assert remove_stack(store, name) == []
    assert seen == [[(os.getpid(), socket.gethostname())]]  # locked while it worked
    assert store.objects_of(name) == []
    assert not store.stack_exists(name)
    assert {o.key for o in store.objects_of(other)} == kept
    listed = json.loads(pulumi(toolchain, backend, where, "stack", "ls", "--json").stdout)
    assert [s["name"] for s in listed] == [other]
    pulumi(toolchain, backend, where, "stack", "init", name)  # the CLI makes it anew

    running = BlockingUp(toolchain, backend, where, other).start()
    try:
        (lock,) = remove_stack(store, other)
        assert lock.pid == children_running(stack_name=other)[0]
        assert store.stack_exists(other)
        assert {o.key for o in store.objects_of(other)} >= kept
    finally:
        running.release()
    assert running.error is None


@pytest.mark.parametrize("kind", ["postgres", "s3"])
def test_the_other_url_forms_reach_the_same_objects(
    toolchain: Toolchain, backend_servers: BackendServers, tmp_path: Path, kind: str
) -> None:
    """postgres://: a table of the user's choosing (the CLI folds its name to lower case).
    s3://: the AWS SDK v1-era parameters the CLI still accepts, a ``prefix`` parameter and a
    path, which the CLI stacks up as the key prefix."""
    server = backend_servers.server(kind)
    url = server.new_backend(f"forms-{kind}")
    if kind == "postgres":
        url += "&table=Team_State&application_name=lbr-test"
    else:
        bucket = url.split("://", 1)[1].split("?", 1)[0]
        url = (
            f"s3://{bucket}/deep/path?endpoint={server.endpoint}&s3ForcePathStyle=true"
            "&disableSSL=true&region=us-east-1&prefix=p-"
        )
    backend = Backend(kind, url, dict(server.env), server)
    where = project(tmp_path)
    pulumi(toolchain, backend, where, "stack", "init", "c.ns.forms")
    pulumi(toolchain, backend, where, "stack", "tag", "set", "lbr:cluster", "c")
    store = backend.store()
    assert store.stack_exists("c.ns.forms")
    tags = store.tags("c.ns.forms")
    assert tags is not None
    assert tags["lbr:cluster"] == "c"
    keys = {o.key for o in store.objects()}
    if kind == "postgres":
        import psycopg

        with psycopg.connect(
            url.replace("postgres://", "postgresql://").split("&table")[0]
        ) as conn:
            rows = conn.execute("SELECT key FROM team_state").fetchall()
        raw = {str(r[0]) for r in rows}
        assert raw == {f"{url.split('/')[3].split('?')[0]}/{k}" for k in keys}
    else:
        client = server.s3_client()
        listed = client.list_objects_v2(Bucket=bucket)
        raw = {str(o["Key"]) for o in listed.get("Contents", [])}
        client.close()
        assert raw == {f"p-deep/path/{k}" for k in keys}
    assert f".pulumi/stacks/{PROJECT}/c.ns.forms.json" in keys


def test_a_backend_that_cannot_be_reached_says_so(backend_servers: BackendServers) -> None:
    server = backend_servers.server("postgres")
    wrong = server.url("lbr").replace(f":{server.port}/", ":1/")
    store = open_state_store(wrong)
    assert store is not None
    with pytest.raises(BucketError, match=r"backend postgres://lbr:\*\*\*\*@127\.0\.0\.1:1/"):
        store.tags("c.ns.web")
    password = server.url("lbr").split("@")[0].split(":")[-1]
    assert "****" in store.url
    assert password not in store.url


def test_the_cli_lists_many_stacks_of_a_postgres_backend(
    toolchain: Toolchain, backend_servers: BackendServers, tmp_path: Path
) -> None:
    """pulumi v3.259's DIY PostgreSQL driver lists stacks with 10 workers that each hold a
    connection and wait for another, from a pool of 2 x GOMAXPROCS: on 2 cores `stack ls` of more
    than 3 stacks waits for ever. With one worker (``cli_settings``, which the engine and
    ``backend serve`` set) it lists them all."""
    server = backend_servers.server("postgres")
    backend = Backend("postgres", server.new_backend("many"), {}, server)
    assert cli_settings(backend.url) == {"PULUMI_DIY_BACKEND_PARALLEL": "1"}
    where = project(tmp_path)
    names = [f"c.ns.s{i:02}" for i in range(12)]
    for name in names:
        pulumi(toolchain, backend, where, "stack", "init", name)
    listed = json.loads(pulumi(toolchain, backend, where, "stack", "ls", "--json").stdout)
    assert sorted(s["name"] for s in listed) == names
    assert sorted(backend.store().all_tags()) == []  # no tags set: no tags objects
    assert len([o for o in backend.store().objects() if o.key.endswith(".json")]) == 12


def test_writes_over_a_version_another_writer_replaced_are_refused(
    toolchain: Toolchain, backend: Backend, tmp_path: Path
) -> None:
    """Each backend's own compare-and-swap (S3 ``If-Match``, PostgreSQL's conditional
    ``UPDATE``, ``file://``'s compare before the rename): a checkpoint or tags read before
    another writer (here the real CLI's ``up`` and ``stack tag set``) replaced them is not
    written over; one read after is. What the store wrote, the CLI reads."""
    where, name = project(tmp_path), "c.ns.cas"
    store = backend.store()
    BlockingUp(toolchain, backend, where, name).start().release()
    pulumi(toolchain, backend, where, "stack", "tag", "set", "lbr:x", "1", "-s", name)
    read = store.read_checkpoint(name)
    assert read is not None
    assert read.key == f".pulumi/stacks/{PROJECT}/{name}.json"  # where the CLI wrote it
    tags, tags_version = store.tags_versioned(name)
    assert tags is not None
    assert tags_version is not None

    BlockingUp(toolchain, backend, where, name).start().release()  # another writer
    pulumi(toolchain, backend, where, "stack", "tag", "set", "lbr:x", "2", "-s", name)
    with pytest.raises(WriteConflictError):
        store.write_deployment(name, read.deployment or {}, expect=read)
    with pytest.raises(WriteConflictError):
        store.write_tags(name, {**tags, "lbr:x": "3"}, if_version=tags_version)
    assert (store.tags(name) or {})["lbr:x"] == "2"

    fresh = store.read_checkpoint(name)
    assert fresh is not None
    assert fresh.version != read.version
    latest = dict(fresh.deployment or {})
    (root,) = [r for r in latest["resources"] if r["type"] == "pulumi:pulumi:Stack"]
    root["outputs"] = {**(root.get("outputs") or {}), "written": "by the store"}
    written = store.write_deployment(name, latest, expect=fresh)
    assert store.read_checkpoint(name) == written
    outputs = json.loads(
        pulumi(toolchain, backend, where, "stack", "output", "--json", "-s", name).stdout
    )
    assert outputs["written"] == "by the store"
    # what the CLI keeps of the one replaced, as its own saves do
    assert store.bucket.read(f"{fresh.key}.bak") == fresh.raw
    # a write over a version gone by is refused even when only the tags moved
    _, now_version = store.tags_versioned(name)
    assert now_version is not None
    store.write_tags(name, {**(store.tags(name) or {}), "lbr:x": "4"}, if_version=now_version)
    assert (store.tags(name) or {})["lbr:x"] == "4"


def test_a_guarded_store_asks_before_every_write_and_refuses_none_of_its_reads(
    toolchain: Toolchain, backend: Backend, tmp_path: Path
) -> None:
    """The controller's fence sits in the bucket, right before a write or delete reaches the
    backend (PostgreSQL: once the connection is open), with the write's bound; a refusal
    writes nothing."""
    pulumi(toolchain, backend, project(tmp_path), "stack", "ls")  # the CLI sets the backend up
    store = backend.store()
    asked: list[tuple[str, float]] = []
    refuse = False

    @contextlib.contextmanager
    def guard(doing: str, need: float) -> Iterator[None]:
        asked.append((doing, need))
        if refuse:
            raise RuntimeError(f"refused: {doing}")
        yield

    store.bucket.guard = guard
    store.write_tags("c.ns.g", {"a": "1"})
    assert asked == [(f"writing {store.tags_key('c.ns.g')}", store.bucket.write_bound)]
    refuse = True
    with pytest.raises(RuntimeError, match="refused"):
        store.write_tags("c.ns.g", {"a": "2"})
    with pytest.raises(RuntimeError, match="refused"):
        store.bucket.delete(store.tags_key("c.ns.g"))
    assert store.tags("c.ns.g") == {"a": "1"}  # reads pass, nothing was written
    assert len(asked) == 3

"""Stale stack locks: the leader's rule and a bystander's
(:mod:`reconciler.engine.state.lock_plan`), carried out on a ``file://`` backend with real processes
(:mod:`reconciler.engine.state.locks`), and a running ``pulumi`` killed when the Lease is lost
(:func:`run_with_deadline`)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from reconciler.engine.errors import NotLeaderError
from reconciler.engine.processes import pulumi_children
from reconciler.engine.recovery import run_with_deadline
from reconciler.engine.state.lock_plan import (
    LeaderView,
    LockRecord,
    Whose,
    foreign,
    held_message,
    judge,
    of_cluster,
    parse_lock,
    stale_for_bystander,
    stale_for_leader,
)
from reconciler.engine.state.locks import (
    Cleared,
    LeaderRule,
    clear_stale_locks,
    list_locks,
    locked,
)
from reconciler.engine.state.store import StateStore, open_state_store
from stacks.vocabulary import PROJECT

NOW = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)
HOST = "pod-a"


def record(pid: int = 100, host: str = HOST, at: datetime | None = NOW, stack: str = "c.ns.web"):  # type: ignore[no-untyped-def]
    return LockRecord(stack=stack, key=f"{stack}/{pid}.json", pid=pid, hostname=host, timestamp=at)


# -- the decision --------------------------------------------------------------------------------


def test_a_lock_record_as_pulumi_writes_it() -> None:
    # pkg/backend/diy/lock.go: Go's time.Time in JSON (nanoseconds, the zone's offset)
    text = (
        '{"pid":4242,"username":"root","hostname":"lb-reconciler-7d9f-x2",'
        '"timestamp":"2026-11-24T13:00:01.123456789+01:00"}'
    )
    lock = parse_lock(text, stack="c.ns.web", key="k")
    assert (lock.pid, lock.hostname, lock.username) == (4242, "lb-reconciler-7d9f-x2", "root")
    assert lock.timestamp == datetime(2026, 11, 24, 12, 0, 1, 123456, tzinfo=UTC)
    assert lock.readable
    assert "root@lb-reconciler-7d9f-x2 (pid 4242)" in lock.describe()


@pytest.mark.parametrize("text", ["", '{"pid": ', "[]", '{"hostname": "h"}', '{"pid": "x"}'])
def test_an_unreadable_record_still_counts_as_a_lock(text: str) -> None:
    lock = parse_lock(text, stack="c.ns.web", key="k")
    assert not lock.readable
    assert lock.describe() == "an unreadable lock record (written an unknown time)"
    written = parse_lock(text, stack="c.ns.web", key="k", modified=NOW)
    assert written.describe() == "an unreadable lock record (written 2026-11-24T12:00:00+00:00)"


def view(**changes: object) -> LeaderView:
    """The leader of host ``pod-a``: child 100 started 30 s ago, replica ``pod-old`` held the
    Lease before."""
    base: dict[str, object] = {
        "hostname": HOST,
        "now": NOW,
        "ours": {100: NOW - timedelta(seconds=30)},
        "running": {},
        "replicas": {"pod-old"},
    }
    return LeaderView(**{**base, **changes})  # type: ignore[arg-type]


def test_own_means_this_host_a_live_child_or_this_process_and_not_older_than_it() -> None:
    assert judge(record(), view()) is Whose.OWN
    assert judge(record(at=None), view()) is Whose.OWN
    # the child's start is known to the second: a record a moment "before" it is still its own
    assert judge(record(at=NOW - timedelta(seconds=31)), view()) is Whose.OWN
    # written an hour before the child started: an earlier process had the PID, now gone
    assert judge(record(at=NOW - timedelta(hours=1)), view()) is Whose.DEAD_HERE
    assert judge(record(pid=100, host="pod-b"), view()) is Whose.FOREIGN  # same PID, elsewhere


def test_this_process_s_own_lock_is_its_own_only_while_it_holds_it() -> None:
    """A direct path's lock is this process's; one it no longer holds (its removal failed: the
    Lease lost meanwhile, the backend unreachable) would wedge the stack if it counted."""
    mine = LockRecord(stack="c.ns.web", key="k1", pid=900, hostname=HOST, timestamp=NOW)
    assert judge(mine, view(pid=900, holding={"k1"})) is Whose.OWN
    assert judge(mine, view(pid=900, holding={"k2"})) is Whose.DEAD_HERE


def test_a_lock_of_this_host_is_stale_only_when_its_process_is_gone() -> None:
    gone = record(pid=55)
    assert judge(gone, view()) is Whose.DEAD_HERE
    # a live process of this host that is no child of ours: a person's `pulumi` beside us
    live = view(running={55: NOW - timedelta(minutes=5)})
    assert judge(gone, live) is Whose.FOREIGN
    assert judge(record(pid=55, at=None), live) is Whose.FOREIGN
    # the PID now belongs to a process that started after the lock was written
    reused = view(running={55: NOW + timedelta(minutes=5)})
    assert judge(gone, reused) is Whose.DEAD_HERE


def test_a_replica_s_lock_is_stale_a_stranger_s_never() -> None:
    assert judge(record(pid=7, host="pod-old"), view()) is Whose.REPLICA
    alice = record(pid=4242, host="alice-laptop", at=NOW - timedelta(days=3))
    assert judge(alice, view()) is Whose.FOREIGN
    torn = LockRecord(stack="c.ns.web", key="torn", modified=NOW - timedelta(days=3))
    assert judge(torn, view()) is Whose.FOREIGN
    assert judge(torn, view(replicas={"pod-old", ""})) is Whose.FOREIGN  # no name is no replica


def test_a_team_may_let_strangers_locks_expire() -> None:
    hour = view(foreign_timeout=timedelta(hours=1))
    fresh = record(pid=4242, host="alice-laptop", at=NOW - timedelta(minutes=59))
    old = record(pid=4242, host="alice-laptop", at=NOW - timedelta(minutes=61))
    assert judge(fresh, hour) is Whose.FOREIGN
    assert judge(old, hour) is Whose.EXPIRED
    # unreadable: by the time its object was written
    torn = LockRecord(stack="c.ns.web", key="torn", modified=NOW - timedelta(hours=2))
    assert judge(torn, hour) is Whose.EXPIRED
    assert judge(LockRecord(stack="c.ns.web", key="torn"), hour) is Whose.FOREIGN  # no time
    # a live process of this host is never expired: it is running
    here = view(foreign_timeout=timedelta(hours=1), running={55: NOW - timedelta(days=1)})
    assert judge(record(pid=55, at=NOW - timedelta(hours=5)), here) is Whose.FOREIGN


def test_the_leader_removes_its_dead_the_replicas_and_the_expired() -> None:
    mine = record(pid=100)
    stale = [record(pid=7, host="pod-old"), record(pid=55)]
    kept = [record(pid=7, host="alice-laptop"), LockRecord(stack="c.ns.web", key="torn")]
    assert stale_for_leader([mine, *stale, *kept], view()) == stale
    assert foreign([mine, *stale, *kept], view()) == kept


def test_the_message_names_the_holder_and_the_command_that_frees_it() -> None:
    alice = LockRecord(
        stack="c.ns.web",
        key="k",
        pid=4242,
        hostname="alice-laptop",
        username="alice",
        timestamp=NOW,
    )
    text = held_message(
        "organization/lb-reconciler/c.ns.web", [alice], backend="postgres://lbr:****@db/lbr"
    )
    assert "alice@alice-laptop (pid 4242) since 2026-11-24T12:00:00+00:00" in text
    assert (
        "`PULUMI_BACKEND_URL=postgres://lbr:****@db/lbr pulumi cancel "
        "--stack organization/lb-reconciler/c.ns.web --yes`"
    ) in text


def test_anyone_else_takes_only_a_dead_process_lock_of_this_host() -> None:
    dead, live = record(pid=55), record(pid=56)
    remote = record(pid=55, host="pod-b")
    torn = LockRecord(stack="c.ns.web", key="torn")
    assert stale_for_bystander([dead, live, remote, torn], hostname=HOST, alive={56}) == [dead]


def test_which_stacks_are_the_cluster_s() -> None:
    assert of_cluster("prod.ns.web", cluster_name="prod", tags=None)
    assert not of_cluster("prod2.ns.web", cluster_name="prod", tags=None)
    assert not of_cluster("staging.ns.web", cluster_name="prod", tags=None)
    assert of_cluster("prod.ns.web", cluster_name="prod", tags={"lbr:cluster": "prod"})
    # "a.b" and "a_b" name their stacks alike; the tag tells them apart
    assert of_cluster("a_b.ns.web-0123456789", cluster_name="a.b", tags=None)
    assert not of_cluster("a_b.ns.web", cluster_name="a.b", tags={"lbr:cluster": "a_b"})


# -- on a file:// backend, with real processes -----------------------------------------------------


@pytest.fixture
def fake_pulumi(tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A live child of this process that ``/proc`` shows as ``pulumi`` (Python under that
    name, with no child of its own to leak), working on stack ``c.ns.web``."""
    exe = tmp_path / "bin" / "pulumi"
    exe.parent.mkdir()
    exe.symlink_to(sys.executable)
    child = subprocess.Popen([str(exe), "-c", "import time; time.sleep(120)", "c.ns.web"])
    yield child
    child.kill()
    child.wait()


def _store(backend: Path) -> StateStore:
    store = open_state_store(backend.as_uri())
    assert store is not None
    return store


def write_lock(backend: Path, stack: str, name: str, **owner: object) -> Path:
    folder = backend / ".pulumi" / "locks" / "organization" / PROJECT / stack
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.json"
    path.write_text(json.dumps(owner))
    (folder / f"{name}.json.attrs").write_text("{}")
    return path


def now() -> str:
    return datetime.now(UTC).isoformat()


LEADER = LeaderRule(replicas=("old-leader-pod",))


def test_the_leader_keeps_its_child_s_lock_and_a_stranger_s_and_removes_the_rest(
    tmp_path: Path, fake_pulumi: subprocess.Popen[bytes]
) -> None:
    store, host = _store(tmp_path), socket.gethostname()
    assert fake_pulumi.pid in pulumi_children()
    child = write_lock(
        tmp_path, "c.ns.web", "a", pid=fake_pulumi.pid, hostname=host, timestamp=now()
    )
    dead = write_lock(tmp_path, "c.ns.db", "b", pid=7, hostname="old-leader-pod", timestamp=now())
    alice = write_lock(
        tmp_path, "c.ns.api", "c", pid=4242, hostname="alice-laptop", username="alice"
    )
    assert locked(store.list_locks("c.ns.web"), rule=LEADER) is True
    assert locked(store.list_locks("c.ns.db"), rule=LEADER) is False
    assert locked(store.list_locks("c.ns.api"), rule=LEADER) is True
    # another host's: not provably stale for a bystander
    assert locked(store.list_locks("c.ns.db"), rule=None) is True

    cleared = clear_stale_locks(store=store, rule=LEADER, cluster_name="c")
    assert [lock.stack for lock in cleared.removed] == ["c.ns.db"]
    assert [lock.stack for lock in cleared.foreign] == ["c.ns.api"]
    assert child.exists()
    assert alice.exists()
    assert not dead.exists()
    assert not dead.with_name("b.json.attrs").exists()  # as `pulumi cancel` leaves it

    fake_pulumi.kill()
    fake_pulumi.wait()
    assert clear_stale_locks(store=store, rule=LEADER, stack_name="c.ns.web").removed
    assert [lock.stack for lock in list_locks(store) or []] == ["c.ns.api"]


def test_a_live_process_of_this_host_keeps_its_lock_from_the_leader(
    tmp_path: Path, fake_pulumi: subprocess.Popen[bytes]
) -> None:
    """A person's `pulumi refresh` beside the controller (the demo's machine): not a child of
    the leader, but alive, so it runs; once it is gone its lock is provably stale."""
    store, host = _store(tmp_path), socket.gethostname()
    person = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        lock = write_lock(tmp_path, "c.ns.web", "a", pid=person.pid, hostname=host, timestamp=now())
        cleared = clear_stale_locks(store=store, rule=LeaderRule(), stack_name="c.ns.web")
        assert (cleared.removed, len(cleared.foreign)) == ([], 1)
        assert lock.exists()
    finally:
        person.kill()
        person.wait()
    cleared = clear_stale_locks(store=store, rule=LeaderRule(), stack_name="c.ns.web")
    assert (len(cleared.removed), cleared.foreign) == (1, [])
    assert not lock.exists()


def test_the_takeover_leaves_other_clusters_alone(tmp_path: Path) -> None:
    store = _store(tmp_path)
    write_lock(tmp_path, "c.ns.web", "a", pid=7, hostname="old-leader-pod", timestamp=now())
    theirs = write_lock(
        tmp_path, "other.ns.web", "b", pid=7, hostname="old-leader-pod", timestamp=now()
    )
    tags = tmp_path / ".pulumi" / "stacks" / PROJECT
    tags.mkdir(parents=True)
    # named like ours, but tagged for another cluster
    write_lock(tmp_path, "c.ns.api", "c", pid=7, hostname="old-leader-pod", timestamp=now())
    (tags / "c.ns.api.pulumi-tags").write_text(
        json.dumps({"version": 1, "tags": {"lbr:cluster": "c_x"}})
    )
    cleared = clear_stale_locks(store=store, rule=LEADER, cluster_name="c")
    assert [lock.stack for lock in cleared.removed] == ["c.ns.web"]
    assert theirs.exists()
    assert len(list_locks(store) or []) == 2


def test_a_bystander_removes_only_a_dead_process_lock_of_this_host(
    tmp_path: Path, fake_pulumi: subprocess.Popen[bytes]
) -> None:
    store, host = _store(tmp_path), socket.gethostname()
    live = write_lock(tmp_path, "c.ns.web", "a", pid=fake_pulumi.pid, hostname=host)
    remote = write_lock(tmp_path, "c.ns.web", "b", pid=fake_pulumi.pid, hostname="pod-b")
    dead_pid = subprocess.Popen(["true"])
    dead_pid.wait()
    dead = write_lock(tmp_path, "c.ns.web", "c", pid=dead_pid.pid, hostname=host)
    removed = clear_stale_locks(store=store, rule=None, stack_name="c.ns.web").removed
    assert [Path(lock.key).name for lock in removed] == ["c.json"]
    assert live.exists()
    assert remote.exists()
    assert not dead.exists()
    assert clear_stale_locks(store=None, rule=LEADER) == Cleared()
    assert list_locks(None) is None  # a backend whose locks cannot be listed


# -- a running operation when the Lease is lost -------------------------------------------------


def test_a_lost_lease_kills_the_running_pulumi_at_once(tmp_path: Path) -> None:
    """No SIGINT and grace (a cancelling `pulumi` may outlast the time before a new leader
    starts): SIGKILL, whatever the child does with SIGINT."""
    exe = tmp_path / "pulumi"
    exe.symlink_to("/bin/sh")
    marker = tmp_path / "got-sigint"
    script = f'trap "touch {marker}" INT; while :; do sleep 0.05; done'
    child = subprocess.Popen([str(exe), "-c", script, "pulumi", "c.ns.web"])
    leading = threading.Event()
    leading.set()
    threading.Timer(0.3, leading.clear).start()
    try:
        with pytest.raises(NotLeaderError, match="no longer holds the Lease"):
            run_with_deadline(
                child.wait,
                stack_name="c.ns.web",
                doing="up",
                timeout=600,
                grace=5,  # a SIGINT first would be seen (the marker) and waited for
                on_error=lambda exc: exc,
                cancel=threading.Event(),
                leading=leading.is_set,
            )
    finally:
        if child.poll() is None:
            os.kill(child.pid, signal.SIGKILL)
        child.wait()
    assert child.returncode == -signal.SIGKILL
    assert not marker.exists()

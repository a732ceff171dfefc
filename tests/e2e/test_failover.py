"""Failover between two controller processes on one shared backend: it never wedges.

Two replicas of ``lb-reconciler run --leader-elect`` share the backend (the hard failover on
each kind: ``file://``, ``postgres://``, ``s3://``; the partition on ``file://``, as the fence
is the Lease's and no backend's) and the emulator. The standby runs under another
hostname (a UTS namespace of its own, as another pod), so the locks the leader's ``pulumi``
children write name a host that the standby is not: what a real failover between pods looks
like, where no process of the old leader can be seen.

* **Hard failover**: the leader's process group (it, its ``pulumi`` children and their plugins)
  is SIGKILLed while several ``up``s are running, each holding its stack's lock. The standby
  takes the Lease, clears the dead leader's locks, and every Service converges with exactly one
  load balancer, within the lease duration and one operation; no lock is left.
* **Partition**: the leader is frozen (SIGSTOP of its process group) until the standby holds
  the Lease and has made progress, then thawed. It must not write: no stack operation is
  started by it after it resumed (its log, and the stacks' history, which names the replica
  behind every update), and it steps down (exit 1).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from datetime import datetime
from typing import Any

import pytest

from reconciler.engine.state.store import open_state_store
from stacks.vocabulary import PROJECT
from tests.backends import Backend
from tests.e2e import test_controller_process as proc
from tests.e2e.controller_process import PASSPHRASE, ControllerProcess, records_after
from tests.e2e.test_controller_process import FAST_LEASE, Cluster, eventually, lease_holder

# test_controller_process's fixtures (a control plane, the emulator, the RBAC, the Nodes, a
# test's cluster), instantiated for this module too
plane, admin_kube, emu, cloud = proc.plane, proc.admin_kube, proc.emu, proc.cloud
sa_kubeconfig, nodes, cluster = proc.sa_kubeconfig, proc.nodes, proc.cluster

pytestmark = pytest.mark.e2e

LEASE_DURATION, RETRY_PERIOD = 10.0, 1.0  # FAST_LEASE's
STANDBY_HOST = "standby-pod"
SERVICES = [f"fo-{i}" for i in range(6)]
# as many workers as Services: after a takeover each Service needs one operation, all at once
ARGS = [*FAST_LEASE, "--workers", str(len(SERVICES))]


def locks(c: Cluster, *, torn: bool = False) -> list[dict[str, Any]]:
    """The locks of the backend's stacks (through the store, on any backend), each as
    {stack, pid, hostname}. An unreadable one is skipped while it may be being written; with
    ``torn`` (once nothing writes: its writer was killed mid-write) it is one too."""
    store = open_state_store(c.setup.backend, env={**os.environ, **c.setup.backend_env})
    assert store is not None
    try:
        return [
            {"stack": lock.stack, "pid": lock.pid, "hostname": lock.hostname}
            for held in store.all_locks().values()
            for lock in held
            if lock.readable or torn
        ]
    finally:
        store.close()


def history(c: Cluster, stack: str) -> list[dict[str, Any]]:
    """``pulumi stack history --json`` of one stack, as a person with the backend URL runs it."""
    env = {**os.environ, **c.toolchain.env()}
    env.update(c.setup.backend_env)
    env["PULUMI_BACKEND_URL"] = c.setup.backend
    env["PULUMI_CONFIG_PASSPHRASE"] = PASSPHRASE
    env["PULUMI_DIY_BACKEND_PARALLEL"] = "1"  # postgres://: docs/operations.md
    qualified = f"organization/{PROJECT}/{stack}"  # no project file needed
    done = subprocess.run(
        [str(c.toolchain.path("pulumi")), "stack", "history", "--json", "--stack", qualified],
        capture_output=True,
        text=True,
        env=env,
        cwd=c.setup.state_dir,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    entries: list[dict[str, Any]] = json.loads(done.stdout or "[]")
    return entries


def stack_of(c: Cluster, name: str) -> str:
    return f"{c.setup.cluster_name}.{c.ns}.{name}"


def converged(c: Cluster, names: list[str]) -> bool:
    return all(c.ingress_ip(n) and len(c.lbs_named(n)) == 1 for n in names)


@pytest.fixture
def replicas(cluster: Cluster) -> tuple[ControllerProcess, ControllerProcess]:
    """A leader under this machine's hostname, then a standby under another one."""
    c = cluster
    leader = c.controller("replica-a", args=ARGS)
    eventually(lambda: lease_holder(c) == leader.identity, what="replica-a leading", timeout=60)
    standby = ControllerProcess(c.setup, identity="replica-b", args=ARGS, hostname=STANDBY_HOST)
    c.replicas.append(standby.start())
    eventually(lambda: standby.http("/readyz")[0] == 200, what="replica-b ready as standby")
    return leader, standby


def test_sigkill_of_the_leader_mid_up_the_standby_converges_every_service(
    cluster: Cluster, replicas: tuple[ControllerProcess, ControllerProcess], backend: Backend
) -> None:
    """On each kind of backend (file, postgres, s3)."""
    c = cluster
    leader, standby = replicas
    # every listener create is held until the faults are cleared: no `up` can finish, so each
    # holds its stack's lock until the kill
    c.cloud.post(
        "/faults/rules", {"operation": "octavia.listener.create", "hold": True, "status": 200}
    )
    for name in SERVICES:
        c.create(name)
    # several `up`s in the middle (held in a listener create): their locks are on the backend.
    # Counted at the cloud, not as locks: a new stack is made under a brief lock of the
    # controller's own, and three of those, gone at the next look, were once taken for ups
    eventually(
        lambda: c.cloud.get("/faults/fired").get("rules[0]", 0) >= 3,
        what="three ups in a listener create",
        timeout=120,
    )
    leader.kill()  # the whole process group and the plugins, as an OOM kill of the pod does
    killed_at = time.monotonic()
    c.cloud.clear_faults()  # the held creates go on, for a client that is gone
    # the leader may have been killed while writing a lock (seen once in a full run: the
    # standby cleared one more lock than were readable here); it is the leader's all the same
    left = locks(c, torn=True)
    assert len(left) >= 3, left
    hosts = {lock["hostname"] for lock in left if lock["hostname"]}
    assert hosts == {socket.gethostname()}  # not the standby's
    print(f"locks left by the killed leader: {[lock['stack'] for lock in left]}")

    eventually(lambda: lease_holder(c) == standby.identity, what="replica-b leading", timeout=60)
    led_at = time.monotonic()
    eventually(lambda: converged(c, SERVICES), what="every Service converged", timeout=300)
    done_at = time.monotonic()
    for name in SERVICES:
        assert len(c.lbs_named(name)) == 1, c.why(name)  # no duplicate, none lost
        assert c.members(name) == {"10.0.0.11", "10.0.0.12"}, c.why(name)
    assert locks(c) == []

    # within the lease duration and one operation: every Service converged at the standby's
    # first sync of it (one `up`, or none when the leader had finished it; the syncs its own
    # status patches bring are skips), none failed or waited on a lock; the locks were cleared
    # at takeover, before the first operation
    def count(name: str, **labels: str) -> float:
        return standby.metric(name, **labels)

    ups = count("lbr_stack_operations_total", kind="up", result="success")
    skips = count("lbr_stack_operations_total", kind="skip", result="success")
    assert count("lbr_reconciles_total", result="retry") == 0, c.why(SERVICES[0])
    assert count("lbr_reconciles_total", result="error") == 0, c.why(SERVICES[0])
    assert count("lbr_stack_operations_total", kind="up", result="error") == 0
    assert ups <= len(SERVICES)  # at most one `up` a Service
    assert count("lbr_stale_locks_cleared_total") == len(left)
    cleared = [r for r in standby.log_records() if str(r.get("msg", "")).startswith("removed")]
    assert sorted(cleared[0]["stacks"]) == sorted(lock["stack"] for lock in left), cleared
    print(
        f"after SIGKILL of the leader: replica-b leading in {led_at - killed_at:.1f}s, every "
        f"Service converged {done_at - led_at:.1f}s later ({done_at - killed_at:.1f}s in all; "
        f"lease duration {LEASE_DURATION:g}s); replica-b ran {ups:g} ups, {skips:g} skips"
    )

    for name in SERVICES:  # deleting works too (it hung on the dead leader's locks)
        c.kube.request(method="DELETE", path=c.svc_path(name))
    for name in SERVICES:
        eventually(lambda n=name: c.gone(n), what=f"{name} deleted", timeout=300)  # type: ignore[misc]
    assert c.cloud.created() == {}


def parse_time(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


def test_a_frozen_leader_that_resumes_does_not_write_and_steps_down(
    cluster: Cluster, replicas: tuple[ControllerProcess, ControllerProcess]
) -> None:
    c = cluster
    leader, standby = replicas
    c.create("pa-one")
    eventually(lambda: converged(c, ["pa-one"]), what="pa-one converged by replica-a")
    assert leader.proc is not None
    ups_before = leader.metric("lbr_stack_operations_total", kind="up", result="success")
    assert ups_before >= 1

    os.killpg(leader.proc.pid, signal.SIGSTOP)  # frozen: a paused VM, a partitioned node
    frozen_at = time.time()
    offset = leader.log_path.stat().st_size  # a frozen process writes nothing
    try:
        # work for whoever leads: an edit (a second port) and a new Service
        ports = [
            {"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"},
            {"name": "https", "port": 443, "targetPort": 8443, "protocol": "TCP"},
        ]
        c.kube.patch(c.svc_path("pa-one"), {"spec": {"ports": ports}})
        c.create("pa-two")
        eventually(
            lambda: lease_holder(c) == standby.identity, what="replica-b leading", timeout=60
        )
        lb_one = c.lbs_named("pa-one")[0]["id"]
        eventually(lambda: len(c.listeners_of(lb_one)) == 2, what="pa-one's edit applied")
        eventually(lambda: converged(c, ["pa-two"]), what="pa-two converged by replica-b")
    finally:
        os.killpg(leader.proc.pid, signal.SIGCONT)
    thawed_at = time.time()

    code = leader.proc.wait(timeout=60)  # it steps down: leadership lost, exit 1
    assert code == 1, leader.log_tail()
    after = records_after(leader.log_path, offset)
    messages = [str(r.get("msg")) for r in after]
    assert "lost leadership" in messages, messages
    started = [r for r in after if r.get("msg") == "stack operation started"]
    assert started == [], started  # no operation started by the deposed leader
    refused = [r for r in after if "not the leader" in str(r.get("msg", ""))]
    print(f"replica-a after it resumed: {len(after)} log records, {len(refused)} syncs refused")
    for record in after:
        print("   ", {k: record[k] for k in ("msg", "service", "reason") if k in record})

    # the stacks' history names the replica behind every update: none of replica-a's after
    # it froze, and what happened since is replica-b's
    for name in ("pa-one", "pa-two"):
        entries = history(c, stack_of(c, name))
        print(f"history of {name}:")
        for entry in entries:
            print(f"    {entry.get('startTime')} {entry.get('kind')} {entry.get('message')!r}")
        for entry in entries:
            if leader.identity in str(entry.get("message")):
                assert parse_time(str(entry["endTime"])) <= frozen_at, entry
        assert all(
            standby.identity in str(e.get("message"))
            for e in entries
            if parse_time(str(e["startTime"])) >= frozen_at
        ), entries
    assert any(leader.identity in str(e.get("message")) for e in history(c, stack_of(c, "pa-one")))
    assert len(c.lbs_named("pa-one")) == len(c.lbs_named("pa-two")) == 1
    assert locks(c) == []
    print(f"replica-a frozen {thawed_at - frozen_at:.1f}s; exited {code} after it resumed")

    for name in ("pa-one", "pa-two"):
        c.kube.request(method="DELETE", path=c.svc_path(name))
    for name in ("pa-one", "pa-two"):
        eventually(lambda n=name: c.gone(n), what=f"{name} deleted", timeout=300)  # type: ignore[misc]
    assert c.cloud.created() == {}

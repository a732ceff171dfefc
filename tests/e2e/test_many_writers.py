"""Many writers on one backend, as a team has them: a person's ``pulumi`` beside a live
controller (``lb-reconciler run`` as a process, the real engine, the emulator).

* **A person's lock**: a lock record of another host (``alice@alice-laptop``, the record
  Pulumi writes) holds a live Service's stack while the Service changes. The controller never
  removes it: after 40 s it is still there, the load balancer unchanged, and the Service has a
  Warning ``StackLocked`` naming the holder and the ``pulumi cancel`` that frees a dead one.
  Once the person runs that command, the change reaches the same load balancer.
* **A person's refresh during a Node change**: ``pulumi refresh`` of a stack holds its lock
  (frozen with SIGSTOP right after it wrote it) while a Node joins, which the controller makes
  without ``pulumi`` (the direct members path). No member is lost; once the refresh goes on and
  ends, state and cloud agree.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from stacks.vocabulary import PROJECT
from tests.backends import Backend
from tests.e2e import test_controller_process as proc
from tests.e2e.controller_process import PASSPHRASE
from tests.e2e.test_controller_process import FAST_LEASE, Cluster, eventually, put_node

# test_controller_process's fixtures (a control plane, the emulator, the RBAC, the Nodes, a
# test's cluster), instantiated for this module too
plane, admin_kube, emu, cloud = proc.plane, proc.admin_kube, proc.emu, proc.cloud
sa_kubeconfig, nodes, cluster = proc.sa_kubeconfig, proc.nodes, proc.cluster

pytestmark = pytest.mark.e2e

ALICE = {"pid": 4242, "username": "alice", "hostname": "alice-laptop"}
HELD_FOR = 40.0  # how long the user's report took the controller to take the lock


def stack_of(c: Cluster, name: str) -> str:
    return f"{c.setup.cluster_name}.{c.ns}.{name}"


def person_env(c: Cluster) -> dict[str, str]:
    """What a person's ``pulumi`` has: the backend URL (with its password), the passphrase,
    and for a command that starts the provider the cloud's password (the stacks hold none:
    docs/engine.md, "No OpenStack credential in the stacks")."""
    return {
        **os.environ,
        **c.toolchain.env(),
        **c.setup.backend_env,
        "OS_PASSWORD": c.cloud.get("/topology")["password"],
        "PULUMI_BACKEND_URL": c.setup.backend,
        "PULUMI_CONFIG_PASSPHRASE": PASSPHRASE,
        "PULUMI_DIY_BACKEND_PARALLEL": "1",
        "PULUMI_SKIP_UPDATE_CHECK": "true",
    }


def unlocked(c: Cluster, refresh: subprocess.Popen[bytes], mark: int) -> str:
    """What a person's refresh that took no lock printed, and what the cloud was asked meanwhile
    (whose read the held fault caught)."""
    if refresh.poll() is None:
        os.killpg(refresh.pid, signal.SIGKILL)
    out = refresh.communicate(timeout=30)[0].decode(errors="replace")
    fired = c.cloud.get("/faults/fired")
    asked = [
        (r["method"], r["path"], r["status"])
        for r in c.cloud.get(f"/requests?since={mark}")["requests"]
    ]
    return f"exit {refresh.returncode}; output: {out[-3000:]}; fired: {fired}; asked: {asked[-40:]}"


def person_folder(c: Cluster) -> Path:
    folder = c.setup.state_dir.parent / "person"
    folder.mkdir(exist_ok=True)
    (folder / "Pulumi.yaml").write_text(f"name: {PROJECT}\nruntime: yaml\n")
    return folder


def person_pulumi(c: Cluster, *args: str) -> str:
    """What a person's ``pulumi <args>`` prints (it must succeed)."""
    done = subprocess.run(
        [str(c.toolchain.path("pulumi")), "--non-interactive", *args],
        cwd=person_folder(c),
        env=person_env(c),
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def locked_warnings(c: Cluster, name: str) -> list[dict[str, Any]]:
    return [e for e in c.events(name) if e.get("reason") == "StackLocked"]


@pytest.mark.parametrize("backend", ["file", "postgres"], indirect=True)
def test_a_person_s_lock_is_never_taken_and_the_service_says_whose_it_is(
    cluster: Cluster, backend: Backend
) -> None:
    c = cluster
    controller = c.controller(args=FAST_LEASE)
    c.create("held")
    eventually(lambda: c.ingress_ip("held"), what="an EXTERNAL-IP")
    (lb,) = c.lbs_named("held")
    stack = stack_of(c, "held")

    store = backend.store()
    key = f"{store.locks_prefix(stack)}{uuid.uuid4()}.json"
    record = {**ALICE, "timestamp": datetime.now(UTC).isoformat()}
    store.bucket.write(key, json.dumps(record).encode())  # alice's `pulumi` on her laptop
    ports = [
        {"name": "main", "port": 80, "targetPort": 8080, "protocol": "TCP"},
        {"name": "alt", "port": 8443, "targetPort": 8080, "protocol": "TCP"},
    ]
    c.kube.patch(c.svc_path("held"), {"spec": {"ports": ports}})
    edited = time.monotonic()

    first = eventually(lambda: locked_warnings(c, "held"), what="a Warning StackLocked")
    message = first[0]["message"]
    assert first[0]["type"] == "Warning"
    assert "alice@alice-laptop (pid 4242) since " in message, message
    fqn = f"organization/{PROJECT}/{stack}"
    assert f"pulumi cancel --stack {fqn} --yes" in message, message
    assert "****" in message or backend.kind == "file", message  # never the password
    assert controller.metric("lbr_stacks_held_by_others") == 1

    while time.monotonic() - edited < HELD_FOR:  # the report: taken within 40 s
        assert store.bucket.read(key) is not None, "the person's lock was removed"
        assert len(c.listeners_of(lb["id"])) == 1, "the change was applied under the lock"
        time.sleep(1.0)
    assert len(locked_warnings(c, "held")) >= 3  # retried, with backoff, each time said
    assert store.bucket.read(key) is not None

    # the person's command is gone: they free the stack with the command the Warning names
    person_pulumi(c, "cancel", "--stack", fqn, "--yes")
    assert store.list_locks(stack) == []
    eventually(lambda: len(c.listeners_of(lb["id"])) == 2, what="the second listener", timeout=240)
    assert [x["id"] for x in c.lbs_named("held")] == [lb["id"]]  # the same load balancer
    eventually(lambda: controller.metric("lbr_stacks_held_by_others") == 0, what="gauge at 0")
    store.close()
    c.kube.request(method="DELETE", path=c.svc_path("held"))
    eventually(lambda: c.gone("held"), what="deleted", timeout=240)


@pytest.mark.parametrize("backend", ["file", "postgres"], indirect=True)
def test_a_person_s_refresh_during_a_node_change_loses_no_member(
    cluster: Cluster, backend: Backend
) -> None:
    """The direct members path and a person's ``pulumi refresh`` at the same moment, on each
    kind of backend: the refresh holds the stack's lock (frozen right after writing it) while
    a Node joins; the controller leaves the lock alone (a live process of this host that is not
    its own), says so, and makes the change once the refresh is done."""
    c = cluster
    controller = c.controller(args=FAST_LEASE)
    c.create("refreshed")
    eventually(lambda: c.ingress_ip("refreshed"), what="an EXTERNAL-IP")
    assert c.members("refreshed") == {"10.0.0.11", "10.0.0.12"}
    stack = stack_of(c, "refreshed")
    store = backend.store()

    # the refresh's read of the load balancer is held until the faults are cleared: its lock is
    # on the stack until then, to be seen and the refresh frozen with it (no test reads the
    # cloud meanwhile)
    mark = c.cloud.get(f"/requests?since={2**62}")["next"]  # only the number: no entries
    c.cloud.post(
        "/faults/rules",
        {"operation": "octavia.loadbalancer.show", "hold": True, "status": 200, "count": 1},
    )
    refresh = subprocess.Popen(
        [
            str(c.toolchain.path("pulumi")),
            "--non-interactive",
            "refresh",
            "--yes",
            "--skip-preview",
            "--stack",
            f"organization/{PROJECT}/{stack}",
        ],
        cwd=person_folder(c),
        env=person_env(c),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        try:
            eventually(
                lambda: store.list_locks(stack) or refresh.poll() is not None,
                what="the refresh's lock",
                timeout=60,
            )
            assert refresh.poll() is None, "the refresh ended before its lock was seen"
            os.killpg(refresh.pid, signal.SIGSTOP)  # held there: its lock on the stack
        except AssertionError as exc:  # no lock seen (the hold did not fire once): say why
            raise AssertionError(f"{exc}: {unlocked(c, refresh, mark)}") from None
        locks = store.list_locks(stack)
        assert [lock.pid for lock in locks] == [refresh.pid]
        put_node(c.kube, "worker-r", "10.0.0.21")  # the Node change
        warned = eventually(lambda: locked_warnings(c, "refreshed"), what="StackLocked")
        assert f"(pid {refresh.pid})" in warned[0]["message"]
        assert c.members("refreshed") == {"10.0.0.11", "10.0.0.12"}  # not under its lock
        assert store.list_locks(stack) == locks
    finally:
        c.cloud.clear_faults()  # the held read is answered; the refresh reads it once thawed
        os.killpg(refresh.pid, signal.SIGCONT)
    out, _ = refresh.communicate(timeout=180)
    assert refresh.returncode == 0, out
    eventually(
        lambda: c.members("refreshed") == {"10.0.0.11", "10.0.0.12", "10.0.0.21"},
        what="the new Node's member",
        timeout=240,
    )
    eventually(lambda: controller.metric("lbr_stacks_held_by_others") == 0, what="gauge at 0")
    # state and cloud agree: the state's members are the cloud's, nothing pending
    deployment = store.deployment(stack) or {}
    assert not deployment.get("pending_operations")
    (members,) = [r for r in deployment["resources"] if r["type"].endswith("Members")]
    in_state = {m["address"] for m in members["outputs"]["members"]}
    assert in_state == c.members("refreshed")
    history = person_pulumi(
        c, "stack", "history", "--json", "--stack", f"organization/{PROJECT}/{stack}"
    )
    kinds = [e["kind"] for e in json.loads(history)]
    assert "refresh" in kinds  # the person's refresh is part of the record, not rolled back
    store.close()
    c.kube.request(method="DELETE", path="/api/v1/nodes/worker-r")
    c.kube.request(method="DELETE", path=c.svc_path("refreshed"))
    eventually(lambda: c.gone("refreshed"), what="deleted", timeout=240)
    assert re.search(r"StackLocked", json.dumps(controller.log_records()))

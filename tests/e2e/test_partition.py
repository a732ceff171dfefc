"""The leader cut off from the kube-apiserver, not from OpenStack or the backend, on a real
PostgreSQL, during a burst of creates: every Service ends with one load balancer, and no backend
write of the old leader lands after its Lease passed to the standby.

The leader (``replica-a``, this machine's hostname) reaches the kube-apiserver through a relay
the test can cut (:class:`Relay`: while cut, nothing crosses it either way, connections stay
open, as behind a dropped link); the standby (``replica-b``, another hostname, as another pod)
reaches it directly. Both log every backend write with the Lease's term (``backend write``,
``epoch``, at debug level). Cut in the middle of the creates: the leader's renewals fail, it
stops writing at its renew deadline (its fence), the standby takes the Lease a lease duration
after it last saw a renewal, removes the old leader's locks (a replica's: recorded in the Lease)
and converges every Service. The assertion is on the logs: every write of the old leader's term
ended before the standby's term began.
"""

from __future__ import annotations

import contextlib
import select
import socket
import threading
import time
from datetime import datetime
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml

from tests.backends import Backend
from tests.e2e import test_controller_process as proc
from tests.e2e.controller_process import ControllerProcess
from tests.e2e.test_controller_process import FAST_LEASE, Cluster, eventually, lease_holder

plane, admin_kube, emu, cloud = proc.plane, proc.admin_kube, proc.emu, proc.cloud
sa_kubeconfig, nodes, cluster = proc.sa_kubeconfig, proc.nodes, proc.cluster

pytestmark = pytest.mark.e2e

SERVICES = [f"pt-{i}" for i in range(6)]
ARGS = [*FAST_LEASE, "--workers", str(len(SERVICES)), "--log-level", "debug"]


class Relay:
    """TCP from a loopback port to ``target``; :meth:`cut` stops every byte both ways (and new
    connections get no answer), :meth:`close` ends it."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.cut_off = threading.Event()
        self.closed = threading.Event()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def cut(self) -> None:
        self.cut_off.set()

    def close(self) -> None:
        self.closed.set()
        self.listener.close()

    def _accept(self) -> None:
        while not self.closed.is_set():
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            threading.Thread(target=self._pump, args=(client, upstream), daemon=True).start()

    def _pump(self, a: socket.socket, b: socket.socket) -> None:
        with a, b:
            while not self.closed.is_set():
                if self.cut_off.is_set():  # a dropped link: nothing read, nothing sent
                    time.sleep(0.1)
                    continue
                ready, _, _ = select.select([a, b], [], [], 0.1)
                for src in ready:
                    dst = b if src is a else a
                    try:
                        data = src.recv(65536)
                    except OSError:
                        return
                    if not data:
                        return
                    with contextlib.suppress(OSError):
                        dst.sendall(data)


def through(kubeconfig: Path, relay: Relay, out: Path) -> Path:
    """``kubeconfig`` with its server reached through ``relay`` (the same certificate: it names
    127.0.0.1)."""
    config = yaml.safe_load(kubeconfig.read_text())
    for entry in config["clusters"]:
        server = urlsplit(entry["cluster"]["server"])
        entry["cluster"]["server"] = f"{server.scheme}://127.0.0.1:{relay.port}"
    out.write_text(yaml.safe_dump(config))
    out.chmod(0o600)
    return out


def writes(replica: ControllerProcess) -> list[tuple[float, int, str]]:
    """(time, term, what) of each backend write the replica logged."""
    return [
        (datetime.fromisoformat(r["ts"].replace("Z", "+00:00")).timestamp(), r["epoch"], r["write"])
        for r in replica.log_records()
        if r.get("msg") == "backend write"
    ]


def became_leader_at(replica: ControllerProcess) -> float:
    (record,) = [r for r in replica.log_records() if r.get("msg") == "became leader"]
    return datetime.fromisoformat(record["ts"].replace("Z", "+00:00")).timestamp()


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
def test_a_leader_cut_off_from_the_api_server_writes_nothing_after_its_lease(
    cluster: Cluster, backend: Backend, tmp_path: Path
) -> None:
    c = cluster
    server = urlsplit(c.plane.server)
    relay = Relay((server.hostname or "127.0.0.1", server.port or 443))
    try:
        cut_kubeconfig = through(c.setup.kubeconfig, relay, tmp_path / "cut-kubeconfig")
        leader = ControllerProcess(
            c.setup, identity="replica-a", args=[*ARGS, "--kubeconfig", str(cut_kubeconfig)]
        )
        c.replicas.append(leader.start())
        eventually(lambda: lease_holder(c) == "replica-a", what="replica-a leading", timeout=60)
        standby = ControllerProcess(c.setup, identity="replica-b", args=ARGS, hostname="pt-b")
        c.replicas.append(standby.start())
        eventually(lambda: standby.http("/readyz")[0] == 200, what="replica-b ready as standby")

        # a burst of creates whose listeners take a while: ups in flight when the link goes
        c.cloud.post(
            "/faults/rules",
            {"operation": "octavia.listener.create", "latency": 3.0, "status": 200, "count": 4},
        )
        for name in SERVICES:
            c.create(name)
        store = backend.store()
        eventually(lambda: len(store.all_locks()) >= 2, what="ups holding locks", timeout=120)
        relay.cut()
        cut_at = time.time()

        eventually(lambda: lease_holder(c) == "replica-b", what="replica-b leading", timeout=90)
        eventually(
            lambda: all(c.ingress_ip(n) and len(c.lbs_named(n)) == 1 for n in SERVICES),
            what="every Service converged",
            timeout=300,
        )
        for name in SERVICES:
            assert len(c.lbs_named(name)) == 1, c.why(name)  # none duplicated, none lost
        assert store.all_locks() == {}

        # the old leader steps down on its own (leadership lost: exit 1)
        assert leader.proc is not None
        assert leader.proc.wait(timeout=60) == 1, leader.log_tail()
        taken_at = became_leader_at(standby)
        old = writes(leader)
        new = writes(standby)
        assert old, "the old leader logged no backend write"
        assert new, "the new leader logged no backend write"
        old_terms = {term for _t, term, _w in old}
        new_terms = {term for _t, term, _w in new}
        assert max(old_terms) < min(new_terms), (old_terms, new_terms)
        late = [(t - taken_at, w) for t, _term, w in old if t >= taken_at]
        assert late == [], late  # nothing of the old term landed after the new one began
        print(
            f"cut at +0; replica-b leading at +{taken_at - cut_at:.1f}s; replica-a's last "
            f"backend write at +{max(t for t, _, _ in old) - cut_at:.1f}s "
            f"({len(old)} writes in term(s) {sorted(old_terms)}; replica-b {len(new)} in "
            f"{sorted(new_terms)})"
        )
        store.close()
    finally:
        relay.close()
    for name in SERVICES:
        c.kube.request(method="DELETE", path=c.svc_path(name))
    for name in SERVICES:
        eventually(lambda n=name: c.gone(n), what=f"{name} deleted", timeout=300)  # type: ignore[misc]
    assert c.cloud.created() == {}

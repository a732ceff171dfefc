"""The controller's restart on each kind of backend: file://, postgres:// and s3://.

After a restart the housekeeper lists the cluster's stacks and the controller syncs every
Service once. Neither may cost a `pulumi` start per stack: the listing is one `pulumi stack ls`
(tags and locks through reconciler.engine.state.store), and an unchanged Service runs no `pulumi`
at all (its tags say the spec is applied). A stale lock a killed process left on the shared
backend is seen as such by the listing and removed by the next operation.
"""

from __future__ import annotations

import json
import socket

import pytest

from reconciler.engine.state.store import LockRecord
from tests.builders import stored_service
from tests.integration.engine.conftest import Env, spec_for

# each test starts real pulumi runs or servers for many seconds: not in make test-fast
pytestmark = pytest.mark.slow


def test_a_restarted_engine_lists_and_skips_without_a_pulumi_per_stack(
    backend_env: Env, starts: list[str]
) -> None:
    env = backend_env
    assert env.backend is not None
    config = env.config()
    spec = spec_for(stored_service(f"restart-{env.backend.kind}"), config)
    first = env.engine(config)
    ensured = first.stack(service=spec.service).ensure(spec)
    assert ensured.changed
    first.close()

    restarted = env.engine(config)  # a new process: nothing remembered
    try:
        starts.clear()
        (info,) = restarted.stacks()
        assert starts == []  # the store's listing: no `stack ls`, no `stack tag ls` per stack
        assert (info.namespace, info.name) == (spec.service.namespace, spec.service.name)
        assert info.lb_id == ensured.outputs["lb_id"]
        assert info.external_ip == ensured.outputs["floating_ip"]
        assert info.spec_hash == ensured.spec_hash
        assert info.locked is False

        starts.clear()
        again = restarted.stack(service=spec.service).ensure(spec)
        assert starts == []  # no pulumi at all: 0 stack operations
        assert not again.changed
        assert again.outputs["lb_id"] == ensured.outputs["lb_id"]

        # a lock a dead process of this host left: not "locked" (the next operation clears it)
        store = restarted.store
        assert store is not None
        key = f"{store.locks_prefix(info.stack)}dead-leader.json"
        owner = {"pid": 2**22 - 3, "username": "x", "hostname": socket.gethostname()}
        owner["timestamp"] = "2026-01-02T03:04:05.123456789Z"
        store.bucket.write(key, json.dumps(owner).encode())
        (stale,) = store.list_locks(info.stack)
        assert isinstance(stale, LockRecord)
        assert stale.pid == 2**22 - 3
        (listed,) = restarted.stacks()
        assert listed.locked is False
        remote = f"{store.locks_prefix(info.stack)}other-host.json"
        store.bucket.write(remote, json.dumps({**owner, "hostname": "elsewhere"}).encode())
        (listed,) = restarted.stacks()
        assert listed.locked is True  # another host's: not provably stale
        store.delete_lock(remote)
    finally:
        assert restarted.stack(service=spec.service).delete().existed
    assert restarted.store is not None
    assert restarted.store.list_locks(info.stack) == []  # the stale one went before the delete
    assert restarted.stacks() == []
    restarted.close()

"""The engine keeps each stack's history bounded, and a deleted Service leaves nothing behind.

On every kind of backend: after each operation the stack keeps its newest ``keep_history``
history entries and checkpoint backups (``--keep-history``); the delete of a Service removes
what ``pulumi stack rm`` leaves in the backend (backups, the checkpoint's ``.bak``) and the
stack's work folder here. (The bound over 1,000 operations: tests/integration/backends/
test_bounded_state.py.)
"""

from __future__ import annotations

import pytest

from tests.builders import stored_service
from tests.integration.engine.conftest import Env, spec_for

# each test starts real pulumi runs or servers for many seconds: not in make test-fast
pytestmark = pytest.mark.slow


def test_history_is_pruned_and_a_delete_leaves_nothing(backend_env: Env) -> None:
    env = backend_env
    assert env.backend is not None
    config = env.config()
    spec = spec_for(stored_service(f"bounded-{env.backend.kind}"), config)
    engine = env.engine(config, keep_history=2)
    stack = engine.stack(service=spec.service)
    store = engine.store
    assert store is not None
    try:
        stack.ensure(spec)
        for _ in range(3):
            stack.refresh()
        history = store.objects(store.history_prefix(stack.name))
        assert sum(o.key.endswith(".history.json") for o in history) == 2
        assert len(store.objects(store.backups_prefix(stack.name))) <= 2
        assert stack.work_dir.exists()
    finally:
        assert stack.delete().existed
    assert store.objects_of(stack.name) == []
    assert store.objects(f"{store.stacks_prefix()}{stack.name}") == []
    assert not stack.work_dir.exists()
    engine.close()

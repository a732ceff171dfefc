"""`lb-reconciler stacks` against real stacks on a file:// backend (real engine, emulator).

One Service is brought up, one stack is left without a finished ``up`` (pending), then the first
is changed behind the stack's back and refreshed (drift). The command's text and JSON show each
with its load balancer, external IP, last operation and flags, and the plain ``pulumi`` commands
the README gives find the same stack on the same backend.
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest

from reconciler.cli.main import main
from reconciler.engine import listing
from reconciler.engine.errors import InterruptedOperationError
from reconciler.engine.stack import Engine
from tests.builders import stored_service
from tests.emulated import connect
from tests.integration.engine.conftest import CLUSTER, Env, spec_for

# each test starts real pulumi runs or servers for many seconds: not in make test-fast
pytestmark = pytest.mark.slow


def stacks(env: Env, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str, str]:
    code = main(["stacks", "--state-dir", str(env.state_dir), "--cluster-name", CLUSTER, *extra])
    out, err = capsys.readouterr()
    return code, out, err


def test_stacks_shows_lb_ip_last_operation_and_flags(
    env: Env,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    starts: list[str],
) -> None:
    monkeypatch.delenv("PULUMI_CONFIG_PASSPHRASE", raising=False)  # not needed to list
    monkeypatch.delenv("PULUMI_BACKEND_URL", raising=False)
    code, out, _ = stacks(env, capsys)
    assert (code, out) == (
        0,
        f"no stacks of cluster {CLUSTER} on {env.state_dir.as_uri()}/backend\n",
    )

    config = env.config()
    engine = env.engine(config)
    web, idle = stored_service("web"), stored_service("idle")
    web_stack = engine.stack(service=spec_for(web, config).service)
    stopping = Engine(settings=engine.settings)
    stopping.cancel()
    try:
        ensured = web_stack.ensure(spec_for(web, config))
        with pytest.raises(InterruptedOperationError):
            stopping.stack(service=spec_for(idle, config).service).ensure(spec_for(idle, config))
        fip, lb_id = ensured.outputs["floating_ip"], ensured.outputs["lb_id"]

        starts.clear()
        code, out, _ = stacks(env, capsys, "--output", "json")
        assert code == 0
        # the stacks, their tags and checkpoints and each one's newest history record, read from
        # the backend by the store: no `pulumi stack ls`, no `pulumi stack history` per stack
        assert starts == []
        rows = {r["service"]: r for r in json.loads(out)}
        assert set(rows) == {"default/web", "default/idle"}
        assert rows["default/web"]["lbId"] == lb_id
        assert rows["default/web"]["externalIP"] == fip
        assert (rows["default/web"]["lastOperation"], rows["default/web"]["lastResult"]) == (
            "update",
            "succeeded",
        )
        assert rows["default/web"]["flags"] == []
        assert rows["default/web"]["resources"] > 0
        assert rows["default/idle"]["flags"] == ["pending"]
        assert rows["default/idle"]["lbId"] is None
        assert rows["default/idle"]["lastOperation"] is None

        conn = connect(env.topo)
        (listener,) = conn.load_balancer.listeners(loadbalancer_id=lb_id)
        conn.load_balancer.update_listener(listener.id, connection_limit=7)
        changes = web_stack.refresh()
        assert changes.get("update") == 1, changes

        # one Service's operations, newest first, from the backend's history
        starts.clear()
        code, out, _ = stacks(env, capsys, "--history", "default/web")
        assert (code, starts) == (0, [])
        lines = out.splitlines()
        assert lines[0] == f"default/web (stack {web_stack.name}), newest first:"
        assert lines[1].split()[:3] == ["#", "OPERATION", "RESULT"]
        assert lines[2].split()[1:3] == ["refresh", "succeeded"]
        assert "1 update" in lines[2]
        assert lines[-1].split()[1:3] == ["update", "succeeded"]  # the first up
        assert "create" in lines[-1]
        assert "auto.inline" in lines[-1]  # the engine's Automation API, not a person's CLI
        code, out, _ = stacks(env, capsys, "--history", "default/web", "--limit", "1", "-o", "json")
        doc = json.loads(out)
        assert [(o["operation"], o["changes"].get("update")) for o in doc["operations"]] == [
            ("refresh", 1)
        ]
        assert doc["operations"][0]["seconds"] >= 0
        code, _, err = stacks(env, capsys, "--history", "default/nothing")
        assert code == 1
        assert f"no history of stack {CLUSTER}.default.nothing" in err

        code, out, _ = stacks(env, capsys, "--namespace", "default")
        assert code == 0
        # a newest history record the store does not read: that stack's from the CLI, the same
        # (the pending stack has none: nothing to ask)
        as_read = stacks(env, capsys, "--output", "json")
        with monkeypatch.context() as m:
            m.setattr(listing, "last_update", lambda _store, _stack: None)
            starts.clear()
            assert stacks(env, capsys, "--output", "json")[:2] == as_read[:2]
            assert starts == ["stack history"]
        lines = out.splitlines()
        assert lines[0].split() == [
            "SERVICE", "LB", "ID", "EXTERNAL-IP", "LAST", "UPDATE", "RESULT", "FLAGS", "STACK"
        ]  # fmt: skip
        web_line = next(line for line in lines if line.startswith("default/web "))
        assert lb_id in web_line
        assert fip in web_line
        assert "refresh succeeded" in web_line
        assert " drift " in web_line
        assert "\033[" not in out  # not a terminal: no colour
        idle_line = next(line for line in lines if line.startswith("default/idle "))
        assert " pending " in idle_line
        assert "<none>" in idle_line
        (env.state_dir / "stacks.txt").write_text(out)  # for a look at a failed run

        code, out, _ = stacks(env, capsys, "--namespace", "elsewhere")
        assert (code, out.startswith("no stacks")) == (0, True)

        # the README's plain-CLI equivalents, on the same backend
        pulumi_env: dict[str, Any] = {**engine.env(), "PULUMI_CONFIG_PASSPHRASE": ""}
        listed = subprocess.run(
            ["pulumi", "stack", "ls", "--all", "--json", "--tag", f"lbr:external-ip={fip}"],
            capture_output=True,
            text=True,
            env=pulumi_env,
            cwd=env.state_dir,
            check=True,
        )
        assert [s["name"].rsplit("/", 1)[-1] for s in json.loads(listed.stdout)] == [web_stack.name]
    finally:
        web_stack.delete()
        engine.stack(service=spec_for(idle, config).service).delete()

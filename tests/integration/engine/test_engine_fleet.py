"""The fleet comparison (:mod:`reconciler.engine.fleet`) with real stacks against the emulator:
every stack's checkpoint against the project's objects, listed once, and no ``pulumi`` started.

What it finds different is what ``pulumi refresh --preview-only`` finds (a listener changed and a
member removed by hand); after the repair (``refresh`` and the ``up`` that follows, which writes
what the provider reads back into the checkpoint) the stacks compare the same again; a stack with
a managed security group is *uncovered*, left to its own check.
"""

from __future__ import annotations

import pytest

from reconciler.engine.fleet import compare_fleet
from stacks.vocabulary import PORT_SG_TYPE, SECURITY_GROUP_RULE_TYPE, SECURITY_GROUP_TYPE
from tests.builders import stored_service
from tests.emulated import connect
from tests.integration.engine.conftest import Env, spec_for
from tests.integration.engine.test_engine_drift import settled

# each test starts real pulumi runs for many seconds: not in make test-fast
pytestmark = pytest.mark.slow


def test_the_fleet_comparison_finds_what_a_refresh_finds_without_pulumi(
    env: Env, starts: list[str]
) -> None:
    config = env.config()
    engine = env.engine(config)
    specs = [spec_for(stored_service(name), config) for name in ("fleet-a", "fleet-b", "fleet-c")]
    stacks = [engine.stack(service=spec.service) for spec in specs]
    made = [ss.ensure(spec) for ss, spec in zip(stacks, specs, strict=True)]
    names = [ss.name for ss in stacks]
    try:
        started = len(starts)
        report = compare_fleet(engine, names)
        assert report is not None
        assert {n: v.differs for n, v in report.verdicts.items()} == dict.fromkeys(names, ())
        assert all(v.same for v in report.verdicts.values())
        assert report.pools == 3  # one member listing per pool
        assert starts[started:] == []  # no pulumi process
        fingerprints = {n: v.fingerprint for n, v in report.verdicts.items()}

        conn = connect(env.topo)
        a, b = made[0].lb_id, made[1].lb_id
        (listener,) = [
            li for li in conn.load_balancer.listeners() if li.load_balancers == [{"id": a}]
        ]
        conn.load_balancer.update_listener(listener.id, connection_limit=7)  # by hand
        settled(conn, a)
        (pool,) = conn.load_balancer.pools(loadbalancer_id=b)
        gone = min(conn.load_balancer.members(pool.id), key=lambda m: m.address)
        conn.load_balancer.delete_member(gone.id, pool.id)
        settled(conn, b)

        report = compare_fleet(engine, names)
        assert report is not None
        verdicts = report.verdicts
        assert verdicts[names[0]].differs == (
            f"listener {listener.id}: connection_limit is 7 in the cloud, -1 in the stack",
        )
        assert verdicts[names[1]].differs == (
            f"member {gone.id} of pool {pool.id} is gone from the cloud",
        )
        assert verdicts[names[2]].same
        assert verdicts[names[2]].fingerprint == fingerprints[names[2]]
        assert verdicts[names[0]].fingerprint != fingerprints[names[0]]
        # what pulumi finds: the same two stacks differ, the third does not
        assert [ss.check_drift().drifted for ss in stacks] == [True, True, False]

        for ss, spec in zip(stacks[:2], specs[:2], strict=True):  # --drift=repair
            ss.refresh()
            assert ss.ensure(spec).changed
        report = compare_fleet(engine, names)
        assert report is not None
        assert {n: v.differs for n, v in report.verdicts.items()} == dict.fromkeys(names, ())
    finally:
        for ss in stacks:
            ss.delete()


def test_a_stack_with_a_managed_security_group_is_left_to_its_own_check(env: Env) -> None:
    config = env.config(load_balancer="manage-security-groups = true\n")
    spec = spec_for(stored_service("fleet-sg"), config)
    engine = env.engine(config)
    ss = engine.stack(service=spec.service)
    ss.ensure(spec)
    try:
        report = compare_fleet(engine, [ss.name, "no-such-stack"])
        assert report is not None
        verdict = report.verdicts[ss.name]
        assert verdict.differs == ()
        assert set(verdict.uncovered) <= {
            SECURITY_GROUP_TYPE,
            SECURITY_GROUP_RULE_TYPE,
            PORT_SG_TYPE,
        }
        assert SECURITY_GROUP_TYPE in verdict.uncovered
        assert not verdict.same
        assert report.unread == ("no-such-stack",)
    finally:
        ss.delete()

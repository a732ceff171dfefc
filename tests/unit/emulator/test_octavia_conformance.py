"""Differences Octavia's own API suite found (``make conformance``), held against Octavia 19.

Each test reproduces one difference the conformance tier measured (docs/conformance.md), with
the rule read from Octavia 19.0.0's source:

* ``updated_at``: Octavia's models take oslo.db's ``TimestampMixin`` (``updated_at`` with
  ``onupdate=utcnow``), so every row update sets it: the API marking a parent ``PENDING_UPDATE``,
  the worker's ``Mark*ActiveInDB`` tasks, the health manager's operating status changes. A
  create answers ``updated_at: null``; once the worker is done it is the time it finished.
* an option the provider cannot do: the driver raises octavia-lib's ``UnsupportedOptionError``
  (``api/drivers/amphora_driver/v2/driver.py``, ``ovn_octavia_provider/driver.py``),
  ``api/drivers/utils.py`` ``call_provider`` turns it into ``ProviderUnsupportedOptionError``:
  501, ``Provider '<name>' does not support a requested option: <driver's message>``, raised
  after every other check of the request, and the transaction is rolled back: nothing changes.
* a pool no listener uses: created ``OFFLINE`` (``db/prepare.py`` ``create_pool``), and only the
  health manager (``amphorae/drivers/health/heartbeat_udp.py``) ever changes that, from the
  amphora's report, which has only the pools its listeners use: so it stays ``OFFLINE``.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from emulator.cloud import Cloud
from emulator.context import AuthContext
from emulator.errors import Unsupported
from emulator.octavia.responses import render_error
from emulator.store import Record
from emulator.timeutil import iso_no_z
from emulator.timing import ManualClock
from tests.unit.emulator.test_octavia import active_lb, get, settle


def listener_on(cloud: Cloud, clock: ManualClock, ctx: AuthContext, lb: Record) -> Record:
    listener = cloud.octavia.create_listener(
        ctx, {"loadbalancer_id": lb["id"], "protocol": "TCP", "protocol_port": 80}
    )
    settle(cloud, clock)
    return listener


# -- updated_at ---------------------------------------------------------------------------


def test_updated_at_is_null_on_create_and_set_when_the_worker_finishes(
    cloud: Cloud, clock: ManualClock, ctx: AuthContext, topo: dict[str, str]
) -> None:
    o = cloud.octavia
    lb = o.create_loadbalancer(ctx, {"name": "lb", "vip_subnet_id": topo["subnet_id"]})
    assert lb["updated_at"] is None  # Octavia answers the POST before any update of the row
    settle(cloud, clock)
    finished = iso_no_z(clock.now())
    assert get(cloud, ctx, "loadbalancer", lb["id"])["updated_at"] == finished

    listener = o.create_listener(
        ctx, {"loadbalancer_id": lb["id"], "protocol": "TCP", "protocol_port": 80}
    )
    assert listener["updated_at"] is None
    settle(cloud, clock)
    finished = iso_no_z(clock.now())
    assert get(cloud, ctx, "listener", listener["id"])["updated_at"] == finished
    assert get(cloud, ctx, "loadbalancer", lb["id"])["updated_at"] == finished

    pool = o.create_pool(
        ctx, {"listener_id": listener["id"], "protocol": "TCP", "lb_algorithm": "ROUND_ROBIN"}
    )
    assert pool["updated_at"] is None
    settle(cloud, clock)
    finished = iso_no_z(clock.now())
    assert get(cloud, ctx, "pool", pool["id"])["updated_at"] == finished
    # the listener was marked PENDING_UPDATE for its new default pool, then ACTIVE again
    assert get(cloud, ctx, "listener", listener["id"])["updated_at"] == finished

    member = o.create_member(ctx, pool["id"], {"address": "10.0.0.10", "protocol_port": 8080})
    hm_body = {"pool_id": pool["id"], "type": "TCP", "delay": 5, "timeout": 3, "max_retries": 3}
    assert member["updated_at"] is None
    settle(cloud, clock)
    assert get(cloud, ctx, "member", member["id"])["updated_at"] == iso_no_z(clock.now())
    hm = o.create_healthmonitor(ctx, hm_body)
    assert hm["updated_at"] is None
    settle(cloud, clock)
    finished = iso_no_z(clock.now())
    assert get(cloud, ctx, "healthmonitor", hm["id"])["updated_at"] == finished
    assert get(cloud, ctx, "pool", pool["id"])["updated_at"] == finished


def test_updated_at_moves_with_a_status_change_and_not_without_one(
    cloud: Cloud, clock: ManualClock, ctx: AuthContext, topo: dict[str, str]
) -> None:
    """A member whose operating status becomes ONLINE once a monitor watches it is an update
    of its row (the health manager's); a member no change touched keeps its time."""
    o = cloud.octavia
    lb = active_lb(cloud, clock, ctx, topo)
    listener = listener_on(cloud, clock, ctx, lb)
    pool = o.create_pool(
        ctx, {"listener_id": listener["id"], "protocol": "TCP", "lb_algorithm": "ROUND_ROBIN"}
    )
    settle(cloud, clock)
    member = o.create_member(ctx, pool["id"], {"address": "10.0.0.10", "protocol_port": 8080})
    settle(cloud, clock)
    before = get(cloud, ctx, "member", member["id"])
    assert before["operating_status"] == "NO_MONITOR"
    o.update_listener(ctx, listener["id"], {"name": "renamed"})
    settle(cloud, clock)
    assert get(cloud, ctx, "member", member["id"])["updated_at"] == before["updated_at"]
    o.create_healthmonitor(
        ctx, {"pool_id": pool["id"], "type": "TCP", "delay": 5, "timeout": 3, "max_retries": 3}
    )
    settle(cloud, clock)
    after = get(cloud, ctx, "member", member["id"])
    assert after["operating_status"] == "ONLINE"
    assert after["updated_at"] == iso_no_z(clock.now()) != before["updated_at"]


# -- options the provider does not support ------------------------------------------------


def test_an_algorithm_amphora_cannot_do_is_501_and_changes_nothing(
    cloud: Cloud, clock: ManualClock, ctx: AuthContext, topo: dict[str, str]
) -> None:
    o = cloud.octavia
    lb = active_lb(cloud, clock, ctx, topo)
    listener = listener_on(cloud, clock, ctx, lb)
    with pytest.raises(Unsupported) as err:
        o.create_pool(
            ctx,
            {"listener_id": listener["id"], "protocol": "TCP", "lb_algorithm": "SOURCE_IP_PORT"},
        )
    assert err.value.status == 501
    assert err.value.message == (
        "Provider 'amphora' does not support a requested option: "
        "Amphora provider does not support SOURCE_IP_PORT algorithm."
    )
    # rolled back: no pool, the listener has no default pool, nothing went PENDING_*
    assert cloud.store.all("pool") == []
    assert get(cloud, ctx, "listener", listener["id"])["default_pool_id"] is None
    assert get(cloud, ctx, "loadbalancer", lb["id"])["provisioning_status"] == "ACTIVE"

    pool = o.create_pool(
        ctx, {"listener_id": listener["id"], "protocol": "TCP", "lb_algorithm": "ROUND_ROBIN"}
    )
    settle(cloud, clock)
    with pytest.raises(Unsupported, match="does not support SOURCE_IP_PORT algorithm"):
        o.update_pool(ctx, pool["id"], {"lb_algorithm": "SOURCE_IP_PORT"})
    shown = get(cloud, ctx, "pool", pool["id"])
    assert (shown["lb_algorithm"], shown["provisioning_status"]) == ("ROUND_ROBIN", "ACTIVE")


def test_the_501_is_rendered_with_octavias_body() -> None:
    """WSME (``wsme/api.py`` ``format_exception``): a status outside 4xx is a ``Server``
    fault; Octavia runs without debug, so ``debuginfo`` is null."""
    message = "Provider 'amphora' does not support a requested option: x"
    response = render_error(Unsupported(message))
    assert response.status == 501
    assert response.body == {"faultcode": "Server", "faultstring": message, "debuginfo": None}


def test_the_provider_is_asked_last_as_octavia_does(
    cloud: Cloud, clock: ManualClock, ctx: AuthContext, topo: dict[str, str]
) -> None:
    """A request that is wrong in another way gets that answer first: Octavia's controllers
    call the driver after their own checks (``pool.py`` ``post``: a listener's second default
    pool is 409 ``DuplicatePoolEntry`` before ``call_provider``)."""
    o = cloud.octavia
    lb = active_lb(cloud, clock, ctx, topo)
    listener = listener_on(cloud, clock, ctx, lb)
    o.create_pool(
        ctx, {"listener_id": listener["id"], "protocol": "TCP", "lb_algorithm": "ROUND_ROBIN"}
    )
    settle(cloud, clock)
    with pytest.raises(Exception, match="already has a default pool") as err:
        o.create_pool(
            ctx,
            {"listener_id": listener["id"], "protocol": "TCP", "lb_algorithm": "SOURCE_IP_PORT"},
        )
    assert getattr(err.value, "status", None) == 409


def test_the_amphora_alias_and_ovn_refuse_in_their_drivers_words(
    cloud: Cloud, clock: ManualClock, ctx: AuthContext, topo: dict[str, str]
) -> None:
    o = cloud.octavia
    alias = o.create_loadbalancer(ctx, {"vip_subnet_id": topo["subnet_id"], "provider": "octavia"})
    ovn = o.create_loadbalancer(ctx, {"vip_subnet_id": topo["subnet_id"], "provider": "ovn"})
    settle(cloud, clock)
    with pytest.raises(Unsupported) as err:
        o.create_pool(
            ctx,
            {"loadbalancer_id": alias["id"], "protocol": "TCP", "lb_algorithm": "SOURCE_IP_PORT"},
        )
    # the name asked for, the amphora driver's words (driver_factory sets driver.name)
    assert err.value.message.startswith("Provider 'octavia' does not support a requested option")

    refusals: list[tuple[Callable[[], object], str]] = [
        (
            lambda: o.create_listener(
                ctx, {"loadbalancer_id": ovn["id"], "protocol": "HTTP", "protocol_port": 80}
            ),
            "OVN provider does not support HTTP protocol",
        ),
        (
            lambda: o.create_listener(
                ctx,
                {
                    "loadbalancer_id": ovn["id"],
                    "protocol": "TCP",
                    "protocol_port": 80,
                    "allowed_cidrs": ["10.0.0.0/8"],
                },
            ),
            "OVN provider does not support allowed_cidrs option",
        ),
        (
            lambda: o.create_pool(
                ctx,
                {"loadbalancer_id": ovn["id"], "protocol": "TCP", "lb_algorithm": "ROUND_ROBIN"},
            ),
            "OVN provider does not support ROUND_ROBIN algorithm",
        ),
        (
            lambda: o.failover_loadbalancer(ctx, ovn["id"]),
            "OVN provider does not support loadbalancer failover",
        ),
    ]
    for call, words in refusals:
        with pytest.raises(Unsupported) as err:
            call()
        assert err.value.message == f"Provider 'ovn' does not support a requested option: {words}"
    assert get(cloud, ctx, "loadbalancer", ovn["id"])["provisioning_status"] == "ACTIVE"
    assert [r for r in cloud.store.all("listener") if r["_lb_id"] == ovn["id"]] == []
    # what ovn-octavia-provider 11 does support
    pool = o.create_pool(
        ctx, {"loadbalancer_id": ovn["id"], "protocol": "TCP", "lb_algorithm": "SOURCE_IP"}
    )
    settle(cloud, clock)
    with pytest.raises(Unsupported, match="OVN provider does not support HTTP health monitor"):
        o.create_healthmonitor(
            ctx, {"pool_id": pool["id"], "type": "HTTP", "delay": 5, "timeout": 3, "max_retries": 3}
        )


def test_the_drivers_other_refusals(
    cloud: Cloud, clock: ManualClock, ctx: AuthContext, topo: dict[str, str]
) -> None:
    """amphora: a UDP pool's member of an IP version no VIP of its listeners has
    (``_validate_members``); ovn: session persistence but SOURCE_IP, member monitor options."""
    o = cloud.octavia
    lb = active_lb(cloud, clock, ctx, topo)  # an IPv4 VIP
    udp = o.create_listener(
        ctx, {"loadbalancer_id": lb["id"], "protocol": "UDP", "protocol_port": 53}
    )
    settle(cloud, clock)
    pool = o.create_pool(
        ctx, {"listener_id": udp["id"], "protocol": "UDP", "lb_algorithm": "ROUND_ROBIN"}
    )
    settle(cloud, clock)
    with pytest.raises(Unsupported, match=r"mixing IPv4 and IPv6 addresses .* in UDP load"):
        o.create_member(ctx, pool["id"], {"address": "2001:db8::1", "protocol_port": 53})
    with pytest.raises(Unsupported, match="mixing IPv4 and IPv6"):
        o.batch_update_members(
            ctx, pool["id"], [{"address": "2001:db8::1", "protocol_port": 53}], additive_only=False
        )
    assert get(cloud, ctx, "pool", pool["id"])["members"] == []
    o.create_member(ctx, pool["id"], {"address": "10.0.0.20", "protocol_port": 53})

    ovn = o.create_loadbalancer(ctx, {"vip_subnet_id": topo["subnet_id"], "provider": "ovn"})
    settle(cloud, clock)
    with pytest.raises(Unsupported, match=r"HTTP_COOKIE session persistence\. Only SOURCE_IP"):
        o.create_pool(
            ctx,
            {
                "loadbalancer_id": ovn["id"],
                "protocol": "TCP",
                "lb_algorithm": "SOURCE_IP_PORT",
                "session_persistence": {"type": "HTTP_COOKIE"},
            },
        )
    ovn_pool = o.create_pool(
        ctx, {"loadbalancer_id": ovn["id"], "protocol": "TCP", "lb_algorithm": "SOURCE_IP_PORT"}
    )
    settle(cloud, clock)
    with pytest.raises(Unsupported, match="does not support different member monitor address"):
        o.create_member(
            ctx,
            ovn_pool["id"],
            {"address": "10.0.0.30", "protocol_port": 80, "monitor_port": 8080},
        )


# -- pools no listener uses ---------------------------------------------------------------


def test_a_pool_without_a_listener_stays_offline(
    cloud: Cloud, clock: ManualClock, ctx: AuthContext, topo: dict[str, str]
) -> None:
    o = cloud.octavia
    lb = active_lb(cloud, clock, ctx, topo)
    pool = o.create_pool(
        ctx, {"loadbalancer_id": lb["id"], "protocol": "HTTP", "lb_algorithm": "ROUND_ROBIN"}
    )
    assert pool["operating_status"] == "OFFLINE"
    settle(cloud, clock)
    shown = get(cloud, ctx, "pool", pool["id"])
    assert (shown["provisioning_status"], shown["operating_status"]) == ("ACTIVE", "OFFLINE")

    # a listener takes it as its default pool: the amphora reports it, ONLINE
    listener = o.create_listener(
        ctx,
        {
            "loadbalancer_id": lb["id"],
            "protocol": "HTTP",
            "protocol_port": 80,
            "default_pool_id": pool["id"],
        },
    )
    settle(cloud, clock)
    assert get(cloud, ctx, "pool", pool["id"])["operating_status"] == "ONLINE"

    # the listener goes: no report of the pool any more, OFFLINE again (heartbeat_udp.py's
    # potential_offline_pools)
    o.delete_listener(ctx, listener["id"])
    settle(cloud, clock)
    shown = get(cloud, ctx, "pool", pool["id"])
    assert (shown["listeners"], shown["operating_status"]) == ([], "OFFLINE")


def test_members_of_a_pool_no_listener_uses_keep_the_status_they_were_created_with(
    cloud: Cloud, clock: ManualClock, ctx: AuthContext, topo: dict[str, str]
) -> None:
    """``db/prepare.py`` ``create_member``: ``NO_MONITOR`` without a monitor, ``OFFLINE`` with
    one; the health manager never reports them (their pool is in no listener), and a monitor
    created later changes no member (``health_monitor_flows.py`` sets members only on delete)."""
    o = cloud.octavia
    lb = active_lb(cloud, clock, ctx, topo)
    pool = o.create_pool(
        ctx, {"loadbalancer_id": lb["id"], "protocol": "TCP", "lb_algorithm": "ROUND_ROBIN"}
    )
    settle(cloud, clock)
    member = o.create_member(ctx, pool["id"], {"address": "10.0.0.10", "protocol_port": 8080})
    settle(cloud, clock)
    assert get(cloud, ctx, "member", member["id"])["operating_status"] == "NO_MONITOR"
    o.create_healthmonitor(
        ctx, {"pool_id": pool["id"], "type": "TCP", "delay": 5, "timeout": 3, "max_retries": 3}
    )
    settle(cloud, clock)
    assert get(cloud, ctx, "member", member["id"])["operating_status"] == "NO_MONITOR"
    second = o.create_member(ctx, pool["id"], {"address": "10.0.0.11", "protocol_port": 8080})
    assert second["operating_status"] == "OFFLINE"
    settle(cloud, clock)
    assert get(cloud, ctx, "member", second["id"])["operating_status"] == "OFFLINE"
    assert get(cloud, ctx, "pool", pool["id"])["operating_status"] == "OFFLINE"

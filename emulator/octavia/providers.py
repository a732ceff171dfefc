"""What each provider driver refuses, in its own words, answered as Octavia answers it: 501.

Octavia checks a request itself first (types, ranges, conflicts, statuses), writes it to its
database, and then hands it to the driver of the load balancer's provider. A driver that cannot
do an option raises octavia-lib's ``UnsupportedOptionError``; Octavia's
``api/drivers/utils.py`` ``call_provider`` turns it into ``ProviderUnsupportedOptionError``
(``common/exceptions.py``): **501** ``Provider '<provider>' does not support a requested
option: <the driver's message>``, and rolls the transaction back, so nothing has changed.
``<provider>`` is the name the load balancer was created with (``driver_factory.get_driver``
sets ``driver.name``), so the ``octavia`` alias says ``octavia`` in the amphora driver's words.

The models call these checks last, after their own, and before they write anything. The
drivers, with the checks a request to the emulator can reach:

* ``amphora`` and its aliases ``octavia`` and ``amphorav2``: Octavia 19.0.0
  ``api/drivers/amphora_driver/v2/driver.py``. Pools: ``lb_algorithm`` one of
  ``ROUND_ROBIN``, ``SOURCE_IP``, ``LEAST_CONNECTIONS`` (create, and update when given):
  ``SOURCE_IP_PORT`` is refused. Members (one or a batch) of a ``UDP`` or ``SCTP`` pool: an
  address of an IP version none of the VIPs of its listeners' load balancers has. (Its listener
  protocol and ALPN checks accept everything Octavia's API accepts, so they never refuse.)
* ``ovn``: ovn-octavia-provider 11.0.0 ``ovn_octavia_provider/driver.py``. Listeners: protocol
  ``TCP``, ``UDP`` or ``SCTP`` (create), no ``allowed_cidrs`` (create and update). Pools:
  protocol as listeners' (create); ``lb_algorithm`` ``SOURCE_IP_PORT`` or ``SOURCE_IP`` and
  session persistence ``SOURCE_IP`` only (create, and update when given). Members: no
  ``monitor_address``/``monitor_port``. Health monitors: type ``TCP`` or ``UDP-CONNECT``
  (create). Load balancers: no failover. One difference kept on purpose: for a session
  persistence other than ``SOURCE_IP`` the 11.0.0 driver formats its message with
  ``session.type`` on a dict, so the real answer is a 500 ``Provider 'ovn' reports error:
  'dict' object has no attribute 'type'``; the emulator answers the 501 the driver means.

A provider the topology names that is none of these accepts everything.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from typing import Any

from emulator.errors import Unsupported

AMPHORA_ALGORITHMS = ("ROUND_ROBIN", "SOURCE_IP", "LEAST_CONNECTIONS")
OVN_PROTOCOLS = ("TCP", "UDP", "SCTP")
OVN_ALGORITHMS = ("SOURCE_IP_PORT", "SOURCE_IP")
OVN_PERSISTENCE = ("SOURCE_IP",)
OVN_MONITOR_TYPES = ("UDP-CONNECT", "TCP")
# provider name -> the driver that serves it
# (Octavia 19's octavia.api.drivers entry points: amphora, amphorav2 and octavia are one driver)
DRIVERS = {"amphora": "amphora", "amphorav2": "amphora", "octavia": "amphora", "ovn": "ovn"}
_LVS_PROTOCOLS = ("UDP", "SCTP")


def unsupported(provider: str, message: str) -> Unsupported:
    """Octavia's ``ProviderUnsupportedOptionError`` around a driver's message."""
    return Unsupported(f"Provider '{provider}' does not support a requested option: {message}")


def _driver(provider: str) -> str | None:
    return DRIVERS.get(provider)


def check_listener(provider: str, listener: Mapping[str, Any], *, create: bool) -> None:
    """A listener create (the whole listener) or update (the fields the request sets)."""
    if _driver(provider) != "ovn":
        return
    protocol = listener.get("protocol")
    if create and protocol not in OVN_PROTOCOLS:
        raise unsupported(provider, f"OVN provider does not support {protocol} protocol")
    if listener.get("allowed_cidrs"):
        raise unsupported(provider, "OVN provider does not support allowed_cidrs option")


def check_pool(provider: str, pool: Mapping[str, Any], *, create: bool) -> None:
    """A pool create (the whole pool) or update (the fields the request sets)."""
    algorithm = pool.get("lb_algorithm")
    driver = _driver(provider)
    if driver == "amphora" and algorithm is not None and algorithm not in AMPHORA_ALGORITHMS:
        raise unsupported(provider, f"Amphora provider does not support {algorithm} algorithm.")
    if driver != "ovn":
        return
    protocol = pool.get("protocol")
    if create and protocol not in OVN_PROTOCOLS:
        raise unsupported(provider, f"OVN provider does not support {protocol} protocol")
    if algorithm is not None and algorithm not in OVN_ALGORITHMS:
        raise unsupported(provider, f"OVN provider does not support {algorithm} algorithm")
    persistence = pool.get("session_persistence")
    if persistence and persistence.get("type") not in OVN_PERSISTENCE:
        raise unsupported(
            provider,
            f"OVN provider does not support {persistence.get('type')} session persistence. "
            "Only SOURCE_IP type is supported.",
        )


def check_members(
    provider: str,
    pool: Mapping[str, Any],
    members: Iterable[Mapping[str, Any]],
    *,
    vips: Iterable[str],
    batch: bool,
) -> None:
    """Members created (one, or a batch's whole list) in ``pool``; ``vips``: the VIP addresses
    of the load balancers of the pool's listeners (none when no listener uses the pool)."""
    driver = _driver(provider)
    members = list(members)
    if driver == "ovn":
        for member in members:
            if member.get("monitor_address") or member.get("monitor_port"):
                raise unsupported(
                    provider,
                    "OVN provider does not support monitor options"
                    if batch
                    else "OVN Load Balancer does not support different member monitor address "
                    "or port.",
                )
    if driver != "amphora" or pool.get("protocol") not in _LVS_PROTOCOLS:
        return
    versions = {ipaddress.ip_address(v).version for v in vips}
    if not versions:
        return
    for member in members:
        if ipaddress.ip_address(str(member["address"])).version not in versions:
            raise unsupported(
                provider,
                "This provider doesn't support mixing IPv4 and IPv6 addresses for its VIP and "
                f"members in {pool['protocol']} load balancers.",
            )


def check_monitor(provider: str, monitor: Mapping[str, Any]) -> None:
    """A health monitor create."""
    if _driver(provider) == "ovn" and monitor.get("type") not in OVN_MONITOR_TYPES:
        raise unsupported(
            provider,
            f"OVN provider does not support {monitor.get('type')} health monitor type. "
            f"Supported types: {', '.join(OVN_MONITOR_TYPES)}",
        )


def check_failover(provider: str) -> None:
    if _driver(provider) == "ovn":
        raise unsupported(provider, "OVN provider does not support loadbalancer failover")

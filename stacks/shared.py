"""Whether a Service may join a shared load balancer (``load-balancer-id``): pure, over what
:func:`stacks.lookups.shared_load_balancer` read (a :class:`SharedLoadBalancer`).

Said up front, as a Warning naming the reason, instead of letting Octavia answer 409 for ever.
No Pulumi here, so the engine's adoption plan asks :func:`port_family` too.
"""

from __future__ import annotations

from dataclasses import dataclass

from reconciler.model.annotations import LOAD_BALANCER_ID
from reconciler.model.naming import SERVICE_PREFIX
from reconciler.model.spec import LoadBalancerSpec

__all__ = ["SharedLoadBalancer", "port_family", "shared_problems"]


@dataclass(frozen=True)
class SharedLoadBalancer:
    """The existing load balancer of a shared Service, as the cloud shows it."""

    id: str
    vip_address: str
    vip_port_id: str
    other_services: tuple[str, ...]  # LB names of the other Services with listeners on it
    floating_ip: str | None
    # (protocol, port, who) of the listeners of others: who is their tags, else the name
    ports_in_use: tuple[tuple[str, int, str], ...] = ()
    name: str = ""


def port_family(protocol: str) -> str:
    """Octavia allows one listener per port and family: UDP, SCTP, or TCP (HTTP, HTTPS,
    TERMINATED_HTTPS, PROXY ... all run over TCP)."""
    return protocol if protocol in ("UDP", "SCTP") else "TCP"


def shared_problems(
    spec: LoadBalancerSpec, shared: SharedLoadBalancer, *, wants_floating_ip: bool
) -> list[str]:
    """Why ``spec`` cannot join ``shared``, said up front (Octavia would answer 409 to a port
    in use, for ever): a port another Service's listener already has, and an external Service
    (one that would get a floating IP: the cloud has an external network) on a Service's load
    balancer without a floating IP (its owner is internal), which nobody outside could reach.
    A user's own load balancer without one is served at its VIP, as OCCM does."""
    problems = []
    taken = {(port_family(p), port): who for p, port, who in shared.ports_in_use}
    for listener in spec.listeners:
        key = (port_family(listener.protocol), listener.protocol_port)
        if key in taken:
            problems.append(
                f"port {listener.protocol_port}/{key[0]} is already used on it by {taken[key]}; "
                "use another port or another load balancer"
            )
    made_for_a_service = shared.name.startswith(SERVICE_PREFIX)  # else a user's: its VIP serves
    if wants_floating_ip and shared.floating_ip is None and made_for_a_service:
        problems.append(
            "it has no floating IP (its owner is internal): an external Service on it would not "
            "be reachable from outside; share a load balancer of an external Service, or remove "
            + LOAD_BALANCER_ID
        )
    return problems

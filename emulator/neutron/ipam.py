"""IP address management for subnets: pure functions over CIDRs, pools and used addresses."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from typing import Any

from emulator.errors import BadRequest, Conflict

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


def parse_cidr(cidr: Any, *, field: str = "cidr") -> IPNetwork:
    try:
        return ipaddress.ip_network(str(cidr), strict=False)
    except ValueError:
        raise BadRequest(
            f"Invalid input for {field}. Reason: '{cidr}' is not a valid IP subnet; "
            "use a CIDR such as 10.0.0.0/24.",
            kind="HTTPBadRequest",
        ) from None


def parse_ip(address: Any, *, field: str) -> str:
    try:
        return str(ipaddress.ip_address(str(address)))
    except ValueError:
        raise BadRequest(
            f"Invalid input for {field}. Reason: '{address}' is not a valid IP address.",
            kind="HTTPBadRequest",
        ) from None


def default_gateway(net: IPNetwork) -> str | None:
    hosts = _host_range(net)
    return str(hosts[0]) if hosts else None


def _host_range(net: IPNetwork) -> tuple[Any, Any] | tuple[()]:
    if net.num_addresses <= 2:
        return ()
    first = net.network_address + 1
    last = net.broadcast_address - (1 if net.version == 4 else 0)
    return (first, last)


def default_pools(net: IPNetwork, gateway: str | None) -> list[dict[str, str]]:
    """The whole host range minus the gateway, as Neutron computes it."""
    hosts = _host_range(net)
    if not hosts:
        return []
    first, last = hosts
    if gateway is not None:
        gw = ipaddress.ip_address(gateway)
        if gw == first:
            first = first + 1
        elif gw == last:
            last = last - 1
        elif first < gw < last:
            return [
                {"start": str(first), "end": str(gw - 1)},
                {"start": str(gw + 1), "end": str(last)},
            ]
    return [{"start": str(first), "end": str(last)}]


def validate_pools(net: IPNetwork, pools: Any) -> list[dict[str, str]]:
    if not isinstance(pools, list):
        raise BadRequest("allocation_pools must be a list of {start, end} objects.")
    result = []
    for i, pool in enumerate(pools):
        if not isinstance(pool, dict) or "start" not in pool or "end" not in pool:
            raise BadRequest(f"allocation_pools[{i}] must have 'start' and 'end'.")
        start = ipaddress.ip_address(parse_ip(pool["start"], field=f"allocation_pools[{i}].start"))
        end = ipaddress.ip_address(parse_ip(pool["end"], field=f"allocation_pools[{i}].end"))
        if start not in net or end not in net or int(start) > int(end):
            raise BadRequest(
                f"The allocation pool {start}-{end} spans beyond the subnet cidr {net}.",
                kind="OutOfBoundsAllocationPool",
            )
        result.append({"start": str(start), "end": str(end)})
    return result


def _pool_addresses(pools: list[dict[str, str]]) -> Iterator[str]:
    for pool in pools:
        first = ipaddress.ip_address(pool["start"])
        last = int(ipaddress.ip_address(pool["end"]))
        for value in range(int(first), last + 1):
            yield str(
                ipaddress.ip_address(value) if first.version == 4 else ipaddress.IPv6Address(value)
            )


def allocate(
    subnet: dict[str, Any], *, used: set[str], requested: str | None, network_id: str
) -> str:
    """An address of ``subnet``: ``requested`` if free, else the first free one in the pools."""
    net = parse_cidr(subnet["cidr"])
    if requested is not None:
        address = parse_ip(requested, field="ip_address")
        if ipaddress.ip_address(address) not in net:
            raise BadRequest(
                f"IP address {address} is not a valid IP for the specified subnet.",
                kind="InvalidIpForSubnet",
            )
        if address in used:
            raise Conflict(
                f"IP address {address} already allocated in subnet {subnet['id']}.",
                kind="IpAddressAlreadyAllocated",
            )
        return address
    for address in _pool_addresses(subnet["allocation_pools"]):
        if address not in used:
            return address
    raise Conflict(
        f"No more IP addresses available on network {network_id}.",
        kind="IpAddressGenerationFailure",
    )

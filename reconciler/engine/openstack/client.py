"""The engine's OpenStack client, for what the engine must do outside a Pulumi program.

A few jobs, all about objects that no stack state records:

* after a crash, find the objects of *pending creates* by name (or description), so they can be
  imported into the stack instead of leaking (:meth:`OpenStackRest.find_ids`);
* shared load balancers: who else has listeners on one (:meth:`listener_tags`), each Service's
  name among its tags (:meth:`set_load_balancer_tags`), and deleting a load balancer that its
  owner's stack released once its last Service is gone;
* ``lb-reconciler adopt``: reading an OCCM load balancer and its children, its floating IP and
  security group (GETs only), so that they can be imported into the Service's stack.

Every call goes through one :class:`~reconciler.engine.openstack.session.CloudSession`:
keystoneauth1, logged in with the cloud.conf ``[Global]`` settings the provider gets
(:mod:`reconciler.engine.openstack.auth`), the catalog's endpoints of ``os-endpoint-type`` in
``region``, TLS as configured, retries of 409 and 5xx answers, every page of a list. A failure is an
:class:`OpenStackRestError` with the cloud's status (``status``, ``not_found``, ``conflict``) and
its own message; a failed login a :class:`LoginError` naming the settings to check. The token and
credentials are never logged or put into exception messages.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from reconciler.config import AuthConfig
from reconciler.engine.openstack.session import CloudSession, LoginError, OpenStackRestError
from reconciler.model.naming import floating_ip_to_delete
from stacks.vocabulary import (
    FIP_TYPE,
    FLOATINGIPS,
    HEALTHMONITORS,
    LB_TYPE,
    LISTENER_TYPE,
    LISTENERS,
    LOADBALANCERS,
    MONITOR_TYPE,
    POOL_TYPE,
    POOLS,
    SECURITY_GROUP_TYPE,
    SECURITY_GROUPS,
)

__all__ = ["LoginError", "OpenStackRest", "OpenStackRestError"]

# collection (stacks.vocabulary.object_kind) -> (service type, path, JSON key of one object); the
# JSON key of a list is the collection's name with "_" for "-"
_PATHS = {
    LOADBALANCERS: ("load-balancer", "v2/lbaas/loadbalancers", "loadbalancer"),
    LISTENERS: ("load-balancer", "v2/lbaas/listeners", "listener"),
    POOLS: ("load-balancer", "v2/lbaas/pools", "pool"),
    HEALTHMONITORS: ("load-balancer", "v2/lbaas/healthmonitors", "healthmonitor"),
    FLOATINGIPS: ("network", "v2.0/floatingips", "floatingip"),
    SECURITY_GROUPS: ("network", "v2.0/security-groups", "security_group"),
}
_LB_PATH = _PATHS[LOADBALANCERS][1]
_FIP_PATH = _PATHS[FLOATINGIPS][1]

# Pulumi type token -> (collection, filters to send: (key of find_by, the API's query parameter))
_COLLECTIONS: dict[str, tuple[str, tuple[tuple[str, str], ...]]] = {
    LB_TYPE: (LOADBALANCERS, (("name", "name"),)),
    LISTENER_TYPE: (
        LISTENERS,
        (
            ("name", "name"),
            ("loadbalancerId", "loadbalancer_id"),
            ("protocol", "protocol"),
            ("protocolPort", "protocol_port"),
        ),
    ),
    POOL_TYPE: (POOLS, (("name", "name"),)),
    MONITOR_TYPE: (HEALTHMONITORS, (("name", "name"),)),
    FIP_TYPE: (FLOATINGIPS, (("description", "description"),)),
    SECURITY_GROUP_TYPE: (SECURITY_GROUPS, (("name", "name"),)),
}


# parents checked on the listed objects only, never sent as a filter (Octavia has no such
# column): a pool's listeners, a monitor's pools
_LINKS: dict[str, tuple[tuple[str, str], ...]] = {
    POOLS: (("listenerId", "listeners"),),
    HEALTHMONITORS: (("poolId", "pools"),),
}


class OpenStackRest:
    """The engine's OpenStack client: one :class:`~reconciler.engine.openstack.session.CloudSession`
    (one login, its token renewed when due) for all its calls, from any thread."""

    def __init__(self, *, auth: AuthConfig) -> None:
        self.auth = auth
        self.cloud = CloudSession(auth)

    def __repr__(self) -> str:
        return f"OpenStackRest(auth_url={self.auth.auth_url!r})"

    def login(self) -> None:
        """Log in now (and find the endpoints) instead of at the first call: raises
        :class:`LoginError` naming the settings to check."""
        self.cloud.login()

    def reference_status(self, ref: str) -> tuple[int | None, str]:
        """``GET`` of a key manager reference (a full URL, with this credential's token): 200
        and "" when it is there, else the cloud's status and message (None: no answer)."""
        try:
            self.cloud.request("load-balancer", "GET", ref)
        except OpenStackRestError as exc:
            return exc.status, exc.cloud_message or ""
        return 200, ""

    def roles(self) -> tuple[list[str], str]:
        """The credential's roles on its project, and the project (:meth:`CloudSession.roles`)."""
        return self.cloud.roles()

    def _get(self, kind: str, ident: str) -> dict[str, Any]:
        service, path, key = _PATHS[kind]
        payload = self.cloud.request(service, "GET", f"{path}/{ident}") or {}
        found: dict[str, Any] = payload[key]
        return found

    def _list(self, kind: str, params: dict[str, str] | None = None) -> list[dict[str, Any]]:
        """Every object of collection ``kind`` matching ``params`` (every page); the JSON key
        of a list is the collection's name with "_" for "-"."""
        service, path, _one = _PATHS[kind]
        return list(self.cloud.pages(service, path, kind.replace("-", "_"), params=params))

    def every(self, kind: str) -> list[dict[str, Any]]:
        """Every object of collection ``kind`` the project can see (every page)."""
        return self._list(kind)

    def find_ids(self, *, type_token: str, find_by: dict[str, str]) -> list[str] | None:
        """IDs of the objects of this type matching ``find_by``; None if the type is unknown.

        Every filter is checked again here (a cloud may ignore one). Floating IPs are only
        found while on no port: one that is associated serves a load balancer already (OCCM's,
        for the same Service), and taking it would move the address."""
        entry = _COLLECTIONS.get(type_token)
        if entry is None:
            return None
        kind, filters = entry
        query = {api: find_by[ours] for ours, api in filters if ours in find_by}
        if not query:
            return []
        links = [(field, find_by[ours]) for ours, field in _LINKS.get(kind, ()) if ours in find_by]
        return [
            str(item["id"])
            for item in self._list(kind, query)
            if all(_matches(item, api, value) for api, value in query.items())
            and all(any(x.get("id") == v for x in item.get(f) or ()) for f, v in links)
            and not (kind == FLOATINGIPS and item.get("port_id"))
        ]

    def show(self, kind: str, ident: str) -> dict[str, Any] | None:
        """The object ``ident`` of collection ``kind`` (``_PATHS``); None when the cloud
        answers 404."""
        try:
            return self._get(kind, ident)
        except OpenStackRestError as exc:
            if exc.not_found:
                return None
            raise

    def delete(self, kind: str, ident: str, *, missing_ok: bool = False) -> None:
        """Delete the object ``ident`` of collection ``kind`` (``_PATHS``; a load balancer:
        :meth:`delete_load_balancer`). Octavia answers 409 for a child while its load balancer
        is ``PENDING_*`` (retried a few times by the session before it is raised)."""
        if kind == LOADBALANCERS:
            raise ValueError("a load balancer is deleted with delete_load_balancer")
        service, path, _one = _PATHS[kind]
        try:
            self.cloud.request(service, "DELETE", f"{path}/{ident}")
        except OpenStackRestError as exc:
            if not (missing_ok and exc.not_found):
                raise

    def status_tree(self, lb_id: str) -> dict[str, Any] | None:
        """Octavia's status tree of a load balancer (``GET .../loadbalancers/{id}/status``):
        the provisioning status of it and of every listener, pool, member and monitor under
        its listeners. None when the load balancer is gone."""
        try:
            payload = self.cloud.request("load-balancer", "GET", f"{_LB_PATH}/{lb_id}/status")
        except OpenStackRestError as exc:
            if exc.not_found:
                return None
            raise
        tree: dict[str, Any] = (payload or {}).get("statuses", {}).get("loadbalancer") or {}
        return tree

    def touch(self, kind: str, ident: str, *, pool_id: str = "") -> None:
        """An update that changes nothing (``PUT`` of an empty object) of a listener, pool,
        health monitor or (with ``pool_id``) member: Octavia runs its update flow again, which
        leaves an object in ``ERROR`` ``ACTIVE`` when it succeeds. 409 while its load balancer
        is ``PENDING_*``."""
        if kind == "members":
            path, one = f"v2/lbaas/pools/{pool_id}/members/{ident}", "member"
        else:
            _service, base, one = _PATHS[kind]
            path = f"{base}/{ident}"
        self.cloud.request("load-balancer", "PUT", path, body={one: {}})

    def listener_tags(self, lb_id: str) -> list[tuple[str, ...]]:
        """The tags of each listener on a load balancer."""
        # filtered again here: a cloud that ignored the filter would make every listener of
        # the project look like a tenant of this load balancer (and keep it, leaked)
        return [
            tuple(item.get("tags") or ())
            for item in self._list(LISTENERS, {"loadbalancer_id": lb_id})
            if any(lb.get("id") == lb_id for lb in item.get("loadbalancers") or ())
        ]

    def load_balancer(self, lb_id: str) -> dict[str, Any] | None:
        return self.show(LOADBALANCERS, lb_id)

    def load_balancers(self) -> list[dict[str, Any]]:
        """Every load balancer of the project (every page)."""
        return self._list(LOADBALANCERS)

    def delete_with_floating_ips(self, lb: dict[str, Any], *, cluster_name: str) -> list[str]:
        """Delete a load balancer (cascade: its listeners, pools, members, monitors) and the
        floating IPs on its VIP port that OCCM or this controller made for this cluster and
        nobody asked to keep (:func:`reconciler.model.naming.floating_ip_to_delete`; a user's
        own floating IP is left, disassociated by Neutron). Returns the addresses deleted."""
        deleted = []
        for fip in self.floating_ips_on_port(str(lb.get("vip_port_id"))):
            if floating_ip_to_delete(fip, cluster_name=cluster_name):
                self.delete(FLOATINGIPS, str(fip["id"]), missing_ok=True)
                deleted.append(str(fip.get("floating_ip_address")))
        self.delete_load_balancer(str(lb["id"]))
        return deleted

    def delete_load_balancer(self, lb_id: str, *, cascade: bool = True) -> None:
        """Delete a load balancer; with ``cascade``, its listeners, pools, members and
        monitors too. Without, Octavia answers 400 while it has children; either way 409 while
        it is ``PENDING_*`` (retried a few times by the session before it is raised)."""
        params = {"cascade": "true"} if cascade else None
        self.cloud.request("load-balancer", "DELETE", f"{_LB_PATH}/{lb_id}", params=params)

    def set_load_balancer_tags(self, lb_id: str, tags: list[str]) -> None:
        """Replace a load balancer's tags (it goes ``PENDING_UPDATE``; 409 while it is
        ``PENDING_*`` already)."""
        body = {"loadbalancer": {"tags": tags}}
        self.cloud.request("load-balancer", "PUT", f"{_LB_PATH}/{lb_id}", body=body)

    def tag_floating_ip(self, fip_id: str, tag: str) -> None:
        """Add ``tag`` to a floating IP (Neutron's tag extension)."""
        path = f"{_FIP_PATH}/{fip_id}/tags/{quote(tag, safe='')}"
        self.cloud.request("network", "PUT", path)

    def floating_ips_on_port(self, port_id: str) -> list[dict[str, Any]]:
        return [
            fip
            for fip in self._list(FLOATINGIPS, {"port_id": port_id})
            if fip.get("port_id") == port_id
        ]

    def unattached_floating_ips(self, description: str) -> list[dict[str, Any]]:
        """The floating IPs with exactly this description that are on no port."""
        return [
            fip
            for fip in self._list(FLOATINGIPS, {"description": description})
            if fip.get("description") == description and not fip.get("port_id")
        ]

    # --- read-only lookups of an OCCM load balancer, for `lb-reconciler adopt` ---------------

    def load_balancers_named(self, name: str) -> list[dict[str, Any]]:
        """The load balancers with exactly this name (Octavia does not make names unique)."""
        return [lb for lb in self._list(LOADBALANCERS, {"name": name}) if lb.get("name") == name]

    def listener(self, listener_id: str) -> dict[str, Any] | None:
        return self.show(LISTENERS, listener_id)

    def pool(self, pool_id: str) -> dict[str, Any] | None:
        return self.show(POOLS, pool_id)

    def pool_members(self, pool_id: str) -> list[dict[str, Any]]:
        service, path, _one = _PATHS[POOLS]
        return list(self.cloud.pages(service, f"{path}/{pool_id}/members", "members"))

    def replace_members(self, pool_id: str, members: list[dict[str, Any]]) -> None:
        """Octavia's batch update of a pool's members (``PUT .../pools/{id}/members``): the
        whole list wanted; members matched by address and port are updated, the others created
        or deleted, in one ``PENDING_UPDATE`` of the load balancer (409 while it is
        ``PENDING_*`` already)."""
        service, path, _one = _PATHS[POOLS]
        self.cloud.request(service, "PUT", f"{path}/{pool_id}/members", body={"members": members})

    def health_monitor(self, monitor_id: str) -> dict[str, Any] | None:
        return self.show(HEALTHMONITORS, monitor_id)

    def security_groups_named(self, name: str) -> list[dict[str, Any]]:
        groups = self._list(SECURITY_GROUPS, {"name": name})
        return [g for g in groups if g.get("name") == name]


def _matches(item: dict[str, Any], field: str, value: str) -> bool:
    """Whether ``item[field]`` is ``value`` (a query value; ``loadbalancer_id`` is a list of
    load balancers in a listener)."""
    if field == "loadbalancer_id":
        return any(lb.get("id") == value for lb in item.get("loadbalancers") or ())
    return str(item.get(field)) == value

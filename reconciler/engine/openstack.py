"""A very small OpenStack REST client for what the engine must do outside a Pulumi program.

A few jobs, all about objects that no stack state records:

* after a crash, find the objects of *pending creates* by name (or description), so they can be
  imported into the stack instead of leaking (:meth:`OpenStackRest.find_ids`);
* shared load balancers: who else has listeners on one (:meth:`listener_tags`), each Service's
  name among its tags (:meth:`set_load_balancer_tags`), and deleting a load balancer that its
  owner's stack released once its last Service is gone;
* ``lb-reconciler adopt``: reading an OCCM load balancer and its children, its floating IP and
  security group (GETs only), so that they can be imported into the Service's stack.

Keystone v3 password or application-credential authentication from cloud.conf ``[Global]``, the
catalog's public endpoints in the configured region; JSON over ``urllib`` (no extra dependency).
The token and credentials are never logged or put into exception messages.
"""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Any

from reconciler.config import AuthConfig
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

__all__ = ["OpenStackRest", "OpenStackRestError"]

TIMEOUT = 30.0

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


class OpenStackRestError(Exception):
    """A request failed; the message has the method, path and status, never the token."""


@dataclass
class OpenStackRest:
    auth: AuthConfig
    _token: str = field(default="", repr=False)
    _endpoints: dict[str, str] = field(default_factory=dict, repr=False)

    def _context(self) -> ssl.SSLContext | None:
        if self.auth.tls_insecure:
            return ssl._create_unverified_context()  # noqa: S323 - the operator asked for it
        if self.auth.ca_file:
            return ssl.create_default_context(cafile=self.auth.ca_file)
        return None

    def _send(
        self, method: str, url: str, body: Any = None, token: bool = True
    ) -> tuple[int, dict[str, str], Any]:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(url, data=data, method=method)  # noqa: S310
        request.add_header("Accept", "application/json")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        if token:
            request.add_header("X-Auth-Token", self._login())
        try:
            with urllib.request.urlopen(  # noqa: S310
                request, timeout=TIMEOUT, context=self._context()
            ) as response:
                raw = response.read()
                headers = dict(response.headers.items())
                return response.status, headers, json.loads(raw) if raw else None
        except urllib.error.HTTPError as exc:
            path = urllib.parse.urlsplit(url).path
            raise OpenStackRestError(f"{method} {path}: HTTP {exc.code}") from None
        except OSError as exc:
            path = urllib.parse.urlsplit(url).path
            raise OpenStackRestError(f"{method} {path}: {type(exc).__name__}") from None

    def _login(self) -> str:
        if self._token:
            return self._token
        a = self.auth
        if a.application_credential_id or a.application_credential_name:
            cred: dict[str, Any] = {"secret": a.application_credential_secret.reveal()}
            if a.application_credential_id:
                cred["id"] = a.application_credential_id
            else:
                cred["name"] = a.application_credential_name
                cred["user"] = self._user()
            identity: dict[str, Any] = {
                "methods": ["application_credential"],
                "application_credential": cred,
            }
            body: dict[str, Any] = {"auth": {"identity": identity}}
        else:
            user = self._user()
            user["password"] = a.password.reveal()
            identity = {"methods": ["password"], "password": {"user": user}}
            project: dict[str, Any] = (
                {"id": a.tenant_id}
                if a.tenant_id
                else {"name": a.tenant_name, "domain": self._domain(project=True)}
            )
            body = {"auth": {"identity": identity, "scope": {"project": project}}}
        url = a.auth_url.rstrip("/") + "/auth/tokens"
        _status, headers, payload = self._send("POST", url, body, token=False)
        self._token = headers.get("X-Subject-Token", "")
        for service in payload["token"].get("catalog", []):
            for ep in service.get("endpoints", []):
                region_ok = not a.region or a.region in (ep.get("region"), ep.get("region_id"))
                if ep.get("interface") == "public" and region_ok:
                    self._endpoints[service["type"]] = ep["url"].rstrip("/")
        return self._token

    def _user(self) -> dict[str, Any]:
        a = self.auth
        if a.user_id:
            return {"id": a.user_id}
        return {"name": a.username, "domain": self._domain(project=False)}

    def _domain(self, *, project: bool) -> dict[str, str]:
        a = self.auth
        did = (a.tenant_domain_id if project else a.user_domain_id) or a.domain_id
        dname = (a.tenant_domain_name if project else a.user_domain_name) or a.domain_name
        return {"id": did} if did else {"name": dname or "Default"}

    def _url(self, service: str, path: str, query: dict[str, str] | None = None) -> str:
        self._login()
        base = self._endpoints.get(service)
        if base is None:
            raise OpenStackRestError(f"no public {service} endpoint in the catalog")
        return f"{base}/{path}" + (f"?{urllib.parse.urlencode(query)}" if query else "")

    def find_ids(self, *, type_token: str, find_by: dict[str, str]) -> list[str] | None:
        """IDs of the objects of this type matching ``find_by``; None if the type is unknown.

        Every filter is checked again here (a cloud may ignore one). Floating IPs are only
        found while on no port: one that is associated serves a load balancer already (OCCM's,
        for the same Service), and taking it would move the address."""
        entry = _COLLECTIONS.get(type_token)
        if entry is None:
            return None
        kind, filters = entry
        service, path, _one = _PATHS[kind]
        query = {api: find_by[ours] for ours, api in filters if ours in find_by}
        if not query:
            return []
        links = [(field, find_by[ours]) for ours, field in _LINKS.get(kind, ()) if ours in find_by]
        _status, _headers, payload = self._send("GET", self._url(service, path, query))
        return [
            str(item["id"])
            for item in payload.get(kind.replace("-", "_"), [])
            if all(_matches(item, api, value) for api, value in query.items())
            and all(any(x.get("id") == v for x in item.get(f) or ()) for f, v in links)
            and not (kind == FLOATINGIPS and item.get("port_id"))
        ]

    def show(self, kind: str, ident: str) -> dict[str, Any] | None:
        """The object ``ident`` of collection ``kind`` (``_PATHS``); None when the cloud
        answers 404."""
        service, path, key = _PATHS[kind]
        try:
            _status, _headers, payload = self._send("GET", self._url(service, f"{path}/{ident}"))
        except OpenStackRestError as exc:
            if "HTTP 404" in str(exc):
                return None
            raise
        found: dict[str, Any] = payload[key]
        return found

    def delete(self, kind: str, ident: str, *, missing_ok: bool = False) -> None:
        """Delete the object ``ident`` of collection ``kind`` (``_PATHS``; a load balancer
        with cascade: :meth:`delete_load_balancer`). Octavia answers 409 for a child while its
        load balancer is ``PENDING_*``."""
        if kind == LOADBALANCERS:
            raise ValueError("a load balancer is deleted with delete_load_balancer (cascade)")
        service, path, _one = _PATHS[kind]
        try:
            self._send("DELETE", self._url(service, f"{path}/{ident}"))
        except OpenStackRestError as exc:
            if not (missing_ok and "HTTP 404" in str(exc)):
                raise

    def listener_tags(self, lb_id: str) -> list[tuple[str, ...]]:
        """The tags of each listener on a load balancer."""
        url = self._url("load-balancer", "v2/lbaas/listeners", {"loadbalancer_id": lb_id})
        _status, _headers, payload = self._send("GET", url)
        # filtered again here: a cloud that ignored the filter would make every listener of
        # the project look like a tenant of this load balancer (and keep it, leaked)
        return [
            tuple(item.get("tags") or ())
            for item in payload.get("listeners", [])
            if any(lb.get("id") == lb_id for lb in item.get("loadbalancers") or ())
        ]

    def load_balancer(self, lb_id: str) -> dict[str, Any] | None:
        return self.show(LOADBALANCERS, lb_id)

    def load_balancers(self) -> list[dict[str, Any]]:
        """Every load balancer of the project (following Octavia's pagination links)."""
        url: str | None = self._url("load-balancer", "v2/lbaas/loadbalancers")
        found: list[dict[str, Any]] = []
        while url:
            _status, _headers, payload = self._send("GET", url)
            found.extend(payload.get("loadbalancers", []))
            links = payload.get("loadbalancers_links") or []
            url = next((str(li["href"]) for li in links if li.get("rel") == "next"), None)
        return found

    def delete_with_floating_ips(self, lb: dict[str, Any], *, cluster_name: str) -> list[str]:
        """Delete a load balancer (cascade: its listeners, pools, members, monitors) and the
        floating IPs on its VIP port that OCCM or this controller made for this cluster and
        nobody asked to keep (:func:`reconciler.model.naming.floating_ip_to_delete`; a user's
        own floating IP is left, disassociated by Neutron). Returns the addresses deleted."""
        deleted = []
        for fip in self.floating_ips_on_port(str(lb.get("vip_port_id"))):
            if floating_ip_to_delete(fip, cluster_name=cluster_name):
                self.delete(FLOATINGIPS, str(fip["id"]))
                deleted.append(str(fip.get("floating_ip_address")))
        self.delete_load_balancer(str(lb["id"]))
        return deleted

    def delete_load_balancer(self, lb_id: str, *, cascade: bool = True) -> None:
        """Delete a load balancer; without ``cascade`` Octavia answers 400 while it has
        children (a listener, a pool), and 409 while it is ``PENDING_*``."""
        query = {"cascade": "true"} if cascade else None
        self._send("DELETE", self._url("load-balancer", f"v2/lbaas/loadbalancers/{lb_id}", query))

    def set_load_balancer_tags(self, lb_id: str, tags: list[str]) -> None:
        """Replace a load balancer's tags (it goes ``PENDING_UPDATE``; 409 while it is
        ``PENDING_*`` already)."""
        url = self._url("load-balancer", f"v2/lbaas/loadbalancers/{lb_id}")
        self._send("PUT", url, {"loadbalancer": {"tags": tags}})

    def tag_floating_ip(self, fip_id: str, tag: str) -> None:
        """Add ``tag`` to a floating IP (Neutron's tag extension)."""
        self._send("PUT", self._url("network", f"v2.0/floatingips/{fip_id}/tags/{tag}"))

    def floating_ips_on_port(self, port_id: str) -> list[dict[str, Any]]:
        url = self._url("network", "v2.0/floatingips", {"port_id": port_id})
        _status, _headers, payload = self._send("GET", url)
        found: list[dict[str, Any]] = payload.get("floatingips", [])
        return found

    # --- read-only lookups of an OCCM load balancer, for `lb-reconciler adopt` ---------------

    def load_balancers_named(self, name: str) -> list[dict[str, Any]]:
        """The load balancers with exactly this name (Octavia does not make names unique)."""
        url = self._url("load-balancer", "v2/lbaas/loadbalancers", {"name": name})
        _status, _headers, payload = self._send("GET", url)
        return [lb for lb in payload.get("loadbalancers", []) if lb.get("name") == name]

    def listener(self, listener_id: str) -> dict[str, Any] | None:
        return self.show(LISTENERS, listener_id)

    def pool(self, pool_id: str) -> dict[str, Any] | None:
        return self.show(POOLS, pool_id)

    def pool_members(self, pool_id: str) -> list[dict[str, Any]]:
        url = self._url("load-balancer", f"v2/lbaas/pools/{pool_id}/members")
        _status, _headers, payload = self._send("GET", url)
        found: list[dict[str, Any]] = payload.get("members", [])
        return found

    def health_monitor(self, monitor_id: str) -> dict[str, Any] | None:
        return self.show(HEALTHMONITORS, monitor_id)

    def security_groups_named(self, name: str) -> list[dict[str, Any]]:
        url = self._url("network", "v2.0/security-groups", {"name": name})
        _status, _headers, payload = self._send("GET", url)
        return [g for g in payload.get("security_groups", []) if g.get("name") == name]


def _matches(item: dict[str, Any], field: str, value: str) -> bool:
    """Whether ``item[field]`` is ``value`` (a query value; ``loadbalancer_id`` is a list of
    load balancers in a listener)."""
    if field == "loadbalancer_id":
        return any(lb.get("id") == value for lb in item.get("loadbalancers") or ())
    return str(item.get(field)) == value

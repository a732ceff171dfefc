"""A converged fleet made from one Service, without the controller (scenario 3 ``--clone``).

2,000 Services created through the controller take over an hour on 2 cores (a ``pulumi up``
each; docs/performance.md), so the restart at that size starts from a fleet made here instead.
The controller converges one Service, the *template*; every other Service gets what the
controller would have made for it:

* its **cloud objects**, made through the Octavia and Neutron APIs with the template's writable
  fields (:data:`WRITABLE`): load balancer, listeners, pools, members, monitors, floating IP;
* its **Service**, created with a node port of its own, then given the template's finalizer,
  annotations and status;
* its **stack**: the template's checkpoint and tags, written into the backend.

Everything copied goes through one :class:`Rewrite`: the template's name, UID, object IDs and
addresses become the clone's, its node port the clone's. The stack's ``spec`` output (the applied
spec as canonical JSON) is rewritten like the rest, and the spec hash, which is the SHA-256 of
that text (``LoadBalancerSpec.spec_hash``), computed again (:func:`restamp`).

Nothing here decides for the controller: it computes each Service's spec itself after the
restart. A clone that differs from what it computes shows as an ``up`` in the scenario's stack
operations, and a clone that differs from the cloud as a suspect of the fleet comparison; both
are in the result. Work folders are not made: the engine makes a stack's when an operation
needs it, as after a pod restart on an empty volume.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from bench.baseline import connect
from bench.harness import CLUSTER, NAMESPACE, SERVICES, service_body
from reconciler.engine.plan import HASH_TAG, stack_name
from reconciler.engine.state.stacks import write_stack
from reconciler.engine.state.store import StateStore, open_state_store
from reconciler.model import naming

if TYPE_CHECKING:
    from bench.harness import Environment

__all__ = ["WRITABLE", "Rewrite", "TemplateObjects", "make_fleet", "restamp", "template_objects"]

KINDS = ("loadbalancers", "listeners", "pools", "members", "healthmonitors", "floatingips")

# What a create may carry, per kind (Octavia v2 and Neutron API references); the parent's ID is
# added by the cloner.
WRITABLE: Mapping[str, tuple[str, ...]] = {
    "loadbalancers": (
        "name",
        "description",
        "admin_state_up",
        "vip_subnet_id",
        "provider",
        "flavor_id",
        "availability_zone",
        "tags",
    ),
    "listeners": (
        "name",
        "description",
        "admin_state_up",
        "protocol",
        "protocol_port",
        "connection_limit",
        "default_tls_container_ref",
        "sni_container_refs",
        "insert_headers",
        "timeout_client_data",
        "timeout_member_connect",
        "timeout_member_data",
        "timeout_tcp_inspect",
        "allowed_cidrs",
        "tags",
    ),
    "pools": (
        "name",
        "description",
        "admin_state_up",
        "lb_algorithm",
        "protocol",
        "session_persistence",
        "tags",
    ),
    "members": (
        "name",
        "address",
        "protocol_port",
        "weight",
        "backup",
        "admin_state_up",
        "subnet_id",
        "monitor_address",
        "monitor_port",
        "tags",
    ),
    "healthmonitors": (
        "name",
        "type",
        "delay",
        "timeout",
        "max_retries",
        "max_retries_down",
        "http_method",
        "url_path",
        "expected_codes",
        "admin_state_up",
        "tags",
    ),
    "floatingips": ("floating_network_id", "description"),
}

# an ID or address is replaced only as a whole token, so 10.0.0.2 never touches 10.0.0.20
_WHOLE = r"(?<![0-9A-Za-z.]){}(?![0-9A-Za-z.])"


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


@dataclass(frozen=True)
class Rewrite:
    """The template's values to the clone's, applied through any JSON-like value.

    ``tokens``: IDs and addresses, replaced as whole tokens inside any string; ``names``: the
    Service's name, replaced anywhere inside a string (it is part of URNs and object names);
    ``ints``: the node port, replaced as a whole integer. A string holding canonical JSON (the
    ``spec`` output) is rewritten inside and written back canonically."""

    tokens: Mapping[str, str] = field(default_factory=dict)
    names: Mapping[str, str] = field(default_factory=dict)
    ints: Mapping[int, int] = field(default_factory=dict)

    def with_tokens(self, more: Mapping[str, str]) -> Rewrite:
        return Rewrite(tokens={**self.tokens, **more}, names=self.names, ints=self.ints)

    def apply(self, value: Any) -> Any:
        if isinstance(value, str):
            return self._text(value)
        if isinstance(value, bool):
            return value
        if isinstance(value, int):
            return self.ints.get(value, value)
        if isinstance(value, list):
            return [self.apply(v) for v in value]
        if isinstance(value, dict):
            return {k: self.apply(v) for k, v in value.items()}
        return value

    def _text(self, text: str) -> str:
        if text.startswith("{"):
            try:
                inner = json.loads(text)
            except ValueError:
                inner = None
            if isinstance(inner, dict) and _canonical(inner) == text:
                return _canonical(self.apply(inner))
        for old, new in self.names.items():
            text = text.replace(old, new)
        if self.tokens:
            pattern = "|".join(
                _WHOLE.format(re.escape(t)) for t in sorted(self.tokens, key=len, reverse=True)
            )
            text = re.sub(pattern, lambda m: self.tokens[m.group(0)], text)
        return text


def restamp(checkpoint: dict[str, Any]) -> str:
    """Set the stack's ``spec_hash`` output to the hash of its ``spec`` output (as the program
    outputs them), in place; the hash. ValueError when the checkpoint has no such outputs."""
    for resource in checkpoint["checkpoint"]["latest"]["resources"]:
        if resource.get("type") == "pulumi:pulumi:Stack":
            outputs = resource.get("outputs") or {}
            if not isinstance(outputs.get("spec"), str):
                break
            digest = hashlib.sha256(outputs["spec"].encode("ascii")).hexdigest()
            outputs["spec_hash"] = digest
            return digest
    raise ValueError("the checkpoint has no stack outputs spec and spec_hash")


@dataclass(frozen=True)
class TemplateObjects:
    """The template Service's cloud objects, by kind, as the cloud lists them."""

    by_kind: Mapping[str, list[dict[str, Any]]]

    def one(self, kind: str) -> dict[str, Any]:
        return self.by_kind[kind][0]


def template_objects(
    inventory: Mapping[str, list[dict[str, Any]]], lb_name: str
) -> TemplateObjects:
    """The objects of the load balancer named ``lb_name`` and its floating IP."""
    (lb,) = [o for o in inventory.get("loadbalancers", []) if o["name"] == lb_name]

    def of_lb(kind: str) -> list[dict[str, Any]]:
        return [
            o for o in inventory.get(kind, []) if lb["id"] in {x["id"] for x in o["loadbalancers"]}
        ]

    pools = of_lb("pools")
    pool_ids = {p["id"] for p in pools}
    member_ids = {m["id"] for p in pools for m in p["members"]}
    return TemplateObjects(
        {
            "loadbalancers": [lb],
            "listeners": of_lb("listeners"),
            "pools": pools,
            "members": [m for m in inventory.get("members", []) if m["id"] in member_ids],
            "healthmonitors": [
                h
                for h in inventory.get("healthmonitors", [])
                if {x["id"] for x in h["pools"]} & pool_ids
            ],
            "floatingips": [
                f for f in inventory.get("floatingips", []) if f["port_id"] == lb["vip_port_id"]
            ],
        }
    )


def body(kind: str, obj: Mapping[str, Any], rewrite: Rewrite) -> dict[str, Any]:
    """A create request's body for a copy of ``obj``: its writable fields that are set."""
    out = {k: obj[k] for k in WRITABLE[kind] if obj.get(k) not in (None, [], {})}
    result: dict[str, Any] = rewrite.apply(out)
    return result


class CloudCloner:
    """Makes a template's objects again through the APIs (an openstacksdk connection)."""

    def __init__(self, conn: Any, template: TemplateObjects) -> None:
        self.conn = conn
        self.template = template

    def _post(self, proxy: Any, path: str, key: str, payload: dict[str, Any]) -> dict[str, Any]:
        for _ in range(100):  # a load balancer busy with the last change answers 409
            response = proxy.post(path, json={key: payload})
            if response.status_code != 409:
                break
            time.sleep(0.05)
        if response.status_code not in (200, 201, 202):
            raise RuntimeError(f"POST {path}: HTTP {response.status_code} {response.text[:300]}")
        made: dict[str, Any] = response.json()[key]
        return made

    def clone(self, rewrite: Rewrite) -> Rewrite:
        """Every object of the template again, named by ``rewrite``; ``rewrite`` with the
        template's IDs and addresses mapped to the new objects'."""
        t, lb_api = self.template, self.conn.load_balancer
        tpl = t.one("loadbalancers")
        lb = self._post(
            lb_api, "/lbaas/loadbalancers", "loadbalancer", body("loadbalancers", tpl, rewrite)
        )
        rewrite = rewrite.with_tokens(
            {
                tpl["id"]: lb["id"],
                tpl["vip_port_id"]: lb["vip_port_id"],
                tpl["vip_address"]: lb["vip_address"],
            }
        )
        for listener in t.by_kind["listeners"]:
            payload = {**body("listeners", listener, rewrite), "loadbalancer_id": lb["id"]}
            made = self._post(lb_api, "/lbaas/listeners", "listener", payload)
            rewrite = rewrite.with_tokens({listener["id"]: made["id"]})
        for pool in t.by_kind["pools"]:
            parent = (
                {"listener_id": rewrite.tokens[pool["listeners"][0]["id"]]}
                if pool["listeners"]
                else {"loadbalancer_id": lb["id"]}
            )
            made = self._post(
                lb_api, "/lbaas/pools", "pool", {**body("pools", pool, rewrite), **parent}
            )
            rewrite = rewrite.with_tokens({pool["id"]: made["id"]})
            for member in t.by_kind["members"]:
                if member["id"] in {m["id"] for m in pool["members"]}:
                    path = f"/lbaas/pools/{made['id']}/members"
                    new = self._post(lb_api, path, "member", body("members", member, rewrite))
                    rewrite = rewrite.with_tokens({member["id"]: new["id"]})
        for monitor in t.by_kind["healthmonitors"]:
            payload = {**body("healthmonitors", monitor, rewrite)}
            payload["pool_id"] = rewrite.tokens[monitor["pools"][0]["id"]]
            made = self._post(lb_api, "/lbaas/healthmonitors", "healthmonitor", payload)
            rewrite = rewrite.with_tokens({monitor["id"]: made["id"]})
        for fip in t.by_kind["floatingips"]:
            payload = {**body("floatingips", fip, rewrite), "port_id": lb["vip_port_id"]}
            made = self._post(self.conn.network, "/floatingips", "floatingip", payload)
            rewrite = rewrite.with_tokens(
                {fip["id"]: made["id"], fip["floating_ip_address"]: made["floating_ip_address"]}
            )
        return rewrite


def clone_stack(
    store: StateStore,
    *,
    checkpoint: Mapping[str, Any],
    tags: Mapping[str, str],
    stack: str,
    rewrite: Rewrite,
) -> str:
    """Write the stack ``stack``: the template's checkpoint and tags through ``rewrite``, the
    spec hash computed again; the hash."""
    document = rewrite.apply(copy.deepcopy(dict(checkpoint)))
    digest = restamp(document)
    named = str(document["checkpoint"]["stack"])  # organization/<project>/<stack>
    if named.rpartition("/")[2] != stack:
        raise ValueError(f"the rewritten checkpoint is of {named}, not {stack}")
    write_stack(store, stack, document, {**rewrite.apply(dict(tags)), HASH_TAG: digest})
    return digest


NODE_PORTS = range(30000, 32768)  # kube-apiserver's default --service-node-port-range


def make_fleet(env: Environment, *, template: str, names: Sequence[str]) -> dict[str, Any]:
    """Clones of the converged Service ``template`` named ``names``, with the controller
    stopped; what was made and how long it took."""
    if env.controller is not None:
        raise RuntimeError("stop the controller before cloning its stacks")
    started = time.monotonic()
    svc = env.kube.get(f"{SERVICES}/{template}")
    (port,) = [p["nodePort"] for p in svc["spec"]["ports"]]
    uid = svc["metadata"]["uid"]
    lb_name = naming.lb_name(cluster_name=CLUSTER, namespace=NAMESPACE, name=template)
    objects = template_objects(env.inventory(), lb_name)
    url = env.demo.env.get("PULUMI_BACKEND_URL") or f"file://{env.demo.state}/backend"
    store = open_state_store(url, env=env.demo.env)
    if store is None:
        raise RuntimeError(f"cannot clone stacks into {url}: not a backend read here")
    name_of = {n: stack_name(cluster_name=CLUSTER, namespace=NAMESPACE, name=n) for n in names}
    tpl_stack = stack_name(cluster_name=CLUSTER, namespace=NAMESPACE, name=template)
    checkpoint, tags = store.checkpoint(tpl_stack), store.tags(tpl_stack)
    if checkpoint is None or not tags or tags.get(HASH_TAG) != restamp(copy.deepcopy(checkpoint)):
        raise RuntimeError(f"stack {tpl_stack}: its spec hash is not the hash of its spec output")
    free = iter(p for p in NODE_PORTS if p != port)
    cloner = CloudCloner(connect(env.emulator.topology()), objects)
    try:
        for name in names:
            clone_port = next(free)
            shape = service_body(name)
            shape["spec"]["ports"][0]["nodePort"] = clone_port
            made = env.kube.create(SERVICES, shape)
            rewrite = Rewrite(
                tokens={uid: made["metadata"]["uid"]},
                names={template: name},
                ints={port: clone_port},
            )
            rewrite = cloner.clone(rewrite)
            clone_stack(
                store, checkpoint=checkpoint, tags=tags, stack=name_of[name], rewrite=rewrite
            )
            meta = {k: svc["metadata"].get(k) for k in ("finalizers", "annotations")}
            env.kube.patch(f"{SERVICES}/{name}", rewrite.apply({"metadata": meta}))
            env.kube.patch(f"{SERVICES}/{name}/status", rewrite.apply({"status": svc["status"]}))
    finally:
        cloner.conn.close()
        store.close()
    seconds = time.monotonic() - started
    sample = sorted({names[0], names[-1]}) if names else []
    return {
        "template": template,
        "clones": len(names),
        "seconds": seconds,
        "previewed": preview(env, sample, backend_url=url),
    }


def preview(env: Environment, names: Sequence[str], *, backend_url: str) -> list[str]:
    """``lb-reconciler preview --refresh`` of these Services: the real engine, given each
    Service's spec as the controller builds it, reads its stack and the cloud and must find
    nothing to change (exit 0), or this raises with what it found. The names previewed."""
    if not names:
        return []
    items = [env.kube.get(f"{SERVICES}/{n}") for n in names]
    manifest = env.demo.folder / "clones.json"
    manifest.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    argv = [sys.executable, "-m", "reconciler.cli.main", "preview", "-f", str(manifest)]
    argv += ["--refresh", "--cloud-config", str(env.demo.cloud_conf())]
    argv += ["--state-dir", str(env.demo.state), "--backend-url", backend_url]
    argv += ["--cluster-name", CLUSTER, "--kubeconfig", str(env.plane.kubeconfig)]
    done = subprocess.run(
        argv, capture_output=True, text=True, env=env.demo.env, timeout=600, check=False
    )
    if done.returncode != 0:
        said = (done.stdout + done.stderr).strip()[-3000:]
        raise RuntimeError(
            f"lb-reconciler preview of clones {list(names)} exited {done.returncode}: {said}"
        )
    return list(names)

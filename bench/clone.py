"""A converged fleet made from one Service, without the controller (scenario 3 ``--clone``).

2,000 Services created through the controller take over an hour on 2 cores (a ``pulumi up``
each; docs/performance.md), so the restart at that size starts from a fleet made here instead.
The controller converges one Service, the *template*; every other Service gets what the
controller would have made for it:

* its **cloud objects**, made through the Octavia and Neutron APIs with the template's
  writable fields (:data:`bench.clone_plan.WRITABLE`): load balancer, listeners, pools,
  members, monitors, floating IP;
* its **Service**, created with a node port of its own, then given the template's finalizer,
  annotations and status;
* its **stack**: the template's checkpoint and tags, written into the backend.

Everything copied goes through one :class:`bench.clone_plan.Rewrite`: the template's name,
UID, object IDs and addresses become the clone's, its node port the clone's. The stack's
``spec`` output (the applied spec as canonical JSON) is rewritten like the rest, and the spec
hash, which is the SHA-256 of that text (``LoadBalancerSpec.spec_hash``), computed again
(:func:`bench.clone_plan.restamp`).

Nothing here decides for the controller. The first and the last clone are previewed with
``lb-reconciler preview --refresh`` (the real engine must find nothing to change:
:func:`preview`); after the restart the controller computes each Service's spec itself, so a
clone that differs shows as an ``up`` in the scenario's stack operations, and one that differs
from the cloud as a suspect of the fleet comparison; both are in the result. Work folders
are not made: the engine makes a stack's when an operation needs it, as after a pod restart on
an empty volume.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from bench.baseline import connect
from bench.clone_plan import Rewrite, TemplateObjects, body, restamp, template_objects
from bench.harness import CLUSTER, NAMESPACE, SERVICES, service_body
from reconciler.engine.plan import HASH_TAG, stack_name
from reconciler.engine.state.stacks import write_stack
from reconciler.engine.state.store import StateStore, open_state_store
from reconciler.model import naming

if TYPE_CHECKING:
    from bench.harness import Environment

__all__ = ["CloudCloner", "clone_stack", "make_fleet", "preview"]


class CloudCloner:
    """Makes a template's objects again through the APIs (an openstacksdk connection)."""

    def __init__(self, conn: Any, template: TemplateObjects) -> None:
        self.conn = conn
        self.template = template

    def _post(self, proxy: Any, path: str, key: str, payload: dict[str, Any]) -> dict[str, Any]:
        deadline, pause = time.monotonic() + 300, 0.05
        while True:  # a load balancer busy with the last change answers 409 (cloudlike: s)
            response = proxy.post(path, json={key: payload})
            if response.status_code != 409 or time.monotonic() > deadline:
                break
            time.sleep(pause)
            pause = min(pause * 2, 1.0)
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
    document = rewrite.apply(checkpoint)  # a new document: apply copies every container
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

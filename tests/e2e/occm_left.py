"""A Service as OCCM leaves it, in a real kube-apiserver and the emulator: the Service (with the
finalizer OCCM and this controller share), its load balancer made the OCCM way
(:func:`tests.occm.make`), the ``load-balancer-id`` annotation OCCM writes back and the status
with the floating IP. For the tests of ``adopt`` and ``preflight``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from reconciler.config import CloudConfig
from reconciler.controller.kubeapi import KubeApi
from reconciler.model import FINALIZER, build_spec
from reconciler.model.annotations import LOAD_BALANCER_ID
from tests import occm
from tests.builders import HTTP_PORTS, make_service


def service_as_occm_left_it(
    kube: KubeApi,
    conn: Any,
    topo: dict[str, Any],
    config: CloudConfig,
    *,
    namespace: str,
    name: str,
    cluster: str,
    lb_algorithm: str = "ROUND_ROBIN",
    annotate: bool = True,
    unserved: Sequence[int] = (),
) -> occm.OccmLoadBalancer:
    """The Service ``namespace/name`` (one TCP port 80) and what OCCM, run with
    ``--cluster-name cluster``, made for it with ``lb_algorithm``; without ``annotate``, no
    ``load-balancer-id`` annotation (as OCCM versions before it wrote one left it). The Service
    also has the TCP ports ``unserved``, for which OCCM's load balancer has no listener (a port
    added while OCCM was stopped, or whose listener OCCM failed to make)."""
    extra = [{"name": f"tcp-{p}", "port": p, "targetPort": p, "protocol": "TCP"} for p in unserved]
    body = make_service(name, finalizers=[FINALIZER], ports=[*HTTP_PORTS, *extra])
    svc = kube.create(f"/api/v1/namespaces/{namespace}/services", body)
    node_port = svc["spec"]["ports"][0]["nodePort"]
    nodes = kube.list("/api/v1/nodes")["items"]
    built = build_spec(service=svc, nodes=nodes, config=config, cluster_name=cluster)
    assert built.spec is not None, built.errors
    members = [(m.name, m.address) for m in built.spec.listeners[0].pool.members]
    made = occm.make(
        conn,
        topo,
        cluster=cluster,
        namespace=namespace,
        name=name,
        ports=[occm.Port("TCP", 80, node_port, monitor=False, lb_algorithm=lb_algorithm)],
        nodes=members,
    )
    path = f"/api/v1/namespaces/{namespace}/services/{name}"
    if annotate:
        kube.patch(path, {"metadata": {"annotations": {LOAD_BALANCER_ID: made.lb_id}}})
    ingress = [{"ip": made.fip_address, "ipMode": "VIP"}]
    kube.patch(path + "/status", {"status": {"loadBalancer": {"ingress": ingress}}})
    return made

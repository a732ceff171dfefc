"""The real kube-apiserver holds a LoadBalancer Service's deletion on a finalizer (KEP-980).

Create, watch and delete a Service through the `kubernetes` client: while the finalizer
`service.kubernetes.io/load-balancer-cleanup` is present, a delete only sets deletionTimestamp;
removing the finalizer lets the API server delete the object.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client, config, watch

from reconciler.local.plane import LocalControlPlane

FINALIZER = "service.kubernetes.io/load-balancer-cleanup"
NAMESPACE = "smoke"


@pytest.fixture
def core(control_plane: LocalControlPlane) -> Iterator[client.CoreV1Api]:
    api = client.ApiClient(
        config.new_client_from_config(str(control_plane.kubeconfig)).configuration
    )
    core = client.CoreV1Api(api)
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=NAMESPACE)))
    yield core
    api.close()


def _events(core: client.CoreV1Api, resource_version: str, out: queue.Queue[Any]) -> None:
    w = watch.Watch()
    for event in w.stream(
        core.list_namespaced_service,
        NAMESPACE,
        resource_version=resource_version,
        timeout_seconds=60,
    ):
        out.put((event["type"], event["object"]))
        if event["type"] == "DELETED":
            w.stop()


def _next(events: queue.Queue[Any], kind: str, deadline: float) -> Any:
    while True:
        remaining = deadline - time.monotonic()
        assert remaining > 0, f"no {kind} event before the deadline"
        etype, obj = events.get(timeout=remaining)
        if etype == kind:
            return obj


def test_finalizer_holds_deletion_until_removed(core: client.CoreV1Api) -> None:
    start_rv = core.list_namespaced_service(NAMESPACE).metadata.resource_version
    events: queue.Queue[Any] = queue.Queue()
    watcher = threading.Thread(target=_events, args=(core, start_rv, events), daemon=True)
    watcher.start()

    body = client.V1Service(
        metadata=client.V1ObjectMeta(name="example-service", finalizers=[FINALIZER]),
        spec=client.V1ServiceSpec(
            type="LoadBalancer",
            selector={"app": "example"},
            ports=[client.V1ServicePort(port=8765, target_port=9376)],
        ),
    )
    created = core.create_namespaced_service(NAMESPACE, body)
    assert created.spec.ports[0].node_port  # allocated by the real API server
    deadline = time.monotonic() + 30
    added = _next(events, "ADDED", deadline)
    assert added.metadata.uid == created.metadata.uid

    core.delete_namespaced_service("example-service", NAMESPACE)
    held = core.read_namespaced_service("example-service", NAMESPACE)
    assert held.metadata.deletion_timestamp is not None
    assert held.metadata.finalizers == [FINALIZER]
    modified = _next(events, "MODIFIED", deadline)
    assert modified.metadata.deletion_timestamp is not None

    core.patch_namespaced_service(
        "example-service",
        NAMESPACE,
        [{"op": "remove", "path": "/metadata/finalizers"}],
    )
    deleted = _next(events, "DELETED", deadline)
    assert deleted.metadata.uid == created.metadata.uid
    with pytest.raises(client.ApiException) as gone:
        core.read_namespaced_service("example-service", NAMESPACE)
    assert gone.value.status == 404
    watcher.join(timeout=10)

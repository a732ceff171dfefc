"""deploy/ against the real kube-apiserver: the ServiceAccount may do exactly what the controller
does and nothing more, and every manifest is valid for the API server (server-side dry run).

Everything the ServiceAccount does here, it does with its own TokenRequest token
(:func:`tests.e2e.rbac.service_account_kubeconfig`), never by impersonation: ``kubectl auth
can-i`` asks the API server about the token's identity, and the real calls go through
:class:`reconciler.controller.kubeapi.KubeApi` (and
:class:`reconciler.controller.events.EventRecorder`), the same code and the same merge patches the
controller uses.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from reconciler.cli import main as cli
from reconciler.cli import run as cmd_run
from reconciler.cli.common import backend_url
from reconciler.controller.events import EventRecorder
from reconciler.controller.kubeapi import KubeApi, KubeError
from reconciler.controller.kubeconfig import api_client
from reconciler.controller.sync_plan import Event
from reconciler.local.plane import LocalControlPlane
from reconciler.local.toolchain import Toolchain
from reconciler.model import FINALIZER
from tests.builders import HTTP_PORTS, make_service
from tests.e2e.rbac import (
    DEPLOY,
    NAME,
    NAMESPACE,
    install_rbac,
    kubectl,
    service_account_kubeconfig,
)

pytestmark = pytest.mark.e2e
SA = f"system:serviceaccount:{NAMESPACE}:{NAME}"
LEASES = "/apis/coordination.k8s.io/v1/namespaces/{ns}/leases"
LEASE = f"{LEASES.format(ns=NAMESPACE)}/{NAME}"
TEST_NS = "rbac-test"  # in the lists below: the fresh namespace the test Services live in

# (verb, resource, namespace) as `kubectl auth can-i` takes them: the resource may be
# "resource/name" and carry "--subresource=..."; namespace "" is all namespaces (or cluster scope).
ALLOWED = [
    ("list", "services", ""),
    ("watch", "services", ""),
    ("get", "services", TEST_NS),
    ("patch", "services", TEST_NS),
    ("patch", "services --subresource=status", TEST_NS),
    ("get", "nodes", ""),
    ("list", "nodes", ""),
    ("watch", "nodes", ""),
    ("create", "events", TEST_NS),
    ("patch", "events", TEST_NS),
    ("create", "leases.coordination.k8s.io", NAMESPACE),
    ("get", f"leases.coordination.k8s.io/{NAME}", NAMESPACE),
    ("patch", f"leases.coordination.k8s.io/{NAME}", NAMESPACE),
    ("get", "namespaces/kube-system", ""),
]
DENIED = [
    ("delete", "services", TEST_NS),
    ("create", "services", TEST_NS),
    ("update", "services", TEST_NS),
    ("update", "services --subresource=status", TEST_NS),
    ("list", "secrets", ""),
    ("watch", "secrets", ""),
    ("list", "secrets", NAMESPACE),
    ("get", "secrets/lb-reconciler-cloud-config", NAMESPACE),
    ("get", "secrets/lb-reconciler-state", NAMESPACE),
    ("patch", "nodes", ""),
    ("delete", "nodes", ""),
    ("create", "pods", TEST_NS),
    ("list", "pods", ""),
    ("delete", "events", TEST_NS),
    ("create", "events.events.k8s.io", TEST_NS),
    ("get", f"leases.coordination.k8s.io/{NAME}", "kube-system"),
    ("create", "leases.coordination.k8s.io", "kube-system"),
    ("get", "leases.coordination.k8s.io/other-lease", NAMESPACE),
    ("patch", "leases.coordination.k8s.io/other-lease", NAMESPACE),
    ("update", f"leases.coordination.k8s.io/{NAME}", NAMESPACE),
    ("delete", f"leases.coordination.k8s.io/{NAME}", NAMESPACE),
    ("create", f"serviceaccounts/{NAME} --subresource=token", NAMESPACE),
    ("create", "clusterroles.rbac.authorization.k8s.io", ""),
    ("get", "namespaces/default", ""),
    ("list", "namespaces", ""),
]


def forbidden(call: Any, *args: Any, **kwargs: Any) -> KubeError:
    """``call(...)`` fails with 403 Forbidden (not 404, not 409: authorization said no)."""
    with pytest.raises(KubeError) as caught:
        call(*args, **kwargs)
    assert caught.value.status == 403, caught.value
    assert SA in caught.value.message, caught.value
    return caught.value


def ignore_missing(call: Any, *args: Any) -> None:
    try:
        call(*args)
    except KubeError as exc:
        if not exc.not_found:
            raise


@pytest.fixture(scope="module")
def installed(control_plane: LocalControlPlane, toolchain: Toolchain) -> LocalControlPlane:
    kubectl_bin = toolchain.path("kubectl")
    install_rbac(kubectl=kubectl_bin, kubeconfig=control_plane.kubeconfig)
    install_rbac(kubectl=kubectl_bin, kubeconfig=control_plane.kubeconfig)  # idempotent
    return control_plane


@pytest.fixture(scope="module")
def sa_kubeconfig(installed: LocalControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return service_account_kubeconfig(
        kubeconfig=installed.kubeconfig,
        server=installed.server,
        ca_cert=installed.pki.ca_cert,
        out=tmp_path_factory.mktemp("sa") / "kubeconfig",
    )


@pytest.fixture(scope="module")
def admin(installed: LocalControlPlane) -> Iterator[KubeApi]:
    kube = KubeApi(api_client=api_client(kubeconfig=installed.kubeconfig))
    yield kube
    kube.close()


@pytest.fixture(scope="module")
def sa(sa_kubeconfig: Path) -> Iterator[KubeApi]:
    kube = KubeApi(api_client=api_client(kubeconfig=sa_kubeconfig))
    yield kube
    kube.close()


@pytest.fixture(scope="module")
def test_ns(admin: KubeApi) -> Iterator[str]:
    """A fresh namespace for this module's Services and Events (deleted afterwards)."""
    ns = f"{TEST_NS}-{uuid.uuid4().hex[:8]}"
    admin.create(
        "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
    )
    yield ns
    ignore_missing(lambda p: admin.request(method="DELETE", path=p), f"/api/v1/namespaces/{ns}")


@pytest.fixture
def service(admin: KubeApi, test_ns: str) -> Iterator[dict[str, Any]]:
    """A Service of type LoadBalancer, created by the admin (the controller never creates one)."""
    name = f"web-{uuid.uuid4().hex[:6]}"
    svc = admin.create(
        f"/api/v1/namespaces/{test_ns}/services", make_service(name, ports=HTTP_PORTS)
    )
    yield svc
    path = f"/api/v1/namespaces/{test_ns}/services/{name}"
    ignore_missing(admin.patch, path, {"metadata": {"finalizers": None}})
    ignore_missing(lambda p: admin.request(method="DELETE", path=p), path)


def where(ns: str, test_ns: str) -> list[str]:
    if not ns:
        return ["--all-namespaces"]
    return ["-n", test_ns if ns == TEST_NS else ns]


# -- kubectl auth can-i, asked with the ServiceAccount's own token ---------------------------------


def test_the_kubeconfig_authenticates_as_the_service_account_not_as_admin(
    sa_kubeconfig: Path, toolchain: Toolchain
) -> None:
    text = sa_kubeconfig.read_text()
    assert "token:" in text
    assert "client-certificate" not in text
    assert "client-key" not in text
    code, out = kubectl(
        toolchain, sa_kubeconfig, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"
    )
    assert code == 0, out
    assert out == SA


@pytest.mark.parametrize(
    ("verb", "resource", "ns", "answer"),
    [
        *(pytest.param(*case, (0, "yes"), id="-".join(("allowed", *case))) for case in ALLOWED),
        *(pytest.param(*case, (1, "no"), id="-".join(("denied", *case))) for case in DENIED),
    ],
)
def test_can_i_what_the_controller_does_and_nothing_more(
    sa_kubeconfig: Path,
    toolchain: Toolchain,
    test_ns: str,
    verb: str,
    resource: str,
    ns: str,
    answer: tuple[int, str],
) -> None:
    code, out = kubectl(
        toolchain, sa_kubeconfig, "auth", "can-i", verb, *resource.split(), *where(ns, test_ns)
    )
    assert (code, out.splitlines()[-1] if out else "") == answer, out


def test_impersonated_can_i_agrees(installed: LocalControlPlane, toolchain: Toolchain) -> None:
    """The admin's view (``--as``) of the same rules, for one allowed and one denied verb."""
    base = ("auth", "can-i", "--as", SA)
    assert kubectl(toolchain, installed.kubeconfig, *base, "watch", "services", "-A")[0] == 0
    assert kubectl(toolchain, installed.kubeconfig, *base, "list", "secrets", "-A")[0] == 1


# -- the real calls, with the ServiceAccount's token --------------------------------------------


def test_list_and_watch_services_in_all_namespaces(
    sa: KubeApi, admin: KubeApi, test_ns: str
) -> None:
    """reconciler/controller/watch.py: a paged list, then a watch from the list's
    resourceVersion."""
    listed = sa.list("/api/v1/services", query={"limit": 500})
    rv = str(listed["metadata"]["resourceVersion"])
    name = f"watched-{uuid.uuid4().hex[:6]}"
    admin.create(f"/api/v1/namespaces/{test_ns}/services", make_service(name, ports=HTTP_PORTS))
    seen: list[tuple[str, str]] = []
    for event in sa.stream(
        path="/api/v1/services",
        query={
            "watch": True,
            "resourceVersion": rv,
            "allowWatchBookmarks": True,
            "timeoutSeconds": 10,
        },
        timeout=20,
    ):
        meta = event.get("object", {}).get("metadata", {})
        seen.append((str(event.get("type")), f"{meta.get('namespace')}/{meta.get('name')}"))
        if seen[-1] == ("ADDED", f"{test_ns}/{name}"):
            break
    assert ("ADDED", f"{test_ns}/{name}") in seen, seen
    admin.request(method="DELETE", path=f"/api/v1/namespaces/{test_ns}/services/{name}")


def test_list_and_watch_nodes(sa: KubeApi) -> None:
    listed = sa.list("/api/v1/nodes", query={"limit": 500})
    assert listed["kind"] == "NodeList"
    started = time.monotonic()
    events = list(
        sa.stream(
            path="/api/v1/nodes",
            query={
                "watch": True,
                "resourceVersion": str(listed["metadata"]["resourceVersion"]),
                "allowWatchBookmarks": True,
                "timeoutSeconds": 1,
            },
            timeout=15,
        )
    )
    assert time.monotonic() - started < 15
    assert all(e.get("type") != "ERROR" for e in events), events


def test_get_and_merge_patch_a_service_and_its_status(
    sa: KubeApi, admin: KubeApi, service: dict[str, Any]
) -> None:
    """controller.py: finalizer and annotations (merge patch with resourceVersion), re-read after
    a 409, status.loadBalancer.ingress on the status subresource, finalizer removal."""
    meta = service["metadata"]
    path = f"/api/v1/namespaces/{meta['namespace']}/services/{meta['name']}"
    fresh = sa.get(path)
    assert fresh["metadata"]["uid"] == meta["uid"]
    patched = sa.patch(
        path,
        {
            "metadata": {
                "resourceVersion": fresh["metadata"]["resourceVersion"],
                "finalizers": [FINALIZER],
                "annotations": {"loadbalancer.openstack.org/load-balancer-id": "rbac-test-lb"},
            }
        },
    )
    assert patched["metadata"]["finalizers"] == [FINALIZER]
    stale = {"metadata": {"resourceVersion": meta["resourceVersion"], "finalizers": []}}
    # allowed, but stale: 409, which the controller answers with a GET and one retry
    with pytest.raises(KubeError) as conflict:
        sa.patch(path, stale)
    assert conflict.value.conflict, conflict.value
    sa.patch(path + "/status", {"status": {"loadBalancer": {"ingress": [{"ip": "203.0.113.7"}]}}})
    seen = admin.get(path)
    assert [i["ip"] for i in seen["status"]["loadBalancer"]["ingress"]] == ["203.0.113.7"]
    assert seen["metadata"]["annotations"]["loadbalancer.openstack.org/load-balancer-id"] == (
        "rbac-test-lb"
    )
    cleared = sa.patch(path + "/status", {"status": {"loadBalancer": {"ingress": None}}})
    assert not cleared["status"]["loadBalancer"].get("ingress")
    sa.patch(
        path,
        {"metadata": {"resourceVersion": cleared["metadata"]["resourceVersion"], "finalizers": []}},
    )
    assert not admin.get(path)["metadata"].get("finalizers")


def test_event_recorder_creates_then_patches_an_event(
    sa: KubeApi, admin: KubeApi, service: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    """events.py: a new Event is POSTed; its repeat merge-patches count and lastTimestamp. The
    recorder never raises (it logs), so the Event as the admin reads it is the evidence."""
    caplog.set_level(logging.WARNING, logger="reconciler.controller.events")
    recorder = EventRecorder(kube=sa, instance="rbac-test")
    event = Event("Normal", "EnsuringLoadBalancer", "Ensuring load balancer (rbac test)")
    recorder.record(service, event)
    recorder.record(service, event)
    ns, name = service["metadata"]["namespace"], service["metadata"]["name"]
    events = admin.list(
        f"/api/v1/namespaces/{ns}/events",
        query={"fieldSelector": f"involvedObject.name={name}"},
    )["items"]
    assert [(e["reason"], e["count"]) for e in events] == [("EnsuringLoadBalancer", 2)], caplog.text
    assert "event not recorded" not in caplog.text


def test_leader_election_lease_create_get_patch(sa: KubeApi, admin: KubeApi) -> None:
    """lease.py: GET (404 the first time), POST the Lease, then merge patches with
    resourceVersion to renew and to release it."""
    ignore_missing(lambda p: admin.request(method="DELETE", path=p), LEASE)
    with pytest.raises(KubeError) as absent:
        sa.get(LEASE)
    assert absent.value.not_found, absent.value  # 404, not 403: get is allowed
    stamp = "2026-01-01T00:00:00.000000Z"
    spec = {
        "holderIdentity": "rbac-test",
        "leaseDurationSeconds": 15,
        "acquireTime": stamp,
        "renewTime": stamp,
        "leaseTransitions": 0,
    }
    created = sa.create(
        LEASES.format(ns=NAMESPACE),
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": NAME},
            "spec": spec,
        },
    )
    got = sa.get(LEASE)
    assert got["metadata"]["uid"] == created["metadata"]["uid"]
    renewed = sa.patch(
        LEASE,
        {
            "metadata": {"resourceVersion": got["metadata"]["resourceVersion"]},
            "spec": {"renewTime": "2026-01-01T00:00:02.000000Z"},
        },
    )
    assert renewed["spec"]["renewTime"] == "2026-01-01T00:00:02.000000Z"
    released = sa.patch(
        LEASE,
        {
            "metadata": {"resourceVersion": renewed["metadata"]["resourceVersion"]},
            "spec": {"holderIdentity": "", "leaseDurationSeconds": 1},
        },
    )
    assert admin.get(LEASE)["spec"].get("holderIdentity", "") == ""
    assert released["spec"]["leaseDurationSeconds"] == 1


def test_what_the_controller_must_not_do_is_forbidden(
    sa: KubeApi, service: dict[str, Any], test_ns: str
) -> None:
    name = service["metadata"]["name"]
    svc_path = f"/api/v1/namespaces/{test_ns}/services/{name}"
    # Services: no delete, no create, no PUT of a whole object
    forbidden(sa.request, method="DELETE", path=svc_path)
    forbidden(
        sa.create,
        f"/api/v1/namespaces/{test_ns}/services",
        make_service("not-mine", ports=HTTP_PORTS),
    )
    forbidden(sa.request, method="PUT", path=svc_path, body=service)
    forbidden(sa.request, method="PUT", path=svc_path + "/status", body=service)
    # Secrets: cloud.conf is a mounted file, never read through the API
    forbidden(sa.list, "/api/v1/secrets")
    forbidden(sa.list, f"/api/v1/namespaces/{NAMESPACE}/secrets")
    forbidden(sa.get, f"/api/v1/namespaces/{NAMESPACE}/secrets/lb-reconciler-cloud-config")
    forbidden(sa.get, f"/api/v1/namespaces/{NAMESPACE}/secrets/lb-reconciler-state")
    # Nodes: read only
    forbidden(sa.patch, "/api/v1/nodes/any-node", {"metadata": {"labels": {"x": "y"}}})
    forbidden(sa.request, method="DELETE", path="/api/v1/nodes/any-node")
    # Pods: nothing
    forbidden(
        sa.create,
        f"/api/v1/namespaces/{test_ns}/pods",
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "not-mine"},
            "spec": {"containers": [{"name": "c", "image": "example.invalid/x"}]},
        },
    )
    forbidden(sa.list, "/api/v1/pods")
    # Events: no delete; events.k8s.io is not used
    forbidden(sa.request, method="DELETE", path=f"/api/v1/namespaces/{test_ns}/events/any")
    forbidden(
        sa.create,
        f"/apis/events.k8s.io/v1/namespaces/{test_ns}/events",
        {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "x"}},
    )
    # Leases: only the one named lb-reconciler, only in lb-reconciler, never deleted or PUT
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": NAME}}
    forbidden(sa.get, f"{LEASES.format(ns='kube-system')}/{NAME}")
    forbidden(sa.create, LEASES.format(ns=test_ns), lease)
    forbidden(sa.get, f"{LEASES.format(ns=NAMESPACE)}/other-lease")
    forbidden(sa.patch, f"{LEASES.format(ns=NAMESPACE)}/other-lease", {"spec": {}})
    forbidden(sa.request, method="DELETE", path=LEASE)
    forbidden(sa.request, method="PUT", path=LEASE, body=lease)
    # no minting tokens, no escalating
    forbidden(
        sa.create,
        f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/{NAME}/token",
        {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}},
    )
    forbidden(
        sa.create,
        "/apis/rbac.authorization.k8s.io/v1/clusterroles",
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": "not-mine"},
            "rules": [],
        },
    )


# -- every manifest in deploy/ against the API server's schema --------------------------------

SHARED = ["rbac.yaml", "cloud-config-secret.example.yaml", "state-secret.example.yaml", ""]
"""The default install: ``kubectl apply -f deploy/rbac.yaml -f deploy/`` (deploy/README.md)."""
FILE_BACKEND = [
    "rbac.yaml",
    "cloud-config-secret.example.yaml",
    "state-secret.example.yaml",
    "file-backend",
]
"""The single-replica file:// variant's install command (deploy/README.md)."""


def files_args(names: list[str]) -> list[str]:
    return [arg for name in names for arg in ("-f", str(DEPLOY / name))]


def test_deploy_holds_the_two_installs_and_nothing_else() -> None:
    assert sorted(str(p.relative_to(DEPLOY)) for p in DEPLOY.rglob("*.yaml")) == [
        "cloud-config-secret.example.yaml",
        "deployment.yaml",
        "file-backend/deployment.yaml",
        "file-backend/pvc.yaml",
        "pdb.yaml",
        "rbac.yaml",
        "state-secret.example.yaml",
    ]


@pytest.mark.parametrize(
    ("folder", "expected"),
    [
        pytest.param(
            DEPLOY,
            [
                "deployment.apps/lb-reconciler",
                "poddisruptionbudget.policy/lb-reconciler",
                "secret/lb-reconciler-cloud-config",
                "secret/lb-reconciler-state",
                "clusterrole.rbac.authorization.k8s.io/lb-reconciler",
                "role.rbac.authorization.k8s.io/lb-reconciler-leader-election",
            ],
            id="deploy",
        ),
        pytest.param(
            DEPLOY / "file-backend",
            ["deployment.apps/lb-reconciler", "persistentvolumeclaim/lb-reconciler-state"],
            id="deploy-file-backend",
        ),
    ],
)
def test_every_manifest_is_valid_for_the_api_server(
    installed: LocalControlPlane, toolchain: Toolchain, folder: Path, expected: list[str]
) -> None:
    """A server-side dry run of every file of the folder, with strict field validation (an
    unknown field anywhere fails) and the Namespace's restricted Pod Security enforced: any
    error, and any warning, fails."""
    apply = ["apply", "--dry-run=server", "--validate=strict", "-f", str(folder)]
    code, out = kubectl(toolchain, installed.kubeconfig, *apply)
    assert code == 0, out
    for name in expected:
        assert f"{name} " in out, out
    lines = out.splitlines()
    assert lines, out
    assert all(line.endswith("(server dry run)") for line in lines), out  # no warning


def test_the_readme_install_commands_work_on_a_new_cluster(
    toolchain: Toolchain, tmp_path: Path
) -> None:
    """deploy/README.md's commands, for real, on an API server that has never seen deploy/: the
    single-replica file:// variant, then the move to the shared backend (the default), then
    back; the Namespace exists before the namespaced objects each time."""
    with LocalControlPlane.start(toolchain=toolchain, folder=tmp_path / "plane") as plane:

        def deployment() -> dict[str, Any]:
            code, out = kubectl(
                toolchain,
                plane.kubeconfig,
                *("-n", NAMESPACE, "get", "deployment/lb-reconciler", "-o", "yaml"),
            )
            assert code == 0, out
            found: dict[str, Any] = yaml.safe_load(out)
            return found

        for install, replicas, strategy in (
            (FILE_BACKEND, 1, "Recreate"),
            (SHARED, 2, "RollingUpdate"),
            (FILE_BACKEND, 1, "Recreate"),
        ):
            code, out = kubectl(toolchain, plane.kubeconfig, "apply", *files_args(install))
            assert code == 0, out
            assert "Warning" not in out, out
            spec = deployment()["spec"]
            assert (spec["replicas"], spec["strategy"]["type"]) == (replicas, strategy)
        code, out = kubectl(
            toolchain,
            plane.kubeconfig,
            "-n",
            NAMESPACE,
            "get",
            "deployment/lb-reconciler",
            "pvc/lb-reconciler-state",
            "secret/lb-reconciler-cloud-config",
            "secret/lb-reconciler-state",
            "serviceaccount/lb-reconciler",
            "role/lb-reconciler-leader-election",
            "-o",
            "name",
        )
        assert code == 0, out
        assert len(out.splitlines()) == 6, out


def _deployment(path: Path) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """The Deployment of ``path``, its Pod spec, its one container."""
    deployment = yaml.safe_load(path.read_text())
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    return deployment, pod, container


def _secret_refs(container: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        e["name"]: e["valueFrom"]["secretKeyRef"]
        for e in container["env"]
        if "secretKeyRef" in e.get("valueFrom", {})
    }


@pytest.mark.parametrize(
    "path", [DEPLOY / "deployment.yaml", DEPLOY / "file-backend/deployment.yaml"]
)
def test_the_deployment_runs_the_cli_with_flags_it_has(path: Path) -> None:
    """The Deployment's command line parses with ``lb-reconciler``'s own parser, and its probes
    and ports point at the address the process serves /healthz and /readyz on."""
    deployment, pod, container = _deployment(path)
    assert container["command"] == ["lb-reconciler"]
    args = cli.build_parser().parse_args(container["args"])
    assert args.func is cmd_run.cmd_run
    assert args.leader_elect
    assert args.leader_elect_namespace == deployment["metadata"]["namespace"] == NAMESPACE
    assert args.leader_elect_name == NAME
    assert args.cloud_config == "/etc/lb-reconciler/cloud.conf"
    assert str(args.state_dir) == "/var/lib/lb-reconciler"
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    assert mounts["/etc/lb-reconciler"] == "cloud-config"
    assert mounts["/var/lib/lb-reconciler"] == "state"
    port = int(args.http_address.rsplit(":", 1)[1])
    assert container["ports"] == [{"name": "http", "containerPort": port}]
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    assert pod["serviceAccountName"] == NAME
    refs = _secret_refs(container)
    assert refs["PULUMI_CONFIG_PASSPHRASE"] == {"name": "lb-reconciler-state", "key": "passphrase"}


def test_the_default_deployment_takes_its_backend_from_the_secret_and_shares_no_volume() -> None:
    deployment, pod, container = _deployment(DEPLOY / "deployment.yaml")
    assert deployment["spec"]["replicas"] == 2
    assert deployment["spec"]["strategy"]["rollingUpdate"] == {"maxSurge": 1, "maxUnavailable": 0}
    refs = _secret_refs(container)
    assert refs["PULUMI_BACKEND_URL"] == {"name": "lb-reconciler-state", "key": "backend-url"}
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):  # s3:// only
        assert refs[key] == {"name": "lb-reconciler-state", "key": key, "optional": True}
    assert not any("persistentVolumeClaim" in v for v in pod["volumes"])
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["state"] == {"name": "state", "emptyDir": {}}
    # every key the Deployment reads is in the example Secret, and its URL is one run takes
    secret = yaml.safe_load((DEPLOY / "state-secret.example.yaml").read_text())
    assert secret["metadata"] == {"name": "lb-reconciler-state", "namespace": NAMESPACE}
    assert {r["key"] for r in refs.values() if r["name"] == "lb-reconciler-state"} <= set(
        secret["stringData"]
    )
    url = secret["stringData"]["backend-url"]
    assert backend_url(None, {"PULUMI_BACKEND_URL": url}) == url
    assert not url.startswith("file://")
    cloud = yaml.safe_load((DEPLOY / "cloud-config-secret.example.yaml").read_text())
    assert set(cloud["stringData"]) == {"cloud.conf"}  # the passphrase moved to the state Secret


def test_the_file_backend_variant_is_one_pod_on_a_read_write_once_volume() -> None:
    deployment, pod, container = _deployment(DEPLOY / "file-backend/deployment.yaml")
    assert deployment["spec"]["replicas"] == 1
    assert deployment["spec"]["strategy"] == {"type": "Recreate"}
    assert "PULUMI_BACKEND_URL" not in {e["name"] for e in container["env"]}
    args = cli.build_parser().parse_args(container["args"])
    assert args.backend_url is None  # file://<state-dir>/backend, on the volume
    volumes = {v["name"]: v for v in pod["volumes"]}
    claim = volumes["state"]["persistentVolumeClaim"]["claimName"]
    pvc = yaml.safe_load((DEPLOY / "file-backend/pvc.yaml").read_text())
    assert (pvc["metadata"]["name"], pvc["metadata"]["namespace"]) == (claim, NAMESPACE)
    # the only record of the load balancers: helm uninstall keeps it
    assert pvc["metadata"]["annotations"] == {"helm.sh/resource-policy": "keep"}
    assert pvc["spec"]["accessModes"] == ["ReadWriteOnce"]

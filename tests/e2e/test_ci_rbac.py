"""examples/ci/rbac.yaml against the real kube-apiserver: CI's kubeconfig, made with the commands
written in the file's header, reads Services and Nodes and can do nothing else.

The commands run as written (bash, the toolchain's kubectl, the admin's kubeconfig as a cluster
admin's): ``kubectl apply``, ``kubectl create token``, the ``kubectl config`` lines that write
``ci.kubeconfig``. What the kubeconfig may do is asked of the API server with its own token
(``kubectl auth can-i --list``) and tried with real calls through
:class:`reconciler.controller.kubeapi.KubeApi`.
"""

from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from reconciler.controller.kubeapi import KubeApi, KubeError
from reconciler.controller.kubeconfig import api_client
from reconciler.local.plane import LocalControlPlane
from reconciler.local.toolchain import Toolchain
from tests.builders import HTTP_PORTS, make_service
from tests.e2e.rbac import kubectl

pytestmark = pytest.mark.e2e

RBAC = Path(__file__).resolve().parents[2] / "examples" / "ci" / "rbac.yaml"
NAMESPACE, NAME = "lb-reconciler", "lb-reconciler-ci"
SA = f"system:serviceaccount:{NAMESPACE}:{NAME}"
# what every authenticated identity may do (system:basic-user): ask about itself
SELF_REVIEWS = {
    "selfsubjectreviews.authentication.k8s.io",
    "selfsubjectaccessreviews.authorization.k8s.io",
    "selfsubjectrulesreviews.authorization.k8s.io",
}


def header_commands() -> list[str]:
    """The shell commands of the file's header: the indented comment lines after "Make CI's
    kubeconfig", up to the first comment line that is not indented."""
    lines = RBAC.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("# Make CI's kubeconfig"))
    commands: list[str] = []
    for line in lines[start + 1 :]:
        if line.startswith("#   "):
            commands.append(line[4:].split("    #", 1)[0].rstrip())
        elif commands and line != "#":
            break
    return commands


@pytest.fixture(scope="module")
def admin(control_plane: LocalControlPlane) -> Iterator[KubeApi]:
    kube = KubeApi(api_client=api_client(kubeconfig=control_plane.kubeconfig))
    yield kube
    kube.close()


@pytest.fixture(scope="module")
def ci_kubeconfig(
    control_plane: LocalControlPlane,
    toolchain: Toolchain,
    admin: KubeApi,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Path]:
    """``ci.kubeconfig`` as the header's commands make it, in a folder of its own; the file's
    objects are deleted afterwards (the namespace, the controller's, is made if missing and
    kept)."""
    try:
        admin.create("/api/v1/namespaces", {"metadata": {"name": NAMESPACE}})
    except KubeError as exc:
        if not exc.conflict:
            raise
    folder = tmp_path_factory.mktemp("ci-rbac")
    script = "\n".join(["set -euo pipefail", *header_commands()])
    script = script.replace("examples/ci/rbac.yaml", str(RBAC))
    kubectl = toolchain.path("kubectl")
    env = {
        **os.environ,
        "PATH": f"{kubectl.parent}{os.pathsep}{os.environ['PATH']}",
        "KUBECONFIG": str(control_plane.kubeconfig),
    }
    done = subprocess.run(
        ["bash", "-c", script],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, f"{script}\n{done.stdout}{done.stderr}"
    yield folder / "ci.kubeconfig"
    subprocess.run(
        [str(kubectl), "--kubeconfig", str(control_plane.kubeconfig), "delete", "-f", str(RBAC)],
        capture_output=True,
        timeout=120,
        check=True,
    )


def test_the_header_makes_a_kubeconfig_of_the_service_account(
    ci_kubeconfig: Path, toolchain: Toolchain
) -> None:
    assert header_commands()[0] == "kubectl apply -f examples/ci/rbac.yaml"
    text = ci_kubeconfig.read_text()
    assert "token: " in text
    assert "certificate-authority-data: " in text
    assert "client-key" not in text
    code, out = kubectl(
        toolchain, ci_kubeconfig, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"
    )
    assert (code, out) == (0, SA)


def test_it_may_get_and_list_services_and_nodes_and_nothing_else(
    ci_kubeconfig: Path, toolchain: Toolchain
) -> None:
    """The API server's own list of what the token may do (a SelfSubjectRulesReview: the
    cluster-wide rules and the namespace's), in the controller's namespace (where its Secrets
    are) and in another."""
    for ns in (NAMESPACE, "default"):
        code, out = kubectl(toolchain, ci_kubeconfig, "auth", "can-i", "--list", "-n", ns)
        assert code == 0, out
        rules: dict[str, str] = {}
        for line in out.splitlines()[1:]:
            resource, _, rest = line.partition(" ")
            verbs = rest.rsplit("[", 1)[-1].rstrip("]").strip()
            if resource and resource not in SELF_REVIEWS:
                rules[resource] = verbs
        assert rules == {"services": "get list", "nodes": "get list"}, out


def test_it_reads_services_and_nodes_and_is_refused_the_rest(
    ci_kubeconfig: Path, admin: KubeApi
) -> None:
    ns = f"ci-rbac-{uuid.uuid4().hex[:8]}"
    admin.create("/api/v1/namespaces", {"metadata": {"name": ns}})
    ci = KubeApi(api_client=api_client(kubeconfig=ci_kubeconfig))
    try:
        admin.create(f"/api/v1/namespaces/{ns}/services", make_service("web", ports=HTTP_PORTS))
        listed = ci.list("/api/v1/services")
        assert f"{ns}/web" in {
            f"{s['metadata']['namespace']}/{s['metadata']['name']}" for s in listed["items"]
        }
        assert ci.get(f"/api/v1/namespaces/{ns}/services/web")["spec"]["type"] == "LoadBalancer"
        assert ci.list("/api/v1/nodes")["kind"] == "NodeList"
        service = f"/api/v1/namespaces/{ns}/services/web"
        refused = [
            lambda: ci.list("/api/v1/secrets"),
            lambda: ci.list(f"/api/v1/namespaces/{NAMESPACE}/secrets"),
            lambda: ci.get(f"/api/v1/namespaces/{NAMESPACE}/secrets/lb-reconciler-state"),
            lambda: ci.create(
                f"/api/v1/namespaces/{ns}/secrets", {"metadata": {"name": "s"}, "data": {}}
            ),
            lambda: ci.create(f"/api/v1/namespaces/{ns}/services", make_service("new")),
            lambda: ci.patch(service, {"metadata": {"annotations": {"x": "y"}}}),
            lambda: ci.patch(f"{service}/status", {"status": {"loadBalancer": {}}}),
            lambda: ci.request(method="DELETE", path=service),
            lambda: ci.patch("/api/v1/nodes/any", {"metadata": {"labels": {"x": "y"}}}),
            lambda: ci.list("/api/v1/services", query={"watch": True, "timeoutSeconds": 1}),
            lambda: ci.list("/api/v1/pods"),
            lambda: ci.create(
                f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/{NAME}/token",
                {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}},
            ),
        ]
        for call in refused:
            with pytest.raises(KubeError) as caught:
                call()
            assert caught.value.status == 403, caught.value
            assert SA in caught.value.message, caught.value
    finally:
        ci.close()
        admin.request(method="DELETE", path=f"/api/v1/namespaces/{ns}")

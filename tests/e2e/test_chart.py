"""The Helm chart (charts/lb-reconciler) with real helm (built by tools/build.sh from Go modules)
against the real kube-apiserver:

* ``helm lint --strict`` of the default values and of every option turned on;
* ``clusterName`` is required, and so is a cloud.conf: each missing one fails the rendering
  with a message naming it;
* ``helm template`` with every option on, applied with ``kubectl apply --dry-run=server
  --validate=strict`` (the Prometheus Operator's two kinds from minimal CRDs): every object is
  accepted, with no warning;
* ``helm install``, ``helm upgrade`` with a changed value, ``helm uninstall``: exactly the
  expected objects exist after each, and none after the uninstall but the file backend's volume
  (kept: the only record of the load balancers);
* deploy/ is the chart's rendering (deploy/render.sh): one source.
"""

from __future__ import annotations

import filecmp
import json
import os
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from reconciler.local.plane import LocalControlPlane
from reconciler.toolchain import REPO_ROOT, Toolchain

pytestmark = pytest.mark.e2e

CHART = REPO_ROOT / "charts" / "lb-reconciler"
EVERYTHING = [
    "clusterName=prod",
    "serviceMonitor.enabled=true",
    "prometheusRule.enabled=true",
    "grafanaDashboard.enabled=true",
    "priorityClassName=system-cluster-critical",
    "nodeSelector.node-role\\.kubernetes\\.io/control-plane=",
    "tolerations[0].key=node-role.kubernetes.io/control-plane",
    "tolerations[0].operator=Exists",
    "tolerations[0].effect=NoSchedule",
    "cloudConfig.inline=[Global]\nauth-url = https://keystone.example:5000/v3",
    "namespace.create=true",
]
# what a Prometheus Operator installs, reduced to what the API server needs to accept the objects
CRDS = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: servicemonitors.monitoring.coreos.com}
spec:
  group: monitoring.coreos.com
  scope: Namespaced
  names:
    kind: ServiceMonitor
    listKind: ServiceMonitorList
    plural: servicemonitors
    singular: servicemonitor
  versions:
    - name: v1
      served: true
      storage: true
      schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: prometheusrules.monitoring.coreos.com}
spec:
  group: monitoring.coreos.com
  scope: Namespaced
  names:
    kind: PrometheusRule
    listKind: PrometheusRuleList
    plural: prometheusrules
    singular: prometheusrule
  versions:
    - name: v1
      served: true
      storage: true
      schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
"""


class Tools:
    def __init__(self, toolchain: Toolchain, plane: LocalControlPlane, home: Path) -> None:
        self.toolchain, self.plane = toolchain, plane
        # helm's own folders (config, cache, data) per test: nothing of the user's
        self.env = {
            **os.environ,
            "KUBECONFIG": str(plane.kubeconfig),
            "HELM_CONFIG_HOME": str(home / "config"),
            "HELM_CACHE_HOME": str(home / "cache"),
            "HELM_DATA_HOME": str(home / "data"),
        }

    def run(
        self, tool: str, *args: str, stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.toolchain.path(tool)), *args],
            input=stdin,
            capture_output=True,
            text=True,
            env=self.env,
            timeout=180,
            check=False,
        )

    def ok(self, tool: str, *args: str, stdin: str | None = None) -> str:
        done = self.run(tool, *args, stdin=stdin)
        assert done.returncode == 0, f"{tool} {' '.join(args)}:\n{done.stdout}\n{done.stderr}"
        return done.stdout


@pytest.fixture
def tools(toolchain: Toolchain, control_plane: LocalControlPlane, tmp_path: Path) -> Tools:
    return Tools(toolchain, control_plane, tmp_path / "helm")


def sets(values: list[str]) -> list[str]:
    return [arg for value in values for arg in ("--set", value)]


def test_lint_passes_for_the_defaults_and_with_everything_on(tools: Tools) -> None:
    for values in (["clusterName=prod"], EVERYTHING, ["clusterName=prod", "state.backend=file"]):
        out = tools.ok("helm", "lint", "--strict", str(CHART), *sets(values))
        assert "0 chart(s) failed" in out, out


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ([], "clusterName is required"),
        (["clusterName=prod", "cloudConfig.existingSecret="], "cloud.conf"),
        (["clusterName=prod", "state.backend=nfs"], "/state/backend"),
        (["clusterName=two words"], "clusterName"),
    ],
)
def test_a_missing_or_wrong_value_fails_naming_it(
    tools: Tools, values: list[str], message: str
) -> None:
    done = tools.run("helm", "template", "r", str(CHART), *sets(values))
    assert done.returncode != 0
    assert message in done.stderr, done.stderr


def test_every_object_with_everything_on_is_valid_for_the_api_server(tools: Tools) -> None:
    tools.ok("kubectl", "apply", "-f", "-", stdin=CRDS)
    tools.ok(
        "kubectl",
        "wait",
        "--for=condition=Established",
        "--timeout=60s",
        "crd/servicemonitors.monitoring.coreos.com",
        "crd/prometheusrules.monitoring.coreos.com",
    )
    ns = f"chart-{uuid.uuid4().hex[:6]}"
    tools.ok("kubectl", "create", "namespace", ns)  # a dry run creates no namespace for the rest
    for values in (EVERYTHING, [*EVERYTHING, "state.backend=file"]):
        rendered = tools.ok("helm", "template", "r", str(CHART), "-n", ns, *sets(values))
        kinds = {d["kind"] for d in yaml.safe_load_all(rendered) if d}
        assert {
            "Deployment",
            "ServiceAccount",
            "ClusterRole",
            "Role",
            "Secret",
            "ServiceMonitor",
            "PrometheusRule",
            "ConfigMap",  # the Grafana dashboard
            "Namespace",
        } <= kinds, kinds
        applied = tools.ok(
            "kubectl", "apply", "--dry-run=server", "--validate=strict", "-f", "-", stdin=rendered
        )
        lines = applied.splitlines()
        assert len(lines) == len([d for d in yaml.safe_load_all(rendered) if d]), applied
        assert all(line.endswith("(server dry run)") for line in lines), applied  # no warning
    tools.ok("kubectl", "delete", "namespace", ns, "--wait=false")


def release_objects(tools: Tools, ns: str, release: str) -> set[str]:
    """Every object of the release, by its instance label: namespaced ones in ``ns`` and the
    cluster-scoped RBAC."""
    selector = f"app.kubernetes.io/instance={release}"
    kinds = "deployment,serviceaccount,secret,role,rolebinding,pdb,pvc,service,configmap"
    found = tools.ok("kubectl", "-n", ns, "get", kinds, "-l", selector, "-o", "name")
    found += tools.ok(
        "kubectl", "get", "clusterrole,clusterrolebinding", "-l", selector, "-o", "name"
    )
    return set(found.split())


def test_install_upgrade_uninstall_leave_exactly_the_expected_objects(tools: Tools) -> None:
    ns, release = f"chart-{uuid.uuid4().hex[:6]}", f"r{uuid.uuid4().hex[:6]}"
    name = f"{release}-lb-reconciler"
    base = ["clusterName=prod", "cloudConfig.inline=[Global]\nauth-url = https://k.example/v3"]
    tools.ok("helm", "install", release, str(CHART), "-n", ns, "--create-namespace", *sets(base))
    expected = {
        f"deployment.apps/{name}",
        f"serviceaccount/{name}",
        f"secret/{name}-cloud-config",
        f"role.rbac.authorization.k8s.io/{name}-leader-election",
        f"rolebinding.rbac.authorization.k8s.io/{name}-leader-election",
        f"poddisruptionbudget.policy/{name}",
        f"clusterrole.rbac.authorization.k8s.io/{name}",
        f"clusterrolebinding.rbac.authorization.k8s.io/{name}",
    }
    assert release_objects(tools, ns, release) == expected

    def deployment() -> dict[str, Any]:
        out = tools.ok("kubectl", "-n", ns, "get", f"deployment/{name}", "-o", "json")
        found: dict[str, Any] = json.loads(out)
        return found

    args = deployment()["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--workers=4" in args
    assert "--cluster-name=prod" in args
    assert f"--leader-elect-name={name}" in args  # the Lease its Role may patch

    tools.ok(
        "helm",
        "upgrade",
        release,
        str(CHART),
        "-n",
        ns,
        "--reuse-values",
        "--set",
        "controller.workers=8",
        "--set",
        "replicas=3",
    )
    after = deployment()
    assert "--workers=8" in after["spec"]["template"]["spec"]["containers"][0]["args"]
    assert after["spec"]["replicas"] == 3
    assert release_objects(tools, ns, release) == expected
    history = json.loads(tools.ok("helm", "history", release, "-n", ns, "-o", "json"))
    assert [h["revision"] for h in history] == [1, 2]

    tools.ok(
        "helm",
        "upgrade",
        release,
        str(CHART),
        "-n",
        ns,
        "--reuse-values",
        "--set",
        "state.backend=file",
    )
    assert release_objects(tools, ns, release) == (
        expected - {f"poddisruptionbudget.policy/{name}"}
    ) | {f"persistentvolumeclaim/{name}-state"}

    tools.ok("helm", "uninstall", release, "-n", ns, "--wait")
    # the volume of the file backend stays (helm.sh/resource-policy: keep), nothing else
    assert release_objects(tools, ns, release) == {f"persistentvolumeclaim/{name}-state"}
    releases = tools.ok("kubectl", "-n", ns, "get", "secret", "-l", "owner=helm", "-o", "name")
    assert releases.strip() == ""
    tools.ok("kubectl", "delete", "namespace", ns, "--wait=false")


def test_deploy_is_the_chart_rendered(tools: Tools, tmp_path: Path) -> None:
    """``make manifests`` would change nothing: deploy/'s raw manifests are the chart's."""
    env = {**tools.env, "OUT": str(tmp_path), "HELM": str(tools.toolchain.path("helm"))}
    subprocess.run(["bash", str(REPO_ROOT / "deploy" / "render.sh")], env=env, check=True)
    rendered = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*.yaml"))
    assert rendered
    for rel in rendered:
        assert filecmp.cmp(tmp_path / rel, REPO_ROOT / "deploy" / rel, shallow=False), (
            f"deploy/{rel} differs from the chart's rendering: run `make manifests`"
        )

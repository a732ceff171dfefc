"""`lb-reconciler preview` without a backend: help, usage errors, and input problems, which end
the run (exit 1) before any stack, toolchain or passphrase is needed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reconciler.cli.main import main
from tests.unit.model_helpers import UUID1

NODES = """\
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {name: worker-a}
  status: {addresses: [{type: InternalIP, address: 10.0.0.11}]}
"""


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("PULUMI_CONFIG_PASSPHRASE", raising=False)
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "cloud.conf").write_text(
        f"[Global]\nauth-url = https://keystone.example/v3\n[LoadBalancer]\nsubnet-id = {UUID1}\n"
    )
    (tmp_path / "nodes.yaml").write_text(NODES)
    return tmp_path


def preview(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["preview", "--cloud-config", "cloud.conf", "--nodes", "nodes.yaml", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_help_has_a_description_examples_and_exit_codes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as done:
        main(["preview", "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert "without changing anything" in out
    assert "lb-reconciler preview -f deploy/services/ --nodes-from-state --cloud-config" in out
    assert "helm template ./chart | lb-reconciler preview -f -" in out
    assert "exit codes: 0 nothing would change; 2 something would change; 1 invalid" in out
    for flag in (
        "--nodes",
        "--nodes-from-state",
        "--refresh",
        "--namespace",
        "--output",
        "--state-dir",
        "--kubeconfig",
    ):
        assert flag in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "the following arguments are required: -f/--filename"),
        (["-f", "x.yaml", "-o", "yaml"], "argument --output/-o: invalid choice: 'yaml'"),
        (
            ["-f", "x", "--cloud-config", "c", "--frobnicate"],
            "unrecognized arguments: --frobnicate",
        ),
    ],
)
def test_usage_errors_exit_1_not_2_which_means_changes(
    capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    with pytest.raises(SystemExit) as done:
        main(["preview", *args])
    assert done.value.code == 1
    assert message in capsys.readouterr().err


def test_invalid_annotation_exits_1_before_the_backend_is_opened(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (folder / "svc").mkdir()
    (folder / "svc" / "web.yaml").write_text(
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\n  annotations:\n"
        '    loadbalancer.openstack.org/connection-limit: "abc"\n'
        "spec:\n  type: LoadBalancer\n  ports: [{port: 80}]\n"
    )
    # no PULUMI_CONFIG_PASSPHRASE, and --state-dir is never created: nothing was opened
    code, out, err = preview(capsys, "-f", "svc", "--state-dir", str(folder / "state"))
    assert code == 1
    assert out.splitlines() == [
        "invalid input, nothing was previewed:",
        '  svc/web.yaml:1: Service default/web: metadata.annotations["loadbalancer.openstack.org/'
        "connection-limit\"]: 'abc' is not an integer; fix: write a whole number (-1 for "
        'unlimited), e.g. "-1"',
    ]
    assert err == "error: 1 problem in the input; nothing was previewed\n"
    assert not (folder / "state").exists()


def test_parse_errors_name_file_and_line_in_json_too(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (folder / "bad.yaml").write_text("kind: Service\nmetadata:\n  name: web\n   oops: 1\n")
    code, out, _ = preview(capsys, "-f", "bad.yaml", "-o", "json")
    assert code == 1
    doc = json.loads(out)
    assert doc["errors"] == ["bad.yaml:4: is not valid YAML: mapping values are not allowed here"]
    assert doc["exitCode"] == 1


def test_a_nodes_file_without_nodes_is_an_error(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (folder / "svc.yaml").write_text(
        "kind: Service\nmetadata: {name: web}\nspec: {type: LoadBalancer, ports: [{port: 80}]}\n"
    )
    (folder / "nodes.yaml").write_text("kind: ConfigMap\nmetadata: {name: x}\n")
    code, out, _ = preview(capsys, "-f", "svc.yaml")
    assert code == 1
    assert "nodes.yaml: has no Node objects (kubectl get nodes -o yaml)" in out


def test_only_documents_that_are_not_services_change_nothing(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (folder / "app.yaml").write_text("kind: Deployment\nmetadata: {name: web}\n")
    code, out, _ = preview(capsys, "-f", "app.yaml", "-o", "markdown")
    assert code == 0
    assert out.splitlines()[0] == (
        "### lb-reconciler preview: 0 Services: 0 with changes, 0 unchanged; 1 document skipped"
    )
    assert "- `app.yaml:1` Deployment `web`: not a Service (Deployment)" in out


def test_nodes_from_state_checks_the_input_first_with_a_stand_in_node(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # no subnet-id: the VIP subnet is found from a Node's port, and a node-selector; the
    # check must not fail for want of Nodes, only for the bad annotation
    (folder / "cloud.conf").write_text(
        "[Global]\nauth-url = https://keystone.example/v3\n"
        "[LoadBalancer]\nnode-selector = pool=lb\n"
    )
    (folder / "svc").mkdir()
    (folder / "svc" / "web.yaml").write_text(
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\n  annotations:\n"
        '    loadbalancer.openstack.org/connection-limit: "abc"\n'
        "spec:\n  type: LoadBalancer\n  ports: [{port: 80}]\n"
    )
    flags = ["--cloud-config", "cloud.conf", "--nodes-from-state", "-f", "svc"]
    code = main(["preview", *flags, "--state-dir", str(folder / "state")])
    out, _ = capsys.readouterr()
    assert code == 1
    assert len(out.splitlines()) == 2, out  # the one problem, no Node's
    assert "connection-limit" in out
    assert not (folder / "state").exists()

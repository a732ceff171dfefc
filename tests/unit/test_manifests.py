"""Manifests in every form `lb-reconciler preview -f` accepts, and errors naming file and line."""

from __future__ import annotations

import io
import json
from pathlib import Path

from reconciler.cli.manifests import STDIN, load, parse_text

SERVICE = """\
apiVersion: v1
kind: Service
metadata:
  name: {name}
spec:
  type: LoadBalancer
  ports:
    - port: 80
"""


def kinds_names_lines(text: str, source: str = "m.yaml") -> list[tuple[str, str, int | None]]:
    loaded = parse_text(text, source=source)
    assert loaded.errors == (), [str(e) for e in loaded.errors]
    return [(d.kind, d.name, d.line) for d in loaded.documents]


def test_one_object() -> None:
    assert kinds_names_lines(SERVICE.format(name="web")) == [("Service", "web", 1)]


def test_multi_document_yaml_keeps_each_documents_line() -> None:
    text = SERVICE.format(name="a") + "---\n" + SERVICE.format(name="b")
    assert kinds_names_lines(text) == [("Service", "a", 1), ("Service", "b", 10)]


def test_helm_template_output_with_comments_and_empty_documents() -> None:
    text = "".join(
        [
            "---\n# Source: web/templates/service.yaml\n",
            SERVICE.format(name="web"),
            "---\n# Source: web/templates/empty.yaml\n",
            "---\n",
            "---\n# Source: web/templates/deployment.yaml\n",
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n",
        ]
    )
    assert kinds_names_lines(text) == [("Service", "web", 3), ("Deployment", "web", 16)]


def test_kubectl_get_o_yaml_list_gives_each_item_its_own_line() -> None:
    text = """\
apiVersion: v1
items:
- apiVersion: v1
  kind: Service
  metadata:
    name: a
    namespace: shop
    uid: 0e6c8a39-0f0b-4b55-8c0c-6a3c7c56c0aa
  spec:
    type: LoadBalancer
    ports:
    - nodePort: 31080
      port: 80
- apiVersion: v1
  kind: Service
  metadata:
    name: b
kind: List
metadata:
  resourceVersion: ""
"""
    assert kinds_names_lines(text) == [("Service", "a", 3), ("Service", "b", 14)]


def test_typed_list_items_get_the_kind_of_the_list() -> None:
    text = "kind: ServiceList\nitems:\n  - metadata: {name: a}\n  - metadata: {name: b}\n"
    assert kinds_names_lines(text) == [("Service", "a", 3), ("Service", "b", 4)]


def test_json_object_list_and_bare_array() -> None:
    one = json.dumps({"kind": "Service", "metadata": {"name": "a"}}, indent=2)
    assert kinds_names_lines(one, "s.json") == [("Service", "a", 1)]
    listed = json.dumps({"kind": "List", "items": [{"kind": "Node", "metadata": {"name": "n"}}]})
    assert kinds_names_lines(listed, "l.json") == [("Node", "n", 1)]
    bare = json.dumps([{"kind": "Service", "metadata": {"name": "x"}}])
    assert kinds_names_lines(bare, "b.json") == [("Service", "x", None)]


def test_yaml_error_names_the_line_and_keeps_the_documents_before_it() -> None:
    text = SERVICE.format(name="a") + "---\nkind: Service\nmetadata:\n  name: b\n   bad: 1\n"
    loaded = parse_text(text, source="svc.yaml")
    assert [d.name for d in loaded.documents] == ["a"]
    (error,) = loaded.errors
    assert (error.source, error.line) == ("svc.yaml", 13)
    assert str(error).startswith("svc.yaml:13: is not valid YAML: mapping values are not allowed")


def test_json_error_names_the_line() -> None:
    (error,) = parse_text('{\n  "kind": "Service",\n  "x": \n}', source="s.json").errors
    assert (error.line, error.message) == (4, "is not valid JSON: Expecting value (column 1)")


def test_a_document_that_is_not_an_object_is_an_error() -> None:
    loaded = parse_text("- a\n- b\n---\nfoo: 1\n", source="x.yaml")
    assert [str(e) for e in loaded.errors] == [
        "x.yaml:1: is a list, not a Kubernetes object (kind, metadata)",
        "x.yaml:4: has no kind: not a Kubernetes object",
    ]


def test_folders_are_read_recursively_in_name_order(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "two.yml").write_text(SERVICE.format(name="two"))
    (tmp_path / "a.yaml").write_text(SERVICE.format(name="one"))
    (tmp_path / "c.json").write_text(json.dumps({"kind": "Service", "metadata": {"name": "x"}}))
    (tmp_path / "README.md").write_text("# not a manifest\n")
    loaded = load([str(tmp_path)], stdin=io.StringIO(""))
    assert loaded.errors == ()
    assert [(Path(d.source).name, d.name) for d in loaded.documents] == [
        ("a.yaml", "one"),
        ("two.yml", "two"),
        ("c.json", "x"),
    ]


def test_stdin_files_and_missing_paths(tmp_path: Path) -> None:
    file = tmp_path / "svc.yaml"
    file.write_text(SERVICE.format(name="from-file"))
    stdin = io.StringIO(SERVICE.format(name="from-stdin"))
    loaded = load(["-", str(file), str(tmp_path / "nope.yaml"), "-"], stdin=stdin)
    assert [(d.source, d.name) for d in loaded.documents] == [
        (STDIN, "from-stdin"),
        (str(file), "from-file"),
    ]
    assert [str(e) for e in loaded.errors] == [f"{tmp_path / 'nope.yaml'}: no such file or folder"]
    assert loaded.documents[0].where == "<stdin>:1"


def test_an_empty_folder_is_an_error(tmp_path: Path) -> None:
    (error,) = load([str(tmp_path)], stdin=io.StringIO("")).errors
    assert error.message == "has no *.yaml, *.yml or *.json files"

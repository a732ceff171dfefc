"""The package layout: no import loop anywhere, and each package imports only the layers below it.

Every ``import`` counts, at module level, inside a function or under ``TYPE_CHECKING``: a loop
through any of them is a loop a reader has to follow. The layers are the ones
``reconciler/__init__.py`` names; docs/architecture.md draws them.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("reconciler", "stacks")

# lowest first; a module may import its own package and those before it
LAYERS = [
    "reconciler.cli.terminal",  # imports nothing of the project; the demo prints with it too
    "stacks.vocabulary",  # imports nothing of the project; the program's words, for every layer
    "reconciler.config",
    "reconciler.model",
    "stacks",
    "reconciler.local.toolchain",
    "reconciler.engine",
    "reconciler.controller",
    "reconciler.local",
    "reconciler.cli",
]


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for top in SOURCES for p in sorted((ROOT / top).rglob("*.py"))}


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The project's modules that ``name`` imports, anywhere in its text."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            # "from pkg import mod" imports the module pkg.mod; "from mod import name", mod
            subs = [f"{base}.{a.name}" for a in node.names]
            targets = [t for t in subs if t in known] or [base]
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                out.add(target)
    return out


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    return {name: _imports(name, path, known) for name, path in modules.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _layer(module: str) -> int:
    best = -1
    for i, prefix in enumerate(LAYERS):
        if (module == prefix or module.startswith(prefix + ".")) and (
            best < 0 or len(prefix) > len(LAYERS[best])
        ):
            best = i
    return best


def test_no_import_loop() -> None:
    assert _cycles(_graph()) == []


def test_the_cycle_finder_finds_one() -> None:
    # the check above can fail: a two-module loop and a self-contained chain
    assert _cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_packages_import_only_lower_layers() -> None:
    wrong = []
    for module, targets in _graph().items():
        mine = _layer(module)
        if mine < 0:
            continue
        for target in targets:
            theirs = _layer(target)
            if theirs > mine:
                wrong.append(f"{module} imports {target}")
    assert wrong == []


@pytest.mark.parametrize("module", ["reconciler.cli.terminal", "stacks.vocabulary"])
def test_the_lowest_modules_import_nothing_of_the_project(module: str) -> None:
    assert _graph()[module] == set()


def test_every_module_is_in_a_layer() -> None:
    outside = [m for m in _modules() if m != "reconciler" and _layer(m) < 0]
    assert outside == []


def test_the_root_package_holds_no_modules() -> None:
    flat = sorted(p.name for p in (ROOT / "reconciler").glob("*.py") if p.name != "__init__.py")
    assert flat == []


@pytest.mark.parametrize(
    "package",
    [p for p in LAYERS if (p.startswith("reconciler.") and p.count(".") == 1) or p == "stacks"],
)
def test_each_package_says_what_it_holds(package: str) -> None:
    path = ROOT / package.replace(".", "/")
    init = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
    doc = ast.get_docstring(ast.parse(init.read_text()))
    assert doc, f"{init} has no docstring"
    if path.is_dir():
        assert "import" in doc, f"{init}: say what the package may import"
        named = set(re.findall(r":mod:`\.(\w+)`", doc))
        present = {p.stem for p in path.glob("*.py") if p.stem not in {"__init__", "__main__"}}
        assert present <= named, f"{init} does not name {sorted(present - named)}"

"""The package layout: no import loop anywhere, and each package imports only the layers below it.

Every ``import`` counts, at module level, inside a function or under ``TYPE_CHECKING``: a loop
through any of them is a loop a reader has to follow. The layers are the ones
``reconciler/__init__.py`` names; docs/architecture.md draws them. The pure decisions do not
load Pulumi, not even through another module: they are tested, and read, without it.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterator
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
    "reconciler.toolchain",  # imports nothing of the project: the runtime tools
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


def _nodes(path: Path, *, at_import: bool) -> Iterator[ast.AST]:
    """The syntax of a module: all of it, or (``at_import``) what Python runs when the module is
    imported: not the bodies of functions, not ``if TYPE_CHECKING:``."""
    tree = ast.parse(path.read_text(), str(path))
    if not at_import:
        yield from ast.walk(tree)
        return
    todo: list[ast.AST] = [tree]
    while todo:
        node = todo.pop()
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            todo.extend(node.orelse)
            continue
        todo.extend(ast.iter_child_nodes(node))


def _imports(name: str, path: Path, known: set[str], *, at_import: bool = False) -> set[str]:
    """The project's modules that ``name`` imports, anywhere in its text (``at_import``: when it
    is imported, see :func:`_nodes`)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in _nodes(path, at_import=at_import):
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


@functools.cache
def _graph(*, at_import: bool = False) -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    return {
        name: _imports(name, path, known, at_import=at_import) for name, path in modules.items()
    }


@functools.cache
def _third_party(path: Path) -> set[str]:
    """The top-level names of what a module imports from outside the project when imported."""
    out: set[str] = set()
    for node in _nodes(path, at_import=True):
        if isinstance(node, ast.Import):
            out |= {a.name.partition(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            out.add(node.module.partition(".")[0])
    return out - set(SOURCES)


def _reached(graph: dict[str, set[str]], start: str) -> set[str]:
    """``start`` and every project module it imports, directly or through others, with the
    packages each is in (their ``__init__`` runs first)."""
    seen: set[str] = set()
    todo = [start]
    while todo:
        module = todo.pop()
        if module not in seen:
            seen.add(module)
            todo.extend(graph.get(module, ()))
            parts = module.split(".")
            todo.extend(".".join(parts[:i]) for i in range(1, len(parts)))
    return seen


def _pulumi_importers(module: str) -> list[str]:
    """The modules through which importing ``module`` imports ``pulumi`` or a ``pulumi_*``
    package (what runs at import: a function's own ``import`` runs when it is called)."""
    modules = _modules()
    return sorted(
        m
        for m in _reached(_graph(at_import=True), module)
        if m in modules
        and any(t == "pulumi" or t.startswith("pulumi_") for t in _third_party(modules[m]))
    )


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


# the pure decisions and the data they decide over: no Pulumi, directly or through another module
PURE = [
    "stacks.vocabulary",
    "stacks.shared",
    "reconciler.engine.plan",
    "reconciler.engine.stack_spec",
    "reconciler.engine.provider_config",
    "reconciler.engine.openstack.auth",
    "reconciler.engine.lost",
    "reconciler.engine.state.lock_plan",
    "reconciler.engine.delete.direct_plan",
    "reconciler.engine.direct_gate",
    "reconciler.engine.preview",
    "reconciler.engine.adopt.plan",
    "reconciler.engine.adopt.ownership",
    "reconciler.engine.adopt.preview",
    "reconciler.engine.results",
    "reconciler.engine.fleet_plan",
    "reconciler.controller.drift_plan",
    "reconciler.controller.lease_plan",
    "reconciler.controller.conditions",
    "reconciler.engine.state.retention",
    "reconciler.cli.preview_plan",
    "reconciler.cli.preview_report",
    "reconciler.cli.sweep_plan",
    "reconciler.cli.stacks_report",
    "reconciler.cli.preview_offline",
    "reconciler.cli.stacks_history",
]


PURE_PACKAGES = ("reconciler.config", "reconciler.model")  # every module of them


@pytest.mark.parametrize(
    "module",
    PURE + sorted(m for m in _modules() if m.startswith(PURE_PACKAGES) and m.count(".") < 3),
)
def test_pure_modules_do_not_import_pulumi(module: str) -> None:
    assert _pulumi_importers(module) == []


def test_the_pulumi_finder_finds_it() -> None:
    # the check above can fail: the program imports pulumi itself, the engine through others
    assert _pulumi_importers("stacks.program") == [
        "stacks.lookups",
        "stacks.program",
        "stacks.recorded",
        "stacks.resources",
    ]
    assert "reconciler.engine.preview_events" in _pulumi_importers("reconciler.engine.stack")


@pytest.mark.parametrize("module", ["reconciler.cli.terminal", "stacks.vocabulary"])
def test_the_lowest_modules_import_nothing_of_the_project(module: str) -> None:
    assert _graph()[module] == set()


# what the state layer may import (its docstring says so): Pulumi's DIY backend as the engine reads
# it, with nothing of the engine above it, as pulumi keeps pkg/backend/diy apart from the engine
STATE_MAY_IMPORT = {"reconciler.engine.plan", "reconciler.engine.processes", "stacks.vocabulary"}


def test_the_state_layer_imports_nothing_of_the_engine_above_it() -> None:
    wrong = sorted(
        f"{module} imports {target}"
        for module, targets in _graph().items()
        if module.startswith("reconciler.engine.state")
        for target in targets
        if not target.startswith("reconciler.engine.state")
        and target not in STATE_MAY_IMPORT
        and target != "reconciler.engine"
    )
    assert wrong == []


def test_every_module_is_in_a_layer() -> None:
    outside = [m for m in _modules() if m != "reconciler" and _layer(m) < 0]
    assert outside == []


def test_no_patch_leftovers_in_the_tree() -> None:
    # a failed `git apply --reject` or `patch` leaves these; two were once committed
    leftovers = [
        str(p.relative_to(ROOT))
        for top in ("reconciler", "stacks", "emulator", "tests", "bench", "tools", "docs", "deploy")
        for pattern in ("*.rej", "*.orig")
        for p in (ROOT / top).rglob(pattern)
    ]
    assert leftovers == []


def test_the_root_package_holds_no_modules() -> None:
    flat = sorted(p.name for p in (ROOT / "reconciler").glob("*.py") if p.name != "__init__.py")
    assert flat == []


def _packages() -> list[str]:
    """The layers' top packages and every sub-package of ``reconciler`` (``engine.state``...)."""
    top = [
        p for p in LAYERS if (p.startswith("reconciler.") and p.count(".") == 1) or p == "stacks"
    ]
    subs = [_module_name(init) for init in sorted((ROOT / "reconciler").glob("*/*/__init__.py"))]
    return top + subs


@pytest.mark.parametrize("package", _packages())
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


def _doc_paths() -> set[str]:
    text = (ROOT / "docs" / "architecture.md").read_text()
    return set(
        re.findall(r"`((?:reconciler|stacks|emulator|tools|tests|bench|deploy)/[\w/.]*)`", text)
    )


def test_architecture_doc_names_only_what_exists() -> None:
    paths = _doc_paths()
    assert len(paths) > 30  # the map is there, not an empty page
    assert sorted(p for p in paths if not (ROOT / p).exists()) == []


def test_architecture_doc_names_every_package() -> None:
    paths = _doc_paths()
    packages = {
        str(p.parent.relative_to(ROOT)) + "/" for p in (ROOT / "reconciler").rglob("__init__.py")
    } - {"reconciler/"}
    assert sorted(packages - paths) == []


def test_paths_the_package_finds_beside_itself_exist() -> None:
    # found relative to the module's own file, so a move of the module must move them too
    from reconciler.local import demo
    from reconciler.toolchain import runtime as toolchain

    assert toolchain.BUILD_SCRIPT.is_file()
    assert (demo.DEPLOY / "rbac.yaml").is_file()


def test_no_module_over_400_lines() -> None:
    long = {
        str(p.relative_to(ROOT)): n
        for p in _modules().values()
        if (n := len(p.read_text().splitlines())) > 400
    }
    assert long == {}

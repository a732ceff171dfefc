"""The image's bytecode: compiled for the modules this package imports, and only for those.

pip compiles every module it installs: 86 MB of ``.pyc`` in the image of 0.1.0, of which 15 MB
were of modules that the controller and the CLI ever import (the rest: ``kubernetes``' 800 models
and 60 API classes, loaded on first use and never by this package, whose Kubernetes calls go
through ``ApiClient``; the provider's other services; tests). With no bytecode at all, every
process compiles what it imports, in memory (the root filesystem is read-only), each time:
``lb-reconciler --help`` took 1.7 s instead of 0.8 s, importing the whole package 2.5 s instead
of 1.0 s (deploy/README.md, "The image").

Run by the Containerfile's ``bytecode`` stage with the image's own interpreter, on the virtualenv
as it ships, with ``PYTHONDONTWRITEBYTECODE=1`` (nothing is written beside the sources):

1. import every module of ``reconciler`` and ``stacks``; one that fails to import fails the
   build (the image could not run it);
2. import what their functions import on first use (``psycopg``, ``botocore``, the Automation
   API...), as their source says; what is missing here is listed and left (the demo's
   ``emulator``, the extras' packages);
3. compile each module those imports loaded from PREFIX into OUT/<its path>, checked-hash
   ``.pyc`` files (valid whatever timestamps the layers end up with), which the Containerfile
   copies over ``/``.

Usage: PYTHONDONTWRITEBYTECODE=1 python3 bytecode.py PREFIX OUT
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import pkgutil
import py_compile
import sys
from pathlib import Path

PACKAGES = ("reconciler", "stacks")


def own_modules() -> list[str]:
    """Every module of :data:`PACKAGES`, imported (``__main__`` modules are named, not run)."""
    names: list[str] = []
    for package in PACKAGES:
        root = importlib.import_module(package)
        names.append(package)
        for info in pkgutil.walk_packages(root.__path__, f"{package}."):
            if info.name.rsplit(".", 1)[-1] != "__main__":
                importlib.import_module(info.name)
                names.append(info.name)
    return names


def imported_by(module: str) -> set[str]:
    """The modules that ``module``'s source imports anywhere (functions included), as absolute
    names; ``from X import Y`` gives ``X.Y`` too, for when Y is a module."""
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise ImportError(f"no source for {module}")
    tree = ast.parse(Path(spec.origin).read_text(), spec.origin)
    package = module if spec.submodule_search_locations is not None else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = importlib.util.resolve_name("." * node.level + base, package)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names if alias.name != "*")
    return found


def import_lazily(modules: list[str]) -> list[str]:
    """Import what ``modules`` import inside functions; the names that could not be imported,
    each with the first module that asks for it."""
    missing: dict[str, str] = {}
    wanted = sorted({name for module in modules for name in imported_by(module)})
    for name in wanted:
        if name in sys.modules or any(name.startswith(f"{m}.") for m in missing):
            continue
        try:
            importlib.import_module(name)
        except ImportError as exc:
            parent = name.rpartition(".")[0]
            if parent in sys.modules and isinstance(exc, ModuleNotFoundError) and exc.name == name:
                continue  # `from X import Y` of a name that is not a module
            asker = next(m for m in modules if name in imported_by(m))
            missing.setdefault(name, f"{asker}: {exc}")
    return [f"{name} ({why})" for name, why in sorted(missing.items())]


def compile_loaded(prefix: Path, out: Path) -> tuple[int, int]:
    """Compile every loaded module under ``prefix`` into ``out``; their number and bytes."""
    sources = {getattr(module, "__file__", None) or "" for module in list(sys.modules.values())}
    count = size = 0
    for source in sorted(sources):
        if not source.endswith(".py") or not Path(source).is_relative_to(prefix):
            continue
        if not Path(source).is_file():
            continue  # in a zip: image/zip_package.py compiled it there
        target = out / importlib.util.cache_from_source(source).lstrip("/")
        py_compile.compile(
            source,
            cfile=str(target),
            dfile=source,
            doraise=True,
            invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH,
        )
        count += 1
        size += target.stat().st_size
    return count, size


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.rstrip().rpartition("\n")[2], file=sys.stderr)
        return 2
    prefix, out = Path(argv[0]), Path(argv[1])
    modules = own_modules()
    for line in import_lazily(modules):
        print(f"[bytecode] not in the image: {line}")
    count, size = compile_loaded(prefix, out)
    print(f"[bytecode] {count} modules of {prefix}: {size / 1e6:.1f} MB of .pyc")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

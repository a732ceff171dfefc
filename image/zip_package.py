"""Zip a pure-Python package of the image's virtualenv: ``PACKAGE/`` becomes ``PACKAGE.zip``, put
on ``sys.path`` by a ``.pth`` file and imported from there by Python's own zipimport.

For ``kubernetes``: 34 MB of sources (800 models and 60 API classes, mostly docstrings) that the
controller never loads, as it calls the API server through ``ApiClient`` alone; zipped, 4 MB.
Nothing of the package is left out, so whatever imports it later still finds it, and a
traceback still shows its source lines. The modules that ``import PACKAGE`` loads get their
bytecode in the zip beside their sources (``name.pyc``, where zipimport looks), as
unchecked-hash ``.pyc`` files: written with the sources they were compiled from, in one file
that nothing changes afterwards.

Only for a package without data files (zipimport serves modules; ``open(__file__ ...)`` of a
neighbour would fail): the bytecode stage's import of every module of this package
(image/bytecode.py) runs on the result.

Usage: PYTHONDONTWRITEBYTECODE=1 python3 zip_package.py SITE_PACKAGES PACKAGE
"""

from __future__ import annotations

import importlib
import py_compile
import shutil
import sys
import zipfile
from pathlib import Path


def zip_package(site: Path, package: str) -> tuple[int, int, int]:
    """Make ``site/package.zip`` and its ``.pth``, remove ``site/package``; the sizes before and
    after, and the number of modules compiled into it."""
    folder = site / package
    importlib.import_module(package)  # what importing it loads: each module's bytecode goes in
    loaded = {
        Path(module.__file__): module.__name__
        for module in list(sys.modules.values())
        if getattr(module, "__file__", None)
        and Path(module.__file__).is_relative_to(folder)
        and module.__file__.endswith(".py")
    }
    files = sorted(p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    before = sum(p.stat().st_size for p in files)
    target = site / f"{package}.zip"
    scratch = site / f".{package}.pyc"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        for path in files:
            name = path.relative_to(site).as_posix()
            archive.write(path, name)
            if path in loaded:
                py_compile.compile(
                    str(path),
                    cfile=str(scratch),
                    dfile=f"{target}/{name}",  # its __file__, as zipimport names it
                    doraise=True,
                    invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH,
                )
                archive.write(scratch, name[: -len(".py")] + ".pyc")
    scratch.unlink(missing_ok=True)
    shutil.rmtree(folder)
    (site / f"{package}-zip.pth").write_text(f"{package}.zip\n")
    return before, target.stat().st_size, len(loaded)


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.rstrip().rpartition("\n")[2], file=sys.stderr)
        return 2
    site, package = Path(argv[0]), argv[1]
    before, after, compiled = zip_package(site, package)
    print(
        f"[zip] {package}: {before / 1e6:.1f} MB of files in {after / 1e6:.1f} MB, "
        f"with the bytecode of the {compiled} modules `import {package}` loads"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

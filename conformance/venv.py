"""The suite's own virtualenv: tempest and octavia-tempest-plugin, pinned with hashes.

They are not the project's dependencies (tempest pins much of the OpenStack client stack), so
they live in ``.venv-conformance``, made from ``conformance/requirements.txt`` with
``pip install --require-hashes``. A stamp in the virtualenv records the SHA-256 of that file
and the Python that made it; while both are the same the virtualenv is reused as it is, and any
change rebuilds it from scratch (a half-made one, from an interrupted install, has no stamp).
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

STAMP = ".conformance-stamp"


def wanted_stamp(requirements: Path, python: str) -> str:
    digest = hashlib.sha256(requirements.read_bytes()).hexdigest()
    return f"{digest} {python}\n"


def python_of(venv: Path) -> Path:
    return venv / "bin" / "python"


def is_current(venv: Path, requirements: Path, python: str) -> bool:
    stamp = venv / STAMP
    return (
        python_of(venv).exists()
        and stamp.exists()
        and stamp.read_text() == wanted_stamp(requirements, python)
    )


def ensure(venv: Path, requirements: Path, *, python: str = sys.executable) -> bool:
    """Make ``venv`` hold exactly ``requirements``; True if it was (re)built."""
    if is_current(venv, requirements, python):
        return False
    print(f"conformance: building {venv} from {requirements} (cached until it changes)")
    shutil.rmtree(venv, ignore_errors=True)
    subprocess.run([python, "-m", "venv", str(venv)], check=True)
    pip = [str(python_of(venv)), "-m", "pip", "--disable-pip-version-check"]
    subprocess.run(
        [*pip, "install", "--quiet", "--require-hashes", "--no-deps", "-r", str(requirements)],
        check=True,
    )
    (venv / STAMP).write_text(wanted_stamp(requirements, python))
    return True


def installed_versions(venv: Path, names: tuple[str, ...]) -> dict[str, str]:
    """``{name: version}`` of distributions in ``venv`` (for the report)."""
    code = "import importlib.metadata as m, sys\nfor n in sys.argv[1:]: print(n, m.version(n))\n"
    out = subprocess.run(
        [str(python_of(venv)), "-c", code, *names], check=True, capture_output=True, text=True
    ).stdout
    return dict(line.split(" ", 1) for line in out.splitlines() if " " in line)

"""Finding the real toolchain: the Pulumi CLI, the OpenStack plugin, etcd, kube-apiserver, kubectl.

The binaries are built from Go modules by ``tools/build.sh`` into a cache outside the repository
(see ``tools/README.md``). This module only *finds* them, in this order:

1. ``$LBR_TOOLS_BIN``: a folder that holds them (what ``make -s tools-path`` prints);
2. in a source checkout, ``tools/build.sh --path``, which builds what is missing (seconds warm);
3. the ``PATH``, for a container image or a laptop that has them installed.

It also builds the environment every ``pulumi`` child runs with: the toolchain first on ``PATH``,
no automatic plugin downloads (they cannot work offline, and a silent download of another plugin
version would make previews lie), no update check.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

TOOLS = ("pulumi", "pulumi-resource-openstack", "etcd", "kube-apiserver", "kubectl")
WITH_MINIO = (*TOOLS, "minio")
"""The tools and MinIO, the ``s3://`` backend's server (the tests, ``lb-reconciler backend serve
s3``); the demo and the controller never need it, so only these callers build it."""
REPO_ROOT = Path(__file__).resolve().parents[2]
BUILD_SCRIPT = REPO_ROOT / "tools" / "build.sh"


class ToolchainError(RuntimeError):
    """A tool is missing; the message says how to get it."""


@dataclass(frozen=True)
class Toolchain:
    """Absolute paths of the tools, and the folder to put first on PATH."""

    bin_dir: Path

    def path(self, tool: str) -> Path:
        return self.bin_dir / tool

    def pulumi_root(self) -> Path:
        """A folder whose ``bin/pulumi`` is this toolchain's CLI (the Automation API's ``root``).

        The Automation API runs ``<root>/bin/pulumi`` or else whatever ``pulumi`` the *calling
        process* finds on PATH; the controller must not depend on its own PATH, so it always
        passes a root. When the tools folder is not itself named ``bin``, a link farm under the
        cache provides one.
        """
        if self.bin_dir.name == "bin":
            return self.bin_dir.parent
        key = hashlib.sha256(str(self.bin_dir.resolve()).encode()).hexdigest()[:12]
        root = _cache_root() / f"pulumi-root-{key}"
        link = root / "bin" / "pulumi"
        if not link.exists():
            link.parent.mkdir(parents=True, exist_ok=True)
            tmp = link.with_name(f".pulumi-{os.getpid()}")
            tmp.unlink(missing_ok=True)
            tmp.symlink_to(self.path("pulumi").resolve())
            tmp.replace(link)  # atomic: concurrent callers agree
        return root

    def env(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """An environment for child processes that run ``pulumi`` or the control plane."""
        env = dict(os.environ if base is None else base)
        env["PATH"] = f"{self.bin_dir}{os.pathsep}{env.get('PATH', '')}"
        env.setdefault("PULUMI_SKIP_UPDATE_CHECK", "true")
        env["PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION"] = "true"
        return env


def _cache_root() -> Path:
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(os.environ.get("LBR_TOOLS_CACHE") or Path(xdg) / "lb-reconciler" / "tools")


def _complete(folder: Path, tools: tuple[str, ...]) -> bool:
    return all(os.access(folder / t, os.X_OK) for t in tools)


def find_toolchain(*, tools: tuple[str, ...] = TOOLS, build: bool = True) -> Toolchain:
    """Locate the toolchain (building it from a source checkout when allowed)."""
    explicit = os.environ.get("LBR_TOOLS_BIN")
    if explicit:
        folder = Path(explicit)
        if not _complete(folder, tools):
            missing = [t for t in tools if not os.access(folder / t, os.X_OK)]
            printer = (
                "tools/build.sh --with-minio --path"
                if "minio" in missing
                else ("make -s tools-path")
            )
            raise ToolchainError(
                f"LBR_TOOLS_BIN={explicit} lacks {', '.join(missing)}; "
                f"point it at the folder `{printer}` prints, or unset it"
            )
        return Toolchain(bin_dir=folder)
    if build and BUILD_SCRIPT.is_file():
        argv = ["bash", str(BUILD_SCRIPT), "--path"]
        if "minio" in tools:
            argv.append("--with-minio")
        done = subprocess.run(argv, stdout=subprocess.PIPE, text=True, check=False)
        if done.returncode != 0:
            raise ToolchainError(f"{BUILD_SCRIPT} failed (exit {done.returncode}); see its output")
        return Toolchain(bin_dir=Path(done.stdout.strip().splitlines()[-1]))
    found = {t: shutil.which(t) for t in tools}
    missing = [t for t, p in found.items() if p is None]
    if missing:
        raise ToolchainError(
            f"not found on PATH: {', '.join(missing)}; build them with `make tools` in a source "
            "checkout and set LBR_TOOLS_BIN to the folder `make -s tools-path` prints"
        )
    folders = {Path(p).parent for p in found.values() if p}
    if len(folders) != 1:
        raise ToolchainError(
            "the tools are spread over several PATH folders "
            f"({', '.join(sorted(map(str, folders)))}); set LBR_TOOLS_BIN to one folder holding all"
        )
    return Toolchain(bin_dir=folders.pop())

"""Finding the runtime tools, the Pulumi CLI and the OpenStack resource plugin, at the pinned
versions.

The controller and every user command need these two binaries and nothing else (etcd,
kube-apiserver, kubectl and MinIO are the demo's and the tests': :mod:`reconciler.local.toolchain`).
They are found in this order:

1. ``$LBR_TOOLS_BIN``: a folder that holds ``pulumi`` (what ``make -s tools-path`` prints);
2. in a source checkout, ``tools/build.sh --path``, which builds what is missing (seconds warm);
3. the ``PATH``: a container image, or ``pip install .`` on a machine that has them installed.

The plugin is taken from the same folder as ``pulumi``, else from ``PATH``, else where
``pulumi plugin install resource openstack VERSION`` puts it (``$PULUMI_HOME/plugins``). Both
are then asked their version, which must be exactly the pinned one: another CLI or plugin would
plan other changes than the ones this project tests (:func:`check_versions`).

This module also builds the environment every ``pulumi`` child runs with: the toolchain first on
``PATH``, no automatic plugin downloads (they cannot work offline, and a silent download of
another plugin version would make previews lie), no update check.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "OPENSTACK_PLUGIN_VERSION",
    "PLUGIN",
    "PULUMI_VERSION",
    "REPO_ROOT",
    "RUNTIME_TOOLS",
    "Toolchain",
    "ToolchainError",
    "check_versions",
    "find_runtime",
    "locate",
]

# The pins: the same in tools/build.sh (which builds them) and pyproject.toml (the SDKs that
# talk to them); tests/unit/test_toolchain.py holds the three together.
PULUMI_VERSION = "3.259.0"
OPENSTACK_PLUGIN_VERSION = "5.5.1"

PLUGIN = "pulumi-resource-openstack"
RUNTIME_TOOLS = ("pulumi", PLUGIN)
REPO_ROOT = Path(__file__).resolve().parents[2]
BUILD_SCRIPT = REPO_ROOT / "tools" / "build.sh"
GET_THEM = (
    f"install the Pulumi CLI v{PULUMI_VERSION} (https://www.pulumi.com/docs/install/, or "
    f"`make tools` in a source checkout) and the OpenStack plugin v{OPENSTACK_PLUGIN_VERSION} "
    f"(`pulumi plugin install resource openstack {OPENSTACK_PLUGIN_VERSION}`), or set "
    "LBR_TOOLS_BIN to a folder that holds both"
)


class ToolchainError(RuntimeError):
    """A tool is missing or of another version; the message says how to get the right one."""


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
        root = cache_root() / f"pulumi-root-{key}"
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


def cache_root() -> Path:
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(os.environ.get("LBR_TOOLS_CACHE") or Path(xdg) / "lb-reconciler" / "tools")


def locate(
    tools: Sequence[str], *, build: bool, build_args: Sequence[str] = (), printer: str
) -> Toolchain:
    """The folder that holds ``tools``: ``$LBR_TOOLS_BIN`` (``printer``: the command that
    prints a right one, for the error), a source checkout's ``tools/build.sh --path
    *build_args`` when ``build``, else the one ``PATH`` folder holding them all."""
    explicit = os.environ.get("LBR_TOOLS_BIN")
    if explicit:
        folder = Path(explicit)
        missing = [t for t in tools if not os.access(folder / t, os.X_OK)]
        if missing:
            raise ToolchainError(
                f"LBR_TOOLS_BIN={explicit} lacks {', '.join(missing)}; "
                f"point it at the folder `{printer}` prints, or unset it"
            )
        return Toolchain(bin_dir=folder)
    if build and BUILD_SCRIPT.is_file():
        argv = ["bash", str(BUILD_SCRIPT), "--path", *build_args]
        done = subprocess.run(argv, stdout=subprocess.PIPE, text=True, check=False)
        if done.returncode != 0:
            raise ToolchainError(f"{BUILD_SCRIPT} failed (exit {done.returncode}); see its output")
        return Toolchain(bin_dir=Path(done.stdout.strip().splitlines()[-1]))
    found = {t: shutil.which(t) for t in tools}
    missing = [t for t, p in found.items() if p is None]
    if missing:
        raise ToolchainError(
            f"not found on PATH: {', '.join(missing)}; build them with `make tools` in a source "
            f"checkout and set LBR_TOOLS_BIN to the folder `{printer}` prints"
        )
    folders = {Path(p).parent for p in found.values() if p}
    if len(folders) != 1:
        raise ToolchainError(
            "the tools are spread over several PATH folders "
            f"({', '.join(sorted(map(str, folders)))}); set LBR_TOOLS_BIN to one folder holding all"
        )
    return Toolchain(bin_dir=folders.pop())


def find_runtime(*, build: bool = True) -> Toolchain:
    """The runtime tools (:func:`locate` of ``pulumi``; the plugin beside it, on ``PATH`` or
    installed in ``$PULUMI_HOME``), their versions checked (:func:`check_versions`)."""
    try:
        toolchain = locate(("pulumi",), build=build, printer="make -s tools-path")
    except ToolchainError as exc:
        raise ToolchainError(f"{exc}. The runtime needs: {GET_THEM}") from None
    check_versions(toolchain)
    return toolchain


def plugin_path(toolchain: Toolchain, env: Mapping[str, str]) -> Path | None:
    """The OpenStack plugin the CLI will run with ``env``: one beside ``pulumi`` or on ``PATH``
    (the CLI runs such an "ambient" plugin first), else the one ``pulumi plugin install`` put in
    ``$PULUMI_HOME/plugins`` for the pinned version; None without one."""
    search = f"{toolchain.bin_dir}{os.pathsep}{env.get('PATH', '')}"
    ambient = shutil.which(PLUGIN, path=search)
    if ambient is not None:
        return Path(ambient)
    home = Path(env.get("PULUMI_HOME") or Path(env.get("HOME") or Path.home()) / ".pulumi")
    installed = home / "plugins" / f"resource-openstack-v{OPENSTACK_PLUGIN_VERSION}" / PLUGIN
    return installed if os.access(installed, os.X_OK) else None


def _version_of(argv: Sequence[str], env: Mapping[str, str]) -> str:
    """What ``argv`` prints as its version (v stripped), or why it printed none."""
    try:
        done = subprocess.run(
            list(argv), capture_output=True, text=True, env=dict(env), timeout=60, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"(did not run: {exc})"
    if done.returncode != 0:
        last = (done.stderr.strip() or done.stdout.strip()).splitlines()[-1:] or [""]
        return f"(exit {done.returncode}: {last[0]})"
    out = done.stdout.strip().splitlines()
    return out[0].strip().removeprefix("v") if out else "(printed nothing)"


def _checked_marker(binaries: Sequence[Path]) -> Path:
    """Where a passed check of these binaries is remembered: a file named by their real paths,
    sizes and modification times and the pins, so that another binary (or pin) is checked
    again."""
    identity = []
    for binary in binaries:
        real = binary.resolve()
        stat = real.stat()
        identity.append(f"{real}:{stat.st_size}:{stat.st_mtime_ns}")
    identity += [PULUMI_VERSION, OPENSTACK_PLUGIN_VERSION]
    digest = hashlib.sha256("\n".join(identity).encode()).hexdigest()[:20]
    return cache_root() / "checked" / digest


def check_versions(toolchain: Toolchain) -> None:
    """Both tools run and print exactly the pinned versions; else a :class:`ToolchainError`
    naming what was found, what is expected and how to get it. The two run at once (the CLI
    takes a third of a second to start); a pass is remembered per binary
    (:func:`_checked_marker`), so that a user command does not pay for it every time (where
    the cache cannot be written, as on a read-only filesystem, every start checks)."""
    env = toolchain.env()
    plugin = plugin_path(toolchain, env)
    if plugin is None:
        raise ToolchainError(
            f"the OpenStack resource plugin v{OPENSTACK_PLUGIN_VERSION} is not installed (not "
            f"beside {toolchain.path('pulumi')}, not on PATH, not in $PULUMI_HOME/plugins): "
            f"{GET_THEM}"
        )
    try:
        marker: Path | None = _checked_marker([toolchain.path("pulumi"), plugin])
    except OSError:
        marker = None  # the CLI's own run below says what is wrong with it
    if marker is not None and marker.exists():
        return
    asks = {
        "pulumi": ([str(toolchain.path("pulumi")), "version"], PULUMI_VERSION),
        PLUGIN: ([str(plugin), "-version"], OPENSTACK_PLUGIN_VERSION),
    }
    with ThreadPoolExecutor(max_workers=len(asks)) as pool:
        futures = {tool: pool.submit(_version_of, argv, env) for tool, (argv, _) in asks.items()}
        found = {tool: future.result() for tool, future in futures.items()}
    wrong = [
        f"{asks[tool][0][0]} is {got}, not {want}"
        for tool, (_argv, want) in asks.items()
        if (got := found[tool]) != want
    ]
    if wrong:
        raise ToolchainError(f"{'; '.join(wrong)}: {GET_THEM}")
    if marker is not None:
        try:
            marker.parent.mkdir(parents=True, exist_ok=True)
            marker.touch()
        except OSError:
            pass  # checked again next time

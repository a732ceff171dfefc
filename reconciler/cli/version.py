"""``lb-reconciler --version``: this package's version, the commit it was built from, and the
``pulumi`` and plugin versions it needs (:mod:`reconciler.toolchain`'s pins).

The version has one source, ``pyproject.toml`` (read from the installed package's metadata).
The commit comes from git in a source checkout, else from the ``REVISION`` file an image build
writes into the environment (``$prefix/share/lb-reconciler/REVISION``, the Containerfile's), else
it is ``unknown``.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from reconciler.toolchain import OPENSTACK_PLUGIN_VERSION, PULUMI_VERSION, REPO_ROOT

__all__ = ["VersionAction", "package_version", "revision", "version_text"]

REVISION_FILE = Path("share") / "lb-reconciler" / "REVISION"


def package_version() -> str:
    try:
        return version("lb-reconciler")
    except PackageNotFoundError:  # run from a tree that was never installed
        return "unknown"


def revision(*, prefix: Path | None = None, checkout: Path = REPO_ROOT) -> str:
    """The commit this code is: the checkout's (``-dirty`` with uncommitted changes), the one
    an image build recorded under ``prefix`` (default: this Python's environment), or
    ``unknown``."""
    if (checkout / ".git").exists():
        try:
            head = subprocess.run(
                ["git", "-C", str(checkout), "describe", "--always", "--dirty", "--abbrev=12"],
                capture_output=True,
                text=True,
                timeout=10,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            head = None
        if head is not None and head.returncode == 0 and head.stdout.strip():
            return head.stdout.strip()
    recorded = (prefix if prefix is not None else Path(sys.prefix)) / REVISION_FILE
    try:
        text = recorded.read_text().strip()
    except OSError:
        return "unknown"
    return text or "unknown"


def version_text() -> str:
    return (
        f"lb-reconciler {package_version()} (commit {revision()})\n"
        f"needs pulumi v{PULUMI_VERSION} and pulumi-resource-openstack v{OPENSTACK_PLUGIN_VERSION}"
    )


class VersionAction(argparse.Action):
    """``--version``: :func:`version_text`, worked out only when asked (git runs in a checkout)."""

    def __init__(self, option_strings: list[str], dest: str, help: str | None = None) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(self, parser: argparse.ArgumentParser, *_args: object, **_kw: object) -> None:
        print(version_text())
        parser.exit()

"""`lb-reconciler demo --once` brings up the local environment, checks it, and stops it."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from reconciler.toolchain import Toolchain


def test_demo_once_starts_checks_and_cleans_up(toolchain: Toolchain) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "reconciler.cli", "demo", "--once"],
        capture_output=True,
        text=True,
        timeout=300,
        env=toolchain.env(),
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "kube-apiserver ready at https://127.0.0.1:" in done.stdout
    assert "namespaces: default, kube-node-lease, kube-public, kube-system" in done.stdout
    assert re.search(r"OpenStack emulator at http://127\.0\.0\.1:\d+/identity/v3", done.stdout)
    kubeconfig = re.search(r"--kubeconfig (\S+)", done.stdout)
    assert kubeconfig is not None
    assert not Path(kubeconfig.group(1)).exists()  # its folder was removed on exit

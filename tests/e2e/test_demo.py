"""`lb-reconciler demo --once` (the README's main command, once): the local environment, the
controller and the docs' Service flow, then everything stopped."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from reconciler.local.toolchain import Toolchain


def test_demo_once_starts_checks_and_cleans_up(toolchain: Toolchain) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "reconciler.cli.main", "demo", "--once"],
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
    # the docs' flow through the controller: pending, then an IP, the stack, the cloud emptied
    assert re.search(r"example-service +LoadBalancer +\S+ +<pending>", done.stdout)
    ip = re.search(r"EXTERNAL-IP: (172\.24\.4\.\d+) after", done.stdout)
    assert ip is not None, done.stdout
    assert re.search(rf"example-service +LoadBalancer +\S+ +{re.escape(ip.group(1))} ", done.stdout)
    assert re.search(r"demo\.default\.example-service +\S", done.stdout)  # pulumi stack ls
    assert "load balancers in the cloud: ['kube_service_demo_default_example-service']" in (
        done.stdout
    )
    assert 'service "example-service" deleted' in done.stdout
    assert re.search(r"deleted after [\d.]+s; load balancers left: \[\]", done.stdout)
    kubeconfig = re.search(r"KUBECONFIG=(\S+)", done.stdout)
    assert kubeconfig is not None
    assert not Path(kubeconfig.group(1)).exists()  # its folder was removed on exit

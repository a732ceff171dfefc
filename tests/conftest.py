"""Fixtures shared by all test levels.

The toolchain and the control plane are real (reconciler/local/toolchain.py,
reconciler/local/plane.py). When the toolchain is missing, ``find_toolchain`` builds it from the Go
module proxy; tests that need it never skip, so a broken toolchain shows as a failure, not as a
quiet pass.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from reconciler.local.plane import LocalControlPlane
from reconciler.local.toolchain import Toolchain, find_toolchain
from tests.backends import BACKEND_KINDS, Backend, BackendServers


@pytest.fixture(scope="session")
def toolchain() -> Iterator[Toolchain]:
    """The built toolchain, first on PATH for this test session (pulumi children find it)."""
    tc = find_toolchain()
    saved = {
        k: os.environ.get(k)
        for k in ("PATH", "PULUMI_SKIP_UPDATE_CHECK", "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION")
    }
    os.environ.update(tc.env())
    yield tc
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture(scope="session")
def control_plane(
    toolchain: Toolchain, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalControlPlane]:
    """One etcd + kube-apiserver for the session; tests use their own namespaces."""
    folder: Path = tmp_path_factory.mktemp("plane")
    with LocalControlPlane.start(toolchain=toolchain, folder=folder) as plane:
        yield plane


@pytest.fixture(scope="session")
def backend_servers(
    toolchain: Toolchain, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[BackendServers]:
    """The session's PostgreSQL and MinIO servers (:mod:`tests.backends`), each started when a
    test first needs it, stopped at the end."""
    servers = BackendServers(folder=tmp_path_factory.mktemp("backends"), toolchain=toolchain)
    yield servers
    servers.stop()


@pytest.fixture(params=BACKEND_KINDS)
def backend(
    request: pytest.FixtureRequest, backend_servers: BackendServers, tmp_path: Path
) -> Backend:
    """An empty state backend of the test's own, one run per kind: file, postgres, s3."""
    return backend_servers.backend(str(request.param), folder=tmp_path)

"""Fixtures shared by all test levels.

The toolchain and the control plane are real (reconciler/local/toolchain.py,
reconciler/local/plane.py). When the toolchain is missing, ``find_toolchain`` builds it from the Go
module proxy; tests that need it never skip, so a broken toolchain shows as a failure, not as a
quiet pass.
"""

from __future__ import annotations

import json
import os
import resource
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from reconciler.engine.cli import CLI_GOGC, CLI_GOMAXPROCS
from reconciler.local.plane import PORT_RANGE_ENV, LocalControlPlane
from reconciler.local.toolchain import TEST_TOOLS, Toolchain, find_toolchain
from reconciler.toolchain import check_versions
from tests import durations
from tests.backends import BACKEND_KINDS, Backend, BackendServers
from tests.readonly import read_only

# Test workers (pytest-xdist) each take ports from a range of their own below the kernel's
# ephemeral ports (reconciler.local.plane.PORT_RANGE_ENV): a port picked for a server that binds
# it seconds later cannot be taken meanwhile by another worker. Four runs side by side, sixteen
# workers each; a run outside xdist lets the kernel pick.
PORT_BASE, PORT_TOP, RUNS, WORKERS = 20000, 32768, 4, 16


def worker_ports(worker: str, run: str) -> str:
    """The port range of xdist worker ``gwN`` of test run ``run`` (its uid), "LOW-HIGH"."""
    size = (PORT_TOP - PORT_BASE) // (RUNS * WORKERS)
    slot = (int(run[:8] or "0", 16) % RUNS) * WORKERS + int(worker.removeprefix("gw")) % WORKERS
    low = PORT_BASE + slot * size
    return f"{low}-{low + size}"


def pytest_configure(config: pytest.Config) -> None:
    # The tests' own `pulumi` (a person's or CI's, in the scenarios) with the collector setting
    # the engine gives its children (reconciler.engine.cli.CLI_GOGC): a quarter less CPU per
    # start, nothing else changed. The user's own setting wins.
    os.environ.setdefault("GOGC", CLI_GOGC)
    # ... and the processors it gives them (CLI_GOMAXPROCS), which the servers the tests start
    # (kube-apiserver, etcd, MinIO) inherit too: on 2 cores shared by four workers, a server's
    # idle threads and parallel collector cost CPU the tests need (a control plane's start and
    # first 30 s: 3.4-3.8 CPU s instead of 3.7-4.2).
    os.environ.setdefault("GOMAXPROCS", CLI_GOMAXPROCS)
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker:
        run = os.environ.get("PYTEST_XDIST_TESTRUNUID", "")
        os.environ[PORT_RANGE_ENV] = worker_ports(worker, run)


def _module_scoped(item: pytest.Item) -> bool:
    """Whether ``item`` uses a fixture made once per module (a control plane of the module's
    own, an emulator, a ServiceAccount's kubeconfig)."""
    info = getattr(item, "_fixtureinfo", None)
    defs = info.name2fixturedefs.values() if info is not None else ()
    return any(d.scope == "module" for chain in defs for d in chain)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Markers from what a test needs: ``kube`` (a kube-apiserver: the e2e tests and the
    commands' tests that use ``control_plane``), and, for a test of a module with module-scoped
    fixtures, ``xdist_group`` by module, so that with ``--dist loadgroup`` the module's tests
    share one worker and its fixtures are made once; every other test goes to any worker.
    Then the order: the long units early."""
    for item in items:
        e2e = item.get_closest_marker("e2e") or item.nodeid.startswith("tests/e2e/")
        if e2e or "control_plane" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.kube)
        if _module_scoped(item):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::", 1)[0]))
    # then the long units early (tests/durations.py), after pytest-randomly's shuffle (its hook
    # runs first): xdist hands them out in this order
    items[:] = durations.long_units_early(
        items, node_id=lambda item: item.nodeid, unit=_unit, durations=durations.load()
    )


def _unit(item: pytest.Item) -> str:
    """What xdist's loadgroup hands to one worker at once: the test's group, or the test."""
    group = item.get_closest_marker("xdist_group")
    return str(group.args[0]) if group is not None else item.nodeid


# LBR_TEST_CPU=<file>: each test's wall time and CPU time (this process's and its children's
# that ended, such as the ``pulumi`` runs it waited for), one JSON line per test, from setup to
# teardown, and when it ended (a timeline of the workers); docs/testing.md says how the suite's
# figures were made with it.
CPU_REPORT_ENV = "LBR_TEST_CPU"


def _cpu_seconds() -> float:
    own, children = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    report = os.environ.get(CPU_REPORT_ENV)
    if not report:
        yield
        return
    wall, cpu = time.monotonic(), _cpu_seconds()
    yield
    line = {
        "test": item.nodeid,
        "worker": os.environ.get("PYTEST_XDIST_WORKER", ""),
        "wall": round(time.monotonic() - wall, 3),
        "cpu": round(_cpu_seconds() - cpu, 3),
        "end": round(time.time(), 3),
    }
    with open(report, "a") as out:
        out.write(json.dumps(line) + "\n")


@pytest.fixture(scope="session")
def toolchain() -> Iterator[Toolchain]:
    """The built toolchain with MinIO (the s3:// backend's tests) and helm, first on PATH for
    this test session (pulumi children find it). Its versions are checked here, once, as the
    commands check them (the pass is remembered), so that no test counting the ``pulumi``
    starts of a command sees the check's."""
    tc = find_toolchain(tools=TEST_TOOLS)
    check_versions(tc)
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


@pytest.fixture
def readonly_backend(backend: Backend) -> Backend:
    """``backend`` as read-only credentials see it (:mod:`tests.readonly`): the same database
    with the role of ``examples/ci/readonly-postgres.sql``, the same bucket with credentials
    limited by ``examples/ci/readonly-s3-policy.json``, the same ``file://`` folder."""
    return read_only(backend)


@pytest.fixture
def postgres_backend(backend_servers: BackendServers, tmp_path: Path) -> Backend:
    """A ``postgres://`` backend of the test's own (a new database), as the controller has it."""
    return backend_servers.backend("postgres", folder=tmp_path)


@pytest.fixture
def postgres_readonly(postgres_backend: Backend) -> Backend:
    """``postgres_backend``'s database through the read-only role: ``.url`` is the read-only
    URL, ``.cli_env()`` what a process needs to read it."""
    return read_only(postgres_backend)


@pytest.fixture
def s3_backend(backend_servers: BackendServers, tmp_path: Path) -> Backend:
    """An ``s3://`` backend of the test's own (a new bucket, prefix ``state``)."""
    return backend_servers.backend("s3", folder=tmp_path)


@pytest.fixture
def s3_readonly(s3_backend: Backend) -> Backend:
    """``s3_backend``'s bucket through read-only credentials (``.env``: the AWS keys and
    session token, valid for an hour)."""
    return read_only(s3_backend)

"""Fixtures for tests/e2e: an emulator of its own for each test (``emu``, the ``instant``
timing profile); a module that shares one among its tests overrides ``emu``. After each test,
no stack of its backends (the ``backend`` fixture's, any ``file://`` one under its
``tmp_path``) may hold an OpenStack credential (:mod:`tests.stack_secrets`)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from emulator.timing import INSTANT
from tests.backends import Backend
from tests.e2e.controller_process import PASSPHRASE
from tests.emulated import emulator_fixture
from tests.stack_secrets import assert_no_credentials, file_backends

emu = emulator_fixture(scope="function", timing=INSTANT)


@pytest.fixture(autouse=True)
def no_credentials_in_stacks(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    args = getattr(request.node, "funcargs", {})
    backend = args.get("backend")
    if isinstance(backend, Backend) and backend.kind != "file":
        env = {**backend.cli_env(), **backend.env}
        assert_no_credentials(backend.url, env=env, passphrases=(PASSPHRASE,))
    tmp_path = args.get("tmp_path")
    for url in file_backends(tmp_path) if tmp_path is not None else ():
        assert_no_credentials(url, passphrases=(PASSPHRASE,))

"""The real build script: the demo's and the controller's tools leave MinIO out (it is only for the
s3:// backend's tests), and asking for MinIO gives a folder with every tool and MinIO."""

from __future__ import annotations

import os

import pytest

from reconciler.local.toolchain import TOOLS, WITH_MINIO, find_toolchain

pytestmark = pytest.mark.integration


def test_minio_is_built_only_for_those_that_ask(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LBR_TOOLS_BIN", raising=False)
    plain, with_minio = find_toolchain(), find_toolchain(tools=WITH_MINIO)
    assert all(os.access(plain.path(tool), os.X_OK) for tool in TOOLS)
    assert not plain.path("minio").exists()
    assert all(os.access(with_minio.path(tool), os.X_OK) for tool in WITH_MINIO)
    assert plain.path("pulumi").resolve() == with_minio.path("pulumi").resolve()  # one build

"""Fixtures for tests/e2e: an emulator of its own for each test (``emu``, the ``instant``
timing profile); a module that shares one among its tests overrides ``emu``."""

from __future__ import annotations

from emulator.timing import INSTANT
from tests.emulated import emulator_fixture

emu = emulator_fixture(scope="function", timing=INSTANT)

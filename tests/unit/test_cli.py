"""The command line: every flag after `emulator` goes to the emulator's own parser."""

from __future__ import annotations

import pytest

from reconciler.cli import build_parser, main


def test_emulator_help_is_the_emulators(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["emulator", "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert "--timing" in out
    assert "--state-file" in out


def test_top_level_help_lists_the_subcommands() -> None:
    text = build_parser().format_help()
    assert "demo" in text
    assert "emulator" in text


def test_unknown_subcommand_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["frobnicate"])
    assert done.value.code == 2
    assert "invalid choice: 'frobnicate'" in capsys.readouterr().err

"""The command line: every flag after `emulator` goes to the emulator's own parser."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from reconciler.cli.common import backend_url, shown_url
from reconciler.cli.main import build_parser, main

# `run` configures the root logger onto each test's captured stderr
pytestmark = pytest.mark.usefixtures("restore_logging")


@pytest.mark.parametrize(
    ("command", "says"),
    [
        pytest.param("emulator", ["--timing", "--state-file"], id="emulator-is-the-emulators"),
        pytest.param(
            "run",
            ["lb-reconciler run --cloud-config", "--leader-elect", "exit codes"],
            id="run-has-an-example-and-the-exit-codes",
        ),
    ],
)
def test_help(command: str, says: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main([command, "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    for text in says:
        assert text in out


def test_a_command_imports_only_what_it_needs() -> None:
    """`lb-reconciler stacks` starts without the Kubernetes client and the Automation API
    (a second of CPU at every start when every command's module was imported)."""
    probe = (
        "import sys\n"
        "from reconciler.cli.main import main\n"
        "try:\n    main(['stacks', '--help'])\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in ('kubernetes', 'pulumi.automation') if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert "--conditions" in done.stdout  # the command's own help was printed
    assert done.stdout.strip().splitlines()[-1] == "[]"


@pytest.mark.parametrize(
    "argv", [pytest.param(["demo", "--once"], id="demo"), pytest.param(["emulator"], id="emulator")]
)
def test_without_the_local_extra_demo_and_emulator_name_it_and_exit_1(
    argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """As in the container image: no aiohttp. The command says what to install, before it
    builds a toolchain or starts anything, instead of a traceback from an import."""
    monkeypatch.setitem(sys.modules, "aiohttp", None)  # what `import aiohttp` cannot find
    monkeypatch.setenv("LBR_TOOLS_BIN", "/nonexistent")  # had it gone on, it would say so
    assert main(argv) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.strip() == (
        f"error: `lb-reconciler {argv[0]}` runs the OpenStack emulator, which needs aiohttp, not "
        "installed here (the container image holds only what the controller and the CLI "
        "need); install the optional extra `local`: pip install 'lb-reconciler[local]'"
    )


def test_every_command_is_listed() -> None:
    text = build_parser().format_help()
    for name in ("demo", "emulator", "run", "stacks", "sweep", "adopt", "preflight", "preview"):
        assert name in text
    assert "backend" in text


def test_top_level_help_lists_the_subcommands() -> None:
    text = build_parser().format_help()
    assert "demo" in text
    assert "emulator" in text


def test_unknown_subcommand_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["frobnicate"])
    assert done.value.code == 2
    assert "invalid choice: 'frobnicate'" in capsys.readouterr().err


def test_run_names_each_cloud_conf_problem_and_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    conf = tmp_path / "cloud.conf"
    conf.write_text("[Global]\nauth-url = https://keystone.example/v3\npasword = hunter2\n")
    code = main(["run", "--cloud-config", str(conf), "--log-format", "text", "--http-address", ""])
    assert code == 2
    err = capsys.readouterr().err
    assert "cloud.conf" in err
    assert "pasword" in err  # the bad key, by name
    assert "hunter2" not in err  # and never its value


def test_run_without_a_passphrase_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PULUMI_CONFIG_PASSPHRASE", raising=False)
    conf = tmp_path / "cloud.conf"
    conf.write_text(
        "[Global]\nauth-url = https://keystone.example/v3\nusername = u\npassword = p\n"
        "tenant-name = t\nregion = r\n"
    )
    code = main(["run", "--cloud-config", str(conf), "--log-format", "text", "--http-address", ""])
    assert code == 2
    assert "PULUMI_CONFIG_PASSPHRASE" in capsys.readouterr().err


@pytest.mark.parametrize("mode", ["repair", "report"])
def test_run_refuses_a_drift_mode_with_an_interval_of_0(
    mode: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["run", "--cloud-config", "x", "--drift", mode, "--drift-interval", "0"]
    assert main([*argv, "--log-format", "text", "--http-address", ""]) == 2
    err = capsys.readouterr().err
    assert f"--drift={mode} needs a --drift-interval above 0" in err
    assert "--drift=off" in err


@pytest.mark.parametrize(
    ("flag", "env", "url"),
    [
        (None, {}, ""),  # the file:// backend in --state-dir
        (None, {"PULUMI_BACKEND_URL": "s3://lbr?region=x"}, "s3://lbr?region=x"),
        ("postgres://db/lbr", {"PULUMI_BACKEND_URL": "s3://lbr"}, "postgres://db/lbr"),
        (" file:///var/lib/lbr/backend\n", {}, "file:///var/lib/lbr/backend"),
        (None, {"PULUMI_BACKEND_URL": "https://api.pulumi.com"}, "https://api.pulumi.com"),
    ],
)
def test_the_backend_is_the_flag_else_pulumis_variable(
    flag: str | None, env: dict[str, str], url: str
) -> None:
    assert backend_url(flag, env) == url


@pytest.mark.parametrize(
    ("flag", "env", "says"),
    [
        ("", {}, "--backend-url is empty"),
        (None, {"PULUMI_BACKEND_URL": " "}, "PULUMI_BACKEND_URL is empty"),
        ("posgres://lbr:hunter2@db/lbr", {}, "not a Pulumi backend URL"),
        ("bucket/prefix", {}, "not a Pulumi backend URL"),
    ],
)
def test_run_refuses_an_empty_or_unknown_backend_and_exits_2(
    flag: str | None,
    env: dict[str, str],
    says: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("PULUMI_BACKEND_URL", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    argv = ["run", "--cloud-config", "x", "--log-format", "text", "--http-address", ""]
    assert main(argv + ([] if flag is None else ["--backend-url", flag])) == 2
    err = capsys.readouterr().err
    assert says in err
    assert "hunter2" not in err
    assert "postgres://" in err  # what it may be


def test_a_backend_url_is_shown_without_its_credentials() -> None:
    assert shown_url("postgres://lbr:hunter2@db:5432/lbr?sslmode=require") == (
        "postgres://lbr:[secret]@db:5432/lbr?sslmode=require"
    )
    assert shown_url("s3://b/p?endpoint=http://m:9000&region=x&secret_key=hunter2") == (
        "s3://b/p?endpoint=http://m:9000&region=x&secret_key=[secret]"
    )
    assert shown_url("file:///var/lib/lbr/backend") == "file:///var/lib/lbr/backend"


def test_run_rejects_a_bad_worker_count(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["run", "--cloud-config", "x", "--workers", "0"])
    assert done.value.code == 2
    assert "--workers" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv",
    [
        ["sweep", "--cloud-config", "missing.conf", "--delete"],
        ["adopt", "--cloud-config", "missing.conf", "--apply"],
    ],
)
def test_what_deletes_or_takes_over_needs_an_explicit_cluster_name(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 13, across clusters: the default name "kubernetes" is every cluster's that kept
    it, and two clusters with one name in one project see each other's load balancers as their
    own (OCCM #3102). Refused before anything is read."""
    assert main(argv) == 1
    err = capsys.readouterr().err
    flag = argv[-1]
    assert err.startswith(f"error: {flag} needs --cluster-name given explicitly")
    assert 'the default "kubernetes"' in err
    assert "missing.conf" not in err  # nothing was read before


@pytest.mark.parametrize(
    "argv",
    [
        ["sweep", "--cloud-config", "missing.conf"],  # read-only: the default is fine
        ["adopt", "--cloud-config", "missing.conf"],
        ["sweep", "--cloud-config", "missing.conf", "--delete", "--cluster-name", "kubernetes"],
        ["adopt", "--cloud-config", "missing.conf", "--apply", "--cluster-name=prod"],
    ],
)
def test_an_explicit_cluster_name_or_a_read_only_run_goes_on(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "--cluster-name" not in err
    assert err.startswith("error: --cloud-config missing.conf")  # the next thing it checks


def test_an_empty_cluster_name_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["sweep", "--cloud-config", "missing.conf", "--delete", "--cluster-name", ""]
    assert main(argv) == 1
    assert "--cluster-name must not be empty" in capsys.readouterr().err

"""Start-up refuses what cloud.conf asks for and lb-reconciler cannot do: the key and the fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from reconciler.cli.common import CommandError, load_cloud_config
from reconciler.cli.main import main

GLOBAL = "[Global]\nauth-url = https://keystone.example/v3\nusername = u\npassword = p\n"


# `run` configures the root logger onto each test's captured stderr
pytestmark = pytest.mark.usefixtures("restore_logging")


@pytest.mark.parametrize(
    ("extra", "key", "fix"),
    [
        ("[LoadBalancer]\nenabled = false\n", "enabled", "set enabled = true"),
        ("[LoadBalancer]\ncascade-delete = false\n", "cascade-delete", "remove it"),
        (
            "[LoadBalancer]\nprovider-requires-serial-api-calls = true\n",
            "provider-requires-serial-api-calls",
            "remove it",
        ),
        ("[Global]\ntrust-id = abc\n", "trust-id", "application credential"),
        ("[Global]\ncloud = prod\n", "cloud", "use-clouds = true"),
    ],
)
def test_run_refuses_to_start(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    extra: str,
    key: str,
    fix: str,
) -> None:
    monkeypatch.setenv("PULUMI_CONFIG_PASSPHRASE", "x")
    conf = tmp_path / "cloud.conf"
    conf.write_text(GLOBAL + extra)
    code = main(["run", "--cloud-config", str(conf), "--log-format", "text", "--http-address", ""])
    assert code == 2
    err = capsys.readouterr().err
    assert key in err
    assert fix in err
    # the user-side commands (preview, adopt, sweep, stacks) read cloud.conf the same way
    with pytest.raises(CommandError, match=key):
        load_cloud_config(str(conf))

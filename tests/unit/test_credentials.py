"""No OpenStack credential in any stack (issue 28), the parts that need no cloud: the provider's
environment, what is taken out of a stored document, the settings file, and the tests' scan of a
backend (which must find a password where an older engine left one)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from reconciler.config import AuthConfig, Secret
from reconciler.engine.cli import cli_env
from reconciler.engine.provider_config import provider_env, scrubbed
from reconciler.engine.stack_meta import drop_credentials
from reconciler.engine.state.passphrase import PassphraseKey, encrypt
from reconciler.engine.state.stacks import rewrite_records
from reconciler.engine.state.store import open_state_store
from reconciler.toolchain import Toolchain
from tests.stack_secrets import SECRET_SIG, assert_no_credentials, credential_findings

PASSWORD = "s3cret-cloud-password"
PASSPHRASE = "unit-passphrase"
PROVIDER = "urn:pulumi:s::lb-reconciler::pulumi:providers:openstack::default_5_5_1"


def test_the_provider_gets_the_secrets_in_its_environment_only() -> None:
    auth = AuthConfig(
        auth_url="http://keystone/v3",
        password=Secret(PASSWORD),
        token=Secret("tok"),
        application_credential_secret=Secret("app"),
    )
    assert provider_env(auth) == {
        "OS_PASSWORD": PASSWORD,
        "OS_TOKEN": "tok",
        "OS_APPLICATION_CREDENTIAL_SECRET": "app",
    }
    assert provider_env(AuthConfig(auth_url="http://keystone/v3")) == {}


def test_a_credential_inherited_by_the_engine_does_not_reach_the_provider(tmp_path: Path) -> None:
    """cloud.conf's credentials, or none: never one of the controller's own environment, which
    would log the provider in otherwise than the engine's client."""
    toolchain = Toolchain(bin_dir=tmp_path)
    inherited = {"OS_PASSWORD": "other", "OS_AUTH_TOKEN": "other-token", "OS_USERNAME": "u"}
    with pytest.MonkeyPatch.context() as mp:
        for key, value in inherited.items():
            mp.setenv(key, value)
        env = cli_env(
            toolchain,
            backend="file:///x",
            passphrase="p",
            extra={},
            credentials={"OS_TOKEN": "tok"},
        )
    assert env["OS_TOKEN"] == "tok"
    assert "OS_PASSWORD" not in env
    assert "OS_AUTH_TOKEN" not in env
    assert env["OS_USERNAME"] == "u"  # not a secret: left as it was


def _secret(key: bytes, value: str) -> dict[str, str]:
    sealed = encrypt(key, json.dumps(value))
    return {SECRET_SIG: "1b47061264138c4ac30d75fd1eb44270", "ciphertext": sealed}


def _checkpoint(salt: str, inputs: dict[str, Any], outputs: dict[str, Any]) -> dict[str, Any]:
    provider = {
        "urn": PROVIDER,
        "custom": True,
        "id": "4b7a",
        "type": "pulumi:providers:openstack",
        "inputs": inputs,
        "outputs": outputs,
    }
    latest = {
        "manifest": {},
        "secrets_providers": {"type": "passphrase", "state": {"salt": salt}},
        "resources": [provider],
    }
    return {"version": 3, "checkpoint": {"stack": "organization/lb-reconciler/s", "latest": latest}}


def _backend(tmp_path: Path, document: dict[str, Any]) -> str:
    root = tmp_path / "backend"
    stacks = root / ".pulumi" / "stacks" / "lb-reconciler"
    stacks.mkdir(parents=True)
    (root / ".pulumi" / "meta.yaml").write_text("version: 1\n")
    (stacks / "s.json").write_text(json.dumps(document))
    return root.absolute().as_uri()


def test_the_scan_finds_the_password_an_older_engine_left(tmp_path: Path) -> None:
    keys = PassphraseKey.of(PASSPHRASE)
    salt, key = keys.state, keys.key_for(keys.state)
    assert key is not None
    old = {"authUrl": "http://keystone/v3", "password": _secret(key, PASSWORD), "version": "5.5.1"}
    url = _backend(tmp_path, _checkpoint(salt, old, old))
    store = open_state_store(url)
    assert store is not None
    found = credential_findings(store, values=[PASSWORD], passphrases=[PASSPHRASE])
    assert list(found) == ["s"]
    assert any("credential key" in f for f in found["s"])
    assert any(repr(PASSWORD) in f and "in a secret" in f for f in found["s"])
    with pytest.raises(pytest.fail.Exception, match="stack s: "):
        assert_no_credentials(url, values=[PASSWORD], passphrases=[PASSPHRASE])


def test_the_scan_finds_the_password_under_another_key_or_in_plain_text(tmp_path: Path) -> None:
    keys = PassphraseKey.of(PASSPHRASE)
    key = keys.key_for(keys.state)
    assert key is not None
    inputs = {"authUrl": "http://keystone/v3", "userName": PASSWORD}
    outputs = {**inputs, "somewhere": _secret(key, f"x{PASSWORD}y")}
    store = open_state_store(_backend(tmp_path, _checkpoint(keys.state, inputs, outputs)))
    assert store is not None
    found = credential_findings(store, values=[PASSWORD], passphrases=[PASSPHRASE])["s"]
    assert any("in plain text" in f for f in found)
    assert any("in a secret" in f for f in found)
    assert not any("credential key" in f for f in found)


def test_a_clean_state_has_no_finding(tmp_path: Path) -> None:
    keys = PassphraseKey.of(PASSPHRASE)
    clean = {"authUrl": "http://keystone/v3", "userName": "demo", "version": "5.5.1"}
    url = _backend(tmp_path, _checkpoint(keys.state, clean, clean))
    assert_no_credentials(url, values=[PASSWORD], passphrases=[PASSPHRASE])


def test_scrubbed_takes_the_credentials_out_of_each_kind_of_record() -> None:
    sealed = {SECRET_SIG: "x", "ciphertext": "v1:a:b"}
    inputs = {"authUrl": "u", "password": sealed, "token": sealed, "version": "5.5.1"}
    document = _checkpoint("v1:s:c", inputs, inputs)
    clean = scrubbed(document)
    assert clean is not None
    provider = clean["checkpoint"]["latest"]["resources"][0]
    assert provider["inputs"] == provider["outputs"] == {"authUrl": "u", "version": "5.5.1"}
    assert scrubbed(clean) is None  # nothing left: nothing to write
    record = {"kind": "update", "config": {"openstack:password": {"secure": "v1:a:b"}, "a:b": "c"}}
    assert scrubbed(record) == {"kind": "update", "config": {"a:b": "c"}}
    other = {"resources": [{"type": "openstack:x:Y", "inputs": {"password": "kept"}}]}
    assert scrubbed(other) is None  # a resource's own input named password is not the cloud's


def test_the_settings_file_loses_the_credentials_and_keeps_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "Pulumi.s.yaml"
    config = {"openstack:password": {"secure": "v1:a"}, "openstack:authUrl": "u", "lbr:spec": "{}"}
    path.write_text(yaml.safe_dump({"encryptionsalt": "v1:s:c", "config": config}))
    assert drop_credentials(path) is True
    assert yaml.safe_load(path.read_text()) == {
        "encryptionsalt": "v1:s:c",
        "config": {"openstack:authUrl": "u", "lbr:spec": "{}"},
    }
    assert drop_credentials(path) is False
    assert drop_credentials(tmp_path / "absent.yaml") is False


def test_rewrite_records_writes_back_only_what_changed(tmp_path: Path) -> None:
    sealed = {SECRET_SIG: "x", "ciphertext": "v1:a:b"}
    url = _backend(tmp_path, _checkpoint("v1:s:c", {"password": sealed}, {}))
    store = open_state_store(url)
    assert store is not None
    history = f"{store.history_prefix('s')}s-1700000000000000000"
    dirty = {"kind": "update", "config": {"openstack:password": {"secure": "v1:a:b"}}}
    store.bucket.write(f"{history}.history.json", json.dumps(dirty).encode())
    store.bucket.write(f"{history}.checkpoint.json", json.dumps({"version": 3}).encode())
    assert rewrite_records(store, "s", scrubbed) == 1
    data = store.bucket.read(f"{history}.history.json")
    assert data is not None
    assert json.loads(data) == {"kind": "update", "config": {}}

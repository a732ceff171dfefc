"""Pulumi's passphrase secrets format, as reconciler.engine.state.passphrase writes and reads it.

The first test reads a salt state the real ``pulumi stack init`` (v3.259) wrote; the engine
tests (test_engine_cli_starts.py) check the other way round, the CLI reading what was written
here, on every backend.
"""

from __future__ import annotations

from reconciler.engine.state.passphrase import (
    CHECK_MESSAGE,
    PassphraseKey,
    decrypt,
    derive_key,
    encrypt,
    salt_of,
)

# `PULUMI_CONFIG_PASSPHRASE=pw pulumi stack init s1` on a file:// backend: Pulumi.s1.yaml
BY_THE_CLI = "v1:C8cuy9DUSzQ=:v1:5tQ0wloO/sDUMftG:OpE9z2M2XJCUYL5+qS+3ixpZrA3sMg=="


def test_a_salt_state_of_the_cli_is_read() -> None:
    salt = salt_of(BY_THE_CLI)
    assert salt is not None
    assert len(salt) == 8
    key = derive_key("pw", salt)
    assert decrypt(key, BY_THE_CLI.split(":", 2)[2]) == CHECK_MESSAGE
    assert decrypt(derive_key("not-pw", salt), BY_THE_CLI.split(":", 2)[2]) is None


def test_a_secret_round_trips_with_a_fresh_nonce_each_time() -> None:
    key = bytes(range(32))
    one, two = encrypt(key, "s3cret"), encrypt(key, "s3cret")
    assert one != two
    assert one.startswith("v1:")
    assert one.count(":") == 2
    assert decrypt(key, one) == decrypt(key, two) == "s3cret"
    assert decrypt(bytes(32), one) is None  # another key
    assert decrypt(key, "v2:abc:def") is None
    assert decrypt(key, "v1:!!:??") is None


def test_salt_states_that_are_not_one() -> None:
    assert salt_of("v1:not base64!:v1:a:b") is None
    assert salt_of("v2:C8cuy9DUSzQ=:v1:a:b") is None
    assert salt_of("v1") is None


def test_the_process_key_is_made_once_and_given_only_for_its_own_salt() -> None:
    made = PassphraseKey("pw")
    assert made.key_for(BY_THE_CLI) is None  # nothing derived yet
    state = made.state
    assert state == made.state  # one salt per process
    salt = salt_of(state)
    assert salt is not None
    key = made.key_for(state)
    assert key == derive_key("pw", salt)
    assert decrypt(key, state.split(":", 2)[2]) == CHECK_MESSAGE  # as the CLI checks it
    assert made.key_for(BY_THE_CLI) is None
    assert made.key_for(None) is None

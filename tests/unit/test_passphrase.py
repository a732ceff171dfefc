"""Pulumi's passphrase secrets format, as reconciler.engine.state.passphrase writes and reads it.

The first test reads a salt state the real ``pulumi stack init`` (v3.259) wrote; the engine
tests (test_engine_cli_starts.py) check the other way round, the CLI reading what was written
here, on every backend.
"""

from __future__ import annotations

import pytest

from reconciler.engine.state import passphrase
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


def test_the_process_key_is_made_once_for_its_own_salt() -> None:
    made = PassphraseKey("pw")
    assert not made.ready
    state = made.state
    assert made.ready
    assert state == made.state  # one salt per process
    salt = salt_of(state)
    assert salt is not None
    key = made.key_for(state)
    assert key == derive_key("pw", salt)
    assert decrypt(key, state.split(":", 2)[2]) == CHECK_MESSAGE  # as the CLI checks it
    assert made.key_for(None) is None


def test_the_key_of_another_salt_is_derived_once_when_the_passphrase_opens_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A process that takes over stacks another made (another process's salt, or the CLI's)
    writes their secrets itself: their key, derived once per salt."""
    other = PassphraseKey("pw").state  # another process's
    made = PassphraseKey("pw")
    derived: list[bytes] = []
    real = passphrase.derive_key

    def counting(secret: str, salt: bytes) -> bytes:
        derived.append(salt)
        return real(secret, salt)

    monkeypatch.setattr(passphrase, "derive_key", counting)
    cli_salt = salt_of(BY_THE_CLI)
    assert cli_salt is not None
    assert made.key_for(BY_THE_CLI) == real("pw", cli_salt)
    assert made.key_for(BY_THE_CLI) == real("pw", cli_salt)
    assert made.key_for(other) is not None
    assert made.key_for(other) == made.key_for(other)
    assert len(derived) == 2  # once per salt
    assert not made.ready  # its own salt is still not made


def test_a_salt_of_another_passphrase_or_none_at_all_has_no_key() -> None:
    """The CLI then writes, and says the passphrase is wrong."""
    assert PassphraseKey("not-pw").key_for(BY_THE_CLI) is None
    assert PassphraseKey("pw").key_for("v2:C8cuy9DUSzQ=:v1:a:b") is None
    assert PassphraseKey("pw").key_for("v1:C8cuy9DUSzQ=") is None


def test_the_engines_of_a_process_share_one_key_per_passphrase() -> None:
    """So a process derives its own salt's key once, however many engines it makes."""
    assert PassphraseKey.of("shared-pw") is PassphraseKey.of("shared-pw")
    assert PassphraseKey.of("shared-pw") is not PassphraseKey.of("other-pw")

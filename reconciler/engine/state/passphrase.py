"""Pulumi's ``passphrase`` secrets format, in Python: what ``pulumi stack init`` and
``pulumi config set --secret`` write, without starting ``pulumi`` for either.

This module depends on a format that is Pulumi's, not a documented interface; it is the only
one here that does. ``tests/unit/test_passphrase.py`` reads a salt the CLI wrote, and
``tests/integration/engine/test_engine_cli_starts.py`` has the CLI we build read back what was
written here (``pulumi config get``, ``pulumi stack output``) on every DIY backend.
As the Pulumi SDK writes it (``sdk/go/common/resource/config/crypt.go``,
``pkg/secrets/passphrase``):

* the key is PBKDF2-HMAC-SHA256 of the passphrase over an 8-byte salt, 1,000,000 rounds, 32
  bytes;
* a secret is ``v1:<base64 nonce>:<base64 AES-256-GCM ciphertext and tag>``, a fresh 12-byte
  nonce each time;
* a stack's salt state (``encryptionsalt`` in ``Pulumi.<stack>.yaml``, ``secrets_providers``
  in its checkpoint) is ``v1:<base64 salt>:`` followed by the secret ``pulumi``, which the CLI
  decrypts to check the passphrase.

The engine makes one salt per process (:meth:`PassphraseKey.of`): every stack it creates shares
it, so the key is derived once (about 0.3 CPU seconds) rather than once per stack by a
``pulumi`` start. Sharing a salt among stacks protected by one passphrase gives nothing away:
whoever has the passphrase can read them all either way, and random 96-bit nonces keep
AES-GCM safe far beyond any number of stacks.
"""

from __future__ import annotations

import base64
import hashlib
import os
import threading
from typing import ClassVar

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

__all__ = ["PassphraseKey", "decrypt", "derive_key", "encrypt", "salt_of"]

ROUNDS = 1_000_000
CHECK_MESSAGE = "pulumi"
MAX_OTHER_SALTS = 4096  # keys of other salts kept (:meth:`PassphraseKey.key_for`)


def derive_key(passphrase: str, salt: bytes) -> bytes:
    """The AES key of ``passphrase`` with ``salt``, as the Pulumi SDK derives it."""
    return hashlib.pbkdf2_hmac("sha256", passphrase.encode(), salt, ROUNDS, 32)


def encrypt(key: bytes, plaintext: str) -> str:
    """``v1:<nonce>:<ciphertext>`` of ``plaintext``: a config file's ``secure:`` value."""
    nonce = os.urandom(12)
    sealed = AESGCM(key).encrypt(nonce, plaintext.encode(), None)
    return f"v1:{_b64(nonce)}:{_b64(sealed)}"


def decrypt(key: bytes, ciphertext: str) -> str | None:
    """The plaintext of a ``v1:`` secret; None when it is not one, or not of ``key``."""
    parts = ciphertext.split(":")
    if len(parts) != 3 or parts[0] != "v1":
        return None
    try:
        nonce, sealed = base64.b64decode(parts[1]), base64.b64decode(parts[2])
        return AESGCM(key).decrypt(nonce, sealed, None).decode()
    except (ValueError, InvalidTag):
        return None


def salt_of(state: str) -> bytes | None:
    """The salt of a salt state (``v1:<salt>:v1:<nonce>:<ciphertext>``); None otherwise."""
    parts = state.split(":", 2)
    if len(parts) != 3 or parts[0] != "v1":
        return None
    try:
        return base64.b64decode(parts[1], validate=True)
    except ValueError:
        return None


class PassphraseKey:
    """One salt and its key for a process's new stacks, made on first use, and the keys of the
    other salts met (thread-safe). :meth:`of` gives the process's one per passphrase."""

    _process: ClassVar[dict[str, PassphraseKey]] = {}
    _process_lock: ClassVar[threading.Lock] = threading.Lock()

    @classmethod
    def of(cls, passphrase: str) -> PassphraseKey:
        """This process's key of ``passphrase``: every engine of the process (a controller has
        one; the tests and tools make many) shares its salt and the keys derived."""
        with cls._process_lock:
            return cls._process.setdefault(passphrase, cls(passphrase))

    def __init__(self, passphrase: str) -> None:
        self._passphrase = passphrase
        self._lock = threading.Lock()
        self._made: tuple[str, bytes] | None = None
        # other salt states -> their key (None: not this passphrase's), derived once each
        self._others: dict[str, bytes | None] = {}

    def _get(self) -> tuple[str, bytes]:
        with self._lock:
            if self._made is None:
                salt = os.urandom(8)
                key = derive_key(self._passphrase, salt)
                self._made = (f"v1:{_b64(salt)}:{encrypt(key, CHECK_MESSAGE)}", key)
            return self._made

    @property
    def ready(self) -> bool:
        """Whether the key is derived already (:attr:`state` then costs nothing)."""
        return self._made is not None

    def derive(self) -> None:
        """Derive the key now (a warm-up), unless it is already."""
        self._get()

    @property
    def state(self) -> str:
        """The salt state to write as a new stack's ``encryptionsalt``."""
        return self._get()[0]

    def key_for(self, state: str | None) -> bytes | None:
        """The key of a stack whose salt state is ``state``: this process's own, or another's
        (another process's salt, the CLI's) derived once and kept, so that a process that
        takes over stacks another one made writes their secrets itself too (about 0.3 CPU
        seconds per salt instead of a ``pulumi config set`` per stack). None when there is
        none, it is not a salt state, or its check message does not open with this passphrase:
        the CLI writes, and says what is wrong."""
        if state is None:
            return None
        with self._lock:
            if self._made is not None and state == self._made[0]:
                return self._made[1]
            if state in self._others:
                return self._others[state]
        salt = salt_of(state)
        key = derive_key(self._passphrase, salt) if salt is not None else None
        check = state.split(":", 2)[2] if key is not None else ""
        if key is not None and decrypt(key, check) != CHECK_MESSAGE:
            key = None
        with self._lock:
            if len(self._others) >= MAX_OTHER_SALTS:
                self._others.clear()  # a bound; each is derived again on its next use
            self._others[state] = key
        return key


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()

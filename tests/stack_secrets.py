"""No OpenStack credential in any stack the tests make (issue 28): a scan of a backend.

:func:`credential_findings` reads every stack of a backend through
:class:`~reconciler.engine.state.store.StateStore` (its checkpoint, the checkpoint's ``.bak``,
its history records and their checkpoints, its backups; no ``pulumi`` start) and reports, per
stack:

* a provider's ``password``, ``token`` or ``applicationCredentialSecret`` input or output, or
  such a key in an update's recorded config, whatever its value and whether or not it can be
  decrypted here (:func:`reconciler.engine.provider_config.scrubbed`);
* a known credential value (``values``) anywhere: in plain text, or inside a secret that one
  of ``passphrases`` decrypts (in-process, :mod:`reconciler.engine.state.passphrase`).

:func:`assert_no_credentials` fails the test with the stacks' names; the engine tests'
fixtures (``tests/integration/engine/conftest.py``) and the e2e tests' (``tests/e2e/
conftest.py``) call it when a test's backend is torn down.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from reconciler.engine.deployment import SIG_KEY
from reconciler.engine.provider_config import scrubbed
from reconciler.engine.state.passphrase import PassphraseKey, decrypt
from reconciler.engine.state.store import BucketError, StateStore, open_state_store

# the emulator's default topology (emulator/topology.py): the credentials a test's cloud.conf
# or clouds.yaml may hold
EMULATOR_CREDENTIALS = ("demo-password", "admin-password", "viewer-password", "demo-appcred-secret")

SECRET_SIG = SIG_KEY  # Pulumi's marker of a special value (a secret's ciphertext) in a state


def _documents(store: StateStore, stack: str) -> Iterator[tuple[str, bytes]]:
    """The stack's stored records (not its locks or tags), as bytes, decompressed."""
    for obj in store.objects_of(stack):
        if "/locks/" in obj.key or obj.key.endswith(".pulumi-tags"):
            continue
        try:
            data = store.bucket.read(obj.key)
        except (BucketError, OSError):  # another user's file (a container's): not ours to read
            continue
        if data is None:
            continue
        if obj.key.endswith((".gz", ".gz.bak")):
            data = gzip.decompress(data)
        yield obj.key, data


def _walk(node: Any) -> Iterator[Any]:
    yield node
    if isinstance(node, Mapping):
        for value in node.values():
            yield from _walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from _walk(value)


def _ciphertexts(document: Any) -> Iterator[str]:
    """Every encrypted value: a state's secrets (``{<sig>: ..., "ciphertext": ...}``) and a
    recorded config's (``{"secure": ...}``)."""
    for node in _walk(document):
        if isinstance(node, Mapping):
            for key in ("ciphertext", "secure"):
                if isinstance(node.get(key), str) and (key == "secure" or SECRET_SIG in node):
                    yield node[key]


def _salts(document: Any) -> Iterator[str]:
    for node in _walk(document):
        if isinstance(node, Mapping) and node.get("type") == "passphrase":
            salt = (node.get("state") or {}).get("salt")
            if isinstance(salt, str):
                yield salt


def credential_findings(
    store: StateStore, *, values: Iterable[str], passphrases: Sequence[str]
) -> dict[str, list[str]]:
    """Stack name -> what in it is an OpenStack credential (see the module docstring); only
    stacks with a finding."""
    known = [v for v in values if v]
    found: dict[str, list[str]] = {}
    for stack in store.stack_names():
        records = []
        for key, data in _documents(store, stack):
            try:
                records.append((key, data, json.loads(data)))
            except ValueError:
                records.append((key, data, None))
        salts = {salt for _, _, doc in records for salt in _salts(doc)}
        opened_by = [PassphraseKey.of(p).key_for(s) for p in passphrases for s in salts]
        aes = [k for k in opened_by if k is not None]
        out = found.setdefault(stack, [])
        for key, data, document in records:
            name = key.rsplit("/", 1)[-1]
            text = data.decode(errors="replace")
            out += [f"{name}: {value!r} in plain text" for value in known if value in text]
            if isinstance(document, dict) and scrubbed(document) is not None:
                out.append(f"{name}: an OpenStack credential key (provider input or config)")
            for sealed in _ciphertexts(document):
                for opened in (decrypt(k, sealed) for k in aes):
                    out += [f"{name}: {v!r} in a secret" for v in known if opened and v in opened]
        if not out:
            del found[stack]
    return found


def assert_no_credentials(
    url: str,
    *,
    env: Mapping[str, str] | None = None,
    values: Iterable[str] = EMULATOR_CREDENTIALS,
    passphrases: Sequence[str] = (),
) -> None:
    """Fail the test, naming each stack and what it holds, when a stack of backend ``url``
    holds an OpenStack credential (:func:`credential_findings`)."""
    store = open_state_store(url, env=env)
    assert store is not None, url
    try:
        found = credential_findings(store, values=values, passphrases=passphrases)
    finally:
        store.close()
    if found:
        lines = [f"stack {stack}: {'; '.join(what)}" for stack, what in sorted(found.items())]
        pytest.fail("OpenStack credentials in the state:\n" + "\n".join(lines), pytrace=False)


def file_backends(folder: Path) -> list[str]:
    """The ``file://`` backends under ``folder`` (each folder holding ``.pulumi/meta.yaml``)."""
    return sorted(m.parent.parent.absolute().as_uri() for m in folder.rglob(".pulumi/meta.yaml"))

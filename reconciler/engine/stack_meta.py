"""What the engine keeps *about* a stack besides its state: config and tags.

:mod:`reconciler.engine.stack` runs the operations; these helpers write a stack's configuration (the
spec and the provider's credentials) before an operation, and its tags before and after one
(the listing of this cluster's stacks: :mod:`reconciler.engine.listing`). The decisions and the
parsing are pure, in :mod:`reconciler.engine.plan` (and :mod:`reconciler.engine.provider_config`).

* **Config** (:func:`configure`): the spec, the release flag and the imports as plain config; the
  provider's secret fields encrypted here when the stack's salt is this process's own (a stack
  it created, :func:`new_settings_file`, :mod:`.state.passphrase`), else with
  ``pulumi config set --secret`` on stdin, never on a command line. A secret this process
  already wrote to the stack's config file, with the same value, is not written again (one CLI
  start saved per operation; the memo holds a digest, never the value).
* **Outputs** (:func:`plain_outputs`): as plain values, every key present.
* **Tags** are read and written by :class:`reconciler.engine.tags.StackTags`; which ones, in
  :func:`reconciler.engine.plan.stack_tags` and :func:`~reconciler.engine.plan.output_tags`.
"""

from __future__ import annotations

import hashlib
import json
import logging
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from pulumi import automation as auto

from reconciler.engine.members_plan import stack_resource
from reconciler.engine.provider_config import provider_config
from reconciler.engine.run import holds_secret
from reconciler.engine.state.passphrase import encrypt
from reconciler.model.spec import LoadBalancerSpec
from stacks.vocabulary import (
    CHILD_DELETE_TIMEOUT_KEY,
    CONFIG_NAMESPACE,
    IMPORTS_KEY,
    RELEASE_KEY,
    SPEC_KEY,
)

if TYPE_CHECKING:
    from reconciler.engine.context import EngineContext

__all__ = [
    "NO_SUCH_RESOURCE",
    "configure",
    "new_settings_file",
    "plain_outputs",
    "record_spec",
    "run_cli",
]

log = logging.getLogger("reconciler.engine.stack")
SPEC_CONFIG = f"{CONFIG_NAMESPACE}:{SPEC_KEY}"  # the spec's key in the stack config


# What `pulumi state ...` prints for a URN the state does not hold.
NO_SUCH_RESOURCE = "No such resource"


def run_cli(
    engine: EngineContext,
    args: list[str],
    *,
    stack_name: str,
    work_dir: Path,
    stdin: str | None = None,
    ok_if: str | None = None,
) -> str:
    """Run the CLI directly on one stack (for what the Automation API would put on a command
    line, such as a secret config value, or does not offer, such as ``state unprotect``). A
    failure whose output contains ``ok_if`` is no failure."""
    engine.fence(f"pulumi {' '.join(args[:2])}", stack=stack_name)
    done = subprocess.run(
        [str(engine.settings.toolchain.path("pulumi")), *args, "--stack", stack_name],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=work_dir,
        env=engine.env(),
        check=False,
    )
    if done.returncode != 0:
        text = done.stdout + done.stderr
        if ok_if is not None and ok_if in text:
            return done.stdout
        raise engine.error(
            RuntimeError(text), stack=stack_name, doing=f"pulumi {args[0]} {args[1]}"
        )
    return done.stdout


# --- config and tags --------------------------------------------------------------------------


def configure(
    engine: EngineContext,
    stack: auto.Stack,
    spec: LoadBalancerSpec,
    *,
    stack_name: str,
    work_dir: Path,
    imports: Mapping[str, str],
    release: bool,
) -> None:
    """Write the spec, the release flag, the imports and the provider config of ``stack``."""
    engine.fence("writing the config", stack=stack_name)
    plain = {
        SPEC_CONFIG: auto.ConfigValue(spec.canonical_json()),
        f"{CONFIG_NAMESPACE}:{RELEASE_KEY}": auto.ConfigValue(str(release).lower()),
        f"{CONFIG_NAMESPACE}:{IMPORTS_KEY}": auto.ConfigValue(json.dumps(dict(imports))),
        f"{CONFIG_NAMESPACE}:{CHILD_DELETE_TIMEOUT_KEY}": auto.ConfigValue(
            f"{engine.settings.child_delete_timeout:g}s"
        ),
    }
    secrets = {}
    for key, (value, secret) in provider_config(engine.settings.auth).items():
        if secret:
            secrets[key] = value
        else:
            plain[key] = auto.ConfigValue(value)
    config_file = work_dir / f"Pulumi.{stack_name}.yaml"
    settings = _read_config_file(config_file)
    salt = settings.get("encryptionsalt") if settings else None
    aes_key = engine.passphrase_key.key_for(salt if isinstance(salt, str) else None)
    values: dict[str, Any] = {k: v.value for k, v in plain.items()}
    written: dict[str, str] = {}  # secret key -> digest, encrypted here
    by_cli: dict[str, tuple[str, str]] = {}  # secret key -> (value, digest)
    for key, value in secrets.items():
        digest = hashlib.sha256(f"{stack_name}\0{key}\0{value}".encode()).hexdigest()
        if engine.secrets_written.get((stack_name, key)) == digest and _has_secret(settings, key):
            continue
        if aes_key is not None:
            values[key] = {"secure": encrypt(aes_key, value)}
            written[key] = digest
        else:
            by_cli[key] = (value, digest)
    if settings is not None:
        settings["config"] = {**(settings.get("config") or {}), **values}
        _write_settings(config_file, settings)
    else:  # no file to edit: ask the CLI
        try:
            stack.set_all_config(plain)
        except auto.CommandError as exc:
            raise engine.error(exc, stack=stack_name, doing="config") from None
    for key, digest in written.items():
        engine.secrets_written[(stack_name, key)] = digest
    for key, (value, digest) in by_cli.items():
        run_cli(
            engine,
            ["config", "set", "--secret", key],
            stack_name=stack_name,
            work_dir=work_dir,
            stdin=value,
        )
        engine.secrets_written[(stack_name, key)] = digest


def new_settings_file(config_file: Path, salt_state: str) -> None:
    """The settings file of a stack just created without ``pulumi stack init``
    (:func:`.state.stacks.create_stack`): its ``encryptionsalt``, as
    ``stack init`` writes it, and no config yet (:func:`configure` adds it)."""
    config_file.parent.mkdir(parents=True, exist_ok=True)
    _write_settings(config_file, {"encryptionsalt": salt_state})


def record_spec(config_file: Path, spec: LoadBalancerSpec) -> dict[str, Any] | None:
    """After a change made without ``up`` (:mod:`.members_direct`): the spec in the stack's
    settings file, as :func:`configure` would have written it for that ``up``, so that a
    ``pulumi preview --config-file`` of it shows no change; its config as written (what the
    update's history record holds). None when there is no settings file here."""
    return set_plain_config(config_file, SPEC_CONFIG, spec.canonical_json())


def set_plain_config(config_file: Path, key: str, value: str) -> dict[str, Any] | None:
    """One plain config value in the stack's settings file, as ``pulumi config set`` writes
    it; the config as written. None, nothing written, when there is no settings file here
    (ask the CLI)."""
    settings = _read_config_file(config_file)
    if settings is None:
        return None
    config = {**(settings.get("config") or {}), key: value}
    _write_settings(config_file, {**settings, "config": config})
    return config


def _read_config_file(config_file: Path) -> dict[str, Any] | None:
    """The stack settings file ``Pulumi.<stack>.yaml``; None when absent or not a mapping."""
    try:
        settings = yaml.safe_load(config_file.read_text())
    except (OSError, yaml.YAMLError):
        return None
    if not isinstance(settings, dict) or not isinstance(settings.get("config") or {}, dict):
        return None
    return settings


def _write_settings(config_file: Path, settings: Mapping[str, Any]) -> None:
    """Write the stack settings file whole (a temporary file renamed over it).

    The file is Pulumi's documented per-stack settings file, the same one
    ``pulumi config set-all --plaintext`` edits; writing it here saves a CLI start."""
    text = yaml.safe_dump(dict(settings), sort_keys=False, default_flow_style=False, width=1 << 20)
    tmp = config_file.with_name(f".{config_file.name}.tmp")
    tmp.write_text(text)
    tmp.replace(config_file)


def _has_secret(settings: Mapping[str, Any] | None, key: str) -> bool:
    """Whether the stack's settings hold ``key`` as a secret (``{secure: ...}``)."""
    entry = ((settings or {}).get("config") or {}).get(key)
    return isinstance(entry, Mapping) and bool(entry.get("secure"))


OUTPUT_KEYS = (
    "spec",
    "spec_hash",
    "lb_id",
    "vip_address",
    "vip_port_id",
    "floating_ip",
    "shared",
    "vip_subnet_id",
)


def plain_outputs(outputs: Mapping[str, auto.OutputValue]) -> dict[str, Any]:
    """Stack outputs as plain values; Pulumi drops None outputs, they come back as None."""
    plain: dict[str, Any] = {key: None for key in OUTPUT_KEYS}
    plain.update({k: v.value for k, v in outputs.items()})
    return plain


def outputs_in(deployment: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The stack outputs of a checkpoint's ``deployment`` (its ``pulumi:pulumi:Stack``
    resource's, what ``pulumi stack output`` prints), as :func:`plain_outputs` gives them; None
    when one is a secret (only its ciphertext is there: ask the CLI)."""
    outputs = (stack_resource(deployment or {}) or {}).get("outputs") or {}
    if not isinstance(outputs, Mapping) or holds_secret(outputs):
        return None
    return {**{key: None for key in OUTPUT_KEYS}, **outputs}


# --- listing ----------------------------------------------------------------------------------

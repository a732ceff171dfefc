"""What the engine keeps *about* a stack besides its state: config and tags.

:mod:`reconciler.engine.stack` runs the operations; these helpers write a stack's configuration (the
spec and where the provider finds the cloud) before an operation, and its tags before and after one
(the listing of this cluster's stacks: :mod:`reconciler.engine.listing`). The decisions and the
parsing are pure, in :mod:`reconciler.engine.plan` (and :mod:`reconciler.engine.provider_config`).

* **Config** (:func:`configure`): the spec, the release flag, the imports and the provider's
  non-secret fields, all plain, in the stack's settings file (``pulumi config set-all`` when
  there is none here). No OpenStack credential: the provider reads those from its environment
  (:mod:`reconciler.engine.provider_config`), and :func:`drop_credentials` takes out those an
  older engine wrote as secrets.
* **Outputs** (:func:`plain_outputs`): as plain values, every key present.
* **Tags** are read and written by :class:`reconciler.engine.tags.StackTags`; which ones, in
  :func:`reconciler.engine.plan.stack_tags` and :func:`~reconciler.engine.plan.output_tags`.
"""

from __future__ import annotations

import json
import logging
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from pulumi import automation as auto

from reconciler.engine.deployment import holds_secret, stack_resource
from reconciler.engine.provider_config import CREDENTIAL_CONFIG_KEYS, provider_config
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
    "drop_credentials",
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
    ok_if: str | None = None,
) -> str:
    """Run the CLI directly on one stack (for what the Automation API does not offer, such as
    ``state unprotect``). A failure whose output contains ``ok_if`` is no failure."""
    engine.fence(f"pulumi {' '.join(args[:2])}", stack=stack_name)
    done = subprocess.run(
        [str(engine.settings.toolchain.path("pulumi")), *args, "--stack", stack_name],
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
    """Write the spec, the release flag, the imports and the provider config of ``stack``: all
    plain, the provider's credentials not among them (they reach it in the environment,
    :func:`reconciler.engine.provider_config.provider_env`); those an older engine wrote
    there are taken out."""
    engine.fence("writing the config", stack=stack_name)
    plain = {
        SPEC_CONFIG: spec.canonical_json(),
        f"{CONFIG_NAMESPACE}:{RELEASE_KEY}": str(release).lower(),
        f"{CONFIG_NAMESPACE}:{IMPORTS_KEY}": json.dumps(dict(imports)),
        f"{CONFIG_NAMESPACE}:{CHILD_DELETE_TIMEOUT_KEY}": (
            f"{engine.settings.child_delete_timeout:g}s"
        ),
        **provider_config(engine.settings.auth),
    }
    config_file = work_dir / f"Pulumi.{stack_name}.yaml"
    settings = _read_config_file(config_file)
    if settings is not None:
        config = {**(settings.get("config") or {}), **plain}
        settings["config"] = {k: v for k, v in config.items() if k not in CREDENTIAL_CONFIG_KEYS}
        _write_settings(config_file, settings)
        return
    try:  # no file to edit (so no credential in it): ask the CLI
        stack.set_all_config({k: auto.ConfigValue(v) for k, v in plain.items()})
    except auto.CommandError as exc:
        raise engine.error(exc, stack=stack_name, doing="config") from None


def drop_credentials(config_file: Path) -> bool:
    """Take the OpenStack credentials an older engine wrote out of a stack's settings file;
    whether there were any (False also without a settings file)."""
    settings = _read_config_file(config_file)
    config = (settings or {}).get("config") or {}
    if settings is None or not any(key in config for key in CREDENTIAL_CONFIG_KEYS):
        return False
    settings["config"] = {k: v for k, v in config.items() if k not in CREDENTIAL_CONFIG_KEYS}
    _write_settings(config_file, settings)
    return True


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


# libyaml's safe loader and dumper where PyYAML has them (its wheels do): the same text, 25 times
# faster, so far less of the GIL that the other workers' members changes wait for (the settings
# file is read and written at each one)
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def _read_config_file(config_file: Path) -> dict[str, Any] | None:
    """The stack settings file ``Pulumi.<stack>.yaml``; None when absent or not a mapping."""
    try:
        settings = yaml.load(config_file.read_text(), Loader=_LOADER)  # noqa: S506 (safe)
    except (OSError, yaml.YAMLError):
        return None
    if not isinstance(settings, dict) or not isinstance(settings.get("config") or {}, dict):
        return None
    return settings


def _write_settings(config_file: Path, settings: Mapping[str, Any]) -> None:
    """Write the stack settings file whole (a temporary file renamed over it).

    The file is Pulumi's documented per-stack settings file, the same one
    ``pulumi config set-all --plaintext`` edits; writing it here saves a CLI start."""
    text = yaml.dump(
        dict(settings), Dumper=_DUMPER, sort_keys=False, default_flow_style=False, width=1 << 20
    )
    tmp = config_file.with_name(f".{config_file.name}.tmp")
    tmp.write_text(text)
    tmp.replace(config_file)


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

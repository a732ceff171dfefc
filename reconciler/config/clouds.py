"""``[Global] use-clouds = true``: the credentials come from a ``clouds.yaml`` entry, as in OCCM.

OCCM's ``ReadConfig`` calls ``client.ReadClouds`` when ``use-clouds`` is set: it reads the
``clouds.yaml`` named by ``clouds-file`` (else ``$OS_CLIENT_CONFIG_FILE``, else ``clouds.yaml`` in
the working directory, ``~/.config/openstack`` or ``/etc/openstack``), takes the entry named by
``cloud`` (else ``$OS_CLOUD``, else the only entry), merges the entry of the same name from a
``secure.yaml`` over it (``$OS_CLIENT_SECURE_FILE`` or the same folders), and fills every
``[Global]`` key that cloud.conf left empty: cloud.conf wins. The same happens here, once, when
cloud.conf is read, so the Pulumi provider and the engine's own REST client see the same values;
the resolved config has ``cloud`` empty (the provider is given the values, not a name to look up
in files it may not see).

What OCCM would ignore without a word is not ignored silently: keys of the entry that fill
nothing are warnings (``verify: false`` among them: OCCM does not honour it either; set
``tls-insecure`` in ``[Global]``), a ``profile`` (a vendor's public-clouds entry) is an error, and
every file or entry that cannot be used is an error naming the key to fix.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from reconciler.config.settings import AuthConfig, ConfigIssue, Secret

__all__ = ["resolve_clouds"]


def _default_dirs() -> tuple[Path, ...]:
    return (Path.cwd(), Path.home() / ".config" / "openstack", Path("/etc/openstack"))


# clouds.yaml "auth" key -> AuthConfig field (gophercloud clientconfig.AuthInfo, as ReadClouds)
_AUTH_FIELDS = {
    "auth_url": "auth_url",
    "user_id": "user_id",
    "username": "username",
    "password": "password",
    "project_id": "tenant_id",
    "project_name": "tenant_name",
    "domain_id": "domain_id",
    "domain_name": "domain_name",
    "project_domain_id": "tenant_domain_id",
    "project_domain_name": "tenant_domain_name",
    "user_domain_id": "user_domain_id",
    "user_domain_name": "user_domain_name",
    "application_credential_id": "application_credential_id",
    "application_credential_name": "application_credential_name",
    "application_credential_secret": "application_credential_secret",
    "token": "token",
}
# entry key -> AuthConfig field; "endpoint_type" wins over its synonym "interface"
_ENTRY_FIELDS = {
    "region_name": "region",
    "endpoint_type": "endpoint_type",
    "interface": "endpoint_type",
    "cacert": "ca_file",
    "cert": "cert_file",
    "key": "key_file",
}
_SECRET_FIELDS = frozenset({"password", "application_credential_secret", "token"})
_HARMLESS = frozenset({"auth_type", "identity_api_version"})  # how to log in: implied by auth
_SECTION = "Global"


class _ProblemError(Exception):
    def __init__(self, key: str, value: str, reason: str, fix: str) -> None:
        super().__init__(reason)
        self.issue = ConfigIssue(_SECTION, key, value, reason, fix)


def _read_yaml(path: Path, *, key: str) -> dict[str, Any]:
    try:
        text = path.read_text()
    except OSError as exc:
        reason = f"{path} cannot be read ({exc.strerror or exc})"
        raise _ProblemError(
            key, str(path), reason, "mount the file there or correct the path"
        ) from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        problem = str(exc).splitlines()[0]
        reason = f"{path} is not YAML ({problem})"
        raise _ProblemError(key, str(path), reason, "fix the file's syntax") from None
    clouds = data.get("clouds") if isinstance(data, dict) else None
    if not isinstance(clouds, dict):
        reason = f"{path} has no 'clouds:' mapping of cloud names to entries"
        raise _ProblemError(key, str(path), reason, "write it as OpenStack's clouds.yaml format")
    return clouds


def _find(
    explicit: Path | None, env_value: str | None, filename: str, dirs: Sequence[Path]
) -> Path | None:
    if explicit is not None:
        return explicit
    if env_value and Path(env_value).is_file():
        return Path(env_value)
    return next((d / filename for d in dirs if (d / filename).is_file()), None)


def _entry(clouds: dict[str, Any], name: str, path: Path) -> dict[str, Any]:
    entry = clouds.get(name)
    if entry is None:
        known = ", ".join(sorted(str(k) for k in clouds)) or "none"
        reason = f"{path} has no cloud {name!r} (it has: {known})"
        raise _ProblemError("cloud", name, reason, "set cloud to one of those names")
    if not isinstance(entry, dict):
        reason = f"the entry {name!r} of {path} is not a mapping"
        raise _ProblemError(
            "cloud", name, reason, "write the entry as OpenStack's clouds.yaml format"
        )
    return entry


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def _values(entry: dict[str, Any], name: str, path: Path) -> tuple[dict[str, str], list[str]]:
    """AuthConfig field -> value from the entry, and the entry's keys that fill nothing."""
    if entry.get("profile"):
        reason = f"the entry {name!r} of {path} uses profile {entry['profile']!r}"
        fix = "write the profile's auth_url and region into the entry; profiles are not read"
        raise _ProblemError("cloud", name, reason, fix)
    values: dict[str, str] = {}
    unused: list[str] = []
    auth = entry.get("auth") or {}
    if not isinstance(auth, dict):
        reason = f"'auth' of the entry {name!r} of {path} is not a mapping"
        raise _ProblemError(
            "cloud", name, reason, "write auth: with keys such as auth_url, username"
        )
    for key, value in auth.items():
        field = _AUTH_FIELDS.get(str(key))
        if field is None:
            unused.append(f"auth.{key}")
        elif value not in (None, ""):
            values[field] = str(value)
    for key, value in entry.items():
        if key in ("auth", "profile") or key in _HARMLESS:
            continue
        field = _ENTRY_FIELDS.get(str(key))
        if field is None:
            unused.append(str(key))
        elif value not in (None, "") and not (key == "interface" and field in values):
            values[field] = str(value)
    return values, unused


def resolve_clouds(
    auth: AuthConfig,
    *,
    environ: Mapping[str, str],
    search_dirs: Sequence[Path] | None = None,
) -> tuple[AuthConfig, list[ConfigIssue], list[ConfigIssue]]:
    """``auth`` with its empty fields filled from clouds.yaml; (auth, warnings, errors).
    ``search_dirs`` None: the working directory, ~/.config/openstack, /etc/openstack."""
    dirs = _default_dirs() if search_dirs is None else tuple(search_dirs)
    try:
        explicit = Path(auth.clouds_file) if auth.clouds_file else None
        path = _find(explicit, environ.get("OS_CLIENT_CONFIG_FILE"), "clouds.yaml", dirs)
        if path is None:
            reason = (
                "no clouds.yaml: not in OS_CLIENT_CONFIG_FILE, ./, ~/.config/openstack "
                "or /etc/openstack"
            )
            fix = (
                "set clouds-file to its path, or use-clouds = false and the credentials in [Global]"
            )
            raise _ProblemError("use-clouds", "true", reason, fix)
        clouds = _read_yaml(path, key="clouds-file")
        name = auth.cloud or environ.get("OS_CLOUD", "")
        if not name:
            if len(clouds) != 1:
                known = ", ".join(sorted(str(k) for k in clouds)) or "none"
                reason = f"{path} has several clouds ({known}) and none is chosen"
                raise _ProblemError("cloud", "", reason, "set cloud to the one to use")
            name = str(next(iter(clouds)))
        entry = _entry(clouds, name, path)
        secure_path = _find(None, environ.get("OS_CLIENT_SECURE_FILE"), "secure.yaml", dirs)
        if secure_path is not None:
            secure = _read_yaml(secure_path, key="use-clouds").get(name)
            if isinstance(secure, dict):
                entry = _merge(entry, secure)
        values, unused = _values(entry, name, path)
    except _ProblemError as problem:
        return auth, [], [problem.issue]
    filled: dict[str, Any] = {}
    for field, value in values.items():
        current = getattr(auth, field)
        if current:  # cloud.conf has priority (OCCM replaceEmpty)
            continue
        filled[field] = Secret(value) if field in _SECRET_FIELDS else value
    warnings = [
        ConfigIssue(
            _SECTION,
            "use-clouds",
            key,
            f"is in the entry {name!r} of {path} but is not used",
            "remove it, or give the setting in [Global] (verify: false is tls-insecure = true)",
        )
        for key in unused
    ]
    return dataclasses.replace(auth, cloud="", **filled), warnings, []

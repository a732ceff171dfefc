"""cloud.conf text -> :class:`ConfigResult`: each entry through its key's converter, then the
checks across keys. Never raises: problems come back as :class:`ConfigIssue` values.

:mod:`.gcfg` reads the entries (gcfg's syntax), :mod:`.keys` says what each key means,
:mod:`.checks` judges the values together, :mod:`.clouds` fills ``[Global]`` from clouds.yaml
with ``use-clouds = true``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any

from reconciler.config.checks import (
    check_global,
    check_load_balancer,
    check_matchers,
    refuse_unsupported,
    warn_global,
    warn_load_balancer,
)
from reconciler.config.clouds import resolve_clouds
from reconciler.config.gcfg import read_gcfg
from reconciler.config.keys import (
    CANONICAL,
    CLASS_KEYS,
    GLOBAL_KEYS,
    LB_KEYS,
    OTHER_SECTIONS,
    SECRET_KEYS,
    BadValueError,
)
from reconciler.config.settings import (
    AuthConfig,
    CloudConfig,
    ConfigIssue,
    ConfigResult,
    LoadBalancerClass,
    LoadBalancerConfig,
)

__all__ = ["parse_cloud_conf"]


def _shown(key: str, raw: str | None) -> str:
    return "" if key in SECRET_KEYS or raw is None else raw


def parse_cloud_conf(
    *,
    text: str,
    environ: Mapping[str, str] | None = None,
    search_dirs: Sequence[Path] | None = None,
) -> ConfigResult:
    """Read cloud.conf text. Never raises; see :class:`ConfigResult`.

    With ``use-clouds = true`` the clouds.yaml it names is read too (:mod:`.clouds`), with
    ``environ`` (default: the process's) for ``OS_CLOUD`` and ``OS_CLIENT_*_FILE`` and
    ``search_dirs`` (default: ./, ~/.config/openstack, /etc/openstack) to look in."""
    entries, syntax_errors = read_gcfg(text)
    errors, warnings = list(syntax_errors), []
    values: dict[str, dict[str, Any]] = {"Global": {}, "LoadBalancer": {}}
    classes: dict[str, dict[str, Any]] = {}
    for e in entries:
        canon = CANONICAL.get(e.section.lower())
        if canon is None:
            if not e.key:
                fix = "remove it; known sections are " + ", ".join(sorted(set(CANONICAL.values())))
                warnings.append(ConfigIssue(e.section, "", "", "unknown section", fix, e.line))
            continue
        if canon.lower() in OTHER_SECTIONS:
            if e.key and e.key.lower() not in OTHER_SECTIONS[canon.lower()]:
                fix = "remove it or check its spelling"
                warnings.append(ConfigIssue(canon, e.key, "", "unknown key", fix, e.line))
            continue
        if canon == "LoadBalancerClass":
            name = e.sub or ""
            if not e.key and not name:
                reason = "a class needs a name"
                fix = 'write [LoadBalancerClass "name"]'
                warnings.append(ConfigIssue(canon, "", "", reason, fix, e.line))
            target, table, label = classes.setdefault(name, {}), CLASS_KEYS, f'{canon} "{name}"'
        elif e.sub is not None:
            if not e.key:
                reason = f"[{canon}] takes no subsection"
                warnings.append(ConfigIssue(canon, "", e.sub, reason, f"write [{canon}]", e.line))
            continue
        else:
            target, label = values[canon], canon
            table = GLOBAL_KEYS if canon == "Global" else LB_KEYS
        if not e.key:
            continue
        spec = table.get(e.key.lower())
        if spec is None:
            fix = "remove it or check its spelling (keys are listed in docs/annotations.md)"
            warnings.append(ConfigIssue(label, e.key, "", "unknown key", fix, e.line))
            continue
        name_, conv = spec
        try:
            target[name_] = conv(e.raw)
        except BadValueError as bad:
            issue = ConfigIssue(
                label, e.key, _shown(e.key.lower(), e.raw), bad.reason, bad.fix, e.line
            )
            errors.append(issue)
    auth = AuthConfig(**values["Global"])
    lb = LoadBalancerConfig(**values["LoadBalancer"])
    lbclasses = {n: LoadBalancerClass(**v) for n, v in classes.items()}
    errors += check_load_balancer(lb) + refuse_unsupported(lb) + check_global(auth)
    warnings += warn_load_balancer(lb) + warn_global(auth)
    for n, c in lbclasses.items():
        errors += check_matchers(
            f'LoadBalancerClass "{n}"', c.floating_subnet, c.floating_subnet_tags
        )
    if auth.use_clouds:
        env = os.environ if environ is None else environ
        auth, more_warnings, more_errors = resolve_clouds(
            auth, environ=env, search_dirs=search_dirs
        )
        warnings += more_warnings
        errors += more_errors
    if errors:
        return ConfigResult(None, tuple(warnings), tuple(errors))
    config = CloudConfig(auth=auth, load_balancer=lb, classes=MappingProxyType(lbclasses))
    return ConfigResult(config, tuple(warnings), ())

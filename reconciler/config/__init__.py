"""OCCM-compatible ``cloud.conf``: parsed into frozen settings, with warnings and errors as data.

The file is the one openstack-cloud-controller-manager (OCCM) reads, so an operator can point this
controller at the Secret they already have. OCCM reads it with ``gopkg.in/gcfg.v1``; the quirks of
that reader are reproduced here on purpose, because a file that OCCM accepts must mean the same:

* section and key names are case-insensitive (``[Global]`` == ``[global]``, ``Auth-URL`` ==
  ``auth-url``); subsection names (``[LoadBalancerClass "dmz"]``) are case-sensitive;
* a value runs to the end of the line or to an unquoted ``;``/``#``; double-quoted parts are
  unquoted, ``\\"``, ``\\\\``, ``\\n`` and ``\\t`` are escapes inside quotes, a trailing ``\\``
  continues the value on the next line; trailing blanks are dropped;
* a key without ``=`` is a "blank" value: ``true`` for booleans, an error for anything else;
* booleans are ``true/yes/on/1`` and ``false/no/off/0`` in any case; integers are decimal or
  ``0x`` hex; durations use Go's syntax (``5s``, ``1m30s``, ``250ms``);
* the same key twice: the last one wins; the same section twice: the two are merged.

What OCCM would treat as fatal (bad syntax, a value of the wrong type) is an *error* here; what gcfg
reports as "extra data" (unknown sections and keys) is a *warning*. Both come back as
:class:`ConfigIssue` values naming section, key, value and the fix; nothing is printed or raised.
Values that Octavia would reject later (an unknown ``lb-method``, ``monitor-timeout`` above
``monitor-delay``, ids that are not UUIDs) are errors too, so they surface at start-up rather than
as one failed load balancer after another.

Keys OCCM reads that this controller cannot honour are errors too, never ignored:
``[LoadBalancer] enabled = false`` (there would be nothing to do), ``cascade-delete = false``,
``provider-requires-serial-api-calls = true``, the Keystone trust keys and ``cloud`` without
``use-clouds``. ``use-clouds = true`` fills ``[Global]`` from clouds.yaml (:mod:`.clouds`), as
OCCM does. ``floating-subnet``/``floating-subnet-tags`` follow OCCM's syntax and matching
(:mod:`.subnet_match`).

Secrets (``password``, ``trustee-password``, ``token``, ``application-credential-secret``) are held
in :class:`Secret`, whose ``repr`` and ``str`` never show the value, and issue messages never
quote the value of a secret key or of an unknown key (a misspelt ``pasword`` is still a password).

Modules: :mod:`.gcfg` (the gcfg reader), :mod:`.keys` (what each key means: its field and
converter, the key tables), :mod:`.checks` (checks across keys, refusals), :mod:`.parse` (text
-> settings, composing those), :mod:`.settings` (the frozen settings), :mod:`.clouds` and
:mod:`.subnet_match`. Imports nothing of the project (the lowest layer); everything may import it.
"""

from reconciler.config.checks import LB_METHODS, method_unsupported
from reconciler.config.keys import parse_go_duration
from reconciler.config.parse import parse_cloud_conf
from reconciler.config.settings import (
    AuthConfig,
    CloudConfig,
    ConfigIssue,
    ConfigResult,
    LoadBalancerClass,
    LoadBalancerConfig,
    Secret,
    default_config,
    with_overrides,
)

__all__ = [
    "LB_METHODS",
    "AuthConfig",
    "CloudConfig",
    "ConfigIssue",
    "ConfigResult",
    "LoadBalancerClass",
    "LoadBalancerConfig",
    "Secret",
    "default_config",
    "method_unsupported",
    "parse_cloud_conf",
    "parse_go_duration",
    "with_overrides",
]

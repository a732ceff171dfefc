"""What the user-facing commands (``preview``, ``stacks``, ``adopt``, ``sweep``) share.

The same flags as ``lb-reconciler run`` for the stack backend and the cloud (``--cloud-config``,
``--state-dir``, ``--backend-url``, ``--cluster-name``), so a command run beside the controller
sees exactly its stacks; and one way to open the engine from them, with every problem reported as
a :class:`CommandError` naming the flag or variable to fix.

:func:`backend_url` is how ``lb-reconciler run`` takes its backend (``--backend-url``, else
``$PULUMI_BACKEND_URL``, the variable the ``pulumi`` CLI reads, which deploy/ fills from a
Secret), refusing an empty value and a scheme Pulumi has no backend for before anything starts;
:func:`shown_url` is a URL fit for a log line (its password replaced).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from reconciler.config import CloudConfig, Secret, parse_cloud_conf

if TYPE_CHECKING:
    from reconciler.controller.kubeapi import KubeApi
    from reconciler.controller.sync_plan import ControllerSettings
    from reconciler.engine.openstack.client import OpenStackRest
    from reconciler.engine.stack import Engine

__all__ = [
    "EXIT_CHANGES",
    "EXIT_INVALID",
    "EXIT_OK",
    "CommandError",
    "add_class_options",
    "add_kube_options",
    "add_stack_options",
    "backend_url",
    "cluster_id",
    "controller_settings",
    "list_cluster",
    "load_cloud_config",
    "logged_in",
    "non_negative_int",
    "open_engine",
    "positive_int",
    "require_cluster_name",
    "seconds",
    "shown_url",
]

EXIT_OK, EXIT_INVALID, EXIT_CHANGES = 0, 1, 2


class CommandError(Exception):
    """A problem the user must fix; printed as ``error: <message>`` with exit code ``code``."""

    def __init__(self, message: str, *, code: int = EXIT_INVALID) -> None:
        super().__init__(message)
        self.code = code


class _Given(argparse.Action):
    """Stores the value and records that the flag was on the command line (``<dest>_given``),
    so that a default can be told from an explicit value equal to it."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        setattr(namespace, self.dest, values)
        setattr(namespace, f"{self.dest}_given", True)


def add_stack_options(p: argparse.ArgumentParser, *, cloud_required: bool = True) -> None:
    """The flags that say which stacks and which cloud; the same names as ``run``'s."""
    p.add_argument(
        "--cloud-config",
        required=cloud_required,
        metavar="FILE",
        help="OCCM-style cloud.conf (the controller's)",
    )
    p.add_argument(
        "--state-dir",
        default="lbr-state",
        metavar="DIR",
        help="the controller's --state-dir (work folders; file:// backend unless --backend-url; "
        "default: %(default)s)",
    )
    p.add_argument(
        "--backend-url",
        default=os.environ.get("PULUMI_BACKEND_URL", ""),
        metavar="URL",
        help="Pulumi state backend (default: $PULUMI_BACKEND_URL, else file://<state-dir>/backend)",
    )
    p.add_argument(
        "--cluster-name",
        default="kubernetes",
        action=_Given,
        help="the controller's --cluster-name (default: %(default)s; what deletes or takes "
        "over load balancers needs it given explicitly)",
    )
    p.set_defaults(cluster_name_given=False)


# Pulumi's backends: the DIY ones (gocloud blob: file, s3, gs, azblob; PostgreSQL) and the
# Pulumi Cloud service (https, or http for a self-hosted one)
BACKEND_SCHEMES = ("file", "s3", "gs", "azblob", "postgres", "https", "http")
_CREDENTIAL_WORDS = ("password", "secret", "token", "key", "credential")


def shown_url(url: str) -> str:
    """``url`` for a log line or a message: the password of its user part, and any query value
    named like a credential, replaced by ``[secret]``."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return "[an unparsable URL]"
    netloc = parts.netloc
    if password is not None:
        user, _, host = netloc.rpartition("@")
        netloc = f"{user.partition(':')[0]}:[secret]@{host}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        hidden = [
            (k, "[secret]" if any(w in k.lower() for w in _CREDENTIAL_WORDS) else v)
            for k, v in pairs
        ]
        query = urlencode(hidden, safe="[]/:")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def backend_url(flag: str | None, env: Mapping[str, str]) -> str:
    """The controller's backend: ``--backend-url`` (``flag``; None when not given), else
    ``PULUMI_BACKEND_URL`` of ``env``, else "" (the ``file://`` backend in ``--state-dir``).
    A value given but empty (a Secret key without a value) or with a scheme Pulumi has no
    backend for is a ValueError naming where it came from and what to write."""
    if flag is not None:
        url, source = flag, "--backend-url"
    elif "PULUMI_BACKEND_URL" in env:
        url, source = env["PULUMI_BACKEND_URL"], "PULUMI_BACKEND_URL"
    else:
        return ""
    url = url.strip()
    if not url:
        raise ValueError(
            f"{source} is empty: give the shared state backend (postgres://..., "
            "s3://bucket/prefix?endpoint=...&region=..., ...; deploy/deployment.yaml reads it "
            "from the Secret lb-reconciler-state, key backend-url), or leave it unset for the "
            "file:// backend in --state-dir"
        )
    scheme = url.partition("://")[0].lower() if "://" in url else ""
    if scheme not in BACKEND_SCHEMES:
        allowed = ", ".join(f"{s}://" for s in BACKEND_SCHEMES)
        raise ValueError(
            f"{source} {shown_url(url)!r}: not a Pulumi backend URL (expected one of {allowed})"
        )
    return url


def require_cluster_name(args: argparse.Namespace, *, flag: str) -> None:
    """``flag`` deletes or takes over load balancers by their OCCM names, which hold the
    cluster's name: it must be given, not defaulted (issue 13; OCCM #3102)."""
    if not getattr(args, "cluster_name_given", False):
        raise CommandError(
            f"{flag} needs --cluster-name given explicitly (the controller's, which is OCCM's "
            'after a move from OCCM): the default "kubernetes" is the name of every cluster '
            "that kept it, and two clusters with the same name in one project name their load "
            "balancers alike (OCCM issue #3102); run without "
            f"{flag} to see what it would do"
        )
    if not args.cluster_name:
        raise CommandError("--cluster-name must not be empty: load balancer names hold it")


def add_kube_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--kubeconfig", metavar="FILE", help="default: $KUBECONFIG, else in-cluster")


def add_class_options(p: argparse.ArgumentParser) -> None:
    """Which Services are the controller's: its own flags, so that "ours" means the same."""
    p.add_argument(
        "--load-balancer-class",
        action="append",
        default=[],
        metavar="CLASS",
        help="the controller's --load-balancer-class values (repeatable)",
    )
    p.add_argument(
        "--only-owned-classes", action="store_true", help="the controller's --only-owned-classes"
    )


def controller_settings(args: argparse.Namespace) -> ControllerSettings:
    """The controller's settings from ``add_stack_options`` + ``add_class_options`` flags."""
    from reconciler.controller.sync_plan import ControllerSettings

    return ControllerSettings(
        cluster_name=args.cluster_name,
        owned_classes=frozenset(args.load_balancer_class),
        serve_default=not args.only_owned_classes,
    )


def _kube(args: argparse.Namespace) -> KubeApi:
    from reconciler.controller.kubeapi import KubeApi
    from reconciler.controller.kubeconfig import api_client

    kubeconfig = args.kubeconfig or os.environ.get("KUBECONFIG") or None
    try:
        return KubeApi(api_client=api_client(kubeconfig=Path(kubeconfig) if kubeconfig else None))
    except Exception as exc:  # the kubernetes client raises its own ConfigException types
        raise CommandError(f"--kubeconfig: cannot reach a cluster: {exc}") from None


def cluster_id(args: argparse.Namespace) -> str:
    """The cluster's identity as the controller reads it (:func:`reconciler.controller.runner.
    cluster_identity`: the kube-system namespace's UID, OCCM's ``kube_cluster_id_`` tag) with
    ``--kubeconfig``; "" when it cannot be read (then no load balancer carrying an identity tag
    is proven this cluster's: said on stderr)."""
    from reconciler.controller.startup import read_cluster_identity

    kube = _kube(args)
    try:
        uid, problem = read_cluster_identity(kube)
    finally:
        kube.close()
    if problem:
        print(
            f"note: this cluster's identity (the kube-system namespace's UID) could not be read "
            f"({problem}); load balancers tagged kube_cluster_id_<uid> are not taken for this "
            "cluster's",
            file=sys.stderr,
        )
    return uid


def list_cluster(args: argparse.Namespace, path: str) -> list[dict[str, Any]]:
    """The items of one list call (``/api/v1/services``) with ``--kubeconfig``."""
    from reconciler.controller.kubeapi import KubeError, KubeUnavailableError

    kube = _kube(args)
    try:
        items: list[dict[str, Any]] = kube.list(path).get("items") or []
    except (KubeError, KubeUnavailableError) as exc:
        raise CommandError(f"listing {path}: {exc}") from None
    finally:
        kube.close()
    return items


def load_cloud_config(path: str | None) -> CloudConfig:
    """cloud.conf parsed, or a CommandError listing each problem (the fix is in the message)."""
    if not path:
        return CloudConfig()
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise CommandError(f"--cloud-config {path}: {exc.strerror or exc}") from None
    parsed = parse_cloud_conf(text=text)
    if parsed.config is None:
        problems = "\n".join(f"  {issue}" for issue in parsed.errors)
        raise CommandError(f"--cloud-config {path} is not usable:\n{problems}")
    return parsed.config


def open_engine(
    args: argparse.Namespace,
    config: CloudConfig | None = None,
    *,
    decrypts: bool = True,
    cluster_id: str = "",
) -> Engine:
    """The stack engine for these flags (the toolchain is found or built here). ``decrypts``:
    the command opens stacks, so it needs the controller's passphrase. ``cluster_id``: the
    cluster's identity (:func:`cluster_id`), recorded on the stacks it makes and tagged on
    their load balancers, as the controller does."""
    from reconciler.engine.stack import Engine, EngineSettings
    from reconciler.toolchain import ToolchainError, find_runtime

    passphrase = os.environ.get("PULUMI_CONFIG_PASSPHRASE")
    if passphrase is None and decrypts:
        raise CommandError(
            "PULUMI_CONFIG_PASSPHRASE is not set; export the controller's passphrase "
            "(it decrypts the OpenStack credentials in the stacks' config)"
        )
    config = config if config is not None else load_cloud_config(args.cloud_config)
    try:
        toolchain = find_runtime()
    except ToolchainError as exc:
        raise CommandError(f"toolchain: {exc}") from None
    settings = EngineSettings(
        cluster_name=args.cluster_name,
        state_dir=Path(args.state_dir),
        auth=config.auth,
        toolchain=toolchain,
        backend_url=args.backend_url,
        passphrase=Secret(passphrase or ""),
        cluster_id=cluster_id,
    )
    return Engine(settings=settings)


def logged_in(engine: Engine) -> OpenStackRest:
    """The engine's OpenStack client, logged in now: a login that fails is a
    :class:`CommandError` with the settings used and the cloud's answer, before anything else
    is done (as the controller does at start)."""
    from reconciler.engine.openstack.client import OpenStackRestError

    rest = engine.rest()
    try:
        rest.login()
    except OpenStackRestError as exc:
        raise CommandError(f"cannot use the OpenStack cloud: {exc}") from None
    return rest


# --- argparse types --------------------------------------------------------------------------


def positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {value}")
    return value


def non_negative_int(text: str) -> int:
    """An argparse type: a whole number of at least 0."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def seconds(text: str) -> float:
    """An argparse type: a duration in seconds, 0 or more."""
    value = float(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more seconds, got {value}")
    return value

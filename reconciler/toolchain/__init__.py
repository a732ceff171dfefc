"""The runtime tools: the Pulumi CLI and the OpenStack resource plugin, their pinned versions.

* :mod:`.runtime`: the pins, finding the two tools (``$LBR_TOOLS_BIN``, a source checkout's
  ``tools/build.sh``, ``PATH``, ``$PULUMI_HOME/plugins``), checking their versions, and the
  environment every ``pulumi`` child runs with.

May import nothing of the project, so every layer may use it. The demo's and the tests' tools
(etcd, kube-apiserver, kubectl, MinIO) are :mod:`reconciler.local.toolchain`'s.
"""

from reconciler.toolchain.runtime import (
    OPENSTACK_PLUGIN_VERSION,
    PLUGIN,
    PULUMI_VERSION,
    REPO_ROOT,
    RUNTIME_TOOLS,
    Toolchain,
    ToolchainError,
    check_versions,
    find_runtime,
    locate,
)

__all__ = [
    "OPENSTACK_PLUGIN_VERSION",
    "PLUGIN",
    "PULUMI_VERSION",
    "REPO_ROOT",
    "RUNTIME_TOOLS",
    "Toolchain",
    "ToolchainError",
    "check_versions",
    "find_runtime",
    "locate",
]

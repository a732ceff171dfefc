"""The demo's and the tests' tools: the runtime's two (:mod:`reconciler.toolchain`: ``pulumi``
and the OpenStack plugin) plus etcd, kube-apiserver and kubectl for the local control plane,
MinIO for the ``s3://`` backend's server (the tests, ``lb-reconciler backend serve s3``) and
helm for the chart's tests, promtool for its alert rules'.

The controller and the user commands never need these: they call
:func:`reconciler.toolchain.find_runtime`. ``tools/build.sh`` builds every tool from Go modules
into one cache folder (``tools/README.md``); this module finds that folder (``$LBR_TOOLS_BIN``,
the build script in a source checkout, else one ``PATH`` folder holding them all).
"""

from __future__ import annotations

from reconciler.toolchain import RUNTIME_TOOLS, Toolchain, ToolchainError, locate

__all__ = ["TEST_TOOLS", "TOOLS", "WITH_MINIO", "Toolchain", "ToolchainError", "find_toolchain"]

TOOLS = (*RUNTIME_TOOLS, "etcd", "kube-apiserver", "kubectl")
WITH_MINIO = (*TOOLS, "minio")
"""The tools and MinIO; the demo and the controller never need it, so only these callers build
it."""
TEST_TOOLS = (*WITH_MINIO, "helm", "promtool")
"""Everything the tests run: the above, helm (the chart's tests) and promtool (its alert rules')."""


def find_toolchain(*, tools: tuple[str, ...] = TOOLS, build: bool = True) -> Toolchain:
    """Locate the folder holding ``tools`` (building them from a source checkout when allowed)."""
    extra = [f"--with-{tool}" for tool in ("minio", "helm", "promtool") if tool in tools]
    return locate(
        tools,
        build=build,
        build_args=extra,
        printer=" ".join(["tools/build.sh", *extra, "--path"]) if extra else "make -s tools-path",
    )

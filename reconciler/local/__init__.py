"""Running everything on one machine: the toolchain, a local control plane, the demo.

* :mod:`.toolchain`: finding the real ``pulumi``, OpenStack plugin, etcd, kube-apiserver and
  kubectl that ``tools/build.sh`` builds from Go modules;
* :mod:`.pki`: a throw-away PKI for the local control plane;
* :mod:`.plane`: a real etcd + kube-apiserver on loopback (tests, demo, bench);
* :mod:`.backends`: real shared state backends on loopback, PostgreSQL and S3 (MinIO) (tests,
  bench, ``lb-reconciler backend serve``);
* :mod:`.demo`: ``lb-reconciler demo``.

:mod:`.toolchain` imports nothing of the project, so the engine may use it; the rest may import
every other package but the CLI.
"""

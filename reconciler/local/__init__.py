"""Running everything on one machine: the demo's and the tests' tools, a local control plane,
the demo. Nothing here is needed to run the controller or a user command.

* :mod:`.toolchain`: finding etcd, kube-apiserver, kubectl (and MinIO) beside the runtime's
  ``pulumi`` and plugin, all built by ``tools/build.sh`` from Go modules;
* :mod:`.pki`: a throw-away PKI for the local control plane;
* :mod:`.plane`: a real etcd + kube-apiserver on loopback (tests, demo, bench);
* :mod:`.backends`: real shared state backends on loopback, PostgreSQL and S3 (MinIO) (tests,
  bench, ``lb-reconciler backend serve``);
* :mod:`.demo`: ``lb-reconciler demo``.

May import every other package but the CLI.
"""

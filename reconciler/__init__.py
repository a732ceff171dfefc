"""lb-reconciler: Kubernetes Services of ``type: LoadBalancer`` on OpenStack, one Pulumi stack each.

Subject packages, lowest layer first; a package imports only from the ones above it in this
list (``tests/unit/test_architecture.py`` checks it, and that no module import loop exists):

* :mod:`stacks.vocabulary` (beside this package): the logical names, type tokens, config keys
  and URNs the program, the engine and the CLI spell alike. Imports nothing of the project.
* :mod:`reconciler.toolchain`: the pinned ``pulumi`` and OpenStack plugin, found and checked.
  Imports nothing of the project.
* :mod:`reconciler.config`: OCCM's ``cloud.conf`` and the controller's settings. Pure.
* :mod:`reconciler.model`: Service + Nodes + config -> ``LoadBalancerSpec``, predicates. Pure.
* :mod:`stacks` (beside this package): the Pulumi program, ``LoadBalancerSpec`` -> resources.
* :mod:`reconciler.engine`: one Pulumi stack per Service through the Automation API: up,
  preview, refresh, destroy, recovery, adoption, the OpenStack client for what no stack records.
* :mod:`reconciler.controller`: watches, the work queue, sync plans and their execution,
  Events, housekeeping, the Lease, health and metrics; ``lb-reconciler run``.
* :mod:`reconciler.cli`: the ``lb-reconciler`` command, its subcommands and their reports
  (:mod:`reconciler.cli.terminal` imports nothing of the project; the demo prints with it).
* :mod:`reconciler.local`: the demo's and the tests' tools, the local control plane, its PKI,
  the demo.

docs/architecture.md walks one Service through them.
"""

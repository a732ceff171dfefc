"""Deleting a Service's stack, and the cloud-side deletes and repairs the engine needs.

* :mod:`.stack`: deleting a Service's stack (``destroy``, a shared load balancer released, a
  floating IP kept as asked);
* :mod:`.direct`: directly, as OCCM does (one cascade ``DELETE``, no ``pulumi`` start when the
  backend is read here), when :mod:`.direct_plan` says the state allows it (pure);
* :mod:`.cloud`: deleting a load balancer with cascade, or child by child when ``destroy`` cannot,
  and what a crash left that no stack adopts;
* :mod:`.repair`: objects left in ``ERROR`` updated back to ``ACTIVE`` before an ``up``.

May import: the engine's modules below :mod:`reconciler.engine.stack`, never it.
"""

"""Taking OCCM's load balancers into stacks without recreating them (``lb-reconciler adopt`` and
the first sync's takeover), so that every external IP stays.

* :mod:`.stack`: the stack work (import, roll back a refused one, the takeover of a new stack);
* :mod:`.cloud`: reading what OCCM made for one Service (GETs only);
* the pure decisions: :mod:`.ownership` (which load balancer, and whether this cluster made it),
  :mod:`.plan` (which object becomes which resource), :mod:`.preview` (whether the import's
  preview may be applied).

May import: the engine's modules below :mod:`reconciler.engine.stack`
(:mod:`reconciler.engine.handle`, :mod:`reconciler.engine.context`,
:mod:`reconciler.engine.openstack`, ...), never :mod:`reconciler.engine.stack` itself.
"""

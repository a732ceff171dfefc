"""The controller: Kubernetes in, stack operations out, status and Events back.

What lives here (``X_plan``: pure decisions; the others carry them out):

* :mod:`.runner`: ``lb-reconciler run``, one controller process composed from the parts below;
* :mod:`.startup`: what it checks before it asks for the Lease (the cloud login, the cluster
  identity, ``--cluster-name`` against the load balancers' names);
* :mod:`.loop`: watches feed the work queue; workers carry out one Service's sync at a time;
* :mod:`.sync_plan`: what to do for one Service and which patches and Events say so (pure);
  :mod:`.changes`: whether its spec or the Nodes changed since the last sync (pure);
  :mod:`.sync`: carrying out one sync, in the order that keeps the guarantees;
* :mod:`.ingress`: the Service's ``status.loadBalancer.ingress`` (pure); :mod:`.conditions`: its
  condition ``lb-reconciler.io/LoadBalancerReady``, which one and whether to write it (pure);
* :mod:`.housekeeping_plan`: orphans and drift checks (pure); :mod:`.housekeeping`: the
  periodic scan that acts on them;
* :mod:`.drift_plan`: the drift modes (repair, report, off) and the Events of a check (pure);
  :mod:`.drift`: the checks, carried out in the Services' syncs;
* :mod:`.backend`: what the controller needs from the engine (a Protocol) and how it reads
  engine failures; :mod:`.instrumented`: the engine timed and counted;
* :mod:`.events`, :mod:`.lease`, :mod:`.queue`, :mod:`.watch`: Events, leader election (its
  decisions pure in :mod:`.lease_plan`), the work queue, list+watch into stores;
  :mod:`.lease_holders`: who held the Lease, recorded in it (pure), which tells the leader its
  cluster's stack locks from a person's; :mod:`.leadership`: whether this process may write
  now, and what it knows of its term;
* :mod:`.kubeapi`: raw JSON calls to the Kubernetes API; :mod:`.kubeconfig`: API clients from a
  kubeconfig or the in-cluster account;
* :mod:`.health`, :mod:`.metrics`, :mod:`.logs`: probes, Prometheus metrics, log output;
  :mod:`.thread_dump`: every thread's stack in the log on SIGUSR1.

May import: :mod:`reconciler.config`, :mod:`reconciler.model`, :mod:`reconciler.engine` (only
:mod:`.runner` builds an :class:`~reconciler.engine.stack.Engine`; the rest sees it through
:mod:`.backend`), :mod:`reconciler.toolchain`. Never the CLI.
"""

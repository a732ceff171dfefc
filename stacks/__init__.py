"""The Pulumi program of lb-reconciler: a ``LoadBalancerSpec`` -> OpenStack resources.

* :mod:`.program`: the program (what both the controller's Automation API and the plain CLI
  run): reads the stack's configuration, composes the resources, exports the outputs;
* :mod:`.resources`: one builder per kind of resource (load balancer, a port's listener chain,
  floating IP, security group);
* :mod:`.lookups`: fills the holes the pure model leaves to the cloud, with Pulumi data sources;
* :mod:`.recorded`: those lookups as the program makes them, recorded by ``up`` (the output
  ``lookups``) and replayed by a preview without the cloud;
* :mod:`.shared`: whether a Service may join a shared load balancer (pure);
* :mod:`.vocabulary`: the logical names, type tokens, cloud collections, configuration keys
  and URNs the program, the engine and the CLI must spell alike (pure; imports nothing of the
  project, so every layer may use it).

No Kubernetes, no I/O besides Pulumi. May import :mod:`reconciler.config` and
:mod:`reconciler.model`.
"""

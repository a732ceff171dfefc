"""The Pulumi program of lb-reconciler: a ``LoadBalancerSpec`` -> OpenStack resources.

:mod:`stacks.program` declares the resources (and is what both the controller's Automation API
and the plain CLI run); :mod:`stacks.lookups` fills the holes the pure model leaves to the cloud
with Pulumi data sources. :mod:`stacks.vocabulary` spells the logical names, type tokens,
configuration keys and URNs that the program, the engine and the CLI share; it imports nothing of
the project, so every layer may use it. No Kubernetes, no I/O besides Pulumi.
"""

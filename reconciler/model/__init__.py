"""The pure model: a Service, its Nodes and cloud.conf in; a LoadBalancerSpec or errors out.

No Kubernetes client, no HTTP, no Pulumi: plain dicts shaped like the Kubernetes API JSON go in,
frozen dataclasses come out. Modules, each holding one kind of decision:

* :mod:`.view`: reading the Service dict into typed fields (shape errors become data);
* :mod:`.annotations`: annotation names and the typed, strict reader;
* :mod:`.network`: family, internal, VIP placement, LoadBalancerClass, floating IP, source ranges;
* :mod:`.traffic`: provider features, protocols, timeouts, monitors, status;
* :mod:`.naming`: OCCM's names and descriptions;
* :mod:`.nodes`: which Nodes back a load balancer, at which address (KEP-3458);
* :mod:`.build`: ``build_spec``, composing the above;
* :mod:`.spec`: the spec dataclasses, JSON round trip and content hash;
* :mod:`.predicates`: which Services are ours, which need cleanup, which changes matter (the
  upstream service controller's rules, with our finalizers; the controller runs these);
* :mod:`.frozen`: create-only fields, kept as made;
* :mod:`.errors`: validation errors and notices, as data.

May import :mod:`reconciler.config` only.
"""

from reconciler.model.build import BuildResult, build_spec
from reconciler.model.errors import Notice, ValidationError
from reconciler.model.predicates import (
    CLASS_FINALIZER,
    FINALIZER,
    Ownership,
    has_finalizer,
    needs_cleanup,
    needs_update,
    wants_load_balancer,
)
from reconciler.model.spec import (
    SPEC_VERSION,
    FloatingIpSpec,
    ListenerSpec,
    LoadBalancerSpec,
    MemberSpec,
    MonitorSpec,
    PoolSpec,
    SecurityGroupRuleSpec,
    SecurityGroupSpec,
    ServiceRef,
    StatusSpec,
)

__all__ = [
    "CLASS_FINALIZER",
    "FINALIZER",
    "SPEC_VERSION",
    "BuildResult",
    "FloatingIpSpec",
    "ListenerSpec",
    "LoadBalancerSpec",
    "MemberSpec",
    "MonitorSpec",
    "Notice",
    "Ownership",
    "PoolSpec",
    "SecurityGroupRuleSpec",
    "SecurityGroupSpec",
    "ServiceRef",
    "StatusSpec",
    "ValidationError",
    "build_spec",
    "has_finalizer",
    "needs_cleanup",
    "needs_update",
    "wants_load_balancer",
]

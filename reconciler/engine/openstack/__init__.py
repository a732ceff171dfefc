"""The engine's OpenStack client, for what no stack state records (a load balancer's listeners of
other Services, a cascade delete, the members of a pool, what a crash left).

* :mod:`.client`: :class:`~.client.OpenStackRest`, the calls the engine makes (Octavia, Neutron);
* :mod:`.session`: keystoneauth1 underneath (login, catalog, TLS, retries, pages, errors with the
  cloud's status and message);
* :mod:`.auth`: cloud.conf ``[Global]`` read for it, and what a failed login tells the operator
  (pure);
* :mod:`.roles`: which of the token's roles may make load balancers, and what a credential
  without one, or a 403, tells the operator (pure).

May import: :mod:`reconciler.config`, :mod:`reconciler.engine.errors` and
:mod:`reconciler.engine.failure_text` (how a cloud's answer is classed). Nothing that loads Pulumi.
"""

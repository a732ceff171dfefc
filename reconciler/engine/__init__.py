"""The stack engine: one Pulumi stack per Service, driven through the Automation API.

What lives here (``X_plan``/``plan``: pure decisions; the others carry them out):

* :mod:`.stack`: :class:`~.stack.Engine` (the stacks of this cluster) and
  :class:`~.stack.ServiceStack` (``ensure``, ``preview``, ``refresh``, ``check_drift``,
  ``delete`` of one Service);
  :mod:`.results`: the :class:`~.results.EnsureResult` that ``ensure`` returns (no Pulumi: the
  controller and its test doubles use it too);
* :mod:`.context`: the settings and what every stack of one engine shares, the fence (a
  controller's writes refused once it no longer holds the Lease); :mod:`.handle`: one
  stack's steps (open, tags, config, deadlines, recovery) that the operations, the delete path
  and adoption share. Below :mod:`.stack`, so no module here imports it but the callers;
* :mod:`.plan`: stack names and tags, the outputs kept in them, skips, the listing (pure);
* :mod:`.stack_spec`: the spec as the stack applies it, create-only fields kept as made (pure);
* :mod:`.provider_config`: the OpenStack provider's configuration from cloud.conf (pure);
* :mod:`.run`: ``up``/``destroy``/``refresh`` without the Automation API's follow-up commands;
* :mod:`.preview`: a preview's steps as data (pure, no Pulumi); :mod:`.preview_events`: Pulumi's
  engine events turned into them, and into drift;
* :mod:`.drift`: the drift check that writes nothing (``refresh --preview-only``);
* :mod:`.recovery`: pending creates, torn sidecars, hanging ``pulumi`` children;
  :mod:`.processes`: this process's ``pulumi`` children, read from ``/proc``;
  :mod:`.program_channels`: each inline program's gRPC connections its own;
* :mod:`.lock_plan`: which stack locks are stale, the leader's rule and a bystander's (pure);
  :mod:`.locks`: listing and removing them;
* :mod:`.lost`: what a crash or a failed create left in the cloud, what to look for (pure);
* :mod:`.delete`: deleting a Service's stack; :mod:`.direct_delete`: directly, as OCCM does
  (one cascade ``DELETE``; no ``pulumi`` start when the backend is read here), when
  :mod:`.direct_delete_plan` says the state allows it (pure); :mod:`.cloud_delete`: deleting
  its load balancer with cascade, or child by child when ``pulumi destroy`` cannot;
  :mod:`.cloud_repair`: its objects left in ``ERROR`` updated back to ``ACTIVE`` before an
  ``up``;
* :mod:`.members_direct`: a change of pool members only made as OCCM makes it (one batch
  ``PUT`` per pool, the state written as the provider writes it; no ``pulumi`` start), when
  :mod:`.members_plan` says the change and the state allow it (pure);
* :mod:`.adopt`, :mod:`.adopt_cloud`: taking OCCM's objects into stacks (``lb-reconciler
  adopt`` and the first sync's takeover), with the pure decisions :mod:`.ownership` (which load
  balancer, and whether this cluster made it), :mod:`.adopt_plan` (which object becomes which
  resource) and :mod:`.adopt_preview` (whether the import's preview may be applied);
* :mod:`.lb_tags`: a shared load balancer's own tags, as OCCM keeps them;
* :mod:`.tags`, :mod:`.stack_meta`: a stack's tags, config and the listing;
* :mod:`.state_store`: the one module that knows Pulumi's private DIY backend layout (stacks,
  tags, locks, for ``file://``, ``s3://`` and ``postgres://`` alike); the objects it reads are
  reached through :mod:`.state_buckets` (what every bucket shares, and ``file://``),
  :mod:`.state_s3` and :mod:`.state_postgres`; :mod:`.passphrase`: the one that knows
  Pulumi's ``passphrase`` secrets format (a new stack's salt and secrets, without the CLI);
* :mod:`.state_retention`: which history entries and checkpoint backups a stack keeps (pure);
* :mod:`.errors`: every failure as one classified :class:`~.errors.EngineError`, each class
  naming how the controller retries it (``failure_kind``); :mod:`.failure_text`: what a failed
  run's output says (the cloud's answers, the error lines, the message a user reads; pure);
  :mod:`.redact`: credentials out of every message;
* :mod:`.openstack`: the OpenStack client for what no stack state records, on
  :mod:`.openstack_session` (keystoneauth1: login, catalog, TLS, retries, pages, errors with
  the cloud's status and message) and :mod:`.openstack_auth` (cloud.conf ``[Global]`` read for
  it, and what a failed login tells the operator; pure).

May import: :mod:`reconciler.config`, :mod:`reconciler.model`, :mod:`stacks` (the names the
program declares are :mod:`stacks.vocabulary`'s), :mod:`reconciler.local.toolchain` (to find
``pulumi``). Never the controller or the CLI. Nothing is re-exported here, so importing
:mod:`.errors` or :mod:`.results` does not load Pulumi, nor does any pure module
(``tests/unit/test_architecture.py``).
"""

"""The stack engine: one Pulumi stack per Service, driven through the Automation API.

What lives here (``X_plan``/``plan``: pure decisions; the others carry them out):

* :mod:`.stack`: :class:`~.stack.Engine` (the stacks of this cluster) and
  :class:`~.stack.ServiceStack` (``ensure``, ``preview``, ``refresh``, ``check_drift``,
  ``delete`` of one Service); :mod:`.results`: the :class:`~.results.EnsureResult` that
  ``ensure`` returns (no Pulumi: the controller and its test doubles use it too);
* :mod:`.context`: the settings and what every stack of one engine shares, the fence (a
  controller's writes refused once it no longer holds the Lease); :mod:`.handle`: one stack's
  steps (open, tags, config, deadlines, recovery) that the operations, the delete path and
  adoption share. Below :mod:`.stack`, so no module here imports it but the callers;
* :mod:`.plan`: stack names and tags, the outputs kept in them, skips, the listing (pure);
* :mod:`.stack_spec`: the spec as the stack applies it, create-only fields kept as made (pure);
* :mod:`.provider_config`: the OpenStack provider's configuration from cloud.conf, its
  credentials in the children's environment only (pure); :mod:`.credentials`: those an older
  engine left in a stack's config and state taken out;
* :mod:`.run`: ``up``/``destroy``/``refresh`` without the Automation API's follow-up commands;
  :mod:`.cli`: the ``pulumi`` command the Automation API runs, and its children's environment;
* :mod:`.preview`: a preview's steps as data (pure, no Pulumi); :mod:`.preview_events`: Pulumi's
  engine events turned into them, and into drift; :mod:`.preview_run`: one stack's preview;
  :mod:`.preview_offline`: a preview without the cloud (the program's recorded lookups
  replayed, what could not be checked); :mod:`.sandbox`: previews on a throw-away copy of the
  stacks, so that the backend is only read (above :mod:`.stack`, which it uses);
* :mod:`.drift`: the drift check that writes nothing (``refresh --preview-only``);
* :mod:`.fleet`: every stack's checkpoint against the project's objects, listed once, with no
  ``pulumi`` process; :mod:`.fleet_plan` the comparison (pure);
* :mod:`.recovery`: pending creates, torn sidecars, hanging ``pulumi`` children;
  :mod:`.processes`: this process's ``pulumi`` children, read from ``/proc``;
  :mod:`.program_channels`: each inline program's gRPC connections its own;
* :mod:`.lost`: what a crash or a failed create left in the cloud, what to look for (pure);
* :mod:`.deployment`: what a Pulumi deployment contains (the stack's resource, providers, the
  secret envelope), pure, at the bottom;
* :mod:`.certificates`: a listener's certificate reference asked of the key manager before
  ``up``;
* :mod:`.members_direct`: a change of pool members only made as OCCM makes it (one batch
  ``PUT`` per pool, the state written as the provider writes it; no ``pulumi`` start), when
  :mod:`.members_plan` says the change and the state allow it (pure); :mod:`.direct_gate`:
  whether the direct paths may write at all (the CLI's and the provider's versions, the state's
  format; pure); :mod:`.direct_state`: protection lifted and an emptied stack removed in the
  state, without ``pulumi state unprotect`` and ``stack rm``;
* :mod:`.lb_tags`: a shared load balancer's own tags, as OCCM keeps them;
* :mod:`.tags`, :mod:`.stack_meta`: a stack's tags and config; :mod:`.listing`: the listing;
* :mod:`.errors`: every failure as one classified :class:`~.errors.EngineError`, each class
  naming how the controller retries it (``failure_kind``); :mod:`.failure_text`: what a failed
  run's output says (the cloud's answers, the error lines, the message a user reads; pure);
  :mod:`.redact`: credentials out of every message;

and four sub-packages, each a subject of its own (their docstrings name their modules):

* :mod:`.state`: Pulumi's DIY backend as this engine reads and writes it beside the CLI (what
  ``pkg/backend/diy/`` is to pulumi): the store, one bucket per kind of backend URL, stack locks
  and whose they are, retention, the ``passphrase`` secrets format;
* :mod:`.openstack`: the OpenStack client for what no stack state records;
* :mod:`.adopt`: taking OCCM's objects into stacks (``lb-reconciler adopt`` and the first
  sync's takeover);
* :mod:`.delete`: deleting a Service's stack (``destroy``, or directly with one cascade
  ``DELETE``), and the cloud-side deletes and repairs it needs.

May import: :mod:`reconciler.config`, :mod:`reconciler.model`, :mod:`stacks` (the names the
program declares are :mod:`stacks.vocabulary`'s), :mod:`reconciler.toolchain` (to find
``pulumi``). Never the controller or the CLI. Nothing is re-exported here, so importing
:mod:`.errors` or :mod:`.results` does not load Pulumi, nor does any pure module
(``tests/unit/test_architecture.py``).
"""

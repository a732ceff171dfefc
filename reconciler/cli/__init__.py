"""The ``lb-reconciler`` command: argument parsing, the subcommands and their reports.

* :mod:`.main`: the parser and dispatch (``lb-reconciler``, ``python -m reconciler.cli``);
* :mod:`.common`: what the user-facing subcommands share (backend flags, cloud.conf, exit codes);
* :mod:`.terminal`: progress and colour on the terminal;
* :mod:`.version`: ``--version`` (the commit, the ``pulumi`` and plugin versions it needs);
* ``run``: :mod:`.run` (the controller's flags; the controller is :mod:`reconciler.controller`);
* ``preview``: :mod:`.preview` (the command), :mod:`.manifests` and :mod:`.preview_plan` (which
  Services, from manifest files; pure), :mod:`.preview_report` (pure), :mod:`.preview_offline`
  (when the cloud is asked, what is said as not checked; pure);
* ``adopt``: :mod:`.adopt` (the command), :mod:`.adopt_report` (pure);
* ``preflight``: :mod:`.preflight` (the command, adopt's dry run writing nothing),
  :mod:`.preflight_plan` (the verdicts; pure);
* ``stacks``: :mod:`.stacks` (the command), :mod:`.stacks_report` (pure), :mod:`.stacks_history`
  (``--history``; pure);
* ``sweep``: :mod:`.sweep` (the command), :mod:`.sweep_plan` (what is orphaned; pure);
* ``backend serve``: :mod:`.backend` (a local PostgreSQL or S3 state backend).

May import every other package; nothing imports this one.
"""

"""The conformance tier: Octavia's own API suite (octavia-tempest-plugin) against ``emulator/``.

``python -m conformance`` (``make conformance``) holds the emulator to something nobody here
wrote: the ``octavia_tempest_plugin.tests.api.v2`` tests of octavia-tempest-plugin 3.5.0 on
tempest 47.0.0, run as published (no patch of the plugin; where the plugin itself is broken the
workaround is configuration, and :mod:`conformance.workspace` says which and why).

The parts, each small and apart from the others:

* :mod:`conformance.venv`: the suite's own virtualenv (``.venv-conformance``), built from
  ``conformance/requirements.txt`` (pinned, with hashes) and reused while that file is unchanged;
* :mod:`conformance.workspace`: pure: the personas the plugin allocates (admin, primary,
  ``lb_admin``, ``lb_member``...), the emulator topology that gives each its own project and
  roles, the tempest ``accounts.yaml`` (pre-provisioned credentials) and ``tempest.conf``;
* :mod:`conformance.results`: pure: test results (one per test id) to a per-module
  pass/fail/skip table, the gate, failures grouped by cause, and the Markdown kept in
  ``docs/conformance.md``;
* ``conformance/subunit_json.py``: run by the suite's virtualenv (it imports python-subunit,
  which the project's does not have): a subunit v2 stream to JSON lines;
* :mod:`conformance.__main__`: the driver: a fresh emulator per RBAC mode on a free loopback
  port, ``tempest run`` in a generated workspace, the table, the logs, the exit code.

The exit code is non-zero only for a failure in a module that :data:`conformance.results.GATED`
declares must pass (or when the run itself cannot be made): the tier can run in CI while the
emulator still differs from Octavia elsewhere, and the table says where.
"""

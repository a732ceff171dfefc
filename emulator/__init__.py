"""An OpenStack API emulator: Keystone v3, Neutron v2.0 and Octavia v2 on one loopback port.

The emulator is the one stand-in in this project's tests: everything else (Pulumi, the OpenStack
provider, kube-apiserver) is real. It follows moto's split: each service has a ``models`` module
that holds the state, the rules and the errors (pure Python, testable without HTTP) and a
``responses`` module that maps HTTP routes onto those models and renders the API's JSON shapes.

Entry points:

* :func:`emulator.server.start` starts a server in a background thread and returns a handle with
  ``.url`` and ``.stop()``; tests and the CLI use it.
* ``python -m emulator`` runs it in the foreground (see ``--help``).
"""

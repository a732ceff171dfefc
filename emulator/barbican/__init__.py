"""Barbican, the key manager, as far as Octavia uses it: secrets and containers a listener's
``default_tls_container_ref`` (and ``sni_container_refs``) may name.

* :mod:`.models`: secrets and containers of a project, and whether a reference names one the
  caller's project may read (what Octavia's certificate manager checks before it accepts a
  ``TERMINATED_HTTPS`` listener);
* :mod:`.responses`: ``/v1/secrets`` and ``/v1/containers`` over HTTP, Barbican's bodies.
"""

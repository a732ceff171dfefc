"""Pulumi's DIY backend as the engine reads and writes it beside the ``pulumi`` CLI: what
``pkg/backend/diy/`` (bucket, lock, meta, snapshot, state, store, ``postgres/``) is to pulumi.

* :mod:`.store`: :class:`~.store.StateStore`, the one module that knows the backend's private
  layout (stacks, tags, locks, history, backups) for ``file://``, ``s3://`` and ``postgres://``
  alike; the engine above it never touches a key or a path; :mod:`.layout`: those keys and
  formats (no I/O);
* :mod:`.stacks`: a stack made, removed and pruned as the CLI does (``state.go``);
* :mod:`.bucket`: what every bucket shares (list, read, write, delete); :mod:`.folder`,
  :mod:`.s3` and :mod:`.postgres`: the ``file://``, ``s3://`` and ``postgres://`` buckets;
  :mod:`.aws`: botocore's clients from one session per process;
* :mod:`.lock_plan`: whose a stack lock is, and which are stale: the leader's rule and a
  bystander's (pure); :mod:`.locks`: listing them and removing the stale ones;
* :mod:`.retention`: which history entries and checkpoint backups a stack keeps (pure);
* :mod:`.passphrase`: Pulumi's ``passphrase`` secrets format (a new stack's salt and secrets,
  without the CLI).

May import: :mod:`reconciler.engine.plan` (stack names and tags), :mod:`reconciler.engine.processes`
(this process's ``pulumi`` children), :mod:`stacks.vocabulary`. Nothing of the engine above it.
"""

"""Entry point for the plain Pulumi CLI (``Pulumi.yaml``: ``main: stacks/``).

``pulumi preview -s <stack> --config-file <work dir>/Pulumi.<stack>.yaml`` runs the same
:func:`stacks.program.main` as the controller's Automation API stacks; it needs the
``pulumi-language-python`` plugin (see ``docs/engine.md``).
"""

from stacks.program import main

main()

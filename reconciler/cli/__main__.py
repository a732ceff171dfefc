"""``python -m reconciler.cli``: the ``lb-reconciler`` command."""

import sys

from reconciler.cli.main import main

sys.exit(main())

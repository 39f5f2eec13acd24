"""``python -m workflow_hub._cli``: the ``workflow-hub`` command without its console script."""

import sys

from . import main

sys.exit(main())

"""``python -m tracker.cli``: the same as the ``hubwatch`` console script."""

import sys

from tracker.cli import main

sys.exit(main())

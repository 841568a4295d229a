"""``python -m obliqueforest``: the command line interface (see :mod:`obliqueforest.cli`)."""

import sys

from .cli import main

sys.exit(main())

"""`python -m lab`: the same as the `prefix-lab` command."""

import sys

from .cli import main

sys.exit(main())

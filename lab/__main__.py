"""`python -m lab`: the same as the `prefix-lab` command."""

import sys

from lab.cli.main import main

sys.exit(main())

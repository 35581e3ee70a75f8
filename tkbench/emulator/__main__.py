"""``python -m tkbench.emulator``: see :mod:`tkbench.emulator.cli`."""

import sys

from .cli import main

sys.exit(main())

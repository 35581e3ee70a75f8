"""``python -m tkbench.emulator``: see :mod:`tkbench.emulator.cli`."""

import sys

from tkbench.emulator.cli import main

sys.exit(main())

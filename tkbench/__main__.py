import sys

from tkbench.cli import main

sys.exit(main())

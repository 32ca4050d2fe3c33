"""``python -m velesmem`` runs the console script (stdio attach when a daemon runs, else the CLI)."""

import sys

from velesmem.launcher import main

sys.exit(main())

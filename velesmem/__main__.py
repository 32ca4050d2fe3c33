"""``python -m velesmem`` runs the CLI."""

import sys

from velesmem.cli import main

sys.exit(main())

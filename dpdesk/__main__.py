"""``python -m dpdesk``: the same program as the ``dpdesk`` command (Windows' folder runs it this way)."""

import sys

from .cli import main

if __name__ == "__main__":  # not when a spawned worker process re-imports its parent's main module
    sys.exit(main())

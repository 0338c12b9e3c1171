"""Entry point of the PyInstaller bundle: the same commands as the ``dpdesk`` console script
(``dpdesk`` alone opens the desktop application, ``dpdesk release …`` works headless)."""

import sys

from dpdesk.cli import main

if __name__ == "__main__":
    sys.exit(main())

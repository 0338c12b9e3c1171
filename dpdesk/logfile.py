"""dpdesk's log file (dpdesk.log in the user's data directory): where unexpected errors are written."""

from __future__ import annotations

import logging
from pathlib import Path

from .paths import user_data_dir

LOG_HANDLER = "dpdesk-log-file"


def setup_logging() -> Path:
    """Log to dpdesk.log in the user's data directory (``DPDESK_HOME`` when set); returns its path.

    Called again after ``DPDESK_HOME`` changed, the log moves there: the handler for the old
    folder is closed, so nothing goes on being written outside the folder the steward chose.
    """
    path = str(user_data_dir() / "dpdesk.log")
    root = logging.getLogger("dpdesk")
    for handler in list(root.handlers):
        if getattr(handler, "name", "") == LOG_HANDLER and handler.baseFilename != path:
            root.removeHandler(handler)
            handler.close()
    if any(getattr(h, "baseFilename", None) == path for h in root.handlers):
        return Path(path)
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.set_name(LOG_HANDLER)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    return Path(path)

"""Where dpdesk keeps its files: the user's data directory and the bundled resources."""

from __future__ import annotations

import os
from pathlib import Path


def user_data_dir() -> Path:
    """The directory for the budget ledger, logs and settings (``DPDESK_HOME`` overrides it)."""
    override = os.environ.get("DPDESK_HOME")
    if override:
        path = Path(override).expanduser()
    else:
        base = os.environ.get("XDG_DATA_HOME") or os.path.join(Path.home(), ".local", "share")
        path = Path(base) / "dpdesk"
    path.mkdir(parents=True, exist_ok=True)
    return path


def resources_dir() -> Path:
    """The bundled resources: installed as ``dpdesk.resources``, or ``resources/`` in a checkout."""
    try:
        from importlib.resources import files

        installed = Path(str(files("dpdesk.resources")))
        if (installed / "sample").is_dir():
            return installed
    except (ModuleNotFoundError, TypeError):
        pass
    return Path(__file__).resolve().parent.parent / "resources"


def sample_path() -> Path:
    """The bundled sample dataset (Groceries market baskets, see resources/sample/SOURCE.md)."""
    return resources_dir() / "sample" / "groceries.csv.gz"

"""Where dpdesk keeps its files: the user's data directory and the bundled resources."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from .errors import ExportError, HomeError


def user_data_dir() -> Path:
    """The directory for the budget ledger, logs and settings (``DPDESK_HOME`` overrides it):
    ``%LOCALAPPDATA%\\dpdesk`` on Windows (kept on this machine, out of a roaming profile, and out of
    the unpacked program folder, which a new version replaces), else ``~/.local/share/dpdesk``."""
    override = os.environ.get("DPDESK_HOME")
    if override:
        path = Path(override).expanduser()
    elif sys.platform == "win32" and os.environ.get("LOCALAPPDATA"):
        path = Path(os.environ["LOCALAPPDATA"]) / "dpdesk"
    else:
        base = os.environ.get("XDG_DATA_HOME") or os.path.join(Path.home(), ".local", "share")
        path = Path(base) / "dpdesk"
    try:
        path.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise HomeError(f"dpdesk keeps its budget ledger and settings in {path}, but that is (or lies under) a "
                        "file, not a folder. Set DPDESK_HOME to a folder you can write to.") from None
    except OSError as error:
        raise HomeError(f"Cannot create dpdesk's folder {path} ({error.strerror or error}). Set DPDESK_HOME to "
                        "a folder you can write to.") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise HomeError(f"dpdesk cannot write to its folder {path}. Set DPDESK_HOME to a folder you can write to.")
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


def copy_sample(folder: Path, force: bool = False) -> list[Path]:
    """Copy the sample dataset and its description (SOURCE.md) into ``folder`` (made if
    missing); an existing file is overwritten only with ``force``. Returns the copies."""
    sources = [sample_path(), sample_path().with_name("SOURCE.md")]
    if folder.exists() and not folder.is_dir():
        raise ExportError(f"{folder} is a file, not a folder: give a folder to copy the sample into.")
    targets = [folder / source.name for source in sources]
    existing = [target for target in targets if target.exists()]
    if existing and not force:
        raise ExportError(f"{existing[0]} already exists; use --force to overwrite it.")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for source, target in zip(sources, targets):
            shutil.copyfile(source, target)
    except OSError as error:
        raise ExportError(f"Cannot copy the sample into {folder}: {error.strerror or error}.") from None
    return targets

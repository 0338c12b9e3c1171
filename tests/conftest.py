"""Test-wide settings: Qt offscreen, a private DPDESK_HOME, paths to the real datasets."""

import os
import tempfile
from pathlib import Path

import pytest

# pytest-qt's qapp aborts without a display unless Qt is told to render offscreen (docs/QT-NOTES.md)
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# never touch the user's real ledger or logs
os.environ["DPDESK_HOME"] = tempfile.mkdtemp(prefix="dpdesk-test-home-")

DATA = Path(__file__).parent / "data"


@pytest.fixture
def data_dir() -> Path:
    return DATA


@pytest.fixture
def dpdesk_home(tmp_path, monkeypatch) -> Path:
    """A fresh, empty DPDESK_HOME for one test."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("DPDESK_HOME", str(home))
    return home

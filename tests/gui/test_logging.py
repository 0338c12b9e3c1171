"""The GUI's log goes to DPDESK_HOME (never the real home directory), and follows it when it changes."""

import logging

from dpdesk.logfile import LOG_HANDLER, setup_logging
from dpdesk.gui.widgets import show_error


def log_files(folder):
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("dpdesk.log"))


def test_the_log_is_written_under_dpdesk_home(qapp, tmp_path, monkeypatch, dialogs):
    home, first, second = tmp_path / "home", tmp_path / "first", tmp_path / "second"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    monkeypatch.setenv("DPDESK_HOME", str(first))
    try:
        show_error(None, RuntimeError("first problem"), "details of the first")
        assert "first problem" in (first / "dpdesk.log").read_text(encoding="utf-8")
        assert str(first / "dpdesk.log") in dialogs[-1][2]  # the dialog names the file that has the details

        monkeypatch.setenv("DPDESK_HOME", str(second))
        show_error(None, RuntimeError("second problem"), "details of the second")
        assert "second problem" in (second / "dpdesk.log").read_text(encoding="utf-8")
        assert "second problem" not in (first / "dpdesk.log").read_text(encoding="utf-8")
        assert log_files(home) == []
    finally:
        root = logging.getLogger("dpdesk")
        for handler in [h for h in root.handlers if h.get_name() == LOG_HANDLER]:
            root.removeHandler(handler)
            handler.close()


def test_without_dpdesk_home_the_log_is_in_the_user_data_folder(tmp_path, monkeypatch):
    monkeypatch.delenv("DPDESK_HOME", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    try:
        assert setup_logging() == tmp_path / "data" / "dpdesk" / "dpdesk.log"
    finally:
        root = logging.getLogger("dpdesk")
        for handler in [h for h in root.handlers if h.get_name() == LOG_HANDLER]:
            root.removeHandler(handler)
            handler.close()

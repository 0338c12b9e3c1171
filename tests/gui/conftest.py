"""GUI tests: modal dialogs must never block a test. They are recorded instead."""

import pytest
from PySide6.QtWidgets import QMessageBox


@pytest.fixture(autouse=True)
def dialogs(monkeypatch):
    """Every message box shown during the test, as (title, text); none of them blocks."""
    shown = []

    def record(kind):
        def show(parent, title, text, *args, **kwargs):
            shown.append((kind, title, text))
            return QMessageBox.Ok
        return show

    for kind in ("warning", "critical", "information", "question", "about"):
        monkeypatch.setattr(QMessageBox, kind, staticmethod(record(kind)))
    monkeypatch.setattr(QMessageBox, "exec", lambda self: shown.append(("box", self.windowTitle(),
                                                                          self.text() + "\n" + self.detailedText())))
    return shown

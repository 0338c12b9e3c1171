"""GUI tests: modal dialogs must never block a test. They are recorded instead."""

import gc
import threading

import pytest
from PySide6.QtWidgets import QMessageBox


@pytest.fixture(autouse=True)
def collector_in_the_gui_thread(qapp):
    """As in the app, garbage is collected in the GUI thread only (dpdesk.gui.app.collect_garbage_in_the_gui_thread):
    never automatically during a GUI test, whose workers would otherwise destroy Qt objects; after it, the
    GUI thread collects and the tests that follow (no Qt) get Python's automatic collector back."""
    from dpdesk.gui.app import collect_garbage_in_the_gui_thread

    collect_garbage_in_the_gui_thread(qapp)
    gc.disable()
    yield
    gc.collect()
    gc.enable()


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


@pytest.fixture
def chess_window(qtbot, dpdesk_home, data_dir):
    """The main window with chess loaded (its file's labels declared public), Δ = 37, lpa and gs-r ticked."""
    import dpdesk
    from dpdesk.data.domain import DomainDeclaration
    from dpdesk.gui.app import make_app
    from dpdesk.gui.main_window import MainWindow
    from tests.gui.test_app import tick

    make_app()
    w = MainWindow()
    qtbot.addWidget(w)
    w.show()
    data = dpdesk.load(data_dir / "chess.dat.gz")
    w.state.set_dataset(data, {"path": str(data_dir / "chess.dat.gz"), "format": "transactions"}, "chess",
                        DomainDeclaration("public-data"))
    w.state.set_bound(37)
    tick(w, {"lpa", "gs-r"})
    yield w
    for page in (w.compare_page, w.release_page):
        if page.task is not None and page.task.running:
            page.task.cancel()
            page.task.wait(5000)
    w.state.dirty = False


class HeldComparison:
    """The real comparison runner, held at a known point: after its first result the worker waits until
    the test calls ``release()`` (``started`` is set once it waits). A test then acts while the comparison
    is certainly running, whatever the machine's load."""

    def __init__(self):
        self.started = threading.Event()
        self._go = threading.Event()

    def release(self) -> None:
        self._go.set()


@pytest.fixture
def held_comparison(monkeypatch):
    from dpdesk.gui import compare_page

    held = HeldComparison()
    real = compare_page.run_comparison

    def run(*args, on_result=None, **kwargs):
        def result(row):
            if on_result is not None:
                on_result(row)
            if not held.started.is_set():
                held.started.set()
                held._go.wait(120)

        return real(*args, on_result=result, **kwargs)

    monkeypatch.setattr(compare_page, "run_comparison", run)
    yield held
    held.release()

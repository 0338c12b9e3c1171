"""GUI tests: modal dialogs must never block a test. They are recorded instead.

A test waits for work on a worker until its own signal says it is done (``qtbot.waitUntil`` on the
state it sets), never for a fixed time. The limit of such a wait, ``WORK`` (and ``WORK_SECONDS`` for a
child process), only turns a hang into a failure: it is far above what any step takes on a loaded
machine, and below pytest-timeout's limit for the whole test (pyproject.toml)."""

import gc
import threading

import pytest
from PySide6.QtWidgets import QMessageBox

def click(qtbot, widget) -> None:
    """Click ``widget`` as a steward does: first scrolled into view (a page, or the Compare page's
    settings, may be taller than the window), then clicked where it is on the screen — a radio button
    or check box on its label (the rest of its row takes no click)."""
    from PySide6.QtCore import QPoint, Qt
    from PySide6.QtWidgets import QCheckBox, QRadioButton, QScrollArea

    parent = widget.parentWidget()
    while parent is not None:
        if isinstance(parent, QScrollArea):
            parent.ensureWidgetVisible(widget)
        parent = parent.parentWidget()
    where = QPoint(8, widget.height() // 2) if isinstance(widget, (QRadioButton, QCheckBox)) else widget.rect().center()
    qtbot.mouseClick(widget, Qt.LeftButton, pos=where)



WORK_SECONDS = 600
WORK = WORK_SECONDS * 1000  # milliseconds, for qtbot.waitUntil


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


class Held:
    """A core function held before it starts: the worker calls it, then waits until the test calls
    ``release()`` (``reached`` is set once it waits). The test acts while the work is certainly running,
    and the function then sees whatever the test did (a cancel) at its first check."""

    def __init__(self):
        self.reached = threading.Event()
        self._go = threading.Event()

    def release(self) -> None:
        self._go.set()

    def wait_reached(self, seconds: float = 60) -> None:
        assert self.reached.wait(seconds), "the worker never started the held function"


@pytest.fixture
def hold(monkeypatch):
    """``hold(owner, name)``: hold ``owner.name`` (a function as the GUI module calls it, or a method) at its
    start, or at its first progress report; every hold is released when the test ends."""
    holds = []

    def make(owner, name: str, *, at_progress: bool = False) -> Held:
        """``at_progress``: held inside the function instead, at its first progress report (mid-work)."""
        held = Held()
        real = getattr(owner, name)

        def wait_there():
            if not held.reached.is_set():
                held.reached.set()
                held._go.wait(120)

        def held_function(*args, **kwargs):
            if at_progress and kwargs.get("progress") is not None:
                report = kwargs["progress"]

                def progress(fraction, message=""):
                    report(fraction, message)
                    wait_there()

                kwargs["progress"] = progress
            else:
                wait_there()
            return real(*args, **kwargs)

        monkeypatch.setattr(owner, name, held_function)
        holds.append(held)
        return held

    yield make
    for held in holds:
        held.release()

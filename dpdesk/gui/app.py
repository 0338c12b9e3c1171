"""Start the desktop application."""

from __future__ import annotations

import logging
import os
import sys
import traceback

from ..logfile import setup_logging
from ..paths import resources_dir, sample_path


def install_excepthook(window) -> None:
    """Unexpected exceptions in Qt callbacks: log them and show a dialog; the window stays open."""
    from .widgets import show_error

    setup_logging()

    def hook(kind, value, tb):
        details = "".join(traceback.format_exception(kind, value, tb))
        logging.getLogger("dpdesk.gui").error("uncaught exception\n%s", details)
        try:
            show_error(window, value, details)
        except Exception:  # noqa: BLE001 - never let the hook itself crash the app
            sys.__excepthook__(kind, value, tb)

    sys.excepthook = hook


def make_app(argv=None, theme: str | None = None):
    """The QApplication, in the Fusion style; ``theme`` (light, dark, high-contrast; default
    ``DPDESK_THEME``, else the desktop's own palette) sets its colours."""
    from PySide6.QtGui import QIcon
    from PySide6.QtWidgets import QApplication

    from .theme import apply_theme, chosen_theme

    name = chosen_theme(theme)  # a misspelt theme is an error before any window opens
    # hand the GIL back to the GUI thread sooner while a worker thread computes (smoother event loop)
    sys.setswitchinterval(0.001)
    app = QApplication.instance() or QApplication(argv or sys.argv[:1])
    app.setApplicationName("dpdesk")
    app.setOrganizationName("dpdesk")
    app.setStyle("Fusion")
    apply_theme(app, name)
    app.setDesktopFileName("dpdesk")  # matches packaging/dpdesk.desktop (menu entry, Wayland app id)
    app.setWindowIcon(QIcon(str(resources_dir() / "icons" / "dpdesk-256.png")))
    collect_garbage_in_the_gui_thread(app)
    from .widgets import install_wheel_guard

    install_wheel_guard(app)
    return app


def collect_garbage_in_the_gui_thread(app) -> None:
    """Python's garbage collector only ever runs in the GUI thread, from a timer.

    Left to itself it runs in whichever thread allocates next, often a worker: it then
    destroys Qt objects (a closed plot, a dialog) in that thread, which deadlocked the
    suite (a worker reading a workbook collected a pyqtgraph item while the GUI thread
    waited for the interpreter lock). pyqtgraph's GarbageCollector disables the automatic
    collector and collects, generation by generation, from a timer in the GUI thread.
    """
    if getattr(app, "_dpdesk_garbage_collector", None) is None:
        from pyqtgraph.util.garbage_collector import GarbageCollector

        app._dpdesk_garbage_collector = GarbageCollector(interval=0.5)


def run_app(path: str | None = None, sample: bool = False, theme: str | None = None) -> int:
    from ..errors import SystemLibraryError
    from ..hostlibs import missing_sentence

    # before Qt loads them: a missing library is then one sentence, not a traceback from Qt
    # (offscreen and the other platforms without a window need no X11 libraries)
    platform = os.environ.get("QT_QPA_PLATFORM", "").split(":")[0] or ("xcb" if os.environ.get("DISPLAY") else "")
    problem = missing_sentence("window" if platform == "xcb" else "qt")
    if problem:
        raise SystemLibraryError(problem)
    from PySide6.QtCore import QTimer

    from ..loading import load
    from .main_window import MainWindow

    app = make_app(theme=theme)
    window = MainWindow()
    install_excepthook(window)
    window.show()
    window.offer_first_run_guide()
    if sample or (path is not None and str(path) == str(sample_path())):
        def open_sample():
            from ..workflow import default_dataset_name

            data = load(sample_path())
            # named as the wizard would propose; where its list of items comes from is still the
            # steward's to say (Release page, Change…)
            window.state.set_dataset(data, {"path": str(sample_path()), "format": "transactions"},
                                     default_dataset_name(sample_path()))
            window.statusBar().showMessage(f"Opened the sample data: {data.describe()}.", 10_000)
        QTimer.singleShot(0, open_sample)
    elif path:
        QTimer.singleShot(0, lambda: window.open_path(str(path)))
    return app.exec()

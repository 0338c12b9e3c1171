"""The main window: the steps Data → Configure → Compare → Plan → Release always visible on the
left with the budget ledger, menus with shortcuts, drag-and-drop, recent files and projects."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QSettings, QSize, Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (QApplication, QFileDialog, QFrame, QHBoxLayout, QLabel, QListWidget, QListWidgetItem,
                               QMainWindow, QMessageBox, QProgressDialog, QPushButton, QScrollArea, QSizePolicy,
                               QStackedWidget, QVBoxLayout, QWidget)

from .. import __version__, guidance
from ..errors import DpdeskError
from ..paths import sample_path, user_data_dir
from ..privacy.ledger import Ledger
from ..project import Project
from ..workflow import default_dataset_name
from . import theme
from .compare_page import ComparePage
from .configure_page import ConfigurePage, spent_in_words
from .first_run import GUIDE_WIDTHS, FirstRunGuide
from .help_window import HelpWindow
from .plan_page import PlanPage
from .release_page import ReleasePage
from .state import AppState
from .widgets import (DataSummaryView, breakable, explanation, fit_to_screen, heading, install_wheel_guard,
                      name_text, show_error)
from .preferences import PreferencesDialog, apply_memory_preference
from .wizard import ImportWizard
from .workers import Task

STEPS = ["① Data", "② Configure", "③ Compare", "④ Plan", "⑤ Release"]
PAGE_KEYS = list(guidance.PAGES)  # the steps' keys, in the same order
GUIDE_SEEN = "guide/seen"  # settings.ini: the first-run guide was shown once
MESSAGE_SECONDS = 10  # a passing status message, after which the next step shows again
MAX_RECENT = 8
SIDE_WIDTH = 180  # the steps and the ledger summary on the left
PREFERRED_SIZE = QSize(1280, 820)


class DataPage(QWidget):
    def __init__(self, window: "MainWindow"):
        super().__init__()
        self.main = window  # not self.window: that is QWidget.window()
        layout = QVBoxLayout(self)
        layout.addWidget(heading("① Data"))
        self.intro = explanation(
            "dpdesk publishes <b>counts</b> — how many people have each item, or fall in each cell of a table — "
            "with <b>differential privacy</b>: random noise calibrated so that the release reveals almost nothing "
            "about any one person. Start by importing the sensitive data. It never leaves this computer.")
        layout.addWidget(self.intro)
        row = QHBoxLayout()
        self.import_button = QPushButton("Import data…")
        self.import_button.setAccessibleName("Import a data file")
        self.sample_button = QPushButton("Open the sample data")
        self.sample_button.setAccessibleName("Open the bundled sample dataset")
        row.addWidget(self.import_button)
        row.addWidget(self.sample_button)
        row.addStretch(1)
        layout.addLayout(row)
        layout.addWidget(explanation("You can also drop a data file or a .dpdesk project onto this window."))
        self.summary_box = QFrame()
        box = QVBoxLayout(self.summary_box)
        self.title = heading("", 2)
        box.addWidget(self.title)
        self.summary = DataSummaryView()
        box.addWidget(self.summary, 1)
        box.addWidget(explanation("These figures describe the true data and are for checking the import only. "
                                  "Next: choose mechanisms and ε on the <b>Configure</b> page."))
        layout.addWidget(self.summary_box, 1)
        self.summary_box.setVisible(False)
        layout.addStretch(0)
        self.import_button.clicked.connect(lambda: window.import_data())
        self.sample_button.clicked.connect(window.open_sample)
        window.state.dataset_changed.connect(self.refresh)

    def refresh(self) -> None:
        data = self.main.state.dataset
        self.summary_box.setVisible(data is not None)
        if data is None:
            return
        source = data.source
        where = Path(source["path"]).name if source.get("path") else source.get("sql", "")
        self.title.setText(breakable(f"{data.describe()} — read as {source.get('format')} from {where}"))
        self.summary.show_dataset(data)


class MainWindow(QMainWindow):
    def __init__(self):
        super().__init__()
        install_wheel_guard(QApplication.instance())  # also when the application was not made by make_app
        self.state = AppState()
        self.project_task: Task | None = None  # reading a project's data file
        self._quitting = False  # the steward chose to quit; the window closes when the running work has stopped
        self.settings = QSettings(str(user_data_dir() / "settings.ini"), QSettings.IniFormat)
        apply_memory_preference(self.settings)
        self.setAcceptDrops(True)
        fit_to_screen(self, PREFERRED_SIZE)
        central = QWidget()
        self.setCentralWidget(central)
        layout = QHBoxLayout(central)
        side = QVBoxLayout()
        self.steps = QListWidget()
        self.steps.setAccessibleName("Steps")
        self.steps.setMaximumWidth(SIDE_WIDTH)
        font = self.steps.font()
        font.setPointSizeF(font.pointSizeF() * 1.15)
        self.steps.setFont(font)
        for text in STEPS:
            self.steps.addItem(QListWidgetItem(text))
        side.addWidget(self.steps, 1)
        self.ledger_label = QLabel("")
        self.ledger_label.setWordWrap(True)
        self.ledger_label.setMaximumWidth(SIDE_WIDTH)
        self.ledger_label.setAccessibleDescription("Privacy budget ledger summary")
        # palette roles: readable on light, dark and high-contrast desktops
        theme.palette_style_sheet(self.ledger_label, "QLabel {background:palette(alternate-base); "
                                                     "border:1px solid palette(mid); padding:6px;}")
        side.addWidget(self.ledger_label)
        layout.addLayout(side)
        self.pages = QStackedWidget()
        self.data_page = DataPage(self)
        self.configure_page = ConfigurePage(self.state)
        self.compare_page = ComparePage(self.state)
        self.plan_page = PlanPage(self.state)
        self.release_page = ReleasePage(self.state)
        for index, page in enumerate((self.data_page, self.configure_page, self.compare_page, self.plan_page,
                                      self.release_page)):
            if page is self.compare_page:
                # not in a scroll area: painting its streaming pyqtgraph plots inside one crashes
                # PySide (6.9.3 and 6.10.3, in the end-to-end test); on a small screen it is cut
                # at the bottom instead of pushing the window off the screen
                page.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Ignored)
                self.pages.addWidget(page)
                continue
            # a page taller or wider than a small screen scrolls instead of pushing the window off it
            scroller = QScrollArea()
            scroller.setAccessibleName(f"{STEPS[index]} page")  # a Tab stop (the arrow keys scroll it)
            scroller.setWidgetResizable(True)
            scroller.setFrameShape(QFrame.NoFrame)
            scroller.setWidget(page)
            self.pages.addWidget(scroller)
        layout.addWidget(self.pages, 1)
        self.steps.currentRowChanged.connect(self.pages.setCurrentIndex)
        self.steps.setCurrentRow(0)
        self.help_window: HelpWindow | None = None
        self.guide: FirstRunGuide | None = None
        self._menus()
        # the next useful step, shown whenever no passing message is (QStatusBar hides it meanwhile)
        self.next_step_label = QLabel("")
        # two lines in a narrow window, rather than a window wider than the screen
        self.next_step_label.setWordWrap(True)
        self.next_step_label.setAccessibleDescription("The next step")
        self.statusBar().addWidget(self.next_step_label, 1)
        self.mode_label = QLabel(f"dpdesk {__version__} · offline")
        self.statusBar().addPermanentWidget(self.mode_label)
        self.state.dataset_changed.connect(self._title)
        self.state.ledger_changed.connect(self._ledger_summary)
        self.state.dataset_changed.connect(self._ledger_summary)
        self.steps.currentRowChanged.connect(self._page_changed)
        for signal in (self.state.dataset_changed, self.state.config_changed, self.state.comparison_changed,
                       self.state.release_changed, self.state.ledger_changed, self.state.exported):
            signal.connect(self.update_next_step)
        self._title()
        self._ledger_summary()
        self.update_next_step()

    # -- menus ---------------------------------------------------------------------------
    def _menus(self) -> None:
        file_menu = self.menuBar().addMenu("&File")
        self._action(file_menu, "&Import data…", self.import_data, QKeySequence.Open)
        self._action(file_menu, "Open the &sample data", self.open_sample, "Ctrl+Shift+D")
        file_menu.addSeparator()
        self._action(file_menu, "&Open project…", self.open_project, "Ctrl+Shift+O")
        self._action(file_menu, "&Save project", self.save_project, QKeySequence.Save)
        self._action(file_menu, "Save project &as…", lambda: self.save_project(ask=True), "Ctrl+Shift+S")
        self.recent_menu = file_menu.addMenu("&Recent files")
        self._fill_recent()
        file_menu.addSeparator()
        self._action(file_menu, "&Preferences…", lambda: PreferencesDialog(self.settings, self).exec(),
                     QKeySequence.Preferences)
        self._action(file_menu, "&Quit", self.close, QKeySequence.Quit)
        go = self.menuBar().addMenu("&Go")
        for i, text in enumerate(STEPS):
            self._action(go, text, lambda _=False, i=i: self.steps.setCurrentRow(i), f"Ctrl+{i + 1}")
        run = self.menuBar().addMenu("&Run")
        # Ctrl+R runs the page's own work: the release on the Release page (after its confirmation), the
        # comparison everywhere else (_page_changed moves the shortcut)
        self.run_comparison_action = self._action(run, "Run &comparison", self.run_comparison, "Ctrl+R")
        self.run_release_action = self._action(run, "Run &release (secure)…", self.run_release)
        self._action(run, "&Cancel comparison", self.compare_page.cancel, "Esc")
        help_menu = self.help_menu = self.menuBar().addMenu("&Help")
        self._action(help_menu, "Help for &this page", self.help_for_current_page, QKeySequence.HelpContents)
        self._action(help_menu, "Help and &glossary (search)…", self.search_help)
        self._action(help_menu, "How dpdesk &protects privacy", lambda: self.show_help("privacy"))
        help_menu.addSeparator()
        self._action(help_menu, "Getting &started guide…", self.start_guide)
        help_menu.addSeparator()
        self._action(help_menu, "&About dpdesk", self.show_about)

    def run_comparison(self) -> None:
        self.show_page("compare")
        self.compare_page.run()

    def run_release(self) -> None:
        """Run release, as its button does (it asks to confirm first); say why not when it cannot run yet."""
        self.show_page("release")
        if self.release_page.run_button.isEnabled():
            self.release_page.run_button.click()
        else:
            self.statusBar().showMessage("The release cannot run yet. " + guidance.next_step("release",
                                                                                            self.progress()),
                                         MESSAGE_SECONDS * 1000)

    def _run_shortcut(self) -> None:
        on_release = self.current_page() == "release"
        self.run_release_action.setShortcut(QKeySequence("Ctrl+R") if on_release else QKeySequence())
        self.run_comparison_action.setShortcut(QKeySequence() if on_release else QKeySequence("Ctrl+R"))

    def _action(self, menu, text, slot, shortcut=None) -> QAction:
        action = QAction(text, self)
        if shortcut is not None:
            action.setShortcut(QKeySequence(shortcut))
        action.triggered.connect(lambda _=False: slot())
        menu.addAction(action)
        return action

    # -- data and projects ---------------------------------------------------------------
    def import_data(self, path: str | None = None) -> bool:
        wizard = ImportWizard(self, path)
        if wizard.exec() and wizard.dataset is not None:
            name, declaration = wizard.publication()
            self.state.set_dataset(wizard.dataset, wizard.settings(), name, declaration)
            self.show_page("data")  # its summary, to check the import; never a page set up for the data before
            if "path" in wizard.settings():  # a database query is not a recent file
                self._remember(wizard.settings()["path"])
            self.statusBar().showMessage(f"Loaded {wizard.dataset.describe()}.", MESSAGE_SECONDS * 1000)
            return True
        return False

    def open_sample(self) -> None:
        self.import_data(str(sample_path()))

    def open_path(self, path: str) -> None:
        if path.endswith(".dpdesk"):
            self.open_project(path)
        else:
            self.import_data(path)

    def open_project(self, path: str | None = None) -> None:
        if path is None:
            path, _ = QFileDialog.getOpenFileName(self, "Open a dpdesk project", str(Path.home()),
                                                  "dpdesk projects (*.dpdesk)")
            if not path:
                return
        try:
            project = Project.load(path)
        except DpdeskError as error:
            show_error(self, error)
            return
        if self.project_task is not None and self.project_task.running:
            return
        # the project's data file is read on a worker, with progress and Cancel (never in the GUI thread)
        dialog = QProgressDialog(f"Reading the data of {Path(path).name}…", "Cancel", 0, 1000, self)
        dialog.setWindowTitle("Opening the project")
        dialog.setWindowModality(Qt.WindowModal)
        dialog.setMinimumDuration(400)
        dialog.setAutoClose(False)
        dialog.setAutoReset(False)
        task = Task(project.load_data, parent=self)
        task.progress.connect(lambda fraction, message: (dialog.setValue(int(fraction * 1000)),
                                                        dialog.setLabelText(message or dialog.labelText())))
        task.succeeded.connect(lambda data: self._project_opened(project, path, data))
        task.failed.connect(lambda error, details: show_error(self, error, details))
        task.cancelled.connect(lambda: self.statusBar().showMessage(f"Opening {Path(path).name} was cancelled."))
        task.finished.connect(dialog.close)
        dialog.canceled.connect(task.cancel)
        self.project_task = task
        task.start()

    def _project_opened(self, project: Project, path, data) -> None:
        if self.project_task is not None and self.project_task.token.cancelled:
            return
        settings = {**{k: project.data[k] for k in ("path", "sql", "query") if k in project.data},
                    "format": project.data.get("format", "auto"), **project.data.get("options", {})}
        self.state.apply_project(project)
        self.state.set_dataset(data, settings,
                               self.state.dataset_name or default_dataset_name(settings.get("path") or data.name),
                               self.state.domain_declaration)
        self.state.project_path = Path(path)
        self.state.dirty = False
        self._remember(path)
        self.statusBar().showMessage(f"Opened project {Path(path).name}.", MESSAGE_SECONDS * 1000)

    def save_project(self, ask: bool = False) -> None:
        path = self.state.project_path
        if ask or path is None:
            suggested = str(Path.home() / f"{self.state.dataset.name if self.state.dataset else 'project'}.dpdesk")
            chosen, _ = QFileDialog.getSaveFileName(self, "Save the project", suggested, "dpdesk projects (*.dpdesk)")
            if not chosen:
                return
            path = Path(chosen if chosen.endswith(".dpdesk") else chosen + ".dpdesk")
        try:
            self.state.to_project().save(path)
        except DpdeskError as error:
            show_error(self, error)
            return
        self.state.project_path = Path(path)
        self.state.dirty = False
        self._remember(str(path))
        self.statusBar().showMessage(f"Saved {Path(path).name}. It can also run headless: "
                                     f"dpdesk release --project {Path(path).name} --out DIR", MESSAGE_SECONDS * 1000)

    def _remember(self, path: str) -> None:
        recent = [p for p in (self.settings.value("recent", []) or []) if p != path]
        recent.insert(0, path)
        self.settings.setValue("recent", recent[:MAX_RECENT])
        self._fill_recent()

    def _fill_recent(self) -> None:
        self.recent_menu.clear()
        recent = self.settings.value("recent", []) or []
        if isinstance(recent, str):
            recent = [recent]
        for path in recent:
            self._action(self.recent_menu, path, lambda p=path: self.open_path(p))
        self.recent_menu.setEnabled(bool(recent))

    # -- drag and drop -------------------------------------------------------------------
    def dragEnterEvent(self, event) -> None:  # noqa: N802 - Qt API
        if event.mimeData().hasUrls():
            event.acceptProposedAction()

    def dropEvent(self, event) -> None:  # noqa: N802
        urls = event.mimeData().urls()
        if urls:
            event.acceptProposedAction()
            self.open_path(urls[0].toLocalFile())

    # -- status --------------------------------------------------------------------------
    def _title(self) -> None:
        data = self.state.dataset
        self.setWindowTitle(f"dpdesk — {data.describe()}" if data is not None else "dpdesk")

    # -- the next step -------------------------------------------------------------------------
    def current_page(self) -> str:
        """The key of the page shown (data, configure, compare, plan or release)."""
        return PAGE_KEYS[max(self.steps.currentRow(), 0)]

    def show_page(self, page: str) -> None:
        self.steps.setCurrentRow(PAGE_KEYS.index(page))

    def progress(self) -> guidance.Progress:
        """How far the steward has got, for the status bar's next step and the guide."""
        state = self.state
        if state.dataset is None:
            return guidance.Progress()
        enabled = [c.mechanism for c in state.enabled()]
        return guidance.Progress(
            has_data=True, ticked=len(enabled), needs_bound=guidance.needs_bound(enabled, state.bound),
            compared=state.comparison is not None, released=state.release is not None,
            exported=state.exported_to is not None, cells=state.dataset.kind == "cells",
            publication_declared=bool(state.dataset_name) and state.domain_declaration is not None)

    def _page_changed(self, _row: int) -> None:
        # a passing message belongs to the page it came from ("Loaded …" on Data): on another
        # page it would hide that page's next step for its remaining seconds
        self.statusBar().clearMessage()
        self._run_shortcut()
        self.update_next_step()

    def update_next_step(self) -> None:
        self.next_step_label.setText(guidance.next_step(self.current_page(), self.progress()))

    def _ledger_summary(self) -> None:
        data = self.state.dataset
        if data is None:
            self.ledger_label.setText("<b>Budget ledger</b><br>Import data to see the ε already spent on it.")
            return
        if not self.state.dataset_name:
            self.ledger_label.setText("<b>Budget ledger</b><br>Say who this data is about (⑤ Release, Change…) to "
                                      "see the ε already spent on them.")
            return
        try:
            status = Ledger.open().status(self.state.dataset_name)
        except DpdeskError as error:
            self.ledger_label.setText(f"<b>Budget ledger</b><br>{error}")
            return
        cap = f"of cap {status.cap:g}" if status.cap is not None else "(no cap)"
        self.ledger_label.setText(f"<b>Budget ledger</b><br>{name_text(self.state.dataset_name)}: ε used "
                                  f"{status.spent:.3g} {cap}"
                                  f"<br>{spent_in_words(status.spent)}")

    def show_about(self) -> None:
        QMessageBox.about(self, "About dpdesk",
                          f"<b>dpdesk {__version__}</b><br>Publish differentially private counts of a sensitive "
                          "dataset, offline.<br><br>Mechanisms from: Kellaris &amp; Papadopoulos (GS, VLDB 2013); "
                          "Day &amp; Li (DPSense); Cormode, Procopiuc, Srivastava &amp; Tran (ICDT 2012); Shoaran, "
                          "Thomo &amp; Weber (DP in Practice).")

    # -- help and the first-run guide --------------------------------------------------------
    def show_help(self, entry_id: str | None = None) -> HelpWindow:
        """Open the Help window (one for the session), at ``entry_id`` if given."""
        if self.help_window is None:
            self.help_window = HelpWindow(self)
        if entry_id is not None:
            self.help_window.search.clear()
            self.help_window.show_entry(entry_id)
        self.help_window.show()
        self.help_window.raise_()
        self.help_window.activateWindow()
        return self.help_window

    def help_for_current_page(self) -> HelpWindow:
        return self.show_help(guidance.page_entry_id(self.current_page()))

    def search_help(self) -> HelpWindow:
        window = self.show_help()
        window.focus_search()
        return window

    def start_guide(self) -> FirstRunGuide:
        """Show the getting-started guide from its first step."""
        if self.guide is None:
            self.guide = FirstRunGuide(self)
            self.addDockWidget(Qt.RightDockWidgetArea, self.guide)
            # a quarter of the window, within the guide's limits: the page beside it keeps its room
            self.resizeDocks([self.guide], [max(GUIDE_WIDTHS[0], min(GUIDE_WIDTHS[1], self.width() // 4))],
                             Qt.Horizontal)
        self.guide.start()
        return self.guide

    def offer_first_run_guide(self) -> bool:
        """On the first start (nothing in settings.ini says the guide was seen), show it; True if shown."""
        if self.settings.value(GUIDE_SEEN, False, type=bool):
            return False
        self.settings.setValue(GUIDE_SEEN, True)
        self.settings.sync()
        self.start_guide()
        return True

    # -- quitting ----------------------------------------------------------------------------
    def running_work(self) -> list[tuple[str, Task]]:
        """The work running on a worker now, each said in a few words with its task."""
        work = []
        compare = self.compare_page.task
        if compare is not None and compare.running:
            work.append(("a comparison", compare))
        release = self.release_page.task
        if release is not None and release.running:
            work.append(("a release being drawn", release))
        if self.project_task is not None and self.project_task.running:
            work.append(("the project's data being read", self.project_task))
        return work

    def ask_before_quitting(self, what: list[str]) -> bool:
        """Whether to stop the running work and quit (True) or keep working (False). Tests replace it."""
        names = " and ".join(what)
        box = QMessageBox(QMessageBox.Question, "Quit dpdesk?",
                          f"<b>{names[0].upper() + names[1:]} {'is' if len(what) == 1 else 'are'} still running."
                          "</b><br><br>Quitting stops it: a comparison's results so far are lost, and a release that "
                          "is not yet recorded spends nothing (one that is already recorded stays in the budget "
                          "ledger).<br><br>Keep working to let it finish.", parent=self)
        box.setTextFormat(Qt.RichText)
        stop = box.addButton("Stop and quit", QMessageBox.AcceptRole)
        keep = box.addButton("Keep working", QMessageBox.RejectRole)
        box.setDefaultButton(keep)
        box.setEscapeButton(keep)
        box.exec()
        return box.clickedButton() is stop

    def ask_to_save(self) -> QMessageBox.StandardButton:
        """Save, Discard or Cancel before quitting. Tests replace it."""
        return QMessageBox.question(self, "Save the project?",
                                    "Save your import settings and mechanism choices as a project before quitting?",
                                    QMessageBox.Save | QMessageBox.Discard | QMessageBox.Cancel)

    def closeEvent(self, event) -> None:  # noqa: N802
        """Quitting asks first while work runs (Keep working leaves it running) and whether to save; work that
        is to stop is cancelled and the window closes when it has stopped, never blocking the event loop
        in between (waiting for a worker here froze the window for seconds)."""
        running = self.running_work()
        if self._quitting:  # the questions were answered: close once the stopped work has ended
            if running:
                event.ignore()
                return
            event.accept()
            return
        if running and not self.ask_before_quitting([what for what, _task in running]):
            event.ignore()
            return
        if self.state.dirty and self.state.dataset is not None:
            answer = self.ask_to_save()
            if answer == QMessageBox.Cancel:
                event.ignore()  # nothing was stopped
                return
            if answer == QMessageBox.Save:
                self.save_project()
        if not running:
            event.accept()
            return
        self._quitting = True
        for _what, task in running:
            for signal in (task.partial, task.progress, task.succeeded):
                try:  # what it still delivers is not drawn: the window is closing
                    signal.disconnect()
                except (RuntimeError, TypeError):  # nothing connected
                    pass
            task.finished.connect(self._close_when_stopped)
            task.cancel()
        self.statusBar().showMessage("Stopping " + " and ".join(what for what, _task in running)
                                     + "… dpdesk closes when it has stopped.")
        event.ignore()

    def _close_when_stopped(self) -> None:
        if not self.running_work():
            self.close()

"""The first-run guide: a panel beside the pages that walks a new steward through the five steps
on the sample data, switching to each page and outlining the controls to use. Skippable; shown
once on the first start (MainWindow.offer_first_run_guide) and again from the Help menu. The
steps' words are in dpdesk.guidance.GUIDE; which controls they point at is decided here."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, QRect, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QPainter, QPalette, QPen
from PySide6.QtWidgets import QDockWidget, QHBoxLayout, QLabel, QPushButton, QScrollArea, QVBoxLayout, QWidget

from .. import guidance
from ..paths import sample_path
from . import theme
from .widgets import heading


GUIDE_WIDTHS = (240, 340)  # the guide's narrowest and widest


class Spotlight(QWidget):
    """A see-through layer over the main window that outlines the controls a step is about.
    It never takes a click; it follows the controls when they move, scroll or change size."""

    def __init__(self, window: QWidget):
        super().__init__(window)
        self.setAttribute(Qt.WA_TransparentForMouseEvents)
        self.setAttribute(Qt.WA_NoSystemBackground)
        self.setFocusPolicy(Qt.NoFocus)
        self.targets: list[QWidget] = []
        self._watched: list[QObject] = []
        window.installEventFilter(self)
        self.setGeometry(window.rect())
        self.hide()

    def point_at(self, targets: list[QWidget]) -> None:
        for watched in self._watched:
            watched.removeEventFilter(self)
        self.targets = [t for t in targets if t is not None]
        # a control moves when it, or any widget around it (a scrolled page), moves or resizes
        self._watched = []
        for target in self.targets:
            widget = target
            while widget is not None and widget is not self.parentWidget():
                widget.installEventFilter(self)
                self._watched.append(widget)
                widget = widget.parentWidget()
        self.setGeometry(self.parentWidget().rect())
        self.setVisible(bool(self.targets))
        self.raise_()
        self.update()

    def outlines(self) -> list[QRect]:
        """The rectangles drawn now, in this layer's coordinates: the visible part of each control."""
        rects = []
        for target in self.targets:
            if not target.isVisible():
                continue
            visible = target.visibleRegion().boundingRect()
            if visible.isEmpty():
                continue
            top_left = target.mapTo(self.parentWidget(), visible.topLeft())
            rects.append(QRect(top_left, visible.size()).adjusted(-4, -4, 4, 4))
        return rects

    def eventFilter(self, watched, event) -> bool:  # noqa: N802 - Qt API
        if event.type() in (QEvent.Move, QEvent.Resize, QEvent.Show, QEvent.Hide):
            if watched is self.parentWidget():
                self.setGeometry(self.parentWidget().rect())
            if self.isVisible():
                self.update()
        return False

    def paintEvent(self, event) -> None:  # noqa: N802
        colours = theme.palette()
        colour = theme.readable(colours.color(QPalette.Highlight), colours.color(QPalette.Window),
                                theme.GRAPHICS_CONTRAST)
        halo = QColor(colour)
        halo.setAlpha(90)
        painter = QPainter(self)
        painter.setRenderHint(QPainter.Antialiasing)
        for pen in (QPen(halo, 9), QPen(colour, 3)):  # a soft glow, then the line: seen at a glance
            painter.setPen(pen)
            for rect in self.outlines():
                painter.drawRoundedRect(rect, 6, 6)
        painter.end()


class FirstRunGuide(QDockWidget):
    """Five steps, one per page: what to do there, on the sample data. Back, Next, Skip."""

    finished = Signal()

    def __init__(self, window):
        super().__init__("Getting started", window)
        self.main = window  # not self.window: that is QWidget.window()
        self.setObjectName("first-run-guide")
        self.setFeatures(QDockWidget.DockWidgetClosable | QDockWidget.DockWidgetMovable)
        self.setAllowedAreas(Qt.LeftDockWidgetArea | Qt.RightDockWidgetArea)
        self.setAccessibleName("Getting started guide")
        body = QWidget()
        body.setMinimumWidth(GUIDE_WIDTHS[0])  # beside the pages: they keep at least 500 px at 1024 wide
        body.setMaximumWidth(GUIDE_WIDTHS[1])
        layout = QVBoxLayout(body)
        self.counter = QLabel("")
        self.counter.setAccessibleDescription("Guide step")
        self.title = heading("", 2)
        self.title.setWordWrap(True)
        self.text = QLabel("")
        self.text.setWordWrap(True)
        self.text.setTextFormat(Qt.RichText)
        self.text.setAlignment(Qt.AlignLeft | Qt.AlignTop)
        self.text.setAccessibleDescription("What to do on this page")
        self.action = QPushButton("Open the sample data")
        self.action.setAccessibleName("Open the bundled sample dataset")
        self.done_label = QLabel("")
        self.done_label.setWordWrap(True)
        layout.addWidget(self.counter)
        layout.addWidget(self.title)
        layout.addWidget(self.text)
        layout.addWidget(self.action)
        layout.addWidget(self.done_label)
        layout.addStretch(1)
        buttons = QHBoxLayout()
        self.skip_button = QPushButton("Skip the guide")
        self.skip_button.setAccessibleName("Close the guide")
        self.back_button = QPushButton("◀ Back")
        self.next_button = QPushButton("Next ▶")
        self.next_button.setDefault(True)
        buttons.addWidget(self.back_button)
        buttons.addWidget(self.next_button)
        buttons.addStretch(1)
        layout.addLayout(buttons)
        skip = QHBoxLayout()  # a line of its own: the three buttons do not fit the guide's narrowest width
        skip.addWidget(self.skip_button)
        skip.addStretch(1)
        layout.addLayout(skip)
        self.setWidget(body)
        self.spotlight = Spotlight(window)
        self.index = 0
        self.steps = guidance.GUIDE
        self.action.clicked.connect(window.open_sample)
        self.skip_button.clicked.connect(self.close)
        self.back_button.clicked.connect(lambda: self.go(self.index - 1))
        self.next_button.clicked.connect(self.next)
        for signal in (window.state.dataset_changed, window.state.config_changed, window.state.comparison_changed,
                       window.state.release_changed, window.state.exported):
            signal.connect(self._update_done)
        window.state.dataset_changed.connect(lambda: self.text.setText(self.step.text_for(self.on_sample())))
        theme.on_palette_change(self._update_done)

    def start(self) -> None:
        self.show()
        self.raise_()
        self.go(0)

    @property
    def step(self) -> guidance.GuideStep:
        return self.steps[self.index]

    def go(self, index: int) -> None:
        self.index = max(0, min(index, len(self.steps) - 1))
        step = self.step
        self.main.show_page(step.page)
        self.counter.setText(f"Step {self.index + 1} of {len(self.steps)}")
        self.title.setText(step.title)
        self.text.setText(step.text_for(self.on_sample()))
        self.action.setVisible(step.page == "data" and self.main.state.dataset is None)
        self.back_button.setEnabled(self.index > 0)
        last = self.index == len(self.steps) - 1
        self.next_button.setText("Finish" if last else "Next ▶")
        self.next_button.setAccessibleName("Finish the guide" if last else "Next step of the guide")
        targets = self.targets(step.page)
        self.spotlight.point_at(targets)
        QTimer.singleShot(0, lambda: self.show_targets(targets))  # once the page shown has its layout
        self._update_done()

    @staticmethod
    def show_targets(targets: list[QWidget]) -> None:
        """Scroll the page so that the step's controls are in view, the first one above all (on a small
        screen the page is taller than the window)."""
        for target in reversed(targets):
            parent = target.parentWidget()
            while parent is not None and not isinstance(parent, QScrollArea):
                parent = parent.parentWidget()
            if parent is not None:
                parent.ensureWidgetVisible(target, 20, 20)

    def on_sample(self) -> bool:
        """Whether the steps may speak of the sample's baskets: it is loaded, or nothing is yet."""
        state = self.main.state
        return state.dataset is None or state.import_settings.get("path") == str(sample_path())

    def next(self) -> None:
        if self.index == len(self.steps) - 1:
            self.close()
        else:
            self.go(self.index + 1)

    def targets(self, page: str) -> list[QWidget]:
        """The controls a step is about (getattr: a page being reworked may rename them; the
        step then outlines nothing rather than failing)."""
        w = self.main
        wanted = {
            "data": [(w.data_page, "sample_button")],
            "configure": [(w.configure_page, "bound"), (w.configure_page, "epsilon")],
            "compare": [(w.compare_page, "on_synthetic"), (w.compare_page, "run_button")],
            "plan": [(w.plan_page, "answer"), (w.plan_page, "use")],
            "release": [(w.release_page, "run_button"), (w.release_page, "export_button")],
        }[page]
        return [getattr(owner, name, None) for owner, name in wanted if isinstance(getattr(owner, name, None),
                                                                                   QWidget)]

    def _update_done(self) -> None:
        state = self.main.state
        page = self.step.page
        done = {"data": state.dataset is not None,
                "configure": state.dataset is not None and bool(state.enabled()) and not guidance.needs_bound(
                    [c.mechanism for c in state.enabled()], state.bound),
                "compare": state.comparison is not None,
                "plan": False,
                "release": state.exported_to is not None}[page]
        if page == "data":
            self.action.setVisible(state.dataset is None)
        self.done_label.setText(f"<span style='color:{theme.accent_text('ok').name()}'>✓ Done — press "
                          f"{'Finish' if self.index == len(self.steps) - 1 else 'Next'}.</span>" if done else "")

    def closeEvent(self, event) -> None:  # noqa: N802 - Qt API
        self.spotlight.point_at([])
        super().closeEvent(event)
        self.finished.emit()

    def hideEvent(self, event) -> None:  # noqa: N802
        self.spotlight.point_at([])
        super().hideEvent(event)

    def showEvent(self, event) -> None:  # noqa: N802
        super().showEvent(event)
        if self.steps:
            self.spotlight.point_at(self.targets(self.step.page))

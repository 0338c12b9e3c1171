"""Small shared widgets: banners, plot panels with captions/export/number tables, dialogs."""

from __future__ import annotations

import html
import logging
import re
from pathlib import Path

import numpy as np
import pyqtgraph as pg
import pyqtgraph.exporters  # noqa: F401  (registers the exporters)
from PySide6.QtCore import QAbstractTableModel, QEvent, QModelIndex, QObject, QRect, QSize, Qt, Signal
from PySide6.QtGui import QColor, QFont, QValidator
from PySide6.QtWidgets import (QAbstractSlider, QAbstractSpinBox, QBoxLayout, QComboBox, QDoubleSpinBox, QFileDialog,
                               QFrame, QHBoxLayout, QHeaderView, QLabel, QLayout, QMessageBox, QPushButton,
                               QScrollArea, QScrollBar, QSizePolicy, QTableView, QTableWidget, QTableWidgetItem,
                               QToolTip, QVBoxLayout, QWidget)

from ..errors import DpdeskError
from . import theme

# Okabe–Ito: distinguishable with every common form of colour blindness (black: the palette's text)
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000"]
DASHES = [Qt.SolidLine, Qt.DashLine, Qt.DotLine, Qt.DashDotLine, Qt.DashDotDotLine]

pg.setConfigOptions(antialias=True)

log = logging.getLogger("dpdesk.gui")


def colour(index: int) -> str:
    """Series ``index``'s colour, visible on the current palette's plot background."""
    return theme.series_colour(PALETTE[index % len(PALETTE)]).name()


def pen(index: int, width: float = 2.0):
    return pg.mkPen(colour(index), width=width, style=DASHES[index % len(DASHES)])


class Banner(QLabel):
    """A tinted strip with an important sentence (e.g. "these plots use the true data"); its colours
    come from the palette (theme.banner_colours) and follow it when it changes."""

    KINDS = tuple(theme.ACCENTS)

    def __init__(self, text: str = "", kind: str = "warning", parent=None):
        super().__init__(text, parent)
        self.setWordWrap(True)
        self.setTextFormat(Qt.RichText)
        self.kind = kind
        self.set_kind(kind)
        self.setAccessibleDescription("Notice")
        theme.on_palette_change(self._restyle)

    def set_kind(self, kind: str) -> None:
        if kind not in self.KINDS:
            raise ValueError(f"unknown banner kind {kind!r}")
        self.kind = kind
        self._restyle()

    def colours(self) -> theme.Tint:
        return theme.banner_colours(self.kind)

    def _restyle(self) -> None:
        tint = self.colours()
        self.setStyleSheet(f"QLabel {{background:{tint.background.name()}; border:1px solid {tint.border.name()}; "
                           f"color:{tint.text.name()}; border-radius:4px; padding:8px;}}")


VALUE_CONTROLS = (QAbstractSpinBox, QAbstractSlider, QComboBox)
# room for the window manager's title bar and borders, which Qt learns only once a window is mapped
DECORATION_ALLOWANCE = QSize(16, 48)


def fitted_geometry(available: QRect, preferred: QSize) -> QRect:
    """A window's first geometry (without decorations): the preferred size, shrunk to the screen's
    available area less room for decorations, centred in that area."""
    width = max(1, min(preferred.width(), available.width() - DECORATION_ALLOWANCE.width()))
    height = max(1, min(preferred.height(), available.height() - DECORATION_ALLOWANCE.height()))
    frame_width, frame_height = width + DECORATION_ALLOWANCE.width(), height + DECORATION_ALLOWANCE.height()
    x = available.x() + max(0, (available.width() - frame_width) // 2)
    y = available.y() + max(0, (available.height() - frame_height) // 2)
    return QRect(x, y, width, height)


def fit_to_screen(window: QWidget, preferred: QSize) -> None:
    """Size and place a window so that it opens inside its screen's available area."""
    screen = window.screen()
    if screen is None:
        window.resize(preferred)
        return
    first = fitted_geometry(screen.availableGeometry(), preferred)
    window.resize(first.size())
    window.move(first.topLeft())


class WheelGuard(QObject):
    """The mouse wheel changes a value control (spin box, slider, combo box) only when the steward
    has given it the keyboard focus (clicked it or tabbed to it): scrolling a page to read it never
    changes ε, Δ or a setting that passes under the pointer. The wheel event then goes on to the
    control's parents, so the page scrolls as if the control were not there.

    Qt gives a control the focus on a wheel event when its focus policy includes Qt.WheelFocus
    (the default of spin boxes and sliders) before any filter sees the event, so every value
    control is made Qt.StrongFocus (click or Tab) when it is polished."""

    def eventFilter(self, watched, event) -> bool:  # noqa: N802 - Qt API
        if isinstance(watched, QScrollBar):  # a scroll area hands the wheel to its scroll bar: that is scrolling
            return False
        kind = event.type()
        if kind == QEvent.Polish and isinstance(watched, VALUE_CONTROLS):
            if watched.focusPolicy() & Qt.WheelFocus == Qt.WheelFocus:
                watched.setFocusPolicy(Qt.StrongFocus)
        elif kind == QEvent.Wheel and isinstance(watched, VALUE_CONTROLS) and not watched.hasFocus():
            event.ignore()  # not accepted: QApplication offers it to the parent widgets (the page scrolls)
            return True
        return False


def install_wheel_guard(app) -> None:
    """Install the :class:`WheelGuard` on the application (once)."""
    if getattr(app, "_dpdesk_wheel_guard", None) is None:
        app._dpdesk_wheel_guard = WheelGuard(app)
        app.installEventFilter(app._dpdesk_wheel_guard)


def decimal_reading(text: str, point: str, group: str) -> tuple[str, str | None]:
    """A number typed with either decimal mark, in the form the locale reads (``point`` is its decimal
    mark, ``group`` its thousands separator): "1,5" → "1.5" where the mark is ".", "1.5" → "1,5" where
    it is ",". Returns ``(text, refusal)``; ``refusal`` is a sentence when the text has two readings:
    "1,000" where "," groups thousands is one thousand, or 1 with three decimals."""
    other = "," if point == "." else "."
    body = text.strip()
    if other not in body or point in body or body.count(other) != 1:
        return body, None
    head, tail = body.split(other)
    if other == group and len(tail) == 3 and tail.isdigit():
        return body, (f"“{body}” can be read two ways: as {head}{tail} or as {head}{point}{tail}. Type it without "
                      f"the “{other}” for {head}{tail}, or with “{point}” for {head}{point}{tail}.")
    return head + point + tail, None


class DecimalSpinBox(QDoubleSpinBox):
    """A number box that takes a decimal comma or a decimal point, whatever the locale: half of Europe
    types "1,5", and a plain QDoubleSpinBox in an English locale drops the comma and reads 15 (or,
    out of range, 1) without a word. A text with two readings ("1,000": a thousand, or one?) is
    refused in words (``refused``, shown as a tooltip) and the box keeps its value."""

    refused = Signal(str)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.refusal = ""  # the last refusal, in words ("" while the text has one reading)
        # the value changes when the steward presses Enter or leaves the box, not at each key: "1,000"
        # would otherwise have been 1.0 on the way, and a refused text leaves the value as it was
        self.setKeyboardTracking(False)

    def _reading(self, text: str) -> tuple[str, str | None]:
        prefix, suffix = self.prefix(), self.suffix()
        body = text
        if prefix and body.startswith(prefix):
            body = body[len(prefix):]
        if suffix and body.endswith(suffix):
            body = body[:-len(suffix)]
        locale = self.locale()
        reading, refusal = decimal_reading(body, locale.decimalPoint(), locale.groupSeparator())
        return prefix + reading + suffix if (prefix or suffix) else reading, refusal

    def validate(self, text: str, position: int):  # noqa: D102 - Qt API
        reading, refusal = self._reading(text)
        if refusal is not None:
            return QValidator.Intermediate, text, position  # may still become unambiguous
        state, _text, _position = super().validate(reading, position)
        return state, text, position

    def valueFromText(self, text: str) -> float:  # noqa: N802 - Qt API
        return super().valueFromText(self._reading(text)[0])

    def fixup(self, text: str) -> str:  # editing finished with a text that is not a number yet
        _reading, refusal = self._reading(text)
        if refusal is not None:
            self.refusal = refusal
            QToolTip.showText(self.mapToGlobal(self.rect().bottomLeft()), refusal, self)
            self.refused.emit(refusal)
        return super().fixup(text)


def plain_text(rich: str) -> str:
    """The words of a rich-text string, without its tags (for accessible descriptions)."""
    return html.unescape(re.sub(r"<[^>]+>", " ", rich)).replace("  ", " ").strip()


def buddy_label(text: str, control: QWidget) -> QLabel:
    """A label that names ``control``: screen readers read it as the control's name, and a click on it
    focuses the control (QFormLayout does this for the labels it makes itself)."""
    label = QLabel(text)
    label.setBuddy(control)
    return label


def least_width(widget: QWidget) -> int:
    """The narrowest a widget may be made: its minimum width, or its minimum size hint's."""
    return max(widget.minimumWidth(), widget.minimumSizeHint().width())


def height_at(widget: QWidget, width: int) -> int:
    """The height a widget needs at ``width``: its height for that width (wrapped text), else its size
    hint's, and never below its least height."""
    height = widget.heightForWidth(width) if widget.hasHeightForWidth() else -1
    if height < 0:
        height = widget.sizeHint().height()
    return max(height, widget.minimumHeight(), widget.minimumSizeHint().height())


class ResponsiveRow(QWidget):
    """Parts side by side when the row is wide enough for all of them, one below the other when it is not
    (a window of 1024 pixels with the guide open leaves a page about 500 wide). The row asks its parent
    only for the width of its widest part, so a page never scrolls sideways to keep the parts side by side.

    ``first_right``: side by side, the first part is on the right (one below the other it stays first)."""

    arranged = Signal(bool)  # True: side by side

    def __init__(self, parts, stretches=None, parent=None, *, first_right: bool = False, spacing: int = 8):
        super().__init__(parent)
        self.parts = list(parts)
        self.first_right = first_right
        self.box = QBoxLayout(QBoxLayout.TopToBottom, self)
        self.box.setContentsMargins(0, 0, 0, 0)
        self.box.setSpacing(spacing)
        self.box.setSizeConstraint(QLayout.SetNoConstraint)  # minimumSizeHint below decides
        for part, stretch in zip(self.parts, stretches or [1] * len(self.parts)):
            self.box.addWidget(part, stretch)
        self.side_by_side = False

    def _shown(self) -> list:
        return [part for part in self.parts if not part.isHidden()]

    def _needed_side_by_side(self) -> int:
        shown = self._shown()
        return sum(least_width(part) for part in shown) + self.box.spacing() * max(len(shown) - 1, 0)

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt API
        widest = max((least_width(part) for part in self._shown()), default=0)
        return QSize(widest, self.box.minimumSize().height())

    def hasHeightForWidth(self) -> bool:  # noqa: N802
        return True

    def heightForWidth(self, width: int) -> int:  # noqa: N802
        """The height the parts need at this width, arranged as that width arranges them (the page asks
        before the row has been resized to it, so the current arrangement may be the other one)."""
        shown = self._shown()
        if not shown:
            return 0
        spacing = self.box.spacing()
        if width < self._needed_side_by_side():
            return sum(height_at(part, width) for part in shown) + spacing * (len(shown) - 1)
        stretches = [max(self.box.stretch(self.box.indexOf(part)), 1) for part in shown]
        room = width - spacing * (len(shown) - 1)
        widths = [max(least_width(part), room * stretch // sum(stretches)) for part, stretch in zip(shown, stretches)]
        return max(height_at(part, part_width) for part, part_width in zip(shown, widths))

    def resizeEvent(self, event) -> None:  # noqa: N802
        super().resizeEvent(event)
        self.arrange(event.size().width())

    def event(self, event) -> bool:
        if event.type() == QEvent.LayoutRequest:
            # a part changed (a widget moved in or out, a text grew): the parent's layout keeps the
            # row's height for a width in a cache until the row says its geometry changed
            self.updateGeometry()
        return super().event(event)

    def arrange(self, width: int) -> None:
        side = width >= self._needed_side_by_side()
        if side != self.side_by_side:
            self.side_by_side = side
            self.box.setDirection((QBoxLayout.RightToLeft if self.first_right else QBoxLayout.LeftToRight)
                                  if side else QBoxLayout.TopToBottom)
            self.updateGeometry()
            self.arranged.emit(side)


class FittingScrollArea(QScrollArea):
    """A scroll area as tall as its content when there is room, and shorter (scrolling) when there is not:
    it asks for its content's height, at least ``least`` pixels, and never scrolls sideways."""

    def __init__(self, content: QWidget, least: int = 90, parent=None):
        super().__init__(parent)
        self.least = least
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
        self.setWidget(content)
        self.setSizePolicy(QSizePolicy.Preferred, QSizePolicy.Maximum)

    def _content_height(self) -> int:
        content = self.widget()
        width = self.viewport().width()
        height = content.heightForWidth(width) if content.hasHeightForWidth() else -1
        return max(height, content.minimumSizeHint().height(), content.sizeHint().height() if height < 0 else 0)

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt API
        return QSize(self.widget().minimumSizeHint().width(), self._content_height() + 2 * self.frameWidth())

    def minimumSizeHint(self) -> QSize:  # noqa: N802
        return QSize(self.widget().minimumSizeHint().width(), min(self.least, self.sizeHint().height()))

    def resizeEvent(self, event) -> None:  # noqa: N802
        super().resizeEvent(event)
        if event.oldSize().width() != event.size().width():
            self.updateGeometry()  # the content's height for this width may differ


def narrow_combo(combo: QComboBox, characters: int = 24) -> QComboBox:
    """A combo box whose width does not grow with its longest entry (a long mechanism name or sentence
    would widen the page past the window); its list still shows whole entries."""
    combo.setSizeAdjustPolicy(QComboBox.AdjustToMinimumContentsLengthWithIcon)
    combo.setMinimumContentsLength(characters)
    combo.view().setTextElideMode(Qt.ElideNone)
    return combo


def breakable(text: str) -> str:
    """``text`` with invisible break opportunities after _ - . / and inside long runs, so that a long
    dataset or file name wraps in a label instead of widening the page past the window."""
    out, run = [], 0
    for ch in text:
        out.append(ch)
        run = 0 if ch.isspace() else run + 1
        if ch in "_-./\\" or run >= 24:
            out.append("\u200b")
            run = 0
    return "".join(out)


def name_text(name: str) -> str:
    """A name the steward typed (a dataset, a file), ready for rich text: escaped, and breakable."""
    return html.escape(breakable(name))


def heading(text: str, level: int = 1) -> QLabel:
    label = QLabel(text)
    font = label.font()
    font.setPointSizeF(font.pointSizeF() * (1.5 if level == 1 else 1.2))
    font.setBold(True)
    label.setFont(font)
    label.setWordWrap(True)
    return label


def explanation(text: str) -> QLabel:
    label = QLabel(text)
    label.setWordWrap(True)
    label.setTextFormat(Qt.RichText)
    label.setOpenExternalLinks(False)
    return label


def error_text(text: str) -> str:
    """Rich text for a short error sentence in the danger accent, readable on the window."""
    return f"<span style='color:{theme.accent_text('danger').name()}'>{text}</span>"


class Badge(QLabel):
    """A small solid label in an accent (``kind``: danger, info, …), its colours from the palette."""

    def __init__(self, text: str, kind: str = "danger", parent=None):
        super().__init__(text, parent)
        self.kind = kind
        self.setSizePolicy(QSizePolicy.Maximum, QSizePolicy.Fixed)
        self._restyle()
        theme.on_palette_change(self._restyle)

    def colours(self) -> theme.Tint:
        return theme.badge_colours(self.kind)

    def _restyle(self) -> None:
        tint = self.colours()
        self.setStyleSheet(f"QLabel {{background:{tint.background.name()}; color:{tint.text.name()}; "
                           "font-weight:bold; padding:2px 6px; border-radius:3px;}")


class InternalBadge(Badge):
    """"INTERNAL": a solid label in the danger accent."""

    def __init__(self, parent=None):
        super().__init__("INTERNAL — true data, not for publication", "danger", parent)
        self.setAccessibleDescription("Internal information: true data, not for publication")


def internal_badge() -> QLabel:
    return InternalBadge()


class TidyAxis(pg.AxisItem):
    """An axis whose tick labels never overlap. pyqtgraph decides whether to label a level of ticks from
    the share of the axis all its labels fill; on a log axis the minor ticks crowd at the end of each
    decade (0.6, 0.7, 0.8, 0.9), so labels were drawn over each other. Here a label that would touch one
    already placed (the major ticks' first) is left out; its tick mark stays."""

    GAP = 4  # pixels between two labels

    def generateDrawSpecs(self, p):  # noqa: N802 - pyqtgraph API
        specs = super().generateDrawSpecs(p)
        if specs is None:
            return None
        axis, ticks, texts = specs
        kept = []
        for rect, flags, text in texts:
            padded = rect.adjusted(-self.GAP, -1, self.GAP, 1)
            if not any(padded.intersects(other) for other, _, _ in kept):
                kept.append((rect, flags, text))
        return axis, ticks, kept


class ThemedPlot(pg.PlotWidget):
    """A pyqtgraph plot whose background, axes, labels and legend take the palette's base and text
    colours, and follow the palette when it changes (pyqtgraph's own defaults are fixed colours);
    its axes never overlap their tick labels (TidyAxis)."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("axisItems", {name: TidyAxis(name) for name in ("left", "bottom")})
        super().__init__(*args, **kwargs)
        self.apply_palette()
        theme.on_palette_change(self.apply_palette)

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt API
        # its least size: a plot takes the room left (it expands) and never pushes the controls above it
        # to their minimum, as QGraphicsView's 640 × 480 hint did
        return QSize(400, max(self.minimumHeight(), 160))

    def apply_palette(self) -> None:
        item = self.getPlotItem()
        if item is None:  # closed (pyqtgraph lets go of its plot item on close)
            return
        background, foreground = theme.plot_colours()
        pg.setConfigOptions(background=background, foreground=foreground)  # for items added later
        self.setBackground(background)
        for name in ("left", "bottom", "right", "top"):
            axis = item.getAxis(name)
            axis.setPen(foreground)
            axis.setTextPen(foreground)
        if item.titleLabel is not None and item.titleLabel.text:
            item.titleLabel.setText(item.titleLabel.text, color=foreground)
        if item.legend is not None:
            item.legend.setLabelTextColor(foreground)


def fill_table(table: QTableWidget, headers: list[str], rows: list[list]) -> None:
    """Fill a read-only table; Tab leaves it (the arrows move between its cells), so it is never a trap."""
    table.setTabKeyNavigation(False)
    table.clear()
    table.setColumnCount(len(headers))
    table.setRowCount(len(rows))
    table.setHorizontalHeaderLabels(headers)
    for r, row in enumerate(rows):
        for c, value in enumerate(row):
            text = _fmt(value)
            item = QTableWidgetItem(text)
            if isinstance(value, (int, float, np.integer, np.floating)):
                item.setTextAlignment(Qt.AlignRight | Qt.AlignVCenter)
                item.setData(Qt.UserRole, float(value))
            table.setItem(r, c, item)
    table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeToContents)


class RowsModel(QAbstractTableModel):
    """Rows of values shown as :func:`fill_table` shows them, formatted only when a row is drawn."""

    def __init__(self):
        super().__init__()
        self.headers: list[str] = []
        self.rows: list[list] = []

    def set_rows(self, headers: list[str], rows: list[list]) -> None:
        self.beginResetModel()
        self.headers, self.rows = list(headers), rows
        self.endResetModel()

    def rowCount(self, parent=QModelIndex()):  # noqa: N802 - Qt API
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent=QModelIndex()):  # noqa: N802
        return 0 if parent.isValid() else len(self.headers)

    def data(self, index, role=Qt.DisplayRole):
        if not index.isValid():
            return None
        row = self.rows[index.row()]
        value = row[index.column()] if index.column() < len(row) else ""
        number = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)
        if role == Qt.DisplayRole:
            return _fmt(value)
        if role == Qt.TextAlignmentRole and number:
            return int(Qt.AlignRight | Qt.AlignVCenter)
        if role == Qt.UserRole and number:
            return float(value)
        return None

    def headerData(self, section, orientation, role=Qt.DisplayRole):  # noqa: N802
        if role == Qt.DisplayRole and orientation == Qt.Horizontal and section < len(self.headers):
            return self.headers[section]
        return None


class RowsView(QTableView):
    """A read-only table of many rows: filling it costs nothing per row (a QTableWidget makes an item
    per cell in the GUI thread, about 40 µs each: 40,000 rows would freeze the window for seconds)."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.rows_model = RowsModel()
        self.setModel(self.rows_model)
        self.setEditTriggers(QTableView.NoEditTriggers)
        self.setTabKeyNavigation(False)  # Tab leaves the table (arrows move between its cells)
        # column widths from the first rows only, and only when the table is shown (not on every refill)
        self.horizontalHeader().setResizeContentsPrecision(100)
        self._sized = False

    def set_rows(self, headers: list[str], rows: list[list]) -> None:
        self.rows_model.set_rows(headers, rows)
        self._sized = False
        if self.isVisible():
            self._size_columns()

    def _size_columns(self) -> None:
        if not self._sized:
            self._sized = True
            self.resizeColumnsToContents()

    def showEvent(self, event) -> None:  # noqa: N802 - Qt API
        super().showEvent(event)
        self._size_columns()

    def rowCount(self) -> int:  # noqa: N802 - as QTableWidget
        return self.rows_model.rowCount()

    def columnCount(self) -> int:  # noqa: N802
        return self.rows_model.columnCount()

    def text(self, row: int, column: int) -> str:
        return self.rows_model.data(self.rows_model.index(row, column)) or ""


def _fmt(value) -> str:
    if isinstance(value, (float, np.floating)):
        if not np.isfinite(value):
            return "—"
        if value != 0 and (abs(value) >= 1e6 or abs(value) < 1e-3):
            return f"{value:.3g}"
        return f"{value:,.4g}" if abs(value) < 1000 else f"{value:,.1f}"
    if isinstance(value, (int, np.integer)):
        return f"{int(value):,}"
    return str(value)


SUMMARY_NAMES = {"rows": "People (rows)", "nonzeros": "Non-zero cells", "density": "Density",
                 "max_row_count": "Most items of one person", "mean_row_count": "Average items per person",
                 "avg_column_count": "Average count per item"}


class DataSummaryView(QWidget):
    """The true-data figures of a dataset and its items-per-person histogram, badged internal."""

    def __init__(self, parent=None, max_table_height: int = 250):
        super().__init__(parent)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(internal_badge())
        self.table = QTableWidget()
        self.table.setEditTriggers(QTableWidget.NoEditTriggers)
        self.table.setTabKeyNavigation(False)  # Tab leaves the table (arrows move between its cells)
        self.table.setAccessibleName("Summary of the data (internal)")
        self.table.setMaximumHeight(max_table_height)
        layout.addWidget(self.table)
        # a plot panel: its numbers as a table (for screen readers) and a caption that says what it shows
        self.histogram_panel = PlotPanel("Items per person (internal)", x_label="items per person",
                                         y_label="people")
        self.histogram_panel.plot.setMinimumHeight(140)
        self.histogram = self.histogram_panel.plot
        layout.addWidget(self.histogram_panel, 1)

    def show_dataset(self, data) -> None:
        names = dict(SUMMARY_NAMES,
                     columns="Items (columns)" if data.kind == "incidence" else "Cells in the domain (m)")
        fill_table(self.table, ["figure", "value"], [[names[k], v] for k, v in data.summary().items()])
        panel = self.histogram_panel
        panel.clear()
        panel.setVisible(data.kind == "incidence")
        if data.kind == "incidence":
            counts, edges = data.row_length_histogram()
            panel.plot.addItem(pg.BarGraphItem(x0=edges[:-1], x1=edges[1:], height=counts, brush=colour(0)))
            panel.set_table(["items per person, from", "to (not included)", "people"],
                            [[float(a), float(b), int(c)] for a, b, c in zip(edges[:-1], edges[1:], counts)])
            panel.set_caption("Each bar counts the people who hold that many items, in the true data: for checking "
                              "the import, never published.")


class OutsideLegend(pg.LegendItem):
    """A legend that its plot's layout places beside the plot area, never over the curves."""

    def updateSize(self) -> None:  # noqa: N802 - pyqtgraph API
        # pyqtgraph's own version moves the legend to (0, 0) of its parent; here the parent's
        # layout places it, so the legend only states the size its entries need
        hint = self.layout.effectiveSizeHint(Qt.PreferredSize)
        self.setMinimumSize(hint)
        self.setMaximumSize(hint)
        self.updateGeometry()


class PlotPanel(QFrame):
    """A titled pyqtgraph plot with a plain-words caption, hover read-out, PNG/SVG export and
    a table of the plotted numbers (for screen readers and for copying)."""

    exported = Signal(str)

    def __init__(self, title: str, caption: str = "", x_label: str = "", y_label: str = "", parent=None, *,
                 legend_outside: bool = False, plot_height: int = 220):
        super().__init__(parent)
        self.setFrameShape(QFrame.StyledPanel)
        self.title = title
        layout = QVBoxLayout(self)
        top = QHBoxLayout()
        self.title_label = heading(title, 2)
        top.addWidget(self.title_label)
        top.addStretch(1)
        self.table_button = QPushButton("Numbers")
        self.table_button.setCheckable(True)
        self.table_button.setAccessibleName(f"Show the numbers of the plot {title}")
        self.png_button = QPushButton("Save PNG…")
        self.svg_button = QPushButton("Save SVG…")
        self.png_button.setAccessibleName(f"Save the plot {title} as a PNG image")
        self.svg_button.setAccessibleName(f"Save the plot {title} as an SVG drawing")
        for button in (self.table_button, self.png_button, self.svg_button):
            top.addWidget(button)
        layout.addLayout(top)
        self.plot = ThemedPlot()
        self.plot.setAccessibleName(f"Plot: {title}")
        self.plot.setMinimumHeight(plot_height)  # never squashed to a strip: the page makes room or scrolls
        self.plot.showGrid(x=True, y=True, alpha=0.25)
        if legend_outside:
            item = self.plot.getPlotItem()
            self.legend = OutsideLegend()
            item.layout.addItem(self.legend, 2, 3)  # right of the plot area and its right axis
            item.layout.setAlignment(self.legend, Qt.AlignTop | Qt.AlignLeft)
            item.layout.setColumnSpacing(2, 8)  # a gap between the plot area and the legend
            item.legend = self.legend  # where PlotItem.addItem registers named curves
        else:
            self.legend = self.plot.addLegend(offset=(-10, 10))
        self.plot.apply_palette()  # the legend too
        if x_label:
            self.plot.setLabel("bottom", x_label)
        if y_label:
            self.plot.setLabel("left", y_label)
        layout.addWidget(self.plot, 1)
        self.readout = QLabel(" ")
        self.readout.setAccessibleDescription("Value under the mouse pointer")
        layout.addWidget(self.readout)
        self.caption = explanation("")
        layout.addWidget(self.caption)
        self.set_caption(caption)
        self.table = RowsView()  # lazy: a plot of 40,000 items has 40,000 rows of numbers
        self.table.setVisible(False)
        self.table.setMinimumHeight(160)
        self.table.setAccessibleName(f"Numbers of the plot {title}")
        layout.addWidget(self.table, 1)
        self.table_button.toggled.connect(self._toggle_table)
        self.png_button.clicked.connect(lambda: self.export_dialog("png"))
        self.svg_button.clicked.connect(lambda: self.export_dialog("svg"))
        self._series: list[tuple[str, np.ndarray, np.ndarray]] = []
        self._proxy = pg.SignalProxy(self.plot.scene().sigMouseMoved, rateLimit=30, slot=self._hover)

    # -- content -------------------------------------------------------------------------
    def clear(self) -> None:
        self.plot.clear()
        self.legend.clear()
        self._series = []
        self._items = {}
        self._shown = {}
        self.readout.setText(" ")

    def set_series(self, name: str, x, y, index: int, *, band=None) -> None:
        """Add a curve, or update it in place if it exists (cheap enough for streaming redraws)."""
        items = getattr(self, "_items", {})
        if name not in items:
            self.add_series(name, x, y, index, band=band)
            return
        curve, lower, upper = items[name]
        x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
        shown = getattr(self, "_shown", {})
        key = (x, y) if band is None else (x, y, *(np.asarray(b, dtype=float) for b in band))
        previous = shown.get(name)
        if previous is not None and len(previous) == len(key) and all(
                a.shape == b.shape and np.array_equal(a, b, equal_nan=True) for a, b in zip(previous, key)):
            return  # unchanged (results stream in one mechanism at a time): no redraw of this curve
        shown[name] = key
        self._shown = shown
        curve.setData(x, y)
        if band is not None and lower is not None:
            low, high = (np.asarray(b, dtype=float) for b in band)
            ok = np.isfinite(low) & np.isfinite(high)
            lower.setData(x[ok], low[ok])
            upper.setData(x[ok], high[ok])
        self._series = [(n, x, y) if n == name else (n, xs, ys) for n, xs, ys in self._series]

    def add_series(self, name: str, x, y, index: int, *, symbol: str | None = "o", band=None, line: bool = True):
        """A curve (with optional 95% band ``(low, high)``) remembered for hover and the table."""
        x = np.asarray(x, dtype=float)
        y = np.asarray(y, dtype=float)
        lower = upper = None
        if band is not None:
            low, high = (np.asarray(b, dtype=float) for b in band)
            ok = np.isfinite(low) & np.isfinite(high)
            fill = QColor(colour(index))
            fill.setAlpha(50)
            lower = pg.PlotDataItem(x[ok], low[ok], pen=pg.mkPen(None))
            upper = pg.PlotDataItem(x[ok], high[ok], pen=pg.mkPen(None))
            self.plot.addItem(lower)
            self.plot.addItem(upper)
            self.plot.addItem(pg.FillBetweenItem(lower, upper, brush=pg.mkBrush(fill)))
        item = self.plot.plot(x, y, pen=pen(index) if line else None, name=name, symbol=symbol, symbolSize=6,
                              symbolBrush=colour(index), symbolPen=pg.mkPen(colour(index)))
        self._series.append((name, x, y))
        if not hasattr(self, "_items"):
            self._items = {}
        self._items[name] = (item, lower, upper)
        return item

    def set_caption(self, text: str) -> None:
        self.caption.setText(text)
        # the plot's text alternative for screen readers: what it shows, and where its numbers are
        self.plot.setAccessibleDescription(plain_text(text) + " The Numbers button shows the plotted values as a "
                                           "table.")

    def set_table(self, headers: list[str], rows: list[list]) -> None:
        self.table.set_rows(headers, rows)

    def series_table(self) -> tuple[list[str], list[list]]:
        rows = [[name, x, y] for name, xs, ys in self._series for x, y in zip(xs, ys)]
        return ["series", self.plot.getAxis("bottom").labelText or "x", self.plot.getAxis("left").labelText or "y"], rows

    def _toggle_table(self, shown: bool) -> None:
        if shown and self.table.rowCount() == 0 and self._series:
            self.set_table(*self.series_table())
        self.table.setVisible(shown)
        self.table_button.setText("Hide numbers" if shown else "Numbers")

    # -- hover ---------------------------------------------------------------------------
    def _hover(self, event) -> None:
        position = event[0]
        if not self.plot.sceneBoundingRect().contains(position) or not self._series:
            return
        point = self.plot.getPlotItem().vb.mapSceneToView(position)
        log_x, log_y = self.plot.getPlotItem().ctrl.logXCheck.isChecked(), self.plot.getPlotItem().ctrl.logYCheck.isChecked()
        best = None
        for name, xs, ys in self._series:
            if xs.size == 0:
                continue
            vx = np.log10(np.maximum(xs, 1e-300)) if log_x else xs
            vy = np.log10(np.maximum(ys, 1e-300)) if log_y else ys
            rx = self.plot.getPlotItem().vb.viewRange()
            sx = max(rx[0][1] - rx[0][0], 1e-12)
            sy = max(rx[1][1] - rx[1][0], 1e-12)
            distance = ((vx - point.x()) / sx) ** 2 + ((vy - point.y()) / sy) ** 2
            k = int(np.nanargmin(distance))
            if best is None or distance[k] < best[0]:
                best = (distance[k], name, xs[k], ys[k])
        if best is not None:
            self.readout.setText(f"{best[1]}: {_fmt(best[2])} → {_fmt(best[3])}")

    # -- export --------------------------------------------------------------------------
    def export(self, path: str | Path) -> Path:
        path = Path(path)
        item = self.plot.getPlotItem()
        if path.suffix.lower() == ".svg":
            exporter = pg.exporters.SVGExporter(item)
        else:
            exporter = pg.exporters.ImageExporter(item)
            exporter.parameters()["width"] = max(800, int(self.plot.width() * 2))
        exporter.export(str(path))
        self.exported.emit(str(path))
        return path

    def export_dialog(self, kind: str) -> None:
        suggested = str(Path.home() / f"{self.title.lower().replace(' ', '-')}.{kind}")
        path, _ = QFileDialog.getSaveFileName(self, f"Export {self.title}", suggested,
                                              "PNG image (*.png)" if kind == "png" else "SVG drawing (*.svg)")
        if path:
            try:
                self.export(path)
            except Exception as error:  # noqa: BLE001
                show_error(self, error)


def show_error(parent, error: BaseException, details: str = "") -> None:
    """A plain-language dialog; unexpected errors are logged with their traceback."""
    if isinstance(error, DpdeskError):
        QMessageBox.warning(parent, error.title, f"{error}\n\nPlease correct this and try again.")
        return
    from ..logfile import setup_logging

    log_path = setup_logging()  # the file named below really gets the details
    log.error("unexpected error: %s\n%s", error, details)
    box = QMessageBox(QMessageBox.Critical, "Something went wrong",
                      "dpdesk hit an unexpected problem. Your work is still open and nothing was published.\n\n"
                      f"What happened: {type(error).__name__}: {error}\n\n"
                      f"Details were written to {log_path}. Please send that file to your support contact.",
                      parent=parent)
    if details:
        box.setDetailedText(details)
    box.exec()


def bold(widget: QWidget) -> QWidget:
    font: QFont = widget.font()
    font.setBold(True)
    widget.setFont(font)
    return widget

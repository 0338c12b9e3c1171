"""Small shared widgets: banners, plot panels with captions/export/number tables, dialogs."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pyqtgraph as pg
import pyqtgraph.exporters  # noqa: F401  (registers the exporters)
from PySide6.QtCore import QAbstractTableModel, QModelIndex, Qt, Signal
from PySide6.QtGui import QColor, QFont
from PySide6.QtWidgets import (QFileDialog, QFrame, QHBoxLayout, QHeaderView, QLabel, QMessageBox, QPushButton,
                               QSizePolicy, QTableView, QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget)

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
        self.setAccessibleName("Notice")
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


def heading(text: str, level: int = 1) -> QLabel:
    label = QLabel(text)
    font = label.font()
    font.setPointSizeF(font.pointSizeF() * (1.5 if level == 1 else 1.2))
    font.setBold(True)
    label.setFont(font)
    label.setAccessibleName(text)
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
        self.setAccessibleName("Internal information: true data, not for publication")


def internal_badge() -> QLabel:
    return InternalBadge()


class ThemedPlot(pg.PlotWidget):
    """A pyqtgraph plot whose background, axes, labels and legend take the palette's base and text
    colours, and follow the palette when it changes (pyqtgraph's own defaults are fixed colours)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.apply_palette()
        theme.on_palette_change(self.apply_palette)

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
        self.table.setAccessibleName("Summary of the data (internal)")
        self.table.setMaximumHeight(max_table_height)
        layout.addWidget(self.table)
        self.histogram = ThemedPlot()
        self.histogram.setLabel("bottom", "items per person")
        self.histogram.setLabel("left", "people")
        self.histogram.setMinimumHeight(160)
        self.histogram.setAccessibleName("Histogram of items per person (internal)")
        layout.addWidget(self.histogram, 1)

    def show_dataset(self, data) -> None:
        names = dict(SUMMARY_NAMES, columns="Items (columns)" if data.kind == "incidence" else "Cells in the domain (m)")
        fill_table(self.table, ["figure", "value"], [[names[k], v] for k, v in data.summary().items()])
        self.histogram.clear()
        self.histogram.setVisible(data.kind == "incidence")
        if data.kind == "incidence":
            counts, edges = data.row_length_histogram()
            self.histogram.addItem(pg.BarGraphItem(x0=edges[:-1], x1=edges[1:], height=counts, brush=colour(0)))


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
                 legend_outside: bool = False):
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
        self.plot.setMinimumHeight(220)
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
        self.readout.setAccessibleName("Value under the mouse pointer")
        layout.addWidget(self.readout)
        self.caption = explanation(caption)
        layout.addWidget(self.caption)
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

"""Compare: run the comparison runner in the background and plot the results as they stream in.

Two modes: on a stand-in (synthetic data shaped by declared facts, or a public file) that
leaks nothing — the default —, or on the true data (internal — the banner says so, choosing
by these results is itself a use of the data, and the steward is asked once per dataset
before it is read).

Plots keep their legends beside the plot area, and on log axes a band's lower end is drawn
at most a decade below its mean, so a wide band at small ε (often reaching below zero) does
not stretch the axis over decades where nothing is drawn.
"""

from __future__ import annotations

import math
import re
import time
from functools import lru_cache
from pathlib import Path

import numpy as np
import pyqtgraph as pg
from scipy import stats
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import (QButtonGroup, QComboBox, QFileDialog, QFormLayout, QGroupBox, QHBoxLayout, QLabel,
                               QLineEdit, QMessageBox, QProgressBar, QPushButton, QRadioButton, QSpinBox, QTabWidget,
                               QVBoxLayout, QWidget)

from .. import mechanisms as registry
from ..loading import load
from ..errors import DpdeskError, ParameterError
from ..evaluation.compare import Entry, run_comparison
from ..evaluation.goals import comparison_metric
from ..evaluation.metrics import LOWER_IS_BETTER, METRIC_LABELS, top_k, topk_accuracies
from ..evaluation.summaries import error_vs_range_size, error_vs_summary_size
from ..evaluation.standin import DeclaredFacts, declared_shape, synthetic_cells, synthetic_incidence
from . import theme
from .state import AppState
from .widgets import (Banner, DecimalSpinBox, FittingScrollArea, PlotPanel, ResponsiveRow, buddy_label, colour,
                      explanation, heading, show_error)
from .workers import Task

ALL_METRIC_LABELS = dict(METRIC_LABELS, summary_size="Summary size (cells listed)",
                         range_mae="Range queries: mean absolute error",
                         range_mre="Range queries: median relative error",
                         subset_mae="Subset queries: mean absolute error",
                         subset_mre="Subset queries: median relative error")
SUMMARY_BY_RANGE, SUMMARY_BY_SIZE = "__range_size__", "__summary_size__"

TRUE_DATA_BANNER = ("⚠ <b>These plots use the true data — for your eyes only.</b> Choosing a mechanism or a "
                    "parameter because it had the lowest error here is itself a use of the data; the public report "
                    "records how the mechanism was chosen.")
STANDIN_BANNER = ("✓ <b>Comparing on a stand-in</b> that contains no true data: you may choose a mechanism from "
                  "these results without using the data's privacy budget.")
TRUE_DATA_QUESTION = (
    "<b>Compare on the true data?</b><br><br>The comparison then reads the true data. Its plots are for your eyes "
    "only, and choosing a mechanism because it did best on them is itself a use of the data that ε does not "
    "cover: <b>the public report will record that mechanisms were compared on the true data.</b><br><br>"
    "The stand-in, the default, avoids this. dpdesk asks once for this dataset.")
# the plots' least height: with the settings above scrolled away, the page fits a 1024 × 768 screen
COMPARE_PLOT_HEIGHT = 170
# on log axes a band's lower end is drawn at most this factor below its mean: an interval reaching
# 0 or below cannot be drawn there and would otherwise stretch the axis over empty decades
LOG_BAND_FLOOR_RATIO = 10.0


def log_band(mean, low, high) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mean, low, high) as drawn on a log axis: a mean of 0 or less just below the smallest positive
    one, and each band's lower end at most LOG_BAND_FLOOR_RATIO below its mean (the Numbers table
    keeps the full interval)."""
    mean, low, high = (np.asarray(v, dtype=float) for v in (mean, low, high))
    positive = mean[np.isfinite(mean) & (mean > 0)]
    tiny = positive.min() / LOG_BAND_FLOOR_RATIO if positive.size else 1e-12
    mean = np.maximum(mean, tiny)
    return mean, np.maximum(low, mean / LOG_BAND_FLOOR_RATIO), np.maximum(high, mean)


def group_rows(rows: list[dict], metric: str) -> dict:
    """{label: {ε: [values]}} in the order the labels first appear."""
    grouped: dict = {}
    for row in rows:
        value = row.get(metric)
        if value is not None and np.isfinite(value):
            grouped.setdefault(row["label"], {}).setdefault(row["epsilon"], []).append(float(value))
    return grouped


@lru_cache(maxsize=4096)
def _t975(degrees: int) -> float:
    return float(stats.t.ppf(0.975, degrees))


def mean_interval(values: list[float]) -> tuple[float, float, float, int]:
    """Mean and 95% t-interval (as in the comparison runner's summary)."""
    array = np.asarray(values, dtype=float)
    n = array.size
    mean = float(array.mean())
    half = _t975(n - 1) * float(array.std(ddof=1)) / math.sqrt(n) if n > 1 else float("nan")
    return mean, mean - half, mean + half, n


def parse_epsilons(text: str, point: str = ".") -> list[float]:
    """The ε values of a list typed by the steward, sorted. Values are separated by ";", by spaces or by
    a comma followed by a space; ``point`` is the locale's decimal mark, and either mark is read as a
    decimal mark where that is the only reading ("0,5; 1,5" and "0.5, 1.5" alike). A comma with
    digits on both sides and no space is refused in words where it could also separate two values
    ("1,5": one and a half, or 1 and 5?). "ln 3" is accepted."""
    values = []
    # "ln 3" is one value: its space is not a separator
    tokens = re.split(r";|,\s+|\s+", re.sub(r"\bln\s+", "ln", text.strip().lower()))
    for token in tokens:
        part = token.strip()
        if not part:
            continue
        if "," in part:
            if point == "," and part.count(",") == 1 and "." not in part:
                part = part.replace(",", ".")  # the locale's decimal comma
            elif "." in part and point == ".":  # "0.1,0.4": the points are decimal, so commas separate
                values.extend(parse_epsilons(part.replace(",", "; "), point))
                continue
            else:
                raise ParameterError(
                    f"'{part}' can be read two ways: as one value with a decimal comma or as values separated by "
                    "a comma. Write decimals with a point (1.5) and separate values with '; ' or ', ' (0.5; 1.5).")
        try:
            values.append(math.log(float(part[2:].strip("() "))) if part.startswith("ln") else float(part))
        except ValueError:
            raise ParameterError(f"'{part}' is not a number; write ε values like 0.1; 0.69; ln 3.") from None
    if not values:
        raise ParameterError("Give at least one ε value to compare.")
    return sorted(set(values))


def format_epsilons(values, point: str = ".") -> str:
    """ε values as the list box shows them, in the locale's decimal mark ("0.1, 0.4" or "0,1; 0,4")."""
    texts = [f"{value:.4g}" for value in values]
    if point == ",":
        return "; ".join(text.replace(".", ",") for text in texts)
    return ", ".join(texts)


class ComparePage(QWidget):
    def __init__(self, state: AppState, parent=None):
        super().__init__(parent)
        self.state = state
        self.task: Task | None = None
        self.rows: list[dict] = []
        self.started = 0.0
        outer = QVBoxLayout(self)
        outer.addWidget(heading("③ Compare mechanisms"))
        settings = QGroupBox("What to compare")
        form = QFormLayout(settings)
        self.epsilons = QLineEdit()
        self.epsilons.setAccessibleName("Epsilon values to compare")
        self.epsilons.setToolTip("ε values separated by “; ” or “, ” — for example 0.1; 0.69; 2 — and "
                                 "“ln 3” is accepted")
        self.repeats = QSpinBox()
        self.repeats.setRange(1, 10_000)
        self.repeats.setValue(10)
        self.repeats.setAccessibleName("Repeats per mechanism and epsilon")
        self.seed = QSpinBox()
        self.seed.setRange(0, 2**31 - 1)
        self.seed.setValue(1)
        self.seed.setAccessibleName("Seed for reproducible comparisons")
        self.k = QSpinBox()
        self.k.setRange(1, 100_000)
        self.k.setValue(100)
        self.k.setAccessibleName("k for the top-k metrics")
        form.addRow("ε values:", self.epsilons)
        form.addRow("Repeats:", self.repeats)
        form.addRow("Top-k uses k =", self.k)
        form.addRow("Seed:", self.seed)
        source = QGroupBox("Compare on")
        source_layout = QVBoxLayout(source)
        self.on_synthetic = QRadioButton("a synthetic stand-in (no true data)")
        self.on_synthetic.setToolTip("Synthetic data shaped by the facts below, which you declare: nothing of the "
                                     "true data is read")
        self.on_file = QRadioButton("a public file (no true data):")
        self.on_true = QRadioButton("the true data (internal)")
        self.on_true.setToolTip("dpdesk asks first, and the public report records that mechanisms were compared "
                                "on the true data")
        group = QButtonGroup(self)
        for button in (self.on_synthetic, self.on_file, self.on_true):
            group.addButton(button)
        source_layout.addWidget(self.on_synthetic)
        self.on_synthetic.setChecked(True)  # safe by default: nothing of the true data is read
        facts = QWidget()
        self.facts = facts
        facts_form = QFormLayout(facts)
        facts_form.setContentsMargins(18, 0, 0, 0)
        self.fact_rows = QSpinBox()
        self.fact_rows.setRange(1, 10**9)
        self.fact_rows.setValue(10_000)
        self.fact_mean = DecimalSpinBox()
        self.fact_mean.setRange(0.1, 1e6)
        self.fact_mean.setValue(8)
        self.fact_skew = DecimalSpinBox()
        self.fact_skew.setRange(0, 4)
        self.fact_skew.setSingleStep(0.1)
        self.fact_skew.setValue(1.1)
        facts_form.addRow("people (about):", self.fact_rows)
        facts_form.addRow("items per person (typical):", self.fact_mean)
        facts_form.addRow("popularity skew (0 = even):", self.fact_skew)
        for widget, name in ((self.fact_rows, "Declared number of people"),
                             (self.fact_mean, "Declared typical items per person"),
                             (self.fact_skew, "Declared popularity skew")):
            widget.setAccessibleName(name)
        source_layout.addWidget(facts)
        source_layout.addWidget(self.on_file)
        file_row = QHBoxLayout()
        file_row.setContentsMargins(18, 0, 0, 0)
        self.public_file = QLineEdit()
        self.public_file.setPlaceholderText("a public dataset of the same kind")
        browse = QPushButton("Browse…")
        file_row.addWidget(self.public_file, 1)
        file_row.addWidget(browse)
        source_layout.addLayout(file_row)
        source_layout.addWidget(self.on_true)
        true_note = explanation("dpdesk asks first, and the public report records it.")
        true_note.setContentsMargins(18, 0, 0, 0)
        source_layout.addWidget(true_note)
        # side by side when the page is wide enough; in a scroll area of their own, so that on a short
        # screen the plots below keep their height (this page is not in the window's scroll area)
        controls = ResponsiveRow([settings, source], spacing=10)
        self.settings_scroll = FittingScrollArea(controls)
        self.settings_scroll.setAccessibleName("What to compare and what to compare on")
        outer.addWidget(self.settings_scroll)
        self.banner = Banner(STANDIN_BANNER, "ok")
        outer.addWidget(self.banner)
        self.skipped = Banner("", "warning")
        self.skipped.setAccessibleDescription("Mechanisms left out of the comparison")
        self.skipped.setVisible(False)
        outer.addWidget(self.skipped)
        run_row = QHBoxLayout()
        self.run_button = QPushButton("Run comparison ▶")
        self.run_button.setAccessibleName("Run the comparison")
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setEnabled(False)
        self.overall = QProgressBar()
        self.overall.setRange(0, 1000)
        self.overall.setAccessibleName("Overall progress")
        self.status = QLabel("Choose mechanisms on the Configure page, then run.")
        self.status.setWordWrap(True)
        run_row.addWidget(self.run_button)
        run_row.addWidget(self.cancel_button)
        run_row.addWidget(self.overall, 1)
        outer.addLayout(run_row)
        outer.addWidget(self.status)
        # each mechanism's runs done, on one line (a bar each took two lines of the plots' height)
        self.per_run_label = QLabel("")
        self.per_run_label.setWordWrap(True)
        self.per_run_label.setTextFormat(Qt.RichText)
        self.per_run_label.setAccessibleDescription("Runs done for each mechanism")
        outer.addWidget(self.per_run_label)
        self.per_run: dict[str, int] = {}
        # plots
        self.tabs = QTabWidget()
        self.tabs.setAccessibleName("Comparison plots")
        self.error_panel = PlotPanel("Error vs ε", x_label="ε (log scale)",
                                     y_label="error<br>lower is better · log scale",
                                     caption="Run a comparison to see each mechanism's error at each ε.",
                                     legend_outside=True, plot_height=COMPARE_PLOT_HEIGHT)
        self.metric = QComboBox()
        self._fill_metrics(list(METRIC_LABELS))
        self.metric.setAccessibleName("Error measure")
        metric_row = QHBoxLayout()
        metric_row.addWidget(buddy_label("Error measure:", self.metric))
        metric_row.addWidget(self.metric)
        metric_row.addStretch(1)
        error_tab = QWidget()
        error_layout = QVBoxLayout(error_tab)
        error_layout.addLayout(metric_row)
        error_layout.addWidget(self.error_panel, 1)
        self.tabs.addTab(error_tab, "Error vs ε")
        self.example_choice = QComboBox()
        self.example_choice.setAccessibleName("Which mechanism and epsilon to show")
        example_row = QHBoxLayout()
        example_row.addWidget(buddy_label("Show:", self.example_choice))
        example_row.addWidget(self.example_choice, 1)
        self.truth_panel = PlotPanel("True vs noisy", x_label="true count", y_label="released count",
                                     legend_outside=True, plot_height=COMPARE_PLOT_HEIGHT)
        truth_tab = QWidget()
        truth_layout = QVBoxLayout(truth_tab)
        truth_layout.addLayout(example_row)
        truth_layout.addWidget(self.truth_panel, 1)
        self.tabs.addTab(truth_tab, "True vs noisy")
        self.topk_panel = PlotPanel("Top-k accuracy", x_label="k (log scale)",
                                    y_label="share of the true top k found<br>higher is better",
                                    legend_outside=True, plot_height=COMPARE_PLOT_HEIGHT)
        self.tabs.addTab(self.topk_panel, "Top-k accuracy")
        details_tab = QWidget()
        details_layout = QVBoxLayout(details_tab)
        self.diagnostic_choice = QComboBox()
        self.diagnostic_choice.setAccessibleName("Mechanism detail plot")
        row = QHBoxLayout()
        row.addWidget(buddy_label("Detail:", self.diagnostic_choice))
        row.addWidget(self.diagnostic_choice, 1)
        details_layout.addLayout(row)
        self.detail_panel = PlotPanel("Mechanism details", legend_outside=True, plot_height=COMPARE_PLOT_HEIGHT)
        details_layout.addWidget(self.detail_panel, 1)
        self.tabs.addTab(details_tab, "Mechanism details")
        outer.addWidget(self.tabs, 1)
        # wiring
        self.run_button.clicked.connect(self.run)
        self.cancel_button.clicked.connect(self.cancel)
        browse.clicked.connect(self._browse)
        self.metric.currentIndexChanged.connect(lambda _i: self.redraw_errors())
        self.example_choice.currentIndexChanged.connect(self.redraw_example)
        self.diagnostic_choice.currentIndexChanged.connect(self.redraw_detail)
        self.on_true.toggled.connect(self._true_data_toggled)
        for button in (self.on_true, self.on_synthetic, self.on_file):
            button.toggled.connect(self._mode_changed)
        self._true_data_allowed_for = None  # the dataset the steward agreed to compare on (asked once)
        self.timer = QTimer(self)
        self.timer.setInterval(400)  # redraw streamed results at most 2.5 times a second
        self.timer.timeout.connect(self._flush)
        self._pending = False
        state.comparison_changed.connect(self._show_comparison)
        state.dataset_changed.connect(self._dataset_changed)
        state.config_changed.connect(self._declared_changed)
        self._dataset_changed()
        self._mode_changed()

    # -- settings ------------------------------------------------------------------------
    def _browse(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Choose a public dataset", "", "All files (*)")
        if path:
            self.public_file.setText(path)
            self.on_file.setChecked(True)

    def confirm_true_data(self, text: str) -> bool:
        """The one question before the true data is compared on (tests replace it)."""
        box = QMessageBox(QMessageBox.Warning, "Compare on the true data?", text,
                          QMessageBox.Yes | QMessageBox.Cancel, self)
        box.setTextFormat(Qt.RichText)
        box.button(QMessageBox.Yes).setText("Use the true data")
        box.button(QMessageBox.Cancel).setText("Keep the stand-in")
        box.setDefaultButton(QMessageBox.Cancel)
        return box.exec() == QMessageBox.Yes

    def true_data_allowed(self) -> bool:
        """Whether the steward agreed to compare on this dataset's true data, asking the first time."""
        data = self.state.dataset
        if data is None or self._true_data_allowed_for is data:
            return True
        if not self.confirm_true_data(TRUE_DATA_QUESTION):
            return False
        self._true_data_allowed_for = data
        return True

    def _true_data_toggled(self, on: bool) -> None:
        if on and not self.true_data_allowed():
            self.on_synthetic.setChecked(True)  # back to the safe default

    def _declared_changed(self) -> None:
        """The synthetic stand-in follows the steward's declared typical row length; the error measure shown
        first follows what matters most to the steward (Configure page), when that answer changes."""
        length = self.state.typical_row_length
        if length is not None and abs(self.fact_mean.value() - length) > 1e-9:
            self.fact_mean.setValue(length)
        if self.state.goal != getattr(self, "_goal_followed", "all"):
            self._goal_followed = self.state.goal
            try:
                metric, settings = comparison_metric(self.state.goal)
            except DpdeskError:
                return
            if "k" in settings:
                self.k.setValue(int(settings["k"]))
            index = self.metric.findData(metric)
            if index >= 0:
                self.metric.setCurrentIndex(index)

    def _mode_changed(self) -> None:
        true_data = self.on_true.isChecked()
        self.facts.setEnabled(self.on_synthetic.isChecked())
        self.banner.set_kind("warning" if true_data else "ok")
        self.banner.setText(TRUE_DATA_BANNER if true_data else STANDIN_BANNER)

    def _dataset_changed(self) -> None:
        data = self.state.dataset
        if self.on_true.isChecked():  # a new dataset starts from the safe default again
            self.on_synthetic.setChecked(True)
        self.run_button.setEnabled(data is not None)
        settings = self.state.compare_settings
        self.epsilons.setText(format_epsilons(settings.get("epsilons", []), self.locale().decimalPoint()))
        self.repeats.setValue(int(settings.get("repeats", 10)))
        self.seed.setValue(int(settings.get("seed", 1)))

    def standin_description(self) -> str:
        """What the stand-in is, in a few words (for the report's "how it was chosen")."""
        if self.on_synthetic.isChecked():
            return "synthetic data made from declared facts"
        return f"the public file {Path(self.public_file.text().strip()).name}"

    def comparison_data(self):
        """The dataset to compare on: the true data or a stand-in that holds none of it."""
        data = self.state.dataset
        if self.on_true.isChecked():
            if not self.true_data_allowed():
                raise ParameterError("The comparison was not run: you chose to keep the true data out of it. "
                                     "Choose a stand-in under “Compare on”.")
            return data, False
        if self.on_synthetic.isChecked():
            size, labels = declared_shape(data, self.state.domain_declaration)  # never the data's own shape
            if data.kind == "cells":
                return synthetic_cells(size, max(1, min(self.fact_rows.value() // 10, size)),
                                       self.fact_rows.value(), seed=self.seed.value()), True
            facts = DeclaredFacts(rows=self.fact_rows.value(), items=size,
                                  mean_items_per_person=self.fact_mean.value(), bound=self.state.bound,
                                  skew=self.fact_skew.value())
            return synthetic_incidence(facts, item_labels=labels, seed=self.seed.value()), True
        path = self.public_file.text().strip()
        if not path:
            raise ParameterError("Choose the public file to compare on.")
        standin = load(path)
        if standin.kind != data.kind:
            raise ParameterError("The public file must be the same kind of data as the dataset.")
        return standin, True

    # -- running -------------------------------------------------------------------------
    def run(self) -> None:
        if self.task is not None and self.task.running:
            return
        configurations = self.state.enabled()
        try:
            if not configurations:
                raise ParameterError("Tick at least one mechanism on the Configure page.")
            epsilons = parse_epsilons(self.epsilons.text(), self.locale().decimalPoint())
            data, on_standin = self.comparison_data()
            entries, skipped = [], []
            for configuration in configurations:
                mechanism = registry.get(configuration.mechanism)
                params = self.state.params_for(configuration.mechanism)
                try:  # from declared settings only (checks never look at the data): e.g. a missing Δ
                    mechanism.validate(data, epsilons[0], params)
                except ParameterError as error:
                    skipped.append((mechanism, error))
                    continue
                entries.append(Entry(configuration.mechanism, params, label=mechanism.id))
            if not entries:
                raise skipped[0][1]
        except DpdeskError as error:
            show_error(self, error)
            return
        # the others still run; say which were left out and why, until the next run
        self.skipped.setVisible(bool(skipped))
        self.skipped.setText("Not compared (see the Configure page): " + "; ".join(
            f"<b>{mechanism.name}</b> — {error}" for mechanism, error in skipped))
        self.state.compare_settings.update({"epsilons": epsilons, "repeats": self.repeats.value(),
                                            "seed": self.seed.value()})
        self.rows = []
        self.total_runs = len(entries) * len(epsilons) * self.repeats.value()
        self.runs_per_entry = len(epsilons) * self.repeats.value()
        self._make_bars([e.label for e in entries])
        self.error_panel.clear()
        self.running_data = data
        self.running_standin = on_standin
        self.running_what = self.standin_description() if on_standin else ""
        self.task = Task(run_comparison, data, entries, epsilons, self.repeats.value(), seed=self.seed.value(),
                         k=self.k.value(), partial=True, parent=self)
        self.task.partial.connect(self._row)
        self.task.progress.connect(self._progress)
        self.task.succeeded.connect(self._done)
        self.task.failed.connect(lambda error, details: (show_error(self, error, details), self._idle()))
        self.task.finished.connect(self._idle)
        self.run_button.setEnabled(False)
        self.cancel_button.setEnabled(True)
        self.started = time.perf_counter()
        self.status.setText("Running… (the window stays usable; Cancel stops within a second)")
        self.timer.start()
        self.task.start()

    def cancel(self) -> None:
        if self.task is not None and self.task.running:
            self.task.cancel()
            self.status.setText("Cancelling…")

    def _idle(self) -> None:
        self.timer.stop()
        self._flush()
        self.run_button.setEnabled(self.state.dataset is not None)
        self.cancel_button.setEnabled(False)

    def _make_bars(self, labels: list[str]) -> None:
        self.per_run = {label: 0 for label in labels}
        self._show_per_run()

    def _show_per_run(self) -> None:
        """'gs 9/10 runs · lpa 10/10 runs', each name in its series colour."""
        self.per_run_label.setText(" · ".join(
            f"<b style='color:{theme.on_window(colour(i)).name()}'>{label}</b> {done}/{self.runs_per_entry} runs"
            for i, (label, done) in enumerate(self.per_run.items())))

    def _progress(self, fraction: float, message: str) -> None:
        self.overall.setValue(int(fraction * 1000))
        self.status.setText(message)

    def _row(self, row: dict) -> None:
        self.rows.append(row)
        if row["label"] in self.per_run:
            self.per_run[row["label"]] += 1
        self._pending = True

    def _flush(self) -> None:
        if self._pending and self.rows:
            self._pending = False
            self._show_per_run()
            self.redraw_errors(streaming=True)

    def _done(self, comparison) -> None:
        elapsed = time.perf_counter() - self.started
        what = "a stand-in" if self.running_standin else "the true data"
        self.status.setText(f"{'Cancelled after' if comparison.cancelled else 'Finished'} "
                            f"{len(comparison.results)} runs in {elapsed:.1f} s on {what} (seed {comparison.seed}).")
        self.state.set_comparison(comparison, self.running_data, self.running_standin, standin=self.running_what)

    # -- drawing -------------------------------------------------------------------------
    def _fill_metrics(self, keys: list[str]) -> None:
        """The error measures the results carry (counts and summaries have different ones)."""
        current = self.metric.currentData()
        self.metric.blockSignals(True)
        self.metric.clear()
        for key in keys:
            self.metric.addItem(ALL_METRIC_LABELS.get(key, key.replace("_", " ")), key)
        index = self.metric.findData(current)
        self.metric.setCurrentIndex(max(index, 0))
        self.metric.blockSignals(False)

    def _sync_metrics(self, columns) -> None:
        keys = [c for c in columns if c not in ("label", "mechanism", "epsilon", "repeat", "seconds") and "@" not in c]
        if keys != [self.metric.itemData(i) for i in range(self.metric.count())]:
            self._fill_metrics(keys)

    def current_rows(self) -> list[dict]:
        comparison = self.state.comparison
        if self.task is not None and self.task.running or comparison is None:
            return self.rows
        return comparison.results.to_dict("records") if not comparison.results.empty else []

    def redraw_errors(self, *, streaming: bool = False) -> None:
        rows = self.current_rows()
        panel = self.error_panel
        if not rows:
            panel.clear()
            return
        self._sync_metrics(rows[0].keys())
        metric = self.metric.currentData()
        if metric not in rows[0]:
            return
        if not streaming or getattr(self, "_drawn_metric", None) != metric:
            panel.clear()  # a new picture; while results stream in, curves are updated in place
            self._drawn_metric = metric
        log_y = not metric.endswith("topk_accuracy")
        name = ALL_METRIC_LABELS.get(metric, metric)
        if metric == "summary_size":  # a size, not an error
            better = ""
        else:  # the cell summaries' query errors are errors too
            better = "lower is better" if LOWER_IS_BETTER.get(metric, True) else "higher is better"
        panel.plot.setLogMode(x=True, y=log_y)
        # two lines, so that the label fits beside a short plot
        second = " · ".join(part for part in (better, "log scale" if log_y else "") if part)
        panel.plot.setLabel("left", name + (f"<br>{second}" if second else ""))
        table = []
        for i, (label, by_epsilon) in enumerate(group_rows(rows, metric).items()):
            epsilons = np.array(sorted(by_epsilon))
            stats = np.array([mean_interval(by_epsilon[e]) for e in epsilons])  # mean, low, high, n
            mean, low, high = stats[:, 0], stats[:, 1], stats[:, 2]
            if log_y:
                mean, low, high = log_band(mean, low, high)
            panel.set_series(label, epsilons, mean, i, band=(low, high))
            table += [[label, e, m, lo, hi, int(n)] for e, (m, lo, hi, n) in zip(epsilons, stats)]
        references = self.state.comparison.reference_values(metric) if self.state.comparison is not None else {}
        if not streaming and references:  # flat lines across the ε grid (evaluation.compare.reference_rows)
            grid = np.array(sorted({e for by_epsilon in group_rows(rows, metric).values() for e in by_epsilon}))
            for j, (label, value) in enumerate(references.items(), start=len(group_rows(rows, metric))):
                panel.add_series(f"{label} (reference)", grid, np.full(grid.size, value), j, symbol=None)
                table += [[f"{label} (reference)", e, value, value, value, 0] for e in grid]
        if not streaming:
            panel.set_table(["mechanism", "ε", "mean", "95% low", "95% high", "repeats"], table)
        panel.set_caption(
            f"{name} of each mechanism at each ε, averaged over the repeats (band: its 95% confidence interval). "
            + ("Flat lines are references without noise: publishing 0 for every item, and one average for all; a "
               "mechanism above them publishes less than they would. " if references and not streaming else "")
            + ("Higher is better." if metric == "topk_accuracy" else "The size of the published summary, not an "
               "error." if metric == "summary_size" else "Lower is better.")
            + (" Both axes are logarithmic; a band is drawn at most ten times below its mean (Numbers: the whole "
               "interval)." if log_y else " The ε axis is logarithmic."))

    def _show_comparison(self) -> None:
        comparison = self.state.comparison
        self.example_choice.blockSignals(True)
        self.example_choice.clear()
        if comparison is not None:
            for (label, epsilon) in comparison.examples:
                self.example_choice.addItem(f"{label} at ε = {epsilon:.4g}", (label, epsilon))
        self.example_choice.blockSignals(False)
        self.redraw_errors()
        self.redraw_example()
        self.redraw_topk()

    def _example(self):
        comparison = self.state.comparison
        key = self.example_choice.currentData()
        if comparison is None or key is None:
            return None
        return comparison.examples.get(tuple(key))

    def redraw_example(self) -> None:
        release = self._example()
        self.truth_panel.clear()
        self._fill_diagnostics(release)
        data = self.state.comparison_dataset
        if release is None or data is None:
            return
        if release.values is None:
            self.truth_panel.set_caption("This mechanism releases a summary of cells, not one count per item; see "
                                         "the mechanism details for its error by size.")
            return
        true = data.column_counts.astype(float)
        noisy = np.asarray(release.values, dtype=float)
        panel = self.truth_panel
        top = max(true.max(), noisy.max(), 1.0)
        panel.plot.setLogMode(x=False, y=False)
        if true.size <= 3000:
            panel.add_series("items", true, noisy, 0, line=False)
            panel.plot.plot([0, top], [0, top], pen=pg.mkPen(theme.muted(), style=Qt.DashLine), name="no error")
            panel.set_caption("Each dot is one item: its true count (across) and its released count (up). Dots on "
                              "the dashed diagonal are exact; the vertical spread is the noise.")
        else:
            # many items: a density image of log counts
            lt, ln = np.log10(true + 1), np.log10(np.maximum(noisy, 0) + 1)
            edge = max(lt.max(), ln.max(), 1.0)
            histogram, _, _ = np.histogram2d(lt, ln, bins=120, range=[[0, edge], [0, edge]])
            shade = np.log1p(histogram)
            shade[histogram == 0] = np.nan  # empty cells stay white
            image = pg.ImageItem(shade)
            image.setColorMap(pg.colormap.get("viridis"))
            image.setRect(0, 0, edge, edge)
            panel.plot.addItem(image)
            panel.plot.plot([0, edge], [0, edge], pen=pg.mkPen(theme.muted(), style=Qt.DashLine))
            panel.plot.setLabel("bottom", "true count (log10 of count+1)")
            panel.plot.setLabel("left", "released count (log10 of count+1)")
            panel._series = [("items", lt, ln)]
            panel.set_caption(f"{true.size:,} items: brighter cells hold more items. Items on the dashed diagonal are "
                              "exact; negative released counts are drawn at 0.")
        rows = [[str(release.labels[j]), true[j], noisy[j]] for j in top_k(true, 200)]
        panel.set_table(["item (200 largest)", "true count", "released count"], rows)

    def redraw_topk(self) -> None:
        panel = self.topk_panel
        panel.clear()
        comparison = self.state.comparison
        data = self.state.comparison_dataset
        if comparison is None or data is None or data.kind != "incidence":
            panel.set_caption("Top-k accuracy applies to count releases (one count per item).")
            return
        panel.plot.setLogMode(x=True, y=False)
        true = data.column_counts
        ks = [k for k in (5, 10, 20, 50, 100, 200, 500, 1000, 2000) if k <= true.size] or [true.size]
        epsilon = max(e for _, e in comparison.examples)
        rows = []
        for i, ((label, e), release) in enumerate(x for x in comparison.examples.items() if x[0][1] == epsilon):
            if release.values is None:
                continue
            values = topk_accuracies(release.values, true, ks)
            panel.add_series(label, ks, values, i)
            rows += [[label, k, v] for k, v in zip(ks, values)]
        panel.set_table(["mechanism", "k", "top-k accuracy"], rows)
        panel.set_caption(f"At ε = {epsilon:.4g} (first repeat): of the k items with the largest true counts, the "
                          "share that are also among the k largest released counts. 1 means the ranking of the "
                          "top k is fully preserved.")

    def _fill_diagnostics(self, release) -> None:
        self.diagnostic_choice.blockSignals(True)
        self.diagnostic_choice.clear()
        if release is not None:
            for key, diagnostic in release.diagnostics.items():
                if _plottable(diagnostic):
                    self.diagnostic_choice.addItem(diagnostic.title, key)
            if release.cells is not None:
                self.diagnostic_choice.addItem("Error vs range size (this summary, internal)", SUMMARY_BY_RANGE)
                self.diagnostic_choice.addItem("Error vs summary size (all summaries, internal)", SUMMARY_BY_SIZE)
        self.diagnostic_choice.blockSignals(False)
        self.redraw_detail()

    def _summary_diagnostic(self, key: str, release):
        """Query-error curves of cell summaries, computed on demand from the true data."""
        data = self.state.comparison_dataset
        if key == SUMMARY_BY_RANGE:
            return error_vs_range_size(data, release)
        examples = [r for r in self.state.comparison.examples.values() if r.cells is not None]
        return error_vs_summary_size(data, examples)

    def redraw_detail(self) -> None:
        panel = self.detail_panel
        panel.clear()
        release = self._example()
        key = self.diagnostic_choice.currentData()
        if release is None or key is None:
            panel.set_caption("The selected mechanism has no detail plot.")
            return
        diagnostic = release.diagnostics[key] if key in release.diagnostics else self._summary_diagnostic(key, release)
        panel.title_label.setText(diagnostic.title)
        plot_diagnostic(panel, diagnostic)


def _plottable(diagnostic) -> bool:
    arrays = [v for v in diagnostic.data.values() if isinstance(v, np.ndarray) and v.ndim == 1 and v.size > 1]
    return len(arrays) >= 2


def plot_diagnostic(panel: PlotPanel, diagnostic) -> None:
    """Plot a mechanism's Diagnostic: the first array is x, every other array of that length a curve,
    and scalar entries whose name says chosen/best as vertical markers."""
    arrays = {k: np.asarray(v, dtype=float) for k, v in diagnostic.data.items()
              if isinstance(v, np.ndarray) and v.ndim == 1 and v.size > 1 and v.dtype.kind in "fiu"}
    if len(arrays) < 2:
        return
    names = list(arrays)
    x_name, x = names[0], arrays[names[0]]
    log_x = bool(np.all(x > 0) and x.max() / max(x.min(), 1e-300) > 300)
    panel.plot.setLogMode(x=log_x, y=False)
    panel.plot.setLabel("bottom", diagnostic.x or x_name.replace("_", " "))
    panel.plot.setLabel("left", diagnostic.y or "")
    rows_headers = [x_name]
    columns = [x]
    index = 0
    ordered = bool(np.all(np.diff(x) >= 0))  # a curve; otherwise separate points (e.g. one per summary)
    for name in names[1:]:
        if arrays[name].size != x.size:
            continue
        panel.add_series(name.replace("_", " "), x, arrays[name], index,
                         symbol=None if x.size > 60 and ordered else "o", line=ordered)
        rows_headers.append(name)
        columns.append(arrays[name])
        index += 1
    markers = 0
    for name, value in diagnostic.data.items():
        if np.isscalar(value) and isinstance(value, (int, float, np.integer, np.floating)) and \
                any(word in name for word in ("chosen", "best", "declared")):
            position = math.log10(value) if log_x and value > 0 else float(value)
            line = pg.InfiniteLine(pos=position, angle=90, label=f"{name.replace('_', ' ')} = {value:g}",
                                   pen=pg.mkPen(colour(index), style=Qt.DashLine),
                                   labelOpts={"position": 0.92 - 0.1 * markers, "color": colour(index),
                                              "fill": theme.translucent_base(210)})
            panel.plot.addItem(line)
            index += 1
            markers += 1
    panel.set_caption(diagnostic.caption + ("" if not diagnostic.internal else
                                            " <b>(internal: computed from the true data)</b>"))
    panel.set_table(rows_headers, [list(row) for row in zip(*columns)])

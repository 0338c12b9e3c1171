"""Release: one mechanism, one ε, the budget ledger, a secure run in the background, a
preview, and the export dialog. The budget is spent (recorded) when the release is drawn."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QAbstractTableModel, QModelIndex, QSortFilterProxyModel, Qt, QUrl
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import (QCheckBox, QComboBox, QDialog, QDialogButtonBox, QFileDialog,
                               QFormLayout, QGroupBox, QHBoxLayout, QInputDialog, QLabel, QLineEdit, QMessageBox,
                               QProgressBar, QPushButton, QScrollArea, QSizePolicy, QTableView,
                               QVBoxLayout, QWidget)

from .. import mechanisms as registry
from ..errors import DatasetNameError, DpdeskError, ParameterError
from ..evaluation.recommend import declared_size
from ..privacy.planner import odds_after
from ..privacy.ledger import Ledger
from ..workflow import (CHOSEN_ON_STANDIN, CHOSEN_ON_TRUE_DATA, DEFAULT_CHOSEN, INTERNAL_REPORT_FILE, REPORT_FILES,
                        export_release, internal_reports_dir, observed_choice, secure_release, stated_default)
from .configure_page import EPS_MAX, EPS_MIN, settings_in_words
from .margin_preview import MarginPreviewRow, declared_size_or_why
from .state import AppState
from .widgets import (Banner, DecimalSpinBox, ResponsiveRow, ThemedPlot, buddy_label, colour, error_text, explanation,
                      heading, name_text, narrow_combo, show_error)
from .workers import Task

CHOICES = [
    DEFAULT_CHOSEN,
    CHOSEN_ON_STANDIN,
    CHOSEN_ON_TRUE_DATA,
    "set by the organisation's policy",
]


class ArrayModel(QAbstractTableModel):
    """Released values as a sortable table without copying them into widgets (fast for 10⁶ rows)."""

    def __init__(self, labels, values, headers):
        super().__init__()
        self.labels = [str(x) for x in labels]
        self.values = values
        self.headers = headers

    def rowCount(self, parent=QModelIndex()):  # noqa: N802 - Qt API
        return 0 if parent.isValid() else len(self.labels)

    def columnCount(self, parent=QModelIndex()):  # noqa: N802
        return 0 if parent.isValid() else 1 + len(self.values)

    def data(self, index, role=Qt.DisplayRole):
        if not index.isValid():
            return None
        column = index.column()
        if role == Qt.DisplayRole:
            if column == 0:
                return self.labels[index.row()]
            value = float(self.values[column - 1][index.row()])
            return f"{value:,.0f}" if value == round(value) else f"{value:,.2f}"
        if role == Qt.UserRole:
            return self.labels[index.row()] if column == 0 else float(self.values[column - 1][index.row()])
        if role == Qt.TextAlignmentRole and column > 0:
            return int(Qt.AlignRight | Qt.AlignVCenter)
        return None

    def headerData(self, section, orientation, role=Qt.DisplayRole):  # noqa: N802
        if role == Qt.DisplayRole and orientation == Qt.Horizontal:
            return self.headers[section]
        return None


def release_in_words(release) -> str:
    """'release 1 of retail (ledger entry #2)': the steward counts the releases of a dataset; the ledger's
    entry number (its first entry opens the ledger) is what `dpdesk export --entry` and the report cite."""
    entry = (release.report.get("ledger") or {}).get("entry")
    number = (release.report.get("dataset_budget") or {}).get("releases")
    if number:
        return f"release {number} of {release.dataset_name} (ledger entry #{entry})"
    return f"ledger entry #{entry}"


class ReleasePage(QWidget):
    def __init__(self, state: AppState, parent=None):
        super().__init__(parent)
        self.state = state
        self.task: Task | None = None
        outer = QVBoxLayout(self)
        outer.addWidget(heading("⑤ Release: draw the noisy counts with secure randomness"))
        choose = QGroupBox("What to release")
        form = QFormLayout(choose)
        self.mechanism = QComboBox()
        self.mechanism.setAccessibleName("Mechanism to release with")
        narrow_combo(self.mechanism)
        self.epsilon = DecimalSpinBox()
        self.epsilon.setRange(EPS_MIN, EPS_MAX)  # as on the Configure page: one ε, the same on both
        self.epsilon.setDecimals(4)
        self.epsilon.setAccessibleName("Epsilon of the release")
        self.params = QLabel("")
        self.params.setWordWrap(True)
        self.chosen = QComboBox()
        self.chosen.setEditable(True)
        self.chosen.addItems(CHOICES)
        narrow_combo(self.chosen)  # a long sentence scrolls in the box instead of widening the page
        self.chosen.setAccessibleName("How the mechanism was chosen (goes into the public report)")
        self.chosen.lineEdit().setAccessibleName(self.chosen.accessibleName())  # the field one types in
        self.chosen.setToolTip("Stated in the public report. Choosing by the true-data comparison is a use of the "
                               "data; say so honestly. The report also says what dpdesk observed.")
        self.observed = explanation("")
        self.observed.setSizePolicy(QSizePolicy.Preferred, QSizePolicy.Maximum)
        self.observed.setAccessibleDescription("What dpdesk observed about the comparisons (goes into the public "
                                               "report)")
        self.raw = QCheckBox("Publish raw values instead of whole numbers")
        self.raw.setToolTip("By default the counts are published as whole numbers ≥ 0 (rounding costs no privacy). "
                            "Raw values are unbiased but may be fractional or below 0: for analysts who add many "
                            "of them up. The report says which was published.")
        self.raw.setAccessibleName("Publish the mechanism's raw values instead of whole numbers of at least 0")
        form.addRow("Mechanism:", self.mechanism)
        form.addRow("ε:", self.epsilon)
        form.addRow("Settings:", self.params)
        form.addRow("Published as:", self.raw)
        # the margins the release would publish, previewed on a stand-in before anything is spent (issue 28)
        self.margin_preview = MarginPreviewRow(self._preview_inputs)
        form.addRow("Margins of error:", self.margin_preview)
        chosen = QVBoxLayout()
        chosen.setContentsMargins(0, 0, 0, 0)
        chosen.setSpacing(2)
        chosen.addWidget(self.chosen)
        chosen.addWidget(self.observed)
        form.addRow(buddy_label("How it was chosen:", self.chosen), chosen)
        # the sentence is a field of its own (a label beside a button in one row was cut to one line)
        self.publication = QLabel("")
        self.publication.setWordWrap(True)
        self.publication.setAccessibleDescription("Who the data is about and where the published list comes from")
        self.publication_button = QPushButton("Change…")
        self.publication_button.setAccessibleName("Change who the data is about or the published list")
        form.addRow(buddy_label("About:", self.publication), self.publication)
        change = QHBoxLayout()
        change.addWidget(self.publication_button)
        change.addStretch(1)
        form.addRow("", change)
        self.meaning = explanation("")
        form.addRow(self.meaning)
        budget = QGroupBox("Privacy budget ledger for this dataset")
        budget_layout = QVBoxLayout(budget)
        self.ledger_text = QLabel("")
        self.ledger_text.setWordWrap(True)
        self.ledger_text.setAccessibleDescription("Budget used for this dataset")
        budget_layout.addWidget(self.ledger_text)
        cap_row = QHBoxLayout()
        self.cap_button = QPushButton("Set budget cap…")
        cap_row.addWidget(self.cap_button)
        cap_row.addStretch(1)
        budget_layout.addLayout(cap_row)
        self.cap_warning = Banner("", "danger")
        self.cap_warning.setVisible(False)
        budget_layout.addWidget(self.cap_warning)
        self.override = QCheckBox("Release anyway, above the cap")
        self.override.setToolTip("The override is recorded in the budget ledger")
        self.override.setVisible(False)
        budget_layout.addWidget(self.override)
        self.override_note = explanation("The override is recorded in the budget ledger.")
        self.override_note.setVisible(False)
        budget_layout.addWidget(self.override_note)
        budget_layout.addStretch(1)  # the figures at the top of the box, not floating in its middle
        outer.addWidget(ResponsiveRow([choose, budget], [3, 2], spacing=10))  # side by side when there is room
        outer.addWidget(Banner("Pressing <b>Run release</b> draws secure random noise and records the release in the "
                               "budget ledger: its ε counts against this dataset from then on, even if you never "
                               "export it. Look at results on the Compare page, not by re-running releases.", "info"))
        run_row = QHBoxLayout()
        self.run_button = QPushButton("Run release (secure) ▶")
        self.run_button.setAccessibleName("Run the release with secure randomness")
        self.progress = QProgressBar()
        self.progress.setRange(0, 1000)
        self.progress.setAccessibleName("Release progress")
        self.export_button = QPushButton("Export…")
        self.export_button.setEnabled(False)
        self.export_button.setAccessibleName("Export the release and reports")
        run_row.addWidget(self.run_button)
        run_row.addWidget(self.progress, 1)
        run_row.addWidget(self.export_button)
        outer.addLayout(run_row)
        self.status = QLabel("")
        self.status.setWordWrap(True)
        outer.addWidget(self.status)
        self.placeholder = explanation("The released counts will appear here — as a table you can sort and as a "
                                       "histogram — after <b>Run release</b>. Then use <b>Export…</b> to write the "
                                       "files and the privacy report.")
        outer.addWidget(self.placeholder)
        self.table = QTableView()
        self.table.setSortingEnabled(True)
        self.table.setTabKeyNavigation(False)  # Tab leaves the table (arrows move between its cells)
        self.table.setAccessibleName("Released noisy counts")
        self.table.setMinimumHeight(220)
        self.histogram = ThemedPlot()
        self.histogram.setLabel("bottom", "released count")
        self.histogram.setLabel("left", "items")
        self.histogram.setAccessibleName("Histogram of the released counts")
        self.histogram.setAccessibleDescription("How many released values fall in each range; every value is in "
                                                "the table of released counts.")
        self.histogram.setMinimumSize(260, 220)
        # the table and the histogram side by side when there is room, the histogram below otherwise
        self.preview = ResponsiveRow([self.table, self.histogram], [3, 2], spacing=10)
        outer.addWidget(self.preview, 1)
        self.preview.setVisible(False)
        self.mechanism.currentIndexChanged.connect(self.refresh)
        self.epsilon.valueChanged.connect(self.refresh)
        self.epsilon.valueChanged.connect(state.set_epsilon)  # one ε: the Configure page shows the same
        self.run_button.clicked.connect(self.run)
        self.export_button.clicked.connect(self.export)
        self.cap_button.clicked.connect(self.set_cap)
        self.publication_button.clicked.connect(self.change_publication)
        self.override.toggled.connect(self.refresh)
        state.config_changed.connect(self.rebuild)
        state.dataset_changed.connect(self._dataset_changed)
        state.epsilon_changed.connect(lambda e: self.epsilon.setValue(e))
        state.release_changed.connect(self._show_release)
        state.comparison_changed.connect(self.update_choice)
        state.config_changed.connect(self.update_choice)
        state.dataset_changed.connect(self._forget_choice)
        self.mechanism.currentIndexChanged.connect(self.update_choice)
        for signal in (self.mechanism.currentIndexChanged, self.epsilon.valueChanged, self.raw.toggled,
                       state.config_changed, state.publication_changed, state.dataset_changed):
            signal.connect(lambda *_: self.margin_preview.forget())
        self._choice_edited = False
        self._setting_choice = False
        self._recommendation_seen = None  # the last "Use the recommendation" this page has followed
        self.chosen.currentTextChanged.connect(self._choice_changed)
        self.epsilon.setValue(state.epsilon)
        self.rebuild()
        self.update_choice()

    def _preview_inputs(self) -> tuple:
        """What the margin preview runs: the mechanism about to be released, at this ε, on the declared shape."""
        data, mechanism_id = self.state.dataset, self.mechanism.currentData()
        if mechanism_id is None:
            raise DpdeskError("choose a mechanism first.")
        size = declared_size_or_why(self.state, lambda: declared_size(
            self.state.domain_declaration, data.source.get("path"), data.kind, loaded=data))
        length = self.state.typical_row_length if data.kind == "incidence" else None
        params = dict(self.state.params_for(mechanism_id))
        return data.kind, mechanism_id, self.epsilon.value(), params, size, length

    # -- how the mechanism was chosen ------------------------------------------------------
    def _choice_changed(self, text: str) -> None:
        if not self._setting_choice:
            self._choice_edited = True  # the steward's own words: a new comparison does not replace them

    def _dataset_changed(self) -> None:
        """A new dataset: nothing of the one before stays on the page (its mechanism, its release's line)."""
        self.mechanism.blockSignals(True)
        self.mechanism.clear()
        self.mechanism.blockSignals(False)
        self.status.setText("")
        self.progress.setValue(0)
        self.rebuild()

    def _forget_choice(self) -> None:
        self._choice_edited = False
        self.update_choice()

    def update_choice(self) -> None:
        """Propose the statement that matches what dpdesk observed, unless the steward has chosen their own."""
        runs = self.state.comparison_runs
        self.observed.setText("dpdesk observed: " + observed_choice(runs) + ". The report gives both.")
        if self._choice_edited:
            return
        used = self.state.recommendation_used
        recommended = used["chosen_how"] if used and used["mechanism"] == self.mechanism.currentData() else None
        statement = stated_default(runs, recommended)
        self._setting_choice = True
        try:
            index = self.chosen.findText(statement)
            if index >= 0:
                self.chosen.setCurrentIndex(index)
            else:  # the recommendation's own sentence, with the facts it came from
                self.chosen.setEditText(statement)
                self.chosen.lineEdit().setCursorPosition(0)  # a long sentence: show its beginning
        finally:
            self._setting_choice = False

    # -- choices -------------------------------------------------------------------------
    def rebuild(self) -> None:
        current = self.mechanism.currentData() or self.state.release_choice.get("mechanism")
        used = self.state.recommendation_used
        if used is not None and used is not self._recommendation_seen:  # just chosen on the Configure page
            current, self._recommendation_seen = used["mechanism"], used
        self.mechanism.blockSignals(True)
        self.mechanism.clear()
        for configuration in self.state.enabled():
            mechanism = registry.get(configuration.mechanism)
            if mechanism.releasable:
                self.mechanism.addItem(f"{mechanism.name} [{mechanism.id}]", mechanism.id)
        index = self.mechanism.findData(current)
        self.mechanism.setCurrentIndex(max(index, 0))
        self.mechanism.blockSignals(False)
        self.refresh()

    def _ledger(self) -> Ledger:
        return Ledger.open()

    def refresh(self) -> None:
        data = self.state.dataset
        mechanism_id = self.mechanism.currentData()
        epsilon = self.epsilon.value()
        probability, _ = odds_after(epsilon)
        self.meaning.setText(f"At ε = {epsilon:.4g}, a 50/50 guess about whether a person is in the data can "
                             f"become at most {probability:.0%} after seeing the release.")
        ready = data is not None and mechanism_id is not None
        if mechanism_id:
            params = self.state.params_for(mechanism_id)
            settings = settings_in_words(mechanism_id, params) or "the mechanism's defaults"
            try:  # the schema's check on declared inputs: a missing Δ is said here, not after Run
                registry.get(mechanism_id).validate(None, epsilon, params)
            except DpdeskError as error:
                settings += "<br>" + error_text(f"Not ready: {error} (Configure page)")
                ready = False
            self.params.setText(settings)
        else:
            self.params.setText("Tick a mechanism on the Configure page.")
        if data is None:
            self.ledger_text.setText("Import data first.")
            self.publication.setText("")
            self.run_button.setEnabled(False)
            return
        name, declaration = self.state.dataset_name, self.state.domain_declaration
        self.publication.setText(f"<b>{name_text(name) if name else '(not named)'}</b>; published list: "
                                 + (name_text(declaration.describe()) if declaration is not None else
                                    error_text("not declared yet — press Change…")))
        ready = ready and declaration is not None and bool(name)
        try:
            status = self._ledger().status(name or "(not named)")
        except DpdeskError as error:
            self.ledger_text.setText(f"The ledger cannot be read: {error}")
            self.run_button.setEnabled(False)
            return
        cap = "no cap" if status.cap is None else f"cap ε = {status.cap:g}"
        after = status.spent + epsilon
        self.ledger_text.setText(f"<b>{name_text(name)}</b>: ε = {status.spent:.4g} spent so far in "
                                 f"{status.releases} release(s) ({cap}).<br>"
                                 f"The next release, at ε = {epsilon:.4g}, would bring the total to "
                                 f"<b>{after:.4g}</b>: every release about the same people adds to what can be "
                                 "learnt about them.")
        exceeds = status.cap is not None and after > status.cap + 1e-12
        self.cap_warning.setVisible(exceeds)
        self.override.setVisible(exceeds)
        self.override_note.setVisible(exceeds)
        if exceeds:
            self.cap_warning.setText(f"This release would take the total to ε = {after:.4g}, above the cap of "
                                     f"{status.cap:g}. It will be refused unless you override the cap.")
        self.run_button.setEnabled(ready and (not exceeds or self.override.isChecked())
                                   and not (self.task is not None and self.task.running))

    def set_cap(self) -> None:
        name = self.state.dataset_name
        if self.state.dataset is None or not name:
            return
        value, ok = QInputDialog.getDouble(self, "Budget cap", f"Largest total ε for {name}:", 3.0, 0.0, 100.0, 4)
        if not ok:
            return
        reason, ok = QInputDialog.getText(self, "Budget cap", "Why does the cap change? (recorded in the ledger)")
        if not ok:
            return
        try:
            self._ledger().set_cap(name, value, reason)
        except DpdeskError as error:
            show_error(self, error)
        self.state.ledger_changed.emit()
        self.refresh()

    def change_publication(self) -> None:
        from .publication import PublicationDialog

        data = self.state.dataset
        if data is None:
            return
        dialog = PublicationDialog(data.kind, self.state.dataset_name, self.state.domain_declaration, self)
        if dialog.exec():
            self.state.set_publication(dialog.choice.dataset_name(), dialog.choice.declaration())
            self.refresh()

    def confirm(self, text: str) -> bool:
        """One confirmation before each release (tests replace it)."""
        answer = QMessageBox.question(self, "Run the release?", text, QMessageBox.Yes | QMessageBox.Cancel,
                                      QMessageBox.Cancel)
        return answer == QMessageBox.Yes

    # -- running -------------------------------------------------------------------------
    def run(self, override_name: bool = False) -> None:
        """Draw the release (after one confirmation). ``override_name``: the steward said this data, released
        before under another name, really is about the people named here (recorded in the ledger)."""
        data = self.state.dataset
        mechanism_id = self.mechanism.currentData()
        if data is None or mechanism_id is None:
            return
        params = self.state.params_for(mechanism_id)
        epsilon = self.epsilon.value()
        name = self.state.dataset_name
        try:
            status = self._ledger().status(name)
        except DpdeskError as error:
            show_error(self, error)
            return
        cap = "no cap" if status.cap is None else f"its cap is ε = {status.cap:g}"
        if not override_name and not self.confirm(
                f"Release {name} with {registry.get(mechanism_id).name} at ε = {epsilon:.4g}?<br><br>"
                f"This spends ε = {epsilon:.4g} for good: the total for {name} becomes "
                f"<b>{status.spent + epsilon:.4g}</b> ({cap})."):
            return
        chosen = self.chosen.currentText().strip() or stated_default(self.state.comparison_runs)
        raw = self.raw.isChecked()
        self.state.release_choice = {"mechanism": mechanism_id, "epsilon": epsilon, "params": params,
                                     "chosen_how": chosen, "raw": raw}
        self.task = Task(secure_release, data, mechanism_id, epsilon, params, dataset=name,
                         items=self.state.domain_declaration, chosen_how=chosen,
                         observed=observed_choice(self.state.comparison_runs), raw=raw,
                         override_cap=self.override.isChecked(), override_name=override_name, parent=self)
        self.task.progress.connect(lambda f, m: (self.progress.setValue(int(f * 1000)), self.status.setText(m)))
        self.task.succeeded.connect(self._released)
        self.task.failed.connect(self._failed)
        self.task.finished.connect(self.refresh)
        self.run_button.setEnabled(False)
        self.status.setText("Running with secure randomness…")
        self.task.start()

    def _failed(self, error, details: str) -> None:
        self.progress.setValue(0)
        self.status.setText("The release was not made.")
        if isinstance(error, DatasetNameError):
            self._name_conflict(error)
            return
        show_error(self, error, details)

    def ask_about_name(self, error: DatasetNameError) -> str:
        """The steward's answer when this data was released before under another name: 'other' (release it
        under that name), 'keep' (this name is right: other people) or 'cancel'. Tests replace it."""
        other, names = error.others[0], " and ".join(f"“{n}”" for n in error.others)
        box = QMessageBox(QMessageBox.Question, "Released before under another name",
                          f"<b>This data was already released as {names}.</b> Releases about the same people share "
                          "one privacy budget, so dpdesk adds them up under one name. Nothing was drawn and no "
                          f"budget was spent.<br><br>Release it as “{other}”: its budget then counts this release "
                          f"too. Keep “{error.dataset}” only if this data really is about other people than "
                          f"{names}; the budget ledger records that you said so.", parent=self)
        box.setTextFormat(Qt.RichText)
        use = box.addButton(f"Release as “{other}”", QMessageBox.AcceptRole)
        keep = box.addButton(f"Keep “{error.dataset}”", QMessageBox.DestructiveRole)
        box.addButton(QMessageBox.Cancel)
        box.setDefaultButton(use)
        box.exec()
        clicked = box.clickedButton()
        return "other" if clicked is use else "keep" if clicked is keep else "cancel"

    def _name_conflict(self, error: DatasetNameError) -> None:
        answer = self.ask_about_name(error)
        if answer == "other":
            self.state.set_publication(error.others[0], self.state.domain_declaration)
            self.run()  # asks again: the totals are those of the other name
        elif answer == "keep":
            self.run(override_name=True)
        else:
            self.status.setText("The release was not made: this data was released before under another name.")

    def _released(self, result) -> None:
        release, files = result
        self.progress.setValue(1000)
        self.state.set_release(release, files)

    def _show_release(self) -> None:
        release = self.state.release
        self.export_button.setEnabled(release is not None)
        self.preview.setVisible(release is not None)
        self.placeholder.setVisible(release is None)
        self.histogram.clear()
        if release is None:
            self.table.setModel(None)
            if not (self.task is not None and self.task.running):
                self.status.setText("")
                self.progress.setValue(0)
            return
        published = (release.report.get("publication") or {}).get("form", "")
        withheld = (release.report.get("publication") or {}).get("margin_withheld", "")
        self.status.setText(f"Released with {registry.get(release.mechanism).name} at ε = {release.epsilon:.4g}, "
                            "with secure randomness from the operating system; recorded in the budget ledger as "
                            f"{release_in_words(release)}"
                            + (f"; published as {published}, " + ("each with its margin of error" if release.margin95
                               is not None else "with no margin of error: " + withheld) if published else "")
                            + ". Check the preview, then export.")
        margins = [release.margin95] if release.margin95 is not None else []
        margin_header = ["± margin (95%)"] if margins else []
        if release.values is not None:
            values = np.asarray(release.values, dtype=float)
            model = ArrayModel(release.labels, [values, *margins], ["item", "released count", *margin_header])
        else:
            cells = release.cells
            labels = cells.info.get("labels") or [str(i) for i in cells.indices]
            columns = [cells.values] + ([cells.weights] if cells.weights is not None else []) + margins
            model = ArrayModel(labels, columns, ["cell", "released value"] + (["weight"] if cells.weights is not None
                                                                              else []) + margin_header)
            values = np.asarray(cells.values, dtype=float)
        proxy = QSortFilterProxyModel(self)
        proxy.setSourceModel(model)
        proxy.setSortRole(Qt.UserRole)
        self.table.setModel(proxy)
        self.table.resizeColumnsToContents()
        # wide enough for every column (label, value, margin, weight) without scrolling sideways
        header = self.table.horizontalHeader()
        needed = sum(header.sectionSize(i) for i in range(header.count())) + self.table.verticalHeader().width()
        self.table.setMinimumWidth(min(needed + self.table.verticalScrollBar().sizeHint().width() + 8, 420))
        if values.size:
            # the bulk of the values: a few very large counts would squeeze everything into one bar
            low, high = np.percentile(values, [0.5, 99.5]) if values.size > 200 else (values.min(), values.max())
            shown = values[(values >= low) & (values <= high)]
            counts, edges = np.histogram(shown, bins=min(60, max(5, int(np.sqrt(shown.size)))))
            self.histogram.addItem(pg.BarGraphItem(x0=edges[:-1], x1=edges[1:], height=counts, brush=colour(2)))
            hidden = values.size - shown.size
            self.histogram.setTitle(f"{hidden:,} extreme values outside the range shown" if hidden else None,
                                    size="9pt")

    def export(self) -> None:
        if self.state.release is None:
            return
        dialog = ExportDialog(self.state, self)
        dialog.exec()


def _note(text: str) -> QLabel:
    label = explanation(text)
    label.setContentsMargins(24, 0, 0, 4)
    return label


class ExportDialog(QDialog):
    """Where and what to write; says what each file contains."""

    def __init__(self, state: AppState, parent=None):
        super().__init__(parent)
        self.state = state
        self.task: Task | None = None
        self.written: list[Path] = []
        self.setWindowTitle("Export the release")
        self.setMinimumWidth(720)  # wide enough for a folder path; the notes wrap to it
        layout = QVBoxLayout(self)
        row = QHBoxLayout()
        self.folder = QLineEdit(str(Path.home() / f"{state.dataset.name}-release"))
        self.folder.setAccessibleName("Destination folder")
        browse = QPushButton("Browse…")
        row.addWidget(QLabel("Folder:"))
        row.addWidget(self.folder, 1)
        row.addWidget(browse)
        layout.addLayout(row)
        # the choices scroll when the screen is short, so no line of them is ever squeezed out of sight
        options = QWidget()
        options_layout = QVBoxLayout(options)
        options_layout.setContentsMargins(0, 0, 0, 0)
        choices = QScrollArea()
        choices.setAccessibleName("What to export")
        choices.setWidgetResizable(True)
        choices.setFrameShape(QScrollArea.NoFrame)
        choices.setWidget(options)
        layout.addWidget(choices, 1)
        files = QGroupBox("Release files (public: the noisy counts and the public metadata)")
        files_layout = QVBoxLayout(files)
        self.csv = QCheckBox("CSV — release.csv")
        self.parquet = QCheckBox("Parquet — release.parquet")
        self.json = QCheckBox("JSON — release.json")
        self.csv.setChecked(True)
        self.json.setChecked(True)
        for box, text in ((self.csv, "one line per item (or cell) with its published value and its margin of "
                                     "error, for spreadsheets"),
                          (self.parquet, "the same table, for analysis tools"),
                          (self.json, "the same values with the public metadata: mechanism, ε and its split, "
                                      "parameters, what each column means, software version")):
            files_layout.addWidget(box)
            files_layout.addWidget(_note(text))
        options_layout.addWidget(files)
        reports = QGroupBox("Privacy report (public: contains no value computed from the true data)")
        reports_layout = QVBoxLayout(reports)
        self.html = QCheckBox("HTML — privacy-report.html")
        self.pdf = QCheckBox("PDF — privacy-report.pdf")
        self.html.setChecked(True)
        self.pdf.setChecked(True)
        for box, text in ((self.html, "mechanism and paper, ε and its split, what was treated as public, how the "
                                      "mechanism was chosen, the guarantee in plain words and the error to expect"),
                          (self.pdf, "the same report, for printing and archiving")):
            reports_layout.addWidget(box)
            reports_layout.addWidget(_note(text))
        options_layout.addWidget(reports)
        internal = QGroupBox("Internal report (NOT for publication)")
        internal_layout = QVBoxLayout(internal)
        self.internal = QCheckBox(INTERNAL_REPORT_FILE)
        internal_layout.addWidget(self.internal)
        internal_layout.addWidget(_note("true-data summary, truncation counts, realised errors and the comparison "
                                        f"results — saved in dpdesk's own folder ({internal_reports_dir()}), never "
                                        "in the export folder; keep it inside your organisation (also as PDF when the PDF report is ticked)"))
        options_layout.addWidget(internal)
        self.overwrite = QCheckBox("Replace files that already exist in this folder")
        options_layout.addWidget(self.overwrite)
        options_layout.addStretch(1)
        self.message = Banner("", "info")
        self.message.setVisible(False)
        layout.addWidget(self.message)
        self.written_box = QGroupBox("Written")
        written_layout = QVBoxLayout(self.written_box)
        self.files_list = QLabel("")
        self.files_list.setWordWrap(True)
        self.files_list.setAlignment(Qt.AlignLeft | Qt.AlignTop)
        self.files_list.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.files_list.setAccessibleDescription("The files that were written, with their full paths")
        scroll = QScrollArea()
        scroll.setAccessibleName("The files written")
        scroll.setWidgetResizable(True)
        scroll.setWidget(self.files_list)
        scroll.setMinimumHeight(96)
        scroll.setMaximumHeight(200)  # a long list scrolls instead of growing the dialog off the screen
        written_layout.addWidget(scroll)
        open_row = QHBoxLayout()
        self.open_folder_button = QPushButton("Open folder")
        self.open_folder_button.setAccessibleName("Open the export folder in the file manager")
        self.open_report_button = QPushButton("Open report")
        self.open_report_button.setAccessibleName("Open the public privacy report")
        open_row.addWidget(self.open_folder_button)
        open_row.addWidget(self.open_report_button)
        open_row.addStretch(1)
        written_layout.addLayout(open_row)
        self.written_box.setVisible(False)
        layout.addWidget(self.written_box)
        self.progress = QProgressBar()
        self.progress.setRange(0, 1000)
        self.progress.setVisible(False)
        layout.addWidget(self.progress)
        self.buttons = QDialogButtonBox(QDialogButtonBox.Close)
        self.export_button = self.buttons.addButton("Export", QDialogButtonBox.AcceptRole)
        self.export_button.setDefault(True)
        layout.addWidget(self.buttons)
        browse.clicked.connect(self._browse)
        self.open_folder_button.clicked.connect(self.open_folder)
        self.open_report_button.clicked.connect(self.open_report)
        self.export_button.clicked.connect(self.start)
        self.buttons.rejected.connect(self.reject)
        for box in (self.csv, self.parquet, self.json, self.html, self.pdf, self.internal):
            box.setAccessibleName(box.text())
        screen = self.screen().availableGeometry() if self.screen() is not None else None
        tallest = int(screen.height() * 0.92) if screen is not None else 900
        self.resize(760, min(max(options.sizeHint().height() + 220, 560), tallest))

    def _browse(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Choose the destination folder", self.folder.text())
        if folder:
            self.folder.setText(folder)

    def options(self) -> dict:
        formats = [f for f, box in (("csv", self.csv), ("parquet", self.parquet), ("json", self.json)) if box.isChecked()]
        reports = [r for r, box in (("html", self.html), ("pdf", self.pdf)) if box.isChecked()]
        return {"formats": formats, "reports": reports, "internal_report": self.internal.isChecked(),
                "force": self.overwrite.isChecked()}

    def start(self) -> None:
        options = self.options()
        if not options["formats"]:
            show_error(self, ParameterError("Tick at least one release file (CSV, Parquet or JSON)."))
            return
        comparison = self.state.comparison if not self.state.comparison_on_standin else None
        self.task = Task(export_release, self.state.release, self.state.dataset, Path(self.folder.text()),
                         comparison=comparison, files=self.state.release_files, parent=self, **options)
        self.task.progress.connect(lambda f, m: self.progress.setValue(int(f * 1000)))
        self.task.succeeded.connect(self._done)
        self.task.failed.connect(lambda error, details: (show_error(self, error, details),
                                                          self.export_button.setEnabled(True)))
        self.progress.setVisible(True)
        self.export_button.setEnabled(False)
        self.task.start()

    def _done(self, paths) -> None:
        self.written = list(paths)
        folder = self.public_folder()
        self.message.set_kind("ok")
        self.message.setText(f"Exported {len(self.written)} files. The public files are in {folder}; the internal "
                             "report (if any) stays in dpdesk's own folder." if folder else "Exported.")
        self.message.setVisible(True)
        self.files_list.setText("\n".join(str(p) for p in self.written))
        self.open_report_button.setEnabled(self.report_path() is not None)
        self.written_box.setVisible(True)
        self.progress.setValue(1000)
        self.state.set_exported(folder)

    def public_folder(self) -> Path | None:
        """The export folder (where the public files went)."""
        public = [p for p in self.written if p.name.startswith("release.") or p.name in REPORT_FILES.values()]
        return public[0].parent if public else None

    def report_path(self) -> Path | None:
        """The public report written: the PDF when there is one, else the HTML."""
        for name in (REPORT_FILES["pdf"], REPORT_FILES["html"]):
            for path in self.written:
                if path.name == name:
                    return path
        return None

    def open_folder(self) -> None:
        folder = self.public_folder()
        if folder is not None:
            QDesktopServices.openUrl(QUrl.fromLocalFile(str(folder)))

    def open_report(self) -> None:
        path = self.report_path()
        if path is not None:
            QDesktopServices.openUrl(QUrl.fromLocalFile(str(path)))

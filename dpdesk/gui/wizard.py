"""The import wizard: choose a file → format and options with a live preview → map columns →
load in the background and check, with a summary of the (internal) figures → who the data is
about and where the published list of items comes from."""

from __future__ import annotations

import os
import re
from pathlib import Path

from PySide6.QtCore import QAbstractTableModel, QModelIndex, Qt
from PySide6.QtWidgets import (QAbstractItemView, QButtonGroup, QCheckBox, QComboBox, QDialog, QDialogButtonBox,
                               QFileDialog, QFormLayout, QHBoxLayout, QHeaderView, QLabel, QLineEdit, QPlainTextEdit,
                               QProgressBar, QPushButton, QRadioButton, QStackedWidget, QTableView, QTableWidget,
                               QVBoxLayout, QWidget, QWizard, QWizardPage)

from ..data import load
from ..data.detect import (DELIMITER_NAMES, FORMATS, IDENTIFIER_MIN_VALUES, IDENTIFIER_SAMPLE, look, look_at_columns,
                           preview_table, sheet_sniffed)
from ..data.loader import CELLS_NEED_ONE_ROW
from ..data.tabular import check_column_names
from ..errors import ParameterError
from ..engine.sql import database_record, load_sql, look_sql
from ..paths import sample_path
from .publication import PublicationPage
from .widgets import Banner, DataSummaryView, error_text, explanation, fill_table
from .workers import Task

FORMAT_NAMES = {
    "transactions": "Transactions — one person per line, items separated by spaces or commas",
    "pairs": "Pairs — one line per (person, item), e.g. user,movie",
    "matrix": "Matrix — one row per person, one 0/1 column per item",
    "records": "Records — one row per person with attributes (e.g. census microdata)",
    "cells": "Count table — attribute columns and a count column",
}
#: columns the format page's preview shows (the rest are counted in a last column)
PREVIEW_COLUMNS = 40
#: columns offered as a matrix's identifier (it is one of the first, if there is one)
ID_CHOICES = 200
DELIMITERS = [(",", "Comma ,"), ("\t", "Tab"), (";", "Semicolon ;"), ("|", "Pipe |"), (None, "Spaces")]
ENCODINGS = [("auto", "Detect automatically"), ("utf-8", "UTF-8"), ("utf-8-sig", "UTF-8 with BOM"),
             ("latin-1", "Latin-1 (ISO-8859-1)"), ("cp1252", "Windows-1252")]
FILE_FILTER = ("Data files (*.dat *.csv *.tsv *.txt *.data *.parquet *.gz *.xlsx *.xlsm *.sav *.zsav *.dta *.sas7bdat "
               "*.xpt);;Text files (*.dat *.csv *.tsv *.txt *.data *.gz);;Excel workbooks (*.xlsx *.xlsm);;"
               "SPSS, Stata and SAS files (*.sav *.zsav *.dta *.sas7bdat *.xpt);;Parquet (*.parquet);;All files (*)")


DATABASE_FORMATS = ("pairs", "records", "cells")  # a query's result is a table


def database_label(url: str) -> str:
    """What the path field shows for a database source (never a password)."""
    return "database: " + database_record(url, "")["sql"]


class DatabaseDialog(QDialog):
    """The database to read and the query whose result is the data."""

    def __init__(self, parent=None, url: str = "", query: str = ""):
        super().__init__(parent)
        self.setWindowTitle("Read from a database")
        layout = QVBoxLayout(self)
        layout.addWidget(explanation(
            "dpdesk reads the result of one query, as it would read a table file: one row per (person, item) "
            "pair, one record per person, or attribute values with their counts. A <b>SQLite</b> file: "
            "<i>sqlite:///path/to/file.db</i> (or choose the file). <b>PostgreSQL</b>: "
            "<i>postgresql://user@host:5432/database</i>; a password is better kept in the PGPASSWORD setting or "
            "a .pgpass file than in the address (dpdesk never saves it). The database is only read."))
        form = QFormLayout()
        row = QHBoxLayout()
        self.url_edit = QLineEdit(url)
        self.url_edit.setPlaceholderText("sqlite:///path/to/file.db or postgresql://user@host/database")
        self.url_edit.setAccessibleName("Database address")
        browse = QPushButton("SQLite file…")
        browse.clicked.connect(self._browse)
        row.addWidget(self.url_edit, 1)
        row.addWidget(browse)
        form.addRow("Database:", row)
        self.query_edit = QPlainTextEdit(query)
        self.query_edit.setPlaceholderText("SELECT person_id, item FROM purchases")
        self.query_edit.setAccessibleName("Query that selects the data")
        form.addRow("Query:", self.query_edit)
        layout.addLayout(form)
        self.buttons = QDialogButtonBox(QDialogButtonBox.Ok | QDialogButtonBox.Cancel)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        layout.addWidget(self.buttons)
        for signal in (self.url_edit.textChanged, self.query_edit.textChanged):
            signal.connect(self._check)
        self._check()
        self.resize(640, 360)

    def _browse(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Choose a SQLite database", str(Path.home()),
                                              "SQLite databases (*.db *.sqlite *.sqlite3);;All files (*)")
        if path:
            self.url_edit.setText(f"sqlite:///{path}")

    def _check(self) -> None:
        self.buttons.button(QDialogButtonBox.Ok).setEnabled(bool(self.url()) and bool(self.query()))

    def url(self) -> str:
        return self.url_edit.text().strip()

    def query(self) -> str:
        return self.query_edit.toPlainText().strip()


def _file_key(path: Path):
    """What identifies the file as it is now (a changed or replaced file is looked at again)."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return str(path), info.st_mtime_ns, info.st_size


class FilePage(QWizardPage):
    def __init__(self, wizard: "ImportWizard"):
        super().__init__()
        self.owner = wizard
        self.setTitle("Choose the data file")
        self.setSubTitle("Pick the file that holds the sensitive data. It stays on this computer.")
        layout = QVBoxLayout(self)
        row = QHBoxLayout()
        self.path = QLineEdit()
        self.path.setPlaceholderText("Path of a data file (.dat, .csv, .tsv, .xlsx, .sav, .dta, .sas7bdat, .xpt, "
                                     ".parquet, possibly .gz)")
        self.path.setAccessibleName("Data file path")
        browse = QPushButton("Browse…")
        browse.setAccessibleName("Browse for a data file")
        row.addWidget(self.path, 1)
        row.addWidget(browse)
        layout.addLayout(row)
        sample = QPushButton("Use the sample dataset (Groceries: 9,835 baskets)")
        sample.setAccessibleName("Use the bundled sample dataset")
        database = QPushButton("Read from a database (SQLite, PostgreSQL)…")
        database.setAccessibleName("Read the data from a database query")
        buttons = QHBoxLayout()
        buttons.addWidget(sample)
        buttons.addWidget(database)
        buttons.addStretch(1)
        layout.addLayout(buttons)
        self.database_button = database
        layout.addWidget(explanation(
            "dpdesk reads <b>transaction files</b> (one person per line, e.g. <i>retail.dat</i>), <b>pairs</b> "
            "(person, item), <b>0/1 matrices</b>, <b>records</b> (one row per person with attributes, e.g. "
            "census microdata) and <b>count tables</b>, as text (CSV, TSV; compressed <i>.gz</i> is fine), "
            "<b>Excel</b> workbooks (.xlsx), <b>SPSS</b> (.sav), <b>Stata</b> (.dta), <b>SAS</b> (.sas7bdat, .xpt) "
            "and Parquet files."))
        row = QHBoxLayout()
        self.progress = QProgressBar()
        self.progress.setRange(0, 0)  # busy: opening a workbook takes as long as it takes
        self.progress.setAccessibleName("Looking at the file")
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setAccessibleName("Stop looking at the file")
        row.addWidget(self.progress, 1)
        row.addWidget(self.cancel_button)
        layout.addLayout(row)
        self.status = QLabel("")
        self.status.setWordWrap(True)
        layout.addWidget(self.status)
        self.problem = Banner("", "danger")
        self.problem.setVisible(False)
        layout.addWidget(self.problem)
        layout.addStretch(1)
        self._busy(False)
        browse.clicked.connect(self._browse)
        sample.clicked.connect(lambda: self.path.setText(str(sample_path())))
        database.clicked.connect(self._choose_database)
        self.cancel_button.clicked.connect(self.cancel)
        self.path.textChanged.connect(self._changed)
        self.registerField("path*", self.path)
        self.task = None
        self._looked = None  # (file key, Sniffed) of the last file looked at
        self._advance = False

    def _browse(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Choose a data file", str(Path.home()), FILE_FILTER)
        if path:
            self.path.setText(path)

    def _choose_database(self) -> None:
        dialog = DatabaseDialog(self, *(self.owner.database or ("", "")))
        if dialog.exec():
            self.use_database(dialog.url(), dialog.query())

    def use_database(self, url: str, query: str) -> None:
        """Read a query's result instead of a file (the path field then says so)."""
        self.owner.database = (url, query)
        self._looked = None
        self.path.setText(database_label(url))

    def _changed(self) -> None:
        self.problem.setVisible(False)
        self.cancel()
        if self.owner.database is not None and self.path.text() != database_label(self.owner.database[0]):
            self.owner.database = None  # the steward typed a file name instead
        self.completeChanged.emit()

    def _busy(self, busy: bool) -> None:
        for widget in (self.progress, self.cancel_button):
            widget.setVisible(busy)
        self.cancel_button.setEnabled(busy)

    @property
    def looking(self) -> bool:
        return self.task is not None and self.task.running

    def isComplete(self) -> bool:
        return bool(self.path.text().strip()) and not self.looking

    def cancel(self) -> None:
        if self.looking:
            self.task.cancel()
        self._advance = False

    def validatePage(self) -> bool:
        """Next: the file is looked at on a worker (its first rows only); the page moves on when it is done."""
        if self.owner.database is not None:
            path, key = None, ("database",) + tuple(self.owner.database)
        else:
            path = Path(self.path.text().strip()).expanduser()
            key = _file_key(path)
        if self._looked is not None and key is not None and self._looked[0] == key:
            self.owner.sniffed, self.owner.path = self._looked[1], path
            return True
        if not self.looking:
            self._look(path, key)
        return False

    def _look(self, path: Path | None, key) -> None:
        self.problem.setVisible(False)
        self._busy(True)
        self._advance = False
        if path is None:  # a database query: its columns and first rows
            self.status.setText("Running the query for its first rows…")
            self.task = Task(look_sql, *self.owner.database, parent=self)
        else:
            self.status.setText(f"Looking at {path.name}…")
            self.task = Task(look, path, parent=self)
        self.task.progress.connect(lambda fraction, message: self.status.setText(message or self.status.text()))
        self.task.succeeded.connect(lambda sniffed: self._looked_at(key, sniffed))
        self.task.failed.connect(self._failed)
        self.task.cancelled.connect(lambda: self.status.setText("Stopped. Press Next to look at the file again."))
        self.task.finished.connect(self._finished)
        self.task.start()
        self.completeChanged.emit()

    def _looked_at(self, key, sniffed) -> None:
        if self.task is not None and self.task.token.cancelled:
            return
        self._looked = (key, sniffed)
        self.status.setText("")
        self._advance = key is not None

    def _failed(self, error, details: str) -> None:
        self.problem.setText(str(error))
        self.problem.setVisible(True)
        self.status.setText("")
        if details:
            import logging

            logging.getLogger("dpdesk.gui").error("looking at the file failed\n%s", details)

    def _finished(self) -> None:
        self._busy(False)
        self.completeChanged.emit()
        if self._advance and self.wizard() is not None and self.wizard().currentPage() is self:
            self._advance = False
            self.wizard().next()


class FormatPage(QWizardPage):
    def __init__(self, wizard: "ImportWizard"):
        super().__init__()
        self.owner = wizard
        self.setTitle("How is the file laid out?")
        self.setSubTitle("dpdesk has guessed; check the preview and correct anything that looks wrong.")
        layout = QVBoxLayout(self)
        form = QFormLayout()
        self.format = QComboBox()
        for fmt in FORMATS:
            self.format.addItem(FORMAT_NAMES[fmt], fmt)
        self.delimiter = QComboBox()
        for value, label in DELIMITERS:
            self.delimiter.addItem(label, value)
        self.header = QCheckBox("The first line holds column names")
        self.encoding = QComboBox()
        for value, label in ENCODINGS:
            self.encoding.addItem(label, value)
        self.sheet = QComboBox()
        self.sheet_label = QLabel("Sheet:")
        form.addRow(self.sheet_label, self.sheet)
        form.addRow("Layout:", self.format)
        form.addRow("Separator:", self.delimiter)
        form.addRow("", self.header)
        form.addRow("Text encoding:", self.encoding)
        for widget, name in ((self.format, "File layout"), (self.delimiter, "Field separator"),
                             (self.header, "Header line"), (self.encoding, "Text encoding"),
                             (self.sheet, "Sheet of the workbook")):
            widget.setAccessibleName(name)
        layout.addLayout(form)
        self.form = form
        self.detected = explanation("")
        layout.addWidget(self.detected)
        layout.addWidget(QLabel("Preview of the first rows as they will be read:"))
        self.table = QTableWidget()
        self.table.setEditTriggers(QTableWidget.NoEditTriggers)
        self.table.setAccessibleName("Preview of the file")
        layout.addWidget(self.table, 1)
        for signal in (self.format.currentIndexChanged, self.delimiter.currentIndexChanged,
                       self.encoding.currentIndexChanged):
            signal.connect(self.refresh)
        self.header.toggled.connect(self.refresh)
        self.sheet.currentIndexChanged.connect(self._sheet_chosen)
        self._filling = False

    def initializePage(self) -> None:
        sniffed = self.owner.sniffed
        self._filling = True
        self.sheet.clear()
        for name in sniffed.sheets:
            self.sheet.addItem(name, name)
        self._set(self.sheet, sniffed.sheet)
        self._filling = False
        for index in range(self.format.count()):  # a query's result is a table: no baskets or 0/1 matrix
            allowed = sniffed.kind != "database" or self.format.itemData(index) in DATABASE_FORMATS
            self.format.model().item(index).setEnabled(allowed)
        self.form.setRowVisible(self.sheet, sniffed.kind == "xlsx")
        self.form.setRowVisible(self.header, not sniffed.named_columns)  # SPSS, Stata, SAS, Parquet name theirs
        self._show_guess(sniffed)
        self._set(self.encoding, "auto")
        for widget in (self.delimiter, self.encoding):  # a workbook or a data file has neither
            widget.setEnabled(not sniffed.binary)
            self.form.setRowVisible(widget, not sniffed.binary)
        self.header.setText("The first row holds column names" if sniffed.kind == "xlsx"
                            else "The first line holds column names")
        self.refresh()

    def _show_guess(self, sniffed) -> None:
        self._filling = True
        self._set(self.format, sniffed.format)
        self._set(self.delimiter, sniffed.delimiter)
        self.header.setChecked(sniffed.header)
        self._filling = False
        if sniffed.kind == "database":
            text = (f"The query returns <b>{len(sniffed.columns)}</b> columns "
                    f"({', '.join(sniffed.columns[:6])}{', …' if len(sniffed.columns) > 6 else ''}); "
                    f"read as <b>{sniffed.describe()}</b>")
        elif sniffed.binary:
            where = f" (sheet '{sniffed.sheet}')" if sniffed.kind == "xlsx" else ""
            article, name = sniffed.a_kind.split(" ", 1)
            text = f"Detected: {article} <b>{name}</b> file{where}; <b>{sniffed.describe()}</b>"
            if sniffed.kind == "xlsx":
                text += f"; header: {'yes' if sniffed.header else 'no'}"
            if sniffed.n_rows:
                text += f"; {sniffed.n_rows:,} rows"
        else:
            text = (f"Detected: <b>{sniffed.describe()}</b>; separator: "
                    f"{DELIMITER_NAMES.get(sniffed.delimiter, repr(sniffed.delimiter))}; "
                    f"header: {'yes' if sniffed.header else 'no'}; encoding: {sniffed.encoding}")
        notes = "".join(f"<br>Note: {note}." for note in sniffed.notes)
        self.detected.setText(text + "." + notes)

    def _sheet_chosen(self) -> None:
        """Another sheet of the workbook: its layout guessed again from the rows already read."""
        sniffed = self.owner.sniffed
        name = self.sheet.currentData()
        if self._filling or sniffed is None or sniffed.kind != "xlsx" or name is None or name == sniffed.sheet:
            return
        self.owner.sniffed = sheet_sniffed(sniffed.sheets, sniffed.sheet_rows, name)
        self._show_guess(self.owner.sniffed)
        self.refresh()

    @staticmethod
    def _set(combo: QComboBox, value) -> None:
        index = combo.findData(value)
        if index >= 0:
            combo.setCurrentIndex(index)

    def settings(self) -> dict:
        return {"format": self.format.currentData(), "delimiter": self.delimiter.currentData(),
                "header": self.header.isChecked(), "encoding": self.encoding.currentData(),
                "sheet": self.sheet.currentData()}

    def sample(self, lines: int) -> tuple[list[str], list[list[str]]]:
        """Column names and up to ``lines`` first rows as they will be read with the chosen options."""
        sniffed = self.owner.sniffed
        s = self.settings()
        encoding = sniffed.encoding if s["encoding"] == "auto" else s["encoding"]
        header = s["header"] and (s["format"] != "transactions" or sniffed.kind == "xlsx")
        return preview_table(sniffed, delimiter=s["delimiter"], header=header, encoding=encoding, sheet=s["sheet"],
                             lines=lines)

    def names_editable(self) -> bool:
        """Whether the steward names the columns: a text table or a sheet without a header line."""
        sniffed = self.owner.sniffed
        return not sniffed.named_columns and sniffed.kind != "database" and not self.header.isChecked()

    def refresh(self) -> None:
        """The preview, from the first rows read on the file page (never the whole file)."""
        sniffed = self.owner.sniffed
        if sniffed is None or self._filling:
            return
        s = self.settings()
        encoding = sniffed.encoding if s["encoding"] == "auto" else s["encoding"]
        workbook = sniffed.kind == "xlsx"
        self.header.setEnabled(workbook or (s["format"] != "transactions" and not sniffed.binary))
        header = s["header"] and (s["format"] != "transactions" or workbook)
        columns, rows = preview_table(sniffed, delimiter=s["delimiter"], header=header, encoding=encoding,
                                      sheet=s["sheet"])
        if s["format"] == "transactions":
            rows = [[v for v in r if v != ""] for r in rows] if workbook else rows
            shown = [f"item {k + 1}" for k in range(max((len(r) for r in rows), default=0))]
            columns = []  # nothing to map: each entry is an item
        else:
            shown = columns
        # a preview is for the eyes: a basket of 2,500 items or a matrix of 16,000 columns shows its first
        # PREVIEW_COLUMNS (filling thousands of cells would hold up the window for a second)
        more = len(shown) - PREVIEW_COLUMNS
        if more > 0:
            shown = shown[:PREVIEW_COLUMNS] + [f"… {more:,} more"]
            rows = [[*r[:PREVIEW_COLUMNS], "…" if len(r) > PREVIEW_COLUMNS else ""] for r in rows]
        fill_table(self.table, shown, [[*r, *[""] * (len(shown) - len(r))] for r in rows])
        self.owner.columns = columns


# Qt's enum members cost microseconds each to look up in PySide6: a model asked thousands of times binds them once
_DISPLAY, _EDIT, _CHECK, _TIP = Qt.DisplayRole, Qt.EditRole, Qt.CheckStateRole, Qt.ToolTipRole
_TEXT_ROLES = (_DISPLAY, _EDIT)
_CHECKED, _UNCHECKED = Qt.Checked, Qt.Unchecked
_NO_FLAGS, _EDITABLE = Qt.NoItemFlags, Qt.ItemIsEditable
_READ_ONLY = Qt.ItemIsEnabled | Qt.ItemIsSelectable
_CHECKABLE = _READ_ONLY | Qt.ItemIsUserCheckable


class ColumnsModel(QAbstractTableModel):
    """The columns of a records (or count) table: a tick, the name (editable for a file without a header
    line), a few values and a note when the column looks like an identifier (internal: shown here only).

    A model, not a QTableWidget: a file of thousands of columns is shown without an item per cell made
    in the window's thread."""

    HEADERS = ("Column", "A few of its values", "Note (only you see this)")
    IDENTIFIER_NOTE = "⚠ looks like an identifier"
    IDENTIFIER_TIP = ("Nearly every one of the file's first rows has its own value in this column: its values would "
                      "single people out.")

    def __init__(self):
        super().__init__()
        self.names: list[str] = []
        self.values: list[str] = []
        self.identifiers: list[bool] = []
        self.ticks: list[bool] = []
        self.editable = False
        self.locked: int | None = None  # the person column: never counted

    def reset(self, names: list[str], looks: list, ticks: list[bool], editable: bool) -> None:
        self.beginResetModel()
        self.names, self.ticks, self.editable, self.locked = list(names), list(ticks), editable, None
        self.values = [", ".join(look.samples) + (", …" if look.samples else "(empty)") for look in looks]
        self.identifiers = [look.identifier for look in looks]
        self.endResetModel()

    def rowCount(self, parent=QModelIndex()):  # noqa: N802 - Qt API
        return 0 if parent.isValid() else len(self.names)

    def columnCount(self, parent=QModelIndex()):  # noqa: N802
        return 0 if parent.isValid() else len(self.HEADERS)

    def data(self, index, role=_DISPLAY):
        if not index.isValid():
            return None
        row, column = index.row(), index.column()
        if role in _TEXT_ROLES:
            if column == 0:
                return self.names[row]
            if column == 1:
                return self.values[row]
            return self.IDENTIFIER_NOTE if self.identifiers[row] else ""
        if role == _CHECK and column == 0:
            return _CHECKED if self.ticks[row] else _UNCHECKED
        if role == _TIP and column == 1:
            return self.values[row]
        if role == _TIP and column == 2 and self.identifiers[row]:
            return self.IDENTIFIER_TIP
        return None

    def setData(self, index, value, role=_EDIT):  # noqa: N802
        if not index.isValid() or index.column() != 0:
            return False
        if role == _CHECK:
            if index.row() == self.locked:
                return False
            self.ticks[index.row()] = Qt.CheckState(value) == _CHECKED
        elif role == _EDIT and self.editable:
            self.names[index.row()] = str(value).strip()
        else:
            return False
        self.dataChanged.emit(index, index, [role])
        return True

    def flags(self, index):
        if not index.isValid():
            return _NO_FLAGS
        if index.column() != 0:
            return _READ_ONLY
        flags = _READ_ONLY if index.row() == self.locked else _CHECKABLE
        return flags | _EDITABLE if self.editable else flags

    def headerData(self, section, orientation, role=Qt.DisplayRole):  # noqa: N802
        if role == Qt.DisplayRole and orientation == Qt.Horizontal and section < len(self.HEADERS):
            return self.HEADERS[section]
        return None

    def lock(self, row: int | None) -> None:
        """The person column (or None): unticked, and it cannot be ticked."""
        self.locked = row
        if row is not None and 0 <= row < len(self.ticks):
            self.ticks[row] = False
        if self.names:
            self.dataChanged.emit(self.index(0, 0), self.index(len(self.names) - 1, 0))

    # the page's and the tests' way to read and set it
    def is_ticked(self, row: int) -> bool:
        return self.ticks[row]

    def tick(self, row: int, ticked: bool = True) -> bool:
        return self.setData(self.index(row, 0), Qt.Checked if ticked else Qt.Unchecked, Qt.CheckStateRole)

    def rename(self, row: int, name: str) -> bool:
        return self.setData(self.index(row, 0), name, Qt.EditRole)

    def note(self, row: int) -> str:
        return self.data(self.index(row, 2)) or ""


class MappingPage(QWizardPage):
    """Which column is what: person/item/value, id column, attributes, count — and, for records, who one
    person is, with a few values of every column and the columns that look like identifiers."""

    def __init__(self, wizard: "ImportWizard"):
        super().__init__()
        self.owner = wizard
        self.setTitle("Which column is which?")
        layout = QVBoxLayout(self)
        self.stack = QStackedWidget()
        layout.addWidget(self.stack, 1)
        # transactions
        self.stack.addWidget(explanation("Nothing to map: each line is one person and each entry on the line is "
                                         "an item. An item repeated on a line counts once; an empty line is a "
                                         "person with no items."))
        # pairs
        pairs = QWidget()
        form = QFormLayout(pairs)
        self.person, self.item, self.value = QComboBox(), QComboBox(), QComboBox()
        form.addRow("Person column:", self.person)
        form.addRow("Item column:", self.item)
        form.addRow("Value column (optional):", self.value)
        form.addRow(explanation("With a value column, a row counts only when its value is not 0."))
        self.stack.addWidget(pairs)
        # matrix
        matrix = QWidget()
        form = QFormLayout(matrix)
        self.id_column = QComboBox()
        form.addRow("Identifier column:", self.id_column)
        form.addRow(explanation("Every other column is an item; its cells must be 0 or 1."))
        self.stack.addWidget(matrix)
        # records and cells
        records = QWidget()
        box = QVBoxLayout(records)
        box.setContentsMargins(0, 0, 0, 0)
        self.as_items = QRadioButton("One item per attribute value (e.g. \"sex=Female\"): count people per value")
        self.as_cells = QRadioButton("Cell counts over the attributes ticked below (a contingency table)")
        group = QButtonGroup(records)
        group.addButton(self.as_items)
        group.addButton(self.as_cells)
        self.count_row = QWidget()
        count_form = QFormLayout(self.count_row)
        count_form.setContentsMargins(0, 0, 0, 0)
        self.count = QComboBox()
        count_form.addRow("Count column:", self.count)
        box.addWidget(self.as_items)
        box.addWidget(self.as_cells)
        box.addWidget(self.count_row)
        # who is one person: asked in words, never assumed
        self.person_box = QWidget()
        who = QVBoxLayout(self.person_box)
        who.setContentsMargins(0, 6, 0, 6)
        self.person_question = QLabel("<b>Can one person appear on more than one row?</b>")
        who.addWidget(self.person_question)
        self.one_row = QRadioButton("No — each row is a different person")
        self.many_rows = QRadioButton("Yes — one person may have several rows (visits, admissions, purchases…); "
                                      "this column says who is who:")
        people = QButtonGroup(self.person_box)
        people.addButton(self.one_row)
        people.addButton(self.many_rows)
        self.row_person = QComboBox()
        who.addWidget(self.one_row)
        line = QHBoxLayout()
        line.addWidget(self.many_rows)
        line.addWidget(self.row_person, 1)
        who.addLayout(line)
        self.person_note = explanation("A person's rows are then taken together: they count once for each value "
                                       "they have, however many of their rows have it. The report says who one "
                                       "person is.")
        who.addWidget(self.person_note)
        box.addWidget(self.person_box)
        self.columns_label = QLabel("Columns — tick the ones to count:")
        box.addWidget(self.columns_label)
        self.columns = ColumnsModel()
        self.columns_table = QTableView()
        self.columns_table.setModel(self.columns)
        self.columns_table.verticalHeader().setVisible(False)
        self.columns_table.setWordWrap(False)  # one line a column: long values are cut with "…"
        self.columns_table.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 10)
        header = self.columns_table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeToContents)
        header.setSectionResizeMode(1, QHeaderView.Stretch)
        header.setSectionResizeMode(2, QHeaderView.ResizeToContents)
        header.setResizeContentsPrecision(100)  # widths from the first rows: a file may have thousands
        self.columns_table.setSelectionMode(QAbstractItemView.SingleSelection)
        self.columns_table.setTabKeyNavigation(False)  # Tab leaves the table (a keyboard user is not trapped)
        self.columns_table.setAccessibleName("Columns of the table: tick the ones to count")
        self.columns_table.setAccessibleDescription("Each row is a column of the file with a few of its values and, "
                                                    "if it looks like an identifier, a note")
        box.addWidget(self.columns_table, 1)
        self.names_note = explanation("This file has no header line: double-click a column's name (or press F2) to "
                                      "name it. The names are used in the release and its report.")
        box.addWidget(self.names_note)
        self.identifier_note = Banner("", "warning")
        self.identifier_note.setAccessibleName("Columns that look like identifiers")
        box.addWidget(self.identifier_note)
        box.addWidget(explanation("The domain of each attribute (its possible values) is taken from the file "
                                  "and treated as public; the report says so."))
        self.stack.addWidget(records)
        for widget, name in ((self.person, "Person column"), (self.item, "Item column"),
                             (self.value, "Value column"), (self.id_column, "Identifier column"),
                             (self.count, "Count column"), (self.as_items, "One item per attribute value"),
                             (self.as_cells, "Cell counts over attributes"),
                             (self.one_row, "Each row is a different person"),
                             (self.many_rows, "One person may appear on several rows"),
                             (self.row_person, "The column that says who is who")):
            widget.setAccessibleName(name)
        self.columns.dataChanged.connect(lambda *_: self._say_identifiers())
        self.many_rows.toggled.connect(self._people_changed)
        self.row_person.currentIndexChanged.connect(self._people_changed)
        self.as_cells.toggled.connect(self._mode_changed)
        self.fmt = "transactions"
        self.looks: list = []  # ColumnLook per column: internal, shown here only
        self.default_names: list[str] = []

    def initializePage(self) -> None:
        settings = self.owner.format_page.settings()
        self.fmt = settings["format"]
        columns = self.owner.columns
        self.stack.setCurrentIndex({"transactions": 0, "pairs": 1, "matrix": 2}.get(self.fmt, 3))
        for combo in (self.person, self.item, self.value, self.id_column, self.count, self.row_person):
            combo.clear()
        self.columns.reset([], [], [], False)
        # only the widgets of this layout are filled: a wide file has thousands of columns
        if self.fmt == "pairs":
            for k, name in enumerate(columns):
                self.person.addItem(name, k)
                self.item.addItem(name, k)
            self.person.setCurrentIndex(0)
            self.item.setCurrentIndex(min(1, len(columns) - 1))
            self.value.addItem("(none: every row counts)", None)
            for k, name in enumerate(columns):
                self.value.addItem(name, k)
        self.id_column.addItem("Detect automatically", "auto")
        self.id_column.addItem("(none: every column is an item)", None)
        if self.fmt == "matrix":
            for k, name in enumerate(columns[:ID_CHOICES]):
                self.id_column.addItem(name, k)
        count_guess = next((k for k, c in enumerate(columns) if c.strip().lower() in ("count", "n", "freq", "frequency")),
                           len(columns) - 1)
        if self.fmt in ("records", "cells"):
            for k, name in enumerate(columns):
                self.count.addItem(name, k)
            self.count.setCurrentIndex(max(0, count_guess))
            self._fill_columns(columns, count_guess)
        self.count_row.setVisible(self.fmt == "cells")
        self.as_items.setVisible(self.fmt == "records")
        self.as_cells.setVisible(self.fmt == "records")
        self.person_box.setVisible(self.fmt == "records")
        self.as_items.setChecked(True)
        self.one_row.setChecked(True)
        self._people_changed()
        self.setSubTitle({"transactions": "Transactions need no mapping.",
                          "pairs": "Say which column names the person and which the item.",
                          "matrix": "Say whether a column identifies the person.",
                          "records": "Say who one person is, and which columns to count.",
                          "cells": "Say which column holds the counts and which are attributes."}[self.fmt])

    def _fill_columns(self, columns: list[str], count_guess: int) -> None:
        """One row per column: its name (editable without a header line), a few values, a note if it looks
        like an identifier — from the file's first rows, so internal: shown here, never published."""
        _, rows = self.owner.format_page.sample(rows_for_looks(len(columns)))
        self.looks = look_at_columns(columns, rows)
        self.default_names = list(columns)
        editable = self.owner.format_page.names_editable()
        self.names_note.setVisible(editable)
        self.columns_table.setEditTriggers(QAbstractItemView.DoubleClicked | QAbstractItemView.EditKeyPressed
                                           if editable else QAbstractItemView.NoEditTriggers)
        self.columns.reset(columns, self.looks, [not look.identifier and not (self.fmt == "cells" and k == count_guess)
                                                 for k, look in enumerate(self.looks)], editable)
        self.row_person.addItems(columns)
        flagged = [k for k, look in enumerate(self.looks) if look.identifier]
        if flagged:  # a likely id column is the one that says who is who, if anyone is on several rows
            self.row_person.setCurrentIndex(flagged[0])
        self._say_identifiers()

    def _say_identifiers(self) -> None:
        """The warning above the table, with the columns' names as they are now (the steward may rename them)."""
        flagged = [self.columns.names[k] for k, flag in enumerate(self.columns.identifiers) if flag]
        names = ", ".join(f"'{n}'" for n in flagged)
        self.identifier_note.setText(
            f"<b>{names} {'looks' if len(flagged) == 1 else 'look'} like "
            f"{'an identifier' if len(flagged) == 1 else 'identifiers'}</b>: in the file's first rows nearly every "
            "row has its own value (a record number, a name, an exact amount). Such values single people out, so "
            f"{'it is' if len(flagged) == 1 else 'they are'} left unticked: tick one only if its values are public. "
            "This is worked out from the data and shown only to you; it is never written into a public file.")
        self.identifier_note.setAccessibleDescription(re.sub(r"<[^>]+>", "", self.identifier_note.text()))
        self.identifier_note.setVisible(bool(flagged))

    def _people_changed(self) -> None:
        """The person column says who is who: it is never counted (its row cannot be ticked)."""
        several = self.fmt == "records" and self.many_rows.isChecked()
        self.row_person.setEnabled(several)
        self.person_note.setVisible(several)
        self.columns.lock(self.person_column())
        self._mode_changed()

    def _mode_changed(self) -> None:
        cells = self.fmt == "cells" or self.as_cells.isChecked()
        self.columns_label.setText("Attributes — tick the ones whose cells to count:" if cells
                                   else "Columns — tick the ones whose values to count:")

    def ticked(self) -> list[int]:
        """Positions of the ticked columns."""
        return [k for k, ticked in enumerate(self.columns.ticks) if ticked]

    def column_names(self) -> list[str] | None:
        """The steward's names for the columns of a file without a header line (None: not renamed)."""
        names = list(self.columns.names)
        return names if names and names != self.default_names else None

    def person_column(self) -> int | None:
        """The column that says who is who, when one person may appear on several rows (records)."""
        if self.fmt == "records" and self.many_rows.isChecked() and self.row_person.currentIndex() >= 0:
            return self.row_person.currentIndex()
        return None

    def options(self) -> dict:
        if self.fmt == "pairs":
            options = {"person": self.person.currentData(), "item": self.item.currentData()}
            if self.value.currentData() is not None:
                options["value"] = self.value.currentData()
            return options
        if self.fmt == "matrix":
            return {"id_column": self.id_column.currentData()}
        if self.fmt not in ("records", "cells"):
            return {}
        ticked = self.ticked()
        names = self.column_names()
        options = {"column_names": names} if names is not None else {}
        if self.fmt == "cells":
            count = self.count.currentData()
            return {**options, "count": count, "attributes": [a for a in ticked if a != count] or None}
        if self.person_column() is not None:
            options["person"] = self.person_column()
        if self.as_cells.isChecked():
            return {**options, "attributes": ticked}
        return {**options, "item_columns": ticked}  # an explicit choice: the default leaves identifiers out

    def validatePage(self) -> bool:
        if self.fmt == "pairs" and self.person.currentData() == self.item.currentData():
            self.setSubTitle(error_text("The person and the item must be different columns."))
            return False
        if self.fmt in ("records", "cells"):
            try:
                if self.column_names() is not None:
                    check_column_names(self.column_names())
            except ParameterError as error:
                self.setSubTitle(error_text(str(error)))
                return False
            if self.fmt == "records" and self.as_cells.isChecked() and self.person_column() is not None:
                self.setSubTitle(error_text(CELLS_NEED_ONE_ROW))
                return False
            if not self.ticked():
                self.setSubTitle(error_text("Tick at least one column to count."))
                return False
        return True


def rows_for_looks(width: int) -> int:
    """Rows of the file's head to look at for sample values and identifiers: fewer for a very wide table
    (the page is filled in the window's own thread)."""
    return max(IDENTIFIER_MIN_VALUES, min(IDENTIFIER_SAMPLE, 400_000 // max(width, 1)))


class SummaryPage(QWizardPage):
    """Loads the file in the background (with Cancel) and shows what was read."""

    def __init__(self, wizard: "ImportWizard"):
        super().__init__()
        self.owner = wizard
        self.setTitle("Reading and checking the data")
        layout = QVBoxLayout(self)
        row = QHBoxLayout()
        self.progress = QProgressBar()
        self.progress.setRange(0, 1000)
        self.progress.setAccessibleName("Loading progress")
        self.cancel_button = QPushButton("Cancel loading")
        row.addWidget(self.progress, 1)
        row.addWidget(self.cancel_button)
        layout.addLayout(row)
        self.status = QLabel("")
        self.status.setWordWrap(True)
        layout.addWidget(self.status)
        self.problem = Banner("", "danger")
        self.problem.setVisible(False)
        layout.addWidget(self.problem)
        self.identifiers = Banner("", "warning")
        self.identifiers.setAccessibleName("Counted columns that look like identifiers")
        self.identifiers.setVisible(False)
        layout.addWidget(self.identifiers)
        self.summary = DataSummaryView(max_table_height=240)
        layout.addWidget(self.summary, 1)
        self.note = explanation("These figures describe the true data. Use them to check that the file was read "
                                "correctly — do not copy them into the declared bound or any public setting.")
        layout.addWidget(self.note)
        self.cancel_button.clicked.connect(self._cancel)
        self.task = None
        self.dataset = None

    def initializePage(self) -> None:
        self.dataset = None
        self.problem.setVisible(False)
        for widget in (self.summary, self.note, self.identifiers):
            widget.setVisible(False)
        self.progress.setValue(0)
        self.cancel_button.setEnabled(True)
        self.status.setText("Reading…")
        settings = self.owner.settings()
        fmt = settings.pop("format")
        if "sql" in settings:
            settings.pop("sql")
            url, query = self.owner.database
            settings.pop("query")
            self.task = Task(load_sql, url, query, fmt, parent=self, **settings)
        else:
            path = settings.pop("path")
            self.task = Task(load, path, format=fmt, parent=self, **settings)
        self.task.progress.connect(self._progress)
        self.task.succeeded.connect(self._loaded)
        self.task.failed.connect(self._failed)
        self.task.cancelled.connect(self._cancelled)
        self.task.finished.connect(lambda: self.cancel_button.setEnabled(False))
        self.task.start()
        self.completeChanged.emit()

    def cleanupPage(self) -> None:
        self._cancel()

    def _cancel(self) -> None:
        if self.task is not None and self.task.running:
            self.task.cancel()

    def _progress(self, fraction: float, message: str) -> None:
        self.progress.setValue(int(fraction * 1000))
        self.status.setText(message)

    def _failed(self, error, details: str) -> None:
        self.problem.setText(f"<b>The file could not be read.</b><br>{error}<br><br>Go <b>Back</b> to change the "
                             "layout or options, or choose another file.")
        self.problem.setVisible(True)
        self.status.setText("Stopped.")
        if details:
            import logging

            logging.getLogger("dpdesk.gui").error("import failed\n%s", details)

    def _cancelled(self) -> None:
        self.status.setText("Loading was cancelled. Go Back to start again.")

    def _loaded(self, dataset) -> None:
        self.dataset = dataset
        self.progress.setValue(1000)
        self.summary.show_dataset(dataset)
        self.status.setText(f"Read {dataset.describe()} as {dataset.source.get('format')}.")
        for widget in (self.summary, self.note):
            widget.setVisible(True)
        flagged = list(getattr(dataset, "likely_identifiers", ()) or ())
        if flagged:  # ticked by the steward, or in a file whose first rows the mapping page could not show
            one = len(flagged) == 1
            self.identifiers.setText(
                f"<b>{', '.join(repr(n) for n in flagged)} {'looks' if one else 'look'} like "
                f"{'an identifier' if one else 'identifiers'}</b> (nearly every one of the first rows has its own "
                f"value), and {'its' if one else 'their'} values are counted as items. If the item names are "
                "published, such values single people out: go <b>Back</b> and untick "
                f"{'it' if one else 'them'} unless {'its' if one else 'their'} values are public. "
                "(Worked out from the data: for you only.)")
        self.identifiers.setAccessibleDescription(re.sub(r"<[^>]+>", "", self.identifiers.text()))
        self.identifiers.setVisible(bool(flagged))
        self.completeChanged.emit()

    def isComplete(self) -> bool:
        return self.dataset is not None


class ImportWizard(QWizard):
    """Returns ``dataset`` and ``settings()`` (path, format and options) when accepted."""

    def __init__(self, parent=None, path: str | None = None):
        super().__init__(parent)
        self.setWindowTitle("Import data")
        self.setWizardStyle(QWizard.ModernStyle)
        self.setOption(QWizard.HaveHelpButton, False)
        self.setMinimumSize(820, 620)
        self.sniffed = None
        self.path = None
        #: (URL, query) when the data comes from a database instead of a file
        self.database: tuple[str, str] | None = None
        self.columns: list[str] = []
        self.file_page = FilePage(self)
        self.format_page = FormatPage(self)
        self.mapping_page = MappingPage(self)
        self.summary_page = SummaryPage(self)
        self.publication_page = PublicationPage(self)
        for page in (self.file_page, self.format_page, self.mapping_page, self.summary_page, self.publication_page):
            self.addPage(page)
        if path:
            self.file_page.path.setText(str(path))
        self.setButtonText(QWizard.FinishButton, "Use this data")

    @property
    def dataset(self):
        return self.summary_page.dataset

    def publication(self) -> tuple[str, object]:
        """The declared dataset name and how the published list of items is declared."""
        choice = self.publication_page.choice
        return choice.dataset_name(), choice.declaration()

    def settings(self) -> dict:
        """Where the data comes from, its layout and options (a database's URL without its password)."""
        s = self.format_page.settings()
        sniffed = self.sniffed
        if self.database is not None:
            settings = {**database_record(*self.database), "format": s["format"]}
            settings.update(self.mapping_page.options())
            return settings
        settings = {"path": str(self.path), "format": s["format"]}
        if not sniffed.binary:
            if s["format"] != "transactions" or s["delimiter"] != sniffed.delimiter:
                settings["delimiter"] = "whitespace" if s["delimiter"] is None else s["delimiter"]
            if s["encoding"] != "auto":
                settings["encoding"] = s["encoding"]
        if sniffed.kind == "xlsx":
            settings["sheet"] = s["sheet"]
            settings["header"] = s["header"]
        elif s["format"] != "transactions" and not sniffed.binary:
            settings["header"] = s["header"]
        settings.update(self.mapping_page.options())
        return settings

    def reject(self) -> None:
        self.file_page.cancel()
        self.summary_page._cancel()
        super().reject()

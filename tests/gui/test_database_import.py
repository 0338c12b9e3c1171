"""Issue 17: the import wizard reads a database query ("Read from a database…") as it reads a table file."""

import sqlite3

import numpy as np
from PySide6.QtWidgets import QDialog, QDialogButtonBox

import dpdesk
from dpdesk.gui.state import AppState
from dpdesk.gui.wizard import DatabaseDialog, ImportWizard
from dpdesk.project import Project
from tests.gui.conftest import WORK


def _plays(data_dir, tmp_path):
    """groceries as (person, item) pairs in a SQLite table; the in-memory dataset they come from."""
    memory = dpdesk.load(data_dir / "groceries.csv.gz", engine="memory")
    database = tmp_path / "shop.db"
    rows, cols = memory.matrix.nonzero()
    with sqlite3.connect(database) as connection:
        connection.execute("CREATE TABLE baskets (customer INTEGER, product TEXT)")
        connection.executemany("INSERT INTO baskets VALUES (?, ?)",
                               [(int(r), str(memory.item_labels[c])) for r, c in zip(rows, cols)])
    return memory, f"sqlite:///{database}"


def _to_format_page(qtbot, wizard):
    wizard.next()
    qtbot.waitUntil(lambda: wizard.currentPage() is wizard.format_page or wizard.file_page.problem.isVisible(),
                    timeout=WORK)


def test_a_query_goes_through_the_wizard_and_into_the_project(qtbot, data_dir, tmp_path, monkeypatch):
    memory, url = _plays(data_dir, tmp_path)
    wizard = ImportWizard(None)
    qtbot.addWidget(wizard)
    wizard.show()

    def answer(dialog):  # the steward fills in the dialog and presses OK
        assert not dialog.buttons.button(QDialogButtonBox.Ok).isEnabled()  # nothing given yet
        dialog.url_edit.setText(url)
        dialog.query_edit.setPlainText("SELECT customer, product FROM baskets")
        assert dialog.buttons.button(QDialogButtonBox.Ok).isEnabled()
        return QDialog.Accepted

    monkeypatch.setattr(DatabaseDialog, "exec", answer)
    wizard.file_page.database_button.click()
    assert wizard.file_page.path.text().startswith("database: sqlite:///")
    _to_format_page(qtbot, wizard)
    page = wizard.format_page
    assert wizard.currentPage() is page, wizard.file_page.problem.text()
    assert page.format.currentData() == "pairs" and wizard.columns == ["customer", "product"]
    assert page.table.rowCount() > 0
    enabled = {page.format.itemData(i) for i in range(page.format.count()) if page.format.model().item(i).isEnabled()}
    assert enabled == {"pairs", "records", "cells"}  # a query's result is a table
    wizard.next()  # → mapping
    wizard.next()  # → summary: loads on a worker
    qtbot.waitUntil(lambda: wizard.dataset is not None or wizard.summary_page.problem.isVisible(), timeout=WORK)
    data = wizard.dataset
    assert data is not None, wizard.summary_page.problem.text()
    assert (data.n_rows, data.nnz) == (memory.n_rows, memory.nnz)
    assert sorted(map(str, data.item_labels)) == sorted(map(str, memory.item_labels))
    settings = wizard.settings()
    assert settings["sql"] == url and settings["query"] == "SELECT customer, product FROM baskets"
    assert "path" not in settings
    # saved with the project and read again from it
    state = AppState()
    state.set_dataset(data, settings, "shop")
    project = state.to_project()
    assert project.data["sql"] == url and project.data["format"] == "pairs"
    saved = project.save(tmp_path / "shop.dpdesk")
    again = Project.load(saved).load_data()
    assert np.array_equal(np.sort(again.column_counts), np.sort(memory.column_counts))


def test_a_password_is_never_kept_and_a_bad_query_is_shown_on_the_first_page(qtbot, data_dir, tmp_path):
    _, url = _plays(data_dir, tmp_path)
    wizard = ImportWizard(None)
    qtbot.addWidget(wizard)
    wizard.show()
    wizard.file_page.use_database("postgresql://steward:s3cret@db.example/survey", "SELECT 1")
    assert "s3cret" not in wizard.file_page.path.text()
    wizard.database = ("postgresql://steward:s3cret@db.example/survey", "SELECT a, b FROM t")
    assert "s3cret" not in str(wizard.settings())
    wizard.file_page.use_database(url, "SELECT nothing FROM nowhere")
    _to_format_page(qtbot, wizard)
    assert wizard.currentPage() is wizard.file_page
    assert "the query failed" in wizard.file_page.problem.text()
    # typing a file name again leaves the database behind
    wizard.file_page.path.setText(str(data_dir / "groceries.csv.gz"))
    assert wizard.database is None


def test_the_memory_preference_is_the_budget_and_automatic_restores_it(qtbot, dpdesk_home, monkeypatch):
    from PySide6.QtCore import QSettings

    from dpdesk.data.textio import MEMORY_ENV, memory_budget
    from dpdesk.gui.preferences import MEMORY_KEY, PreferencesDialog

    monkeypatch.setenv(MEMORY_ENV, "1G")  # recorded, so that the test leaves the variable as it found it
    monkeypatch.delenv(MEMORY_ENV)
    automatic = memory_budget().limit
    settings = QSettings(str(dpdesk_home / "settings.ini"), QSettings.IniFormat)
    dialog = PreferencesDialog(settings)
    qtbot.addWidget(dialog)
    assert dialog.automatic.isChecked() and not dialog.size.isEnabled()
    dialog.fixed.setChecked(True)
    dialog.size.setValue(1.5)
    dialog.accept()
    assert settings.value(MEMORY_KEY) == "1536M"
    assert memory_budget().limit == 1536 << 20  # the loader, the engine choice and DuckDB all follow it
    again = PreferencesDialog(settings)
    qtbot.addWidget(again)
    assert again.fixed.isChecked() and abs(again.size.value() - 1.5) < 1e-9
    again.automatic.setChecked(True)
    again.accept()
    assert settings.value(MEMORY_KEY) == "" and MEMORY_ENV not in __import__("os").environ
    assert abs(memory_budget().limit - automatic) < automatic * 0.2  # half the available memory, as it moves

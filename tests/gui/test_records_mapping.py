"""Issue 31, items 6 and 12 in the import wizard: records show a few values of every column, a column that
looks like an identifier is flagged (for the steward only) and left out by default, a file without a
header line gets its columns named, and the steward says whether one person may appear on several rows."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from dpdesk.data.loader import CELLS_NEED_ONE_ROW
from dpdesk.gui.wizard import ImportWizard

from .test_import import choose, to_format_page

ADULT_NAMES = ["age", "workclass", "fnlwgt", "education", "education-num", "marital-status", "occupation",
               "relationship", "race", "sex", "capital-gain", "capital-loss", "hours-per-week", "native-country",
               "income"]
RECORDS = "Records — one row per person with attributes (e.g. census microdata)"


@pytest.fixture
def wizard_on(qtbot):
    def make(path, header: bool | None = None):
        wizard = ImportWizard(None, str(path))
        qtbot.addWidget(wizard)
        wizard.show()
        to_format_page(qtbot, wizard)
        choose(wizard.format_page.format, RECORDS)
        if header is not None:
            wizard.format_page.header.setChecked(header)
        wizard.next()
        assert wizard.currentPage() is wizard.mapping_page
        return wizard

    yield make


def rows_of(page) -> list[tuple[str, bool, str, str]]:
    """(name, ticked, values, note) of each row of the mapping page's column table."""
    model = page.columns_table.model()
    return [(model.data(model.index(k, 0)), model.data(model.index(k, 0), Qt.CheckStateRole) == Qt.Checked,
             model.data(model.index(k, 1)), model.data(model.index(k, 2))) for k in range(model.rowCount())]


def load(qtbot, wizard):
    wizard.next()
    qtbot.waitUntil(lambda: wizard.dataset is not None or wizard.summary_page.problem.isVisible(), timeout=60_000)
    assert wizard.dataset is not None, wizard.summary_page.problem.text()
    return wizard.dataset


def test_adult_shows_its_values_flags_fnlwgt_and_leaves_it_out(qtbot, wizard_on, data_dir):
    wizard = wizard_on(data_dir / "adult.data.gz")
    page = wizard.mapping_page
    rows = rows_of(page)
    assert len(rows) == 15
    # a few values of each column, from the file's first rows
    assert rows[0][2].startswith("39, 50, 38") and rows[9][2].startswith("Male, Female")
    # fnlwgt (column 3): flagged as an identifier and not ticked; every other column ticked
    flagged = [k for k, row in enumerate(rows) if row[3]]
    assert flagged == [2] and "identifier" in rows[2][3] and not rows[2][1]
    assert all(row[1] for k, row in enumerate(rows) if k != 2)
    assert page.identifier_note.isVisibleTo(wizard) and "'column 3'" in page.identifier_note.text()
    assert "only to you" in page.identifier_note.text()
    # no header line: the steward names the columns
    assert page.names_note.isVisibleTo(wizard)
    for k, name in enumerate(ADULT_NAMES):
        assert page.columns.rename(k, name)
    assert "'fnlwgt' looks like an identifier" in page.identifier_note.text()  # named as the steward names it
    assert page.one_row.isChecked()  # asked, with the answer "each row is a different person" shown
    dataset = load(qtbot, wizard)
    labels = set(map(str, dataset.item_labels))
    assert "sex=Female" in labels and "age=39" in labels
    assert not any(label.startswith(("fnlwgt=", "column ")) for label in labels)
    settings = wizard.settings()
    assert settings["column_names"] == ADULT_NAMES and 2 not in settings["item_columns"]
    assert len(settings["item_columns"]) == 14 and "person" not in settings
    assert not wizard.summary_page.identifiers.isVisibleTo(wizard)


def test_a_ticked_identifier_is_said_again_after_loading(qtbot, wizard_on, data_dir):
    wizard = wizard_on(data_dir / "adult.data.gz")
    assert wizard.mapping_page.columns.tick(2)  # the steward's explicit choice
    dataset = load(qtbot, wizard)
    assert any(str(label).startswith("column 3=") for label in dataset.item_labels)
    assert wizard.summary_page.identifiers.isVisibleTo(wizard)
    assert "'column 3'" in wizard.summary_page.identifiers.text()
    assert 2 in wizard.settings()["item_columns"]


def visits(path, people: int = 30, visits_each: int = 3):
    """Hospital visits: several rows per patient (a patient id, a ward, a diagnosis)."""
    lines = ["patient,ward,diagnosis"]
    for person in range(people):
        for visit in range(visits_each):
            lines.append(f"P{person:03d},{'ABC'[(person + visit) % 3]},{['flu', 'asthma', 'fracture'][person % 3]}")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_several_rows_per_person_are_taken_together(qtbot, wizard_on, tmp_path):
    wizard = wizard_on(visits(tmp_path / "visits.csv"), header=True)
    page = wizard.mapping_page
    rows = rows_of(page)
    assert [row[0] for row in rows] == ["patient", "ward", "diagnosis"]
    assert not page.names_note.isVisibleTo(wizard)  # the file names its columns
    assert not page.row_person.isEnabled()
    page.many_rows.setChecked(True)
    assert page.row_person.isEnabled() and page.person_note.isVisibleTo(wizard)
    choose(page.row_person, "patient")
    model = page.columns
    assert not model.is_ticked(0) and not model.flags(model.index(0, 0)) & Qt.ItemIsUserCheckable
    assert not model.tick(0)  # the person column is never counted
    dataset = load(qtbot, wizard)
    assert dataset.n_rows == 30  # people, not visits
    assert set(dataset.row_counts.tolist()) <= {2, 3, 4}  # each ward and the diagnosis once per patient
    assert not any(str(label).startswith("patient=") for label in dataset.item_labels)
    settings = wizard.settings()
    assert settings["person"] == 0 and settings["item_columns"] == [1, 2]


def test_cell_counts_with_several_rows_per_person_are_refused_in_words(qtbot, wizard_on, tmp_path):
    wizard = wizard_on(visits(tmp_path / "visits.csv"), header=True)
    page = wizard.mapping_page
    page.as_cells.setChecked(True)
    page.many_rows.setChecked(True)
    wizard.next()
    assert wizard.currentPage() is page  # nothing was read
    assert CELLS_NEED_ONE_ROW in page.subTitle()
    page.one_row.setChecked(True)
    dataset = load(qtbot, wizard)
    assert dataset.kind == "cells"


def test_two_columns_with_one_name_are_refused(qtbot, wizard_on, data_dir):
    wizard = wizard_on(data_dir / "adult.data.gz")
    page = wizard.mapping_page
    page.columns.rename(0, "age")
    page.columns.rename(1, "age")
    wizard.next()
    assert wizard.currentPage() is page and "both named 'age'" in page.subTitle()

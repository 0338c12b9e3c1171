"""The import wizard never freezes (issue 18): the file is looked at and read on workers, with
Cancel; Excel, SPSS, Stata and SAS files go through every page; damaged files are one clear line.

What these tests check does not depend on the machine's speed or load (issue 31): the work runs on a
worker (Next returns while it runs), progress arrives as the worker's own signal, and Cancel is
pressed while the worker is held at a known point (tests.gui.conftest.hold), so it always finds the
work running. How long the event loop may stall while a file is read is measured by
benchmarks/bench_responsiveness.py, not asserted here.
"""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import Qt

from dpdesk.gui import wizard as wizard_module

from dpdesk.gui.wizard import PREVIEW_COLUMNS, ImportWizard

from ..data.survey_files import KINDS, LABELLED, expected_items, write
from tests.gui.conftest import WORK


def big_fimi(path, rows: int, seed: int = 5) -> None:
    """Baskets shaped like kosarak (skewed lengths, one of 2,000 items, Zipf-like items)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    rng = np.random.default_rng(seed)
    items = 20_000
    labels = pa.array([str(i) for i in range(1, items + 1)])
    cdf = np.cumsum(1.0 / np.arange(1, items + 1) ** 0.75)
    cdf /= cdf[-1]
    with open(path, "wb") as handle:
        for start in range(0, rows, 1 << 18):
            n = min(1 << 18, rows - start)
            lengths = np.clip(np.rint(np.exp(rng.normal(1.55, 1.05, n))), 1, 2_000).astype(np.int64)
            if start == 0:
                lengths[0] = 2_000
            ids = np.minimum(np.searchsorted(cdf, rng.random(int(lengths.sum()))), items - 1)
            offsets = pa.array(np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32))
            lines = pc.binary_join(pa.ListArray.from_arrays(offsets, labels.take(pa.array(ids))), " ")
            handle.write(("\n".join(lines.to_pylist()) + "\n").encode())


@pytest.fixture
def wizard_for(qtbot):
    def make(path):
        wizard = ImportWizard(None, str(path))
        qtbot.addWidget(wizard)
        wizard.show()
        return wizard

    yield make


def to_format_page(qtbot, wizard) -> None:
    wizard.next()
    qtbot.waitUntil(lambda: wizard.currentPage() is wizard.format_page or wizard.file_page.problem.isVisible(),
                    timeout=WORK)
    assert wizard.currentPage() is wizard.format_page, wizard.file_page.problem.text()


def choose(combo, text: str) -> None:
    index = combo.findText(text)
    assert index >= 0, f"{text!r} not among {[combo.itemText(i) for i in range(combo.count())]}"
    combo.setCurrentIndex(index)


def test_a_large_file_is_read_on_a_worker_and_cancel_stops_it(qtbot, wizard_for, tmp_path, hold):
    path = tmp_path / "large.dat"
    big_fimi(path, 1_500_000)
    wizard = wizard_for(path)
    wizard.next()
    assert wizard.currentPage() is wizard.file_page and wizard.file_page.looking  # on a worker, not in Next
    qtbot.waitUntil(lambda: wizard.currentPage() is wizard.format_page, timeout=WORK)
    # the preview comes from the head: the 2,000-item first basket shows its first columns only
    assert wizard.format_page.table.columnCount() == PREVIEW_COLUMNS + 1
    assert wizard.format_page.table.rowCount() == 20
    wizard.next()
    held = hold(wizard_module, "load", at_progress=True)  # the read waits at its first progress report
    wizard.next()  # → summary: reads the whole file on a worker
    page = wizard.summary_page
    assert page.task.running  # Next returned while the worker reads
    held.wait_reached()
    qtbot.mouseClick(page.cancel_button, Qt.LeftButton)
    held.release()  # the read goes on, sees the cancel at its next check and stops
    qtbot.waitUntil(lambda: not page.task.running, timeout=WORK)
    assert wizard.dataset is None and not page.isComplete()
    assert "cancelled" in page.status.text()
    # Back and Next again: this time it is read to the end, its progress shown as it goes
    wizard.back()
    shown = []
    wizard.next()
    page.task.progress.connect(lambda fraction, _message: shown.append(fraction))
    qtbot.waitUntil(lambda: wizard.dataset is not None or page.problem.isVisible(), timeout=WORK)
    assert wizard.dataset is not None, page.problem.text()
    assert wizard.dataset.n_rows == 1_500_000
    assert shown and page.progress.value() == page.progress.maximum()


def test_cancel_while_the_file_is_looked_at(qtbot, wizard_for, tmp_path, hold):
    path = write(tmp_path, "xlsx")
    wizard = wizard_for(path)
    held = hold(wizard_module, "look")  # the look waits before it starts: Cancel always finds it running
    wizard.next()
    page = wizard.file_page
    held.wait_reached()
    assert page.looking and not page.isComplete()  # Next is off while it looks
    qtbot.mouseClick(page.cancel_button, Qt.LeftButton)
    held.release()  # the look starts with the cancel already asked for, and stops at its first check
    qtbot.waitUntil(lambda: not page.looking, timeout=WORK)
    assert wizard.currentPage() is page and "Stopped" in page.status.text()
    assert page.isComplete() and not page.cancel_button.isVisible()
    to_format_page(qtbot, wizard)  # Next again looks again, to the end


@pytest.mark.parametrize("kind", KINDS)
def test_each_format_through_the_wizard(qtbot, wizard_for, tmp_path, kind):
    path = write(tmp_path, kind)
    wizard = wizard_for(path)
    to_format_page(qtbot, wizard)
    page = wizard.format_page
    assert page.format.currentData() == "records"
    assert "person" in [page.table.horizontalHeaderItem(k).text() for k in range(page.table.columnCount())]
    assert page.table.rowCount() == 5 and page.table.item(2, 0).text() == "Łukasz"
    assert not page.delimiter.isEnabled() and not page.encoding.isEnabled()
    assert page.sheet.isVisibleTo(wizard) == (kind == "xlsx")
    assert page.header.isEnabled() == (kind == "xlsx")
    if kind == "xlsx":
        assert page.sheet.currentText() == "Données"  # the first sheet that holds data
        assert "Excel" in page.detected.text()
    # pairs: the person and the item by name
    choose(page.format, "Pairs — one line per (person, item), e.g. user,movie")
    wizard.next()
    mapping = wizard.mapping_page
    choose(mapping.person, "person")
    choose(mapping.item, "item")
    wizard.next()
    qtbot.waitUntil(lambda: wizard.dataset is not None or wizard.summary_page.problem.isVisible(), timeout=WORK)
    assert wizard.dataset is not None, wizard.summary_page.problem.text()
    assert sorted(map(str, wizard.dataset.item_labels)) == expected_items(kind)
    settings = wizard.settings()
    assert settings["person"] == 0 and settings["item"] == 1 and "delimiter" not in settings
    assert ("sheet" in settings) == (kind == "xlsx")
    # back to records: labels and missing values as in the command line
    wizard.back()
    wizard.back()
    choose(page.format, "Records — one row per person with attributes (e.g. census microdata)")
    wizard.next()
    wizard.next()
    qtbot.waitUntil(lambda: wizard.dataset is not None or wizard.summary_page.problem.isVisible(), timeout=WORK)
    labels = set(map(str, wizard.dataset.item_labels))
    assert "region=Zürich" in labels and "region=" in labels
    if kind in LABELLED:
        assert "sex=Female" in labels


def test_a_missing_item_names_its_row_in_the_wizard(qtbot, wizard_for, tmp_path):
    path = write(tmp_path, "sav")
    wizard = wizard_for(path)
    to_format_page(qtbot, wizard)
    choose(wizard.format_page.format, "Pairs — one line per (person, item), e.g. user,movie")
    wizard.next()
    choose(wizard.mapping_page.person, "person")
    choose(wizard.mapping_page.item, "region")
    wizard.next()
    qtbot.waitUntil(lambda: wizard.summary_page.problem.isVisible(), timeout=WORK)
    text = wizard.summary_page.problem.text()
    assert "survey.sav, row 4, column 'region': the item is missing" in text


@pytest.mark.parametrize("kind", KINDS)
def test_a_damaged_file_is_named_on_the_first_page(qtbot, wizard_for, tmp_path, kind):
    good = write(tmp_path, kind).read_bytes()
    path = tmp_path / f"damaged.{kind}"
    path.write_bytes(good[:64] + bytes(range(256)) * 8)
    wizard = wizard_for(path)
    wizard.next()
    qtbot.waitUntil(lambda: wizard.file_page.problem.isVisible(), timeout=WORK)
    text = wizard.file_page.problem.text()
    assert wizard.currentPage() is wizard.file_page
    assert text.startswith(f"damaged.{kind}: ") and "damaged" in text and "\n" not in text
    assert "Traceback" not in text


def test_choosing_another_sheet_guesses_its_layout_again(qtbot, wizard_for, tmp_path):
    import openpyxl

    book = openpyxl.Workbook()
    first = book.active
    first.title = "Baskets"
    for row in (["pain", "vin", "fromage"], ["pain"], ["vin", "café"]):
        first.append(row)
    second = book.create_sheet("Table")
    second.append(["customer", "product"])
    second.append(["Zoë", "café"])
    second.append(["Ola", "thé"])
    path = tmp_path / "shop.xlsx"
    book.save(path)
    wizard = wizard_for(path)
    to_format_page(qtbot, wizard)
    page = wizard.format_page
    assert page.sheet.currentText() == "Baskets" and page.format.currentData() == "transactions"
    choose(page.sheet, "Table")
    assert page.format.currentData() == "pairs" and page.header.isChecked()
    assert [page.table.horizontalHeaderItem(k).text() for k in range(2)] == ["customer", "product"]
    wizard.next()
    wizard.next()
    qtbot.waitUntil(lambda: wizard.dataset is not None or wizard.summary_page.problem.isVisible(), timeout=WORK)
    assert sorted(map(str, wizard.dataset.item_labels)) == ["café", "thé"]
    assert wizard.settings()["sheet"] == "Table"


def test_a_file_over_the_engine_threshold_goes_to_duckdb_from_the_wizard_and_can_be_cancelled(
        qtbot, wizard_for, tmp_path, monkeypatch, hold):
    """``load(engine="auto")`` sends large files to DuckDB: through the wizard too, with progress and Cancel."""
    import dpdesk.engine as engine

    monkeypatch.setattr(engine, "IN_MEMORY_BYTES_PER_BYTE", 1 << 40)  # every file here is "too large for memory"
    rng = np.random.default_rng(3)
    rows = 3_000_000
    path = tmp_path / "pairs.csv"
    people, items = rng.integers(0, 400_000, rows), rng.integers(0, 5_000, rows)
    with open(path, "w") as handle:
        handle.write("person,item\n")
        handle.write("\n".join(f"{p},{i}" for p, i in zip(people.tolist(), items.tolist())) + "\n")
    wizard = wizard_for(path)
    to_format_page(qtbot, wizard)
    assert wizard.format_page.format.currentData() == "pairs"
    wizard.next()
    held = hold(wizard_module, "load", at_progress=True)  # held at its first progress report: DuckDB is at work
    wizard.next()
    page = wizard.summary_page
    held.wait_reached()
    qtbot.mouseClick(page.cancel_button, Qt.LeftButton)
    held.release()
    qtbot.waitUntil(lambda: not page.task.running, timeout=WORK)
    assert wizard.dataset is None and "cancelled" in page.status.text()
    wizard.back()
    wizard.next()
    qtbot.waitUntil(lambda: wizard.dataset is not None or page.problem.isVisible(), timeout=WORK)
    data = wizard.dataset
    assert data is not None, page.problem.text()
    assert getattr(data, "engine", None) is not None  # read by the engine, not into memory
    assert data.n_rows == np.unique(people).size and page.summary.isVisible()


def test_a_plot_with_forty_thousand_rows_of_numbers_fills_its_table_at_once(qtbot, monkeypatch):
    """The "Numbers" table of a plot is lazy: 41,270 items (a kosarak-size release) do not freeze the window.
    What is asserted is what makes it fast, not a time: only the rows in view are ever formatted."""
    from dpdesk.gui import widgets
    from dpdesk.gui.widgets import PlotPanel

    formatted = set()
    real = widgets._fmt

    def counted(value):
        if isinstance(value, str) and value.startswith("item "):
            formatted.add(value)
        return real(value)

    monkeypatch.setattr(widgets, "_fmt", counted)
    panel = PlotPanel("true vs released")
    qtbot.addWidget(panel)
    panel.show()
    rows = [[f"item {j}", float(j), float(j) + 0.5] for j in range(41_270)]
    panel.set_table(["item", "true count", "released count"], rows)
    qtbot.mouseClick(panel.table_button, Qt.LeftButton)  # shown: only the visible rows are drawn
    qtbot.waitExposed(panel.table)
    qtbot.waitUntil(lambda: bool(formatted))  # the rows in view were drawn
    assert panel.table.isVisible() and panel.table.rowCount() == 41_270 and panel.table.columnCount() == 3
    # the rows in view and the first hundred (which size the columns), not 41,270 (a widget per cell
    # froze the window for seconds)
    assert len(formatted) <= 200, len(formatted)
    assert panel.table.text(41_269, 0) == "item 41269" and panel.table.text(2, 2) == "2.5"


def test_opening_a_project_reads_its_data_on_a_worker_with_cancel(qtbot, tmp_path, dpdesk_home, hold):
    from dpdesk.gui.main_window import MainWindow
    from dpdesk.project import Project

    path = tmp_path / "large.dat"
    big_fimi(path, 1_000_000)
    project = Project(data={"path": str(path), "format": "transactions", "options": {}}).save(tmp_path / "p.dpdesk")
    window = MainWindow()
    qtbot.addWidget(window)
    window.show()
    held = hold(Project, "load_data", at_progress=True)  # the read waits at its first progress report
    window.open_project(str(project))
    assert window.state.dataset is None and window.project_task.running  # returned at once
    held.wait_reached()
    window.project_task.cancel()
    held.release()
    qtbot.waitUntil(lambda: not window.project_task.running, timeout=WORK)
    assert window.state.dataset is None and "cancelled" in window.statusBar().currentMessage()
    window.open_project(str(project))
    qtbot.waitUntil(lambda: window.state.dataset is not None, timeout=WORK)
    assert window.state.dataset.n_rows == 1_000_000 and window.state.project_path.name == "p.dpdesk"
    window.state.dirty = False

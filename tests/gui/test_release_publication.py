"""The Release page and the export dialog (issue #16), on the real widgets: the proposed statement of
how the mechanism was chosen follows what the steward did on the Compare page, the report gives both
the statement and what dpdesk observed, whole numbers or raw values are chosen before the noise is
drawn, and the export-done dialog lists every file and opens the folder and the report."""

import numpy as np
import pandas as pd
import pytest
from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QDesktopServices

from dpdesk.gui.release_page import ExportDialog
from dpdesk.workflow import CHOSEN_ON_STANDIN, CHOSEN_ON_TRUE_DATA, DEFAULT_CHOSEN
from tests.gui.test_app import on_true_data as choose_true_data
from tests.gui.conftest import WORK


@pytest.fixture
def window(chess_window):
    return chess_window


def compare(window, qtbot, dialogs, *, on_true_data: bool):
    page = window.compare_page
    if on_true_data:
        choose_true_data(page)
    else:
        page.on_synthetic.setChecked(True)
    page.epsilons.setText("0.5, 1")
    page.repeats.setValue(2)
    before = len(window.state.comparison_runs)
    page.run()
    qtbot.waitUntil(lambda: len(window.state.comparison_runs) > before or bool(dialogs), timeout=WORK)
    assert not dialogs, dialogs
    qtbot.waitUntil(lambda: not page.task.running, timeout=WORK)


def release(window, qtbot, dialogs, mechanism_id="gs-r"):
    page = window.release_page
    page.mechanism.setCurrentIndex(page.mechanism.findData(mechanism_id))
    page.confirm = lambda text: True
    page.run()
    qtbot.waitUntil(lambda: window.state.release is not None or bool(dialogs), timeout=WORK)
    assert not dialogs, dialogs
    return window.state.release


def test_after_comparing_on_the_true_data_the_default_says_so(window, qtbot, dialogs):
    page = window.release_page
    window.steps.setCurrentRow(4)
    assert page.chosen.currentText() == DEFAULT_CHOSEN and "no comparison was run" in page.observed.text()
    window.steps.setCurrentRow(2)
    compare(window, qtbot, dialogs, on_true_data=True)
    window.steps.setCurrentRow(4)  # go to Release
    assert page.chosen.currentText() == CHOSEN_ON_TRUE_DATA
    assert "compared mechanisms on the true data: gs-r, lpa at ε = 0.5, 1" in page.observed.text()
    published = release(window, qtbot, dialogs)
    assert published.report["choice"]["stated"] == CHOSEN_ON_TRUE_DATA
    assert "on the true data" in published.report["choice"]["observed"]
    # whole numbers by default; GS-R's random groups hide which item is large: no margin, and the page says why
    assert np.all(published.values == np.round(published.values)) and np.all(published.values >= 0)
    model = page.table.model()
    assert model.columnCount() == 2 and model.rowCount() == 75 and published.margin95 is None
    assert "with no margin of error: the groups are random" in page.status.text()


def test_a_release_with_margins_shows_them_in_the_preview(window, qtbot, dialogs):
    page = window.release_page
    window.steps.setCurrentRow(4)
    published = release(window, qtbot, dialogs, mechanism_id="lpa")
    model = page.table.model()
    assert model.headerData(2, Qt.Horizontal) == "± margin (95%)" and published.margin95 is not None
    assert "each with its margin of error" in page.status.text()


def test_a_stand_in_comparison_and_the_stewards_own_words(window, qtbot, dialogs):
    page = window.release_page
    compare(window, qtbot, dialogs, on_true_data=False)
    assert page.chosen.currentText() == CHOSEN_ON_STANDIN
    assert "on a stand-in (synthetic data made from declared facts)" in page.observed.text()
    page.chosen.setEditText("picked by the board in March")  # the steward's words stay ...
    compare(window, qtbot, dialogs, on_true_data=True)
    assert page.chosen.currentText() == "picked by the board in March"  # ... after another comparison
    assert "on the true data" in page.observed.text() and "on a stand-in" in page.observed.text()
    page.raw.setChecked(True)
    published = release(window, qtbot, dialogs)
    assert published.report["choice"]["stated"] == "picked by the board in March"
    assert published.report["publication"]["form"] == "raw values"
    assert not np.all(published.values == np.round(published.values))  # GS-R's group averages, as they are
    assert window.state.release_choice["raw"] is True  # saved with the project for `dpdesk release --project`


def test_export_done_lists_every_file_and_opens_the_folder_and_the_report(window, qtbot, dialogs, tmp_path,
                                                                           monkeypatch):
    release(window, qtbot, dialogs)
    opened = []
    monkeypatch.setattr(QDesktopServices, "openUrl", staticmethod(lambda url: opened.append(url) or True))
    dialog = ExportDialog(window.state, window)
    qtbot.addWidget(dialog)
    out = tmp_path / ("a folder with a rather long name, so that the paths need more than one line " * 2).strip()
    dialog.folder.setText(str(out))
    dialog.parquet.setChecked(True)
    dialog.internal.setChecked(True)
    dialog.show()
    assert not dialog.written_box.isVisible()
    dialog.start()
    qtbot.waitUntil(lambda: bool(dialog.written) or bool(dialogs), timeout=WORK)
    assert not dialogs, dialogs
    qtbot.waitUntil(lambda: not dialog.task.running, timeout=WORK)
    assert dialog.written_box.isVisible() and len(dialog.written) == 7
    listed = dialog.files_list.text().splitlines()
    assert listed == [str(p) for p in dialog.written]  # every path in full, one a line
    assert dialog.files_list.wordWrap()
    qtbot.mouseClick(dialog.open_folder_button, Qt.LeftButton)
    qtbot.mouseClick(dialog.open_report_button, Qt.LeftButton)
    assert opened == [QUrl.fromLocalFile(str(out)), QUrl.fromLocalFile(str(out / "privacy-report.pdf"))]
    table = pd.read_csv(out / "release.csv", dtype={"item": str})
    assert list(table.columns) == ["item", "noisy_count", "margin95"]
    # without a report ticked there is nothing to open
    other = ExportDialog(window.state, window)
    qtbot.addWidget(other)
    other.folder.setText(str(tmp_path / "files only"))
    other.html.setChecked(False)
    other.pdf.setChecked(False)
    other.start()
    qtbot.waitUntil(lambda: bool(other.written) or bool(dialogs), timeout=WORK)
    qtbot.waitUntil(lambda: not other.task.running, timeout=WORK)
    assert not other.open_report_button.isEnabled() and other.open_folder_button.isEnabled()

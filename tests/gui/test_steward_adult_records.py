"""Issue 31, end to end: a steward imports UCI Adult as records (a file without a header line), names its
columns, keeps the column the wizard flags as an identifier (fnlwgt) out, states the item names are public,
and publishes: release.csv holds no identifier column and the report uses the names and says who one
person is."""

import html
import re

import pandas as pd
from PySide6.QtCore import Qt

from dpdesk.gui.main_window import MainWindow
from dpdesk.gui.release_page import ExportDialog
from dpdesk.gui.wizard import ImportWizard

from .test_records_mapping import ADULT_NAMES


def test_a_steward_publishes_adult_records_without_the_identifier(qtbot, dpdesk_home, tmp_path, monkeypatch,
                                                                  dialogs, data_dir):
    from dpdesk.gui.app import make_app

    make_app()
    window = MainWindow()
    qtbot.addWidget(window)
    window.show()

    def click_through(wizard):
        qtbot.addWidget(wizard)
        wizard.show()
        wizard.next()
        qtbot.waitUntil(lambda: wizard.currentPage() is wizard.format_page, timeout=30_000)
        assert wizard.format_page.format.currentData() == "records" and not wizard.format_page.header.isChecked()
        wizard.next()  # → the columns: fnlwgt flagged and unticked by default
        page = wizard.mapping_page
        columns = page.columns
        assert not columns.is_ticked(2) and "identifier" in columns.note(2)
        for k, name in enumerate(ADULT_NAMES):
            assert columns.rename(k, name)
        assert page.one_row.isChecked()  # one row is one person in Adult
        wizard.next()  # → summary
        qtbot.waitUntil(lambda: wizard.dataset is not None, timeout=60_000)
        wizard.next()  # → who and what: the attribute values are public
        choice = wizard.publication_page.choice
        choice.name.setText("US adults, census 1994")
        choice.buttons["public-data"].setChecked(True)
        assert wizard.publication_page.isComplete()
        return True

    monkeypatch.setattr(ImportWizard, "exec", click_through)
    assert window.import_data(str(data_dir / "adult.data.gz"))
    state = window.state
    assert state.dataset is not None and not dialogs
    assert not any(str(label).startswith(("fnlwgt=", "column ")) for label in state.dataset.item_labels)

    # Configure: 14 values a person (one per counted column), the recommendation
    window.steps.setCurrentRow(1)
    page = window.configure_page
    page.typical.setValue(14)
    advice = page.advice
    assert advice is not None
    qtbot.mouseClick(page.recommendation.use_button, Qt.LeftButton)
    recommended = advice.mechanism

    window.steps.setCurrentRow(4)
    release_page = window.release_page
    assert release_page.mechanism.currentData() == recommended
    release_page.confirm = lambda text: True
    qtbot.mouseClick(release_page.run_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: state.release is not None or bool(dialogs), timeout=120_000)
    assert not dialogs, dialogs

    dialog = ExportDialog(state, window)
    qtbot.addWidget(dialog)
    out = tmp_path / "adult-release"
    dialog.folder.setText(str(out))
    dialog.start()
    qtbot.waitUntil(lambda: bool(dialog.written) or bool(dialogs), timeout=60_000)
    assert not dialogs, dialogs
    qtbot.waitUntil(lambda: not dialog.task.running, timeout=10_000)

    table = pd.read_csv(out / "release.csv", dtype=str, keep_default_na=False)
    columns = {item.split("=", 1)[0] for item in table["item"]}
    assert columns == set(ADULT_NAMES) - {"fnlwgt"}  # every named column but the identifier
    assert "age=39" in set(table["item"]) and "sex=Female" in set(table["item"])
    report = html.unescape(re.sub(r"<[^>]+>", " ", (out / "privacy-report.html").read_text(encoding="utf-8")))
    assert "One person is one row of the data file" in report
    assert "values in the data file's columns are public" in report and "product catalogue" not in report
    assert "column 3" not in report and "fnlwgt" not in report
    state.dirty = False

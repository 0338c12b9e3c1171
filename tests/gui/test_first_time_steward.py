"""Issue 19, end to end: a steward who has never heard of DP gets from the sample file to a published
release with the app's own guidance only — the sample action, the recommended mechanism, a named
ε, the default comparison (a stand-in), the release and the export."""

import json
import math

import numpy as np
import pandas as pd
from PySide6.QtCore import Qt

from dpdesk.gui.main_window import MainWindow
from dpdesk.gui.release_page import ExportDialog
from dpdesk.gui.wizard import ImportWizard
from dpdesk.paths import sample_path
from tests.gui.conftest import WORK


def test_a_first_time_steward_publishes_the_sample(qtbot, dpdesk_home, tmp_path, monkeypatch, dialogs):
    from dpdesk.gui.app import make_app

    make_app()
    window = MainWindow()
    qtbot.addWidget(window)
    window.show()

    # ① the app's sample action opens the import wizard on the sample; the steward clicks through it
    def click_through(wizard):
        qtbot.addWidget(wizard)
        wizard.show()
        assert wizard.file_page.path.text() == str(sample_path())
        wizard.next()  # the first page looks at the file on a worker, then moves on → format
        qtbot.waitUntil(lambda: wizard.currentPage() is wizard.format_page, timeout=WORK)
        wizard.next()  # → mapping
        wizard.next()  # → summary: loads in the background
        qtbot.waitUntil(lambda: wizard.dataset is not None, timeout=WORK)
        wizard.next()  # → who and what: a product list is public
        wizard.publication_page.choice.buttons["public-data"].setChecked(True)
        assert wizard.publication_page.isComplete()
        return True

    monkeypatch.setattr(ImportWizard, "exec", click_through)
    window.data_page.sample_button.click()
    state = window.state
    assert state.dataset is not None and state.dataset.n_items == 169 and not dialogs

    # ② Configure: what the steward knows, a named level of privacy, then the recommendation
    window.steps.setCurrentRow(1)
    page = window.configure_page
    page.typical.setValue(4)  # "a typical basket holds about 4 products": a declaration
    qtbot.mouseClick(page.epsilon.preset_buttons["Balanced"], Qt.LeftButton)
    assert abs(state.epsilon - math.log(2)) < 1e-4
    assert "67/33" in page.epsilon.odds.text()
    advice = page.advice
    assert advice is not None and f"({advice.mechanism})" in page.recommendation.title.text()
    qtbot.mouseClick(page.recommendation.use_button, Qt.LeftButton)
    recommended = advice.mechanism
    assert state.configurations[recommended].enabled
    expected_params = dict(advice.params)
    assert state.params_for(recommended) == expected_params

    # ③ Compare on what is offered: the stand-in, without any question about the true data
    window.steps.setCurrentRow(2)
    compare = window.compare_page
    compare.confirm_true_data = lambda text: (_ for _ in ()).throw(AssertionError("asked about the true data"))
    assert compare.on_synthetic.isChecked()
    compare.epsilons.setText("0.4, 0.69, 1.1")
    compare.repeats.setValue(3)
    qtbot.mouseClick(compare.run_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: state.comparison is not None or bool(dialogs), timeout=WORK)
    assert not dialogs, dialogs
    qtbot.waitUntil(lambda: not compare.task.running, timeout=WORK)
    assert recommended in set(state.comparison.results["mechanism"])
    assert state.comparison_runs and not any(run["on_true_data"] for run in state.comparison_runs)

    # ⑤ Release: the recommended mechanism at the chosen ε, and how it was chosen
    window.steps.setCurrentRow(4)
    release_page = window.release_page
    assert release_page.mechanism.currentData() == recommended
    assert release_page.epsilon.value() == round(math.log(2), 4)
    assert release_page.chosen.currentText() == advice.chosen_how
    confirmations = []
    release_page.confirm = lambda text: confirmations.append(text) or True
    qtbot.mouseClick(release_page.run_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: state.release is not None or bool(dialogs), timeout=WORK)
    assert not dialogs, dialogs
    release = state.release
    assert len(confirmations) == 1 and release.mechanism == recommended and not release.exploration
    assert "67/33" in window.ledger_label.text()  # the total spent, said as odds

    # the export dialog writes the files to publish
    dialog = ExportDialog(state, window)
    qtbot.addWidget(dialog)
    out = tmp_path / "groceries-release"
    dialog.folder.setText(str(out))
    dialog.start()
    qtbot.waitUntil(lambda: bool(dialog.written) or bool(dialogs), timeout=WORK)
    assert not dialogs, dialogs
    qtbot.waitUntil(lambda: not dialog.task.running, timeout=WORK)

    # publishable: whole numbers of at least 0, each with its margin of error
    table = pd.read_csv(out / "release.csv", dtype={"item": str})
    assert list(table.columns) == ["item", "noisy_count", "margin95"] and len(table) == 169
    counts = table["noisy_count"].to_numpy()
    assert np.all(counts == np.round(counts)) and np.all(counts >= 0)
    assert np.all(table["margin95"] > 0)
    published = json.loads((out / "release.json").read_text())
    assert published  # the same release as JSON
    # the public report says how it was chosen and that the comparison ran on a stand-in
    report = (out / "privacy-report.html").read_text(encoding="utf-8")
    assert "on a stand-in (synthetic data made from declared facts)" in report
    assert "compared mechanisms on the true data" not in report
    assert "Recommended by dpdesk from declared facts only" in report
    state.dirty = False

"""The desktop application driven with pytest-qt (offscreen): the steward's whole path."""

import time

import numpy as np
import pandas as pd
import pytest
from PySide6.QtCore import Qt, QTimer

import dpdesk
from dpdesk.gui.main_window import MainWindow
from dpdesk.gui.release_page import ExportDialog
from dpdesk.data.domain import DomainDeclaration
from dpdesk.gui.wizard import ImportWizard


@pytest.fixture
def window(qtbot, dpdesk_home):
    from dpdesk.gui.app import make_app

    make_app()  # the app's own settings (pytest-qt's qapp already exists)
    w = MainWindow()
    qtbot.addWidget(w)
    w.show()
    yield w
    for page in (w.compare_page, w.release_page):
        if page.task is not None and page.task.running:
            page.task.cancel()
            page.task.wait(5000)
    w.state.dirty = False


def run_wizard(qtbot, path, **changes):
    wizard = ImportWizard(None, str(path))
    qtbot.addWidget(wizard)
    wizard.show()
    wizard.next()  # file → format: the file's head is looked at on a worker, then the page moves on
    qtbot.waitUntil(lambda: wizard.currentPage() is wizard.format_page, timeout=30_000)
    for name, value in changes.items():
        combo = getattr(wizard.format_page, name)
        combo.setCurrentIndex(combo.findData(value))
    wizard.next()  # → mapping
    wizard.next()  # → summary: loads in the background
    return wizard


def tick(window, mechanism_ids):
    """Tick exactly these mechanisms on the Configure page, as the steward would."""
    for mechanism_id, row in window.configure_page.rows.items():
        row.check.setChecked(mechanism_id in mechanism_ids)


def on_true_data(page):
    """Choose the true data on the Compare page, saying yes to the one question it asks."""
    page.confirm_true_data = lambda text: True
    page.on_true.setChecked(True)


def test_end_to_end_import_compare_release_export(window, qtbot, data_dir, tmp_path, dialogs):
    wizard = run_wizard(qtbot, data_dir / "retail.dat.gz")
    qtbot.waitUntil(lambda: wizard.dataset is not None, timeout=30_000)
    assert wizard.summary_page.summary.table.rowCount() == 7
    assert wizard.dataset.summary()["rows"] == 88162
    # the last question: who the data is about, and where the published item list comes from
    wizard.next()
    page = wizard.publication_page
    assert wizard.currentPage() is page and not page.isComplete()  # no silent default
    assert page.choice.dataset_name() == "retail"
    page.choice.buttons["public-data"].setChecked(True)
    assert page.isComplete()
    name, declaration = wizard.publication()
    assert name == "retail" and declaration.kind == "public-data"
    window.state.set_dataset(wizard.dataset, wizard.settings(), name, declaration)
    assert "retail" in window.windowTitle() and "88,162" in window.windowTitle()

    # configure: three mechanisms, the declared bound, ε
    window.steps.setCurrentRow(1)
    tick(window, {"lpa", "gs", "dpsense-s"})
    window.configure_page.bound.setValue(20)
    window.configure_page.epsilon.set_value(np.log(2))
    assert [c.mechanism for c in window.state.enabled()] == ["lpa", "gs", "dpsense-s"]
    assert window.state.params_for("lpa") == {"bound": 20}
    assert "95% of counts lie within" in window.configure_page.expected.text()

    # compare on the true data, streaming into the plots
    window.steps.setCurrentRow(2)
    page = window.compare_page
    on_true_data(page)
    page.epsilons.setText("0.5, 1")
    page.repeats.setValue(2)
    qtbot.mouseClick(page.run_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: window.state.comparison is not None or bool(dialogs), timeout=120_000)
    assert not dialogs, dialogs
    qtbot.waitUntil(lambda: not page.task.running, timeout=10_000)
    comparison = window.state.comparison
    assert len(comparison.results) == 3 * 2 * 2
    # the plot holds exactly the runner's means
    summary = comparison.summary[comparison.summary.metric == "mae"]
    plotted = {name: (x, y) for name, x, y in page.error_panel._series}
    # the mechanisms, and the two reference lines (issue 29), flat at the comparison's values
    references = {f"{label} (reference)": value for label, value in comparison.reference_values("mae").items()}
    assert set(plotted) == {"lpa", "gs", "dpsense-s", *references} and len(references) == 2
    for label, group in summary.groupby("label"):
        group = group.sort_values("epsilon")
        x, y = plotted[label]
        assert np.allclose(x, group["epsilon"]) and np.allclose(y, group["mean"])
    for label, value in references.items():
        assert np.allclose(plotted[label][1], value)
    assert page.error_panel.table.rowCount() == 6 + 2 * 2
    assert "true data" in page.banner.text()
    page.tabs.setCurrentIndex(1)
    assert page.truth_panel._series  # true vs noisy drawn for the first example
    png = tmp_path / "error.png"
    page.error_panel.export(png)
    svg = page.error_panel.export(tmp_path / "error.svg")
    assert png.stat().st_size > 1000 and "<svg" in svg.read_text()[:500]

    # release with secure randomness, recorded in the ledger
    window.steps.setCurrentRow(4)
    release_page = window.release_page
    release_page.mechanism.setCurrentIndex(release_page.mechanism.findData("gs"))
    release_page.chosen.setCurrentIndex(2)
    asked = []
    release_page.confirm = lambda text: asked.append(text) or True
    qtbot.mouseClick(release_page.run_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: window.state.release is not None or bool(dialogs), timeout=60_000)
    assert not dialogs, dialogs
    release = window.state.release
    assert release.mechanism == "gs" and not release.exploration
    assert release.report["ledger"]["entry"] >= 2
    assert len(asked) == 1 and "ε = 0.6931" in asked[0] and "cap is ε = 3" in asked[0]
    assert release.report["domain"]["how"] == "public-data"
    assert release_page.table.model().rowCount() == 16470
    assert "ε used 0.693" in window.ledger_label.text()

    # export: files and reports
    dialog = ExportDialog(window.state, window)
    qtbot.addWidget(dialog)
    out = tmp_path / "out"
    dialog.folder.setText(str(out))
    dialog.parquet.setChecked(True)
    dialog.internal.setChecked(True)
    dialog.start()
    qtbot.waitUntil(lambda: bool(dialog.written) or bool(dialogs), timeout=60_000)
    assert not dialogs, dialogs
    names = {p.name for p in dialog.written}
    assert names == {"release.csv", "release.parquet", "release.json", "privacy-report.html", "privacy-report.pdf",
                     f"entry-{release.report['ledger']['entry']}-internal-report-NOT-FOR-PUBLICATION.html",
                     f"entry-{release.report['ledger']['entry']}-internal-report-NOT-FOR-PUBLICATION.pdf"}
    assert sorted(p.name for p in out.iterdir()) == ["privacy-report.html", "privacy-report.pdf", "release.csv",
                                                     "release.json", "release.parquet"]  # internal report elsewhere
    table = pd.read_csv(out / "release.csv", dtype={"item": str})
    assert len(table) == 16470 and np.allclose(table["noisy_count"], release.values)
    report = (out / "privacy-report.html").read_text()
    assert "comparing mechanisms on the true data" in report
    assert (out / "privacy-report.pdf").read_bytes()[:4] == b"%PDF"


def test_cancel_stops_quickly_and_ui_stays_responsive(window, qtbot, data_dir):
    data = dpdesk.load(data_dir / "retail.dat.gz")
    window.state.set_dataset(data, {"path": str(data_dir / "retail.dat.gz"), "format": "transactions"})
    window.state.set_bound(20)
    tick(window, {"lpa", "gs"})
    page = window.compare_page
    on_true_data(page)
    page.epsilons.setText("0.1, 0.5, 1, 2")
    page.repeats.setValue(5000)
    gaps = []
    last = [time.perf_counter()]

    def probe():
        now = time.perf_counter()
        gaps.append(now - last[0])
        last[0] = now

    timer = QTimer()
    timer.setInterval(20)
    timer.timeout.connect(probe)
    page.run()
    assert page.task.running
    timer.start()
    qtbot.wait(2500)  # the event loop keeps ticking while the worker runs
    timer.stop()
    assert len(page.rows) > 0  # partial results streamed in
    # nearly every tick on time, and never a freeze; the strict "longest stall ≤ 100 ms" is
    # measured by benchmarks/ (a timed assertion on a shared machine would fail on load alone)
    typical, longest = np.percentile(gaps, 95) - 0.020, max(gaps) - 0.020
    assert typical < 0.100, f"the event loop was late by {typical * 1000:.0f} ms on 5% of its ticks"
    assert longest < 0.500, f"event loop blocked for {longest * 1000:.0f} ms"
    started = time.perf_counter()
    qtbot.mouseClick(page.cancel_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: not page.task.running, timeout=5000)
    assert time.perf_counter() - started < 1.0
    assert window.state.comparison is not None and window.state.comparison.cancelled
    assert page.run_button.isEnabled()


def test_broken_file_shows_the_line(window, qtbot, tmp_path):
    broken = tmp_path / "matrix.csv"
    broken.write_text("id,a,b,c\n1,0,1,1\n2,1,2,0\n")
    wizard = run_wizard(qtbot, broken, format="matrix")  # the steward picks the layout
    qtbot.waitUntil(lambda: wizard.summary_page.problem.isVisible(), timeout=10_000)
    text = wizard.summary_page.problem.text()
    assert "matrix.csv" in text and "line 3" in text and "'2' is not 0 or 1" in text
    assert wizard.dataset is None and not wizard.summary_page.isComplete()
    # a missing file is caught on the first page
    missing = ImportWizard(None, str(tmp_path / "nope.csv"))
    qtbot.addWidget(missing)
    missing.show()
    missing.next()
    qtbot.waitUntil(lambda: missing.file_page.problem.isVisible(), timeout=10_000)
    assert missing.currentPage() is missing.file_page and "does not exist" in missing.file_page.problem.text()


def test_errors_appear_in_dialogs(window, qtbot, tmp_path, monkeypatch, dialogs):
    bad = tmp_path / "bad.dpdesk"
    bad.write_text("{not json")
    window.open_project(str(bad))
    assert dialogs and dialogs[0][0] == "warning" and "cannot be read" in dialogs[0][2]
    # an unexpected exception in a callback is logged and shown, and the window survives
    from dpdesk.gui.app import install_excepthook
    import sys

    install_excepthook(window)
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        sys.excepthook(*sys.exc_info())
    finally:
        sys.excepthook = sys.__excepthook__
    box = dialogs[-1]
    assert box[0] == "box" and "boom" in box[2] and "nothing was published" in box[2]
    from dpdesk.paths import user_data_dir

    assert "RuntimeError: boom" in (user_data_dir() / "dpdesk.log").read_text()
    assert window.isVisible()


def test_project_round_trip(window, qtbot, data_dir, tmp_path):
    data = dpdesk.load(data_dir / "chess.dat.gz")
    window.state.set_dataset(data, {"path": str(data_dir / "chess.dat.gz"), "format": "transactions"})
    window.state.set_bound(37)
    tick(window, {"lpa", "alpa"})
    window.state.set_epsilon(0.5)
    window.state.release_choice = {"mechanism": "lpa", "epsilon": 0.5, "params": {"bound": 37}}
    window.state.set_publication("chess endgames", DomainDeclaration("public-data"))
    path = tmp_path / "chess.dpdesk"
    window.state.project_path = path
    window.save_project()
    assert path.exists()
    other = MainWindow()
    qtbot.addWidget(other)
    other.open_project(str(path))  # the data file is read on a worker
    qtbot.waitUntil(lambda: other.state.dataset is not None, timeout=30_000)
    assert other.state.dataset.fingerprint == data.fingerprint
    assert other.state.bound == 37 and abs(other.state.epsilon - 0.5) < 1e-12
    assert [c.mechanism for c in other.state.enabled()] == ["lpa", "alpa"]
    assert other.state.dataset_name == "chess endgames" and other.state.domain_declaration.kind == "public-data"
    other.state.dirty = False
    # the same project runs headless
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "dpdesk.cli", "release", "--project", str(path), "--out",
                          str(tmp_path / "headless")], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert len(pd.read_csv(tmp_path / "headless" / "release.csv")) == 75
    from dpdesk.privacy.ledger import Ledger

    assert Ledger.open().status("chess endgames").spent == 0.5


def test_many_qt_calls_do_not_crash(qtbot):
    # docs/QT-NOTES.md: PySide6 6.12 dies after a few thousand void-returning calls on Python 3.11
    from PySide6.QtWidgets import QProgressBar

    bar = QProgressBar()
    qtbot.addWidget(bar)
    bar.setRange(0, 100)
    for i in range(20_000):
        bar.setValue(i % 100)
    assert bar.value() == 99


def test_cell_summaries_compare_and_release(window, qtbot, data_dir, tmp_path, dialogs):
    cells = dpdesk.load(data_dir / "adult.data.gz", format="records", attributes=[1, 3, 5, 6, 7, 8, 9])
    window.state.set_dataset(cells, {"path": str(data_dir / "adult.data.gz"), "format": "records",
                                     "attributes": [1, 3, 5, 6, 7, 8, 9]})
    assert not window.configure_page.bound_box.isVisible()  # no declared Δ for cell counts
    tick(window, {"geometric", "filter2"})
    window.state.set_configuration("filter2", target_size=7000, nonzeros=7000)
    page = window.compare_page
    on_true_data(page)
    page.epsilons.setText("1")
    page.repeats.setValue(1)
    page.run()
    qtbot.waitUntil(lambda: window.state.comparison is not None or bool(dialogs), timeout=120_000)
    assert not dialogs, dialogs
    qtbot.waitUntil(lambda: not page.task.running, timeout=10_000)
    keys = [page.metric.itemData(i) for i in range(page.metric.count())]
    assert {"summary_size", "range_mae", "subset_mae"} <= set(keys)
    page.metric.setCurrentIndex(page.metric.findData("range_mae"))
    assert {name for name, _, _ in page.error_panel._series} == {"geometric", "filter2"}
    page.example_choice.setCurrentIndex(page.example_choice.findText("filter2", Qt.MatchStartsWith))
    choices = [page.diagnostic_choice.itemText(i) for i in range(page.diagnostic_choice.count())]
    assert any("range size" in c for c in choices) and any("summary size" in c for c in choices)
    page.diagnostic_choice.setCurrentIndex(page.diagnostic_choice.count() - 1)
    assert page.detail_panel._series and "summary" in page.detail_panel.title_label.text().lower()
    release_page = window.release_page
    release_page.mechanism.setCurrentIndex(release_page.mechanism.findData("filter2"))
    window.state.set_publication("adult census", DomainDeclaration("public-data", cells=True))
    release_page.confirm = lambda text: True
    release_page.run()
    qtbot.waitUntil(lambda: window.state.release is not None or bool(dialogs), timeout=60_000)
    assert not dialogs, dialogs
    assert window.state.release.cells is not None and release_page.table.model().rowCount() > 0
    dialog = ExportDialog(window.state, window)
    qtbot.addWidget(dialog)
    dialog.folder.setText(str(tmp_path / "cells"))
    dialog.pdf.setChecked(False)
    dialog.start()
    qtbot.waitUntil(lambda: bool(dialog.written) or bool(dialogs), timeout=60_000)
    assert not dialogs, dialogs
    table = pd.read_csv(tmp_path / "cells" / "release.csv")
    assert list(table.columns)[:2] == ["cell", "label"] and len(table) == len(window.state.release.cells)

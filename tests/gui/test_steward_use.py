"""The app under a steward's real use (issue 31): the mouse wheel never changes a value the steward
did not focus; a new dataset never inherits the declarations of the one before; a decimal comma is
read as one, and an ambiguous number is refused in words; Ctrl+R runs the page's own work; "Use the
recommendation" leaves only mechanisms that can run; quitting during a comparison asks, and "Keep
working" keeps it running.

Workers are held at a known point (tests.gui.conftest.HeldComparison), never raced against a clock."""

from __future__ import annotations

import math

import pytest
from PySide6.QtCore import QLocale, QPoint, QPointF, Qt
from PySide6.QtGui import QWheelEvent
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QMessageBox

import dpdesk
from dpdesk.data.domain import DomainDeclaration
from dpdesk.errors import ParameterError
from dpdesk.gui.compare_page import format_epsilons, parse_epsilons
from dpdesk.gui.widgets import DecimalSpinBox, decimal_reading
from tests.gui.conftest import WORK



def wheel(widget, steps: int = -3) -> QWheelEvent:
    """A mouse wheel turned over the middle of ``widget`` (negative: towards the steward, scrolling down)."""
    centre = QPointF(widget.rect().center())
    event = QWheelEvent(centre, QPointF(widget.mapToGlobal(centre.toPoint())), QPoint(0, 0),
                        QPoint(0, 120 * steps), Qt.NoButton, Qt.NoModifier, Qt.NoScrollPhase, False)
    QApplication.sendEvent(widget, event)
    return event


# --- 1. the wheel --------------------------------------------------------------------------------

def test_the_wheel_over_an_unfocused_control_changes_nothing_and_scrolls_on(chess_window, qtbot):
    window = chess_window
    window.show_page("configure")
    page = window.configure_page
    epsilon, slider, bound = page.epsilon.spin, page.epsilon.slider, page.bound
    qtbot.mouseClick(page.recommendation.use_button, Qt.LeftButton)
    assert "In use" in page.recommendation.use_button.text()
    window.steps.setFocus()  # the focus is elsewhere, as when the steward scrolls to read
    before = (window.state.epsilon, window.state.bound, slider.value())
    for control in (epsilon, slider, bound, page.epsilon.accuracy.answer):
        assert control.focusPolicy() == Qt.StrongFocus  # a wheel event never gives them the focus
        event = wheel(control)
        assert not event.isAccepted()  # offered to the page, which scrolls
    assert (window.state.epsilon, window.state.bound, slider.value()) == before
    assert "In use" in page.recommendation.use_button.text()  # the recommendation is still the one in use
    # the page itself scrolls with the wheel (its scroll area hands the wheel to its scroll bar)
    area = window.pages.currentWidget()
    area.verticalScrollBar().setValue(0)
    wheel(area.viewport(), -3)
    assert area.verticalScrollBar().value() > 0
    # a control the steward clicked or tabbed to takes the wheel as usual
    epsilon.setFocus()
    qtbot.waitUntil(epsilon.hasFocus)
    assert wheel(epsilon, 1).isAccepted()
    assert window.state.epsilon == pytest.approx(before[0] + epsilon.singleStep(), abs=1e-9)


def test_the_wheel_over_a_combo_box_of_the_release_page_changes_nothing(chess_window, qtbot):
    window = chess_window
    window.show_page("release")
    combo = window.release_page.mechanism
    window.steps.setFocus()
    chosen = combo.currentData()
    wheel(combo, 3)
    wheel(combo, -3)
    assert combo.currentData() == chosen


# --- 2. a new dataset starts from its own declarations ---------------------------------------------

class FinishedWizard:
    """The import wizard as the steward leaves it after Finish (what MainWindow.import_data reads)."""

    def __init__(self, data, path, name, declaration):
        self.dataset, self._settings = data, {"path": str(path), "format": "transactions"}
        self._publication = (name, declaration)

    def exec(self):
        return True

    def settings(self):
        return dict(self._settings)

    def publication(self):
        return self._publication


def import_through_the_wizard(window, monkeypatch, data, path, name, declaration=None):
    from dpdesk.gui import main_window

    finished = FinishedWizard(data, path, name, declaration or DomainDeclaration("public-data"))
    monkeypatch.setattr(main_window, "ImportWizard", lambda parent, path=None: finished)
    assert window.import_data(str(path))


def test_a_new_dataset_starts_from_its_own_declarations(chess_window, qtbot, monkeypatch, data_dir, dialogs):
    window, state = chess_window, chess_window.state
    configure, release = window.configure_page, window.release_page
    configure.typical.setValue(5)
    window.show_page("release")
    release.epsilon.setValue(2.0)  # one ε: typed on the Release page, shown on Configure too
    assert state.epsilon == pytest.approx(2.0) and configure.epsilon.value() == pytest.approx(2.0)
    release.mechanism.setCurrentIndex(release.mechanism.findData("lpa"))
    release.confirm = lambda text: True
    release.run()
    qtbot.waitUntil(lambda: state.release is not None or bool(dialogs), timeout=WORK)
    assert not dialogs, dialogs
    assert "release 1 of chess (ledger entry #2)" in release.status.text()
    # another dataset: nothing of chess's declarations, release or page comes with it
    retail = dpdesk.load(data_dir / "retail.dat.gz")
    import_through_the_wizard(window, monkeypatch, retail, data_dir / "retail.dat.gz", "retail shoppers")
    assert window.current_page() == "data"
    assert state.bound is None and state.typical_row_length is None and state.recommendation_used is None
    assert state.epsilon == pytest.approx(math.log(2), abs=1e-4)
    assert configure.bound.value() == 0 and configure.bound.text() == "not set" and configure.typical.value() == 0
    assert configure.epsilon.value() == pytest.approx(0.6931) and release.epsilon.value() == pytest.approx(0.6931)
    assert release.status.text() == "" and state.release is None and not release.export_button.isEnabled()
    assert [c.mechanism for c in state.enabled()] == ["lpa", "gs", "dpsense-s"]  # the defaults, not chess's ticks
    assert not release.run_button.isEnabled()  # Δ is not declared for retail: nothing is ready to run
    # back to chess: its own declarations come back
    chess = dpdesk.load(data_dir / "chess.dat.gz")
    import_through_the_wizard(window, monkeypatch, chess, data_dir / "chess.dat.gz", "chess")
    assert (state.bound, state.typical_row_length) == (37, 5.0) and state.epsilon == pytest.approx(2.0)
    assert {c.mechanism for c in state.enabled()} == {"lpa", "gs-r"}
    assert configure.bound.value() == 37 and release.epsilon.value() == pytest.approx(2.0)


def test_a_project_brings_its_own_declarations_not_those_of_the_dataset_before(chess_window, qtbot, tmp_path,
                                                                            data_dir):
    from dpdesk.gui.main_window import MainWindow
    from dpdesk.project import Project

    project = Project(data={"path": str(data_dir / "retail.dat.gz"), "format": "transactions", "options": {}},
                      release={"dataset": "retail"}).save(tmp_path / "retail.dpdesk")
    window = chess_window
    window.configure_page.typical.setValue(5)
    window.open_project(str(project))
    qtbot.waitUntil(lambda: window.state.dataset is not None and window.state.dataset_name == "retail",
                    timeout=WORK)
    state = window.state
    assert state.bound is None and state.typical_row_length is None
    assert state.epsilon == pytest.approx(math.log(2), abs=1e-4)
    assert isinstance(window, MainWindow)


# --- 3. numbers in the steward's locale ------------------------------------------------------------

def epsilon_box(qtbot, locale: str) -> DecimalSpinBox:
    """A number box as the ε boxes are, in ``locale``, holding 0.6931."""
    box = DecimalSpinBox()
    qtbot.addWidget(box)
    box.setLocale(QLocale(locale))
    box.setDecimals(4)
    box.setRange(0.01, 10)
    box.setValue(0.6931)
    return box


def type_into(box, typed: str) -> None:
    """Select what the box shows, type ``typed`` over it and press Enter, as the steward does."""
    box.lineEdit().selectAll()
    QTest.keyClicks(box, typed)
    QTest.keyClick(box, Qt.Key_Return)


@pytest.mark.parametrize("locale, typed, value", [
    ("C", "1,5", 1.5), ("C", "1.5", 1.5), ("C", "0,25", 0.25), ("en_US", "1,5", 1.5),
    ("de_DE", "1,5", 1.5), ("de_DE", "1.5", 1.5), ("de_DE", "0,25", 0.25), ("fr_FR", "1,5", 1.5)])
def test_a_decimal_comma_or_point_is_read_as_one(qtbot, locale, typed, value):
    box = epsilon_box(qtbot, locale)
    type_into(box, typed)
    assert box.value() == pytest.approx(value) and box.refusal == ""


@pytest.mark.parametrize("locale, typed", [("C", "1,000"), ("en_US", "2,500"), ("de_DE", "1.000")])
def test_a_number_with_two_readings_is_refused_in_words(qtbot, locale, typed):
    box = epsilon_box(qtbot, locale)
    refusals = []
    box.refused.connect(refusals.append)
    type_into(box, typed)
    assert box.value() == pytest.approx(0.6931)  # kept, not 1.0 on the way
    assert refusals and "can be read two ways" in refusals[0] and typed in refusals[0]


def test_decimal_reading():
    assert decimal_reading("1,5", ".", ",") == ("1.5", None)
    assert decimal_reading("1.5", ",", ".") == ("1,5", None)
    assert decimal_reading("1.5", ".", ",") == ("1.5", None)
    assert decimal_reading("12,25", ".", ",") == ("12.25", None)
    text, refusal = decimal_reading("1,000", ".", ",")
    assert text == "1,000" and "1000" in refusal and "1.000" in refusal


def test_epsilon_typed_with_a_comma_on_configure_and_release(chess_window, qtbot):
    window = chess_window
    window.show_page("configure")
    spin = window.configure_page.epsilon.spin
    spin.setLocale(QLocale("C"))
    spin.setFocus()
    type_into(spin, "1,5")
    assert window.state.epsilon == pytest.approx(1.5)
    window.show_page("release")
    release = window.release_page.epsilon
    assert release.value() == pytest.approx(1.5)
    release.setLocale(QLocale("C"))
    type_into(release, "0,8")
    assert window.state.epsilon == pytest.approx(0.8) and window.configure_page.epsilon.value() == pytest.approx(0.8)


def test_the_compare_list_reads_the_locale_and_refuses_a_comma_with_two_readings():
    assert parse_epsilons("0.1, 0.4, 0.6931, 1.1, 2") == [0.1, 0.4, 0.6931, 1.1, 2.0]
    assert parse_epsilons("0.1,0.4; 2") == [0.1, 0.4, 2.0]  # the points are decimals: the comma separates
    assert parse_epsilons("0,1; 0,5; 1,5", ",") == [0.1, 0.5, 1.5]
    assert parse_epsilons("1,5, 2", ",") == [1.5, 2.0]
    assert parse_epsilons("ln 3; 1") == [1.0, pytest.approx(math.log(3))]
    for text in ("1,5", "0,5, 1"):
        with pytest.raises(ParameterError, match="can be read two ways"):
            parse_epsilons(text, ".")
    assert format_epsilons([0.1, 0.6931], ",") == "0,1; 0,6931"
    assert parse_epsilons(format_epsilons([0.1, 0.6931, 2.0], ","), ",") == [0.1, 0.6931, 2.0]


def test_compare_refuses_1_comma_5_in_words_and_runs_nothing(chess_window, dialogs):
    page = chess_window.compare_page
    page.setLocale(QLocale("C"))
    page.epsilons.setText("1,5")
    page.run()
    assert page.task is None
    assert dialogs and "can be read two ways" in dialogs[-1][2]


# --- 4. Ctrl+R -----------------------------------------------------------------------------------

def press_ctrl_r(window, qtbot):
    window.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window)
    QTest.keyClick(window, Qt.Key_R, Qt.ControlModifier)


def test_ctrl_r_runs_the_release_on_the_release_page_and_the_comparison_elsewhere(chess_window, qtbot, dialogs,
                                                                                  held_comparison):
    window = chess_window
    asked = []
    window.release_page.confirm = lambda text: asked.append(text) or False  # the steward says Cancel
    window.show_page("release")
    assert window.release_page.run_button.isEnabled()
    press_ctrl_r(window, qtbot)
    assert len(asked) == 1 and "Release chess" in asked[0]  # the release's own confirmation
    assert window.compare_page.task is None and window.current_page() == "release"
    window.show_page("compare")
    press_ctrl_r(window, qtbot)
    assert len(asked) == 1 and window.compare_page.task is not None and window.compare_page.task.running
    held_comparison.started.wait(60)
    window.compare_page.cancel()
    held_comparison.release()
    qtbot.waitUntil(lambda: not window.compare_page.task.running, timeout=WORK)


def test_ctrl_r_on_a_release_page_that_cannot_run_says_why(chess_window, qtbot):
    window = chess_window
    window.state.set_bound(None)  # LPA needs Δ
    window.show_page("release")
    asked = []
    window.release_page.confirm = lambda text: asked.append(text) or False
    assert not window.release_page.run_button.isEnabled()
    press_ctrl_r(window, qtbot)
    assert not asked and "cannot run yet" in window.statusBar().currentMessage()


# --- 5. the recommendation leaves mechanisms that can run -----------------------------------------

def test_use_the_recommendation_on_a_cell_table_leaves_only_mechanisms_that_run(chess_window, qtbot, data_dir,
                                                                              dialogs, held_comparison):
    window = chess_window
    cells = dpdesk.load(data_dir / "adult.data.gz", format="records", attributes=[1, 3, 5])
    window.state.set_dataset(cells, {"path": str(data_dir / "adult.data.gz"), "format": "records",
                                     "attributes": [1, 3, 5]}, "adult", DomainDeclaration("public-data", cells=True))
    page = window.configure_page
    window.show_page("configure")
    # the defaults ticked for a table: the filters need settings, and the list says so before Compare does
    unready = {m for m, row in page.rows.items() if row.unready.isVisible()}
    assert unready == {"filter2", "filter-priority"}
    assert "needs either" in page.rows["filter2"].unready.toolTip()
    advice = page.advice
    assert advice is not None
    qtbot.mouseClick(page.recommendation.use_button, Qt.LeftButton)
    ticked = {c.mechanism for c in window.state.enabled()}
    assert advice.mechanism in ticked and ticked <= {advice.mechanism, *(a.mechanism for a in advice.alternatives)}
    for mechanism_id in ticked:
        assert page.not_ready(mechanism_id) is None, mechanism_id
        assert not page.rows[mechanism_id].unready.isVisible()
    compare = window.compare_page
    compare.epsilons.setText("1")
    compare.repeats.setValue(1)
    compare.run()
    assert not dialogs, dialogs
    assert not compare.skipped.isVisible()  # nothing left out
    held_comparison.release()
    qtbot.waitUntil(lambda: not compare.task.running, timeout=WORK)
    assert not dialogs, dialogs
    assert set(window.state.comparison.results["mechanism"]) == ticked


def test_nothing_is_recommended_before_anything_is_declared(chess_window):
    window = chess_window
    window.state.set_bound(None)
    page = window.configure_page
    assert page.advice is None and not page.recommendation.use_button.isEnabled()
    assert "ALPA" not in page.recommendation.title.text()
    window.configure_page.typical.setValue(4)
    assert page.advice is not None


# --- 9. quitting during a comparison ---------------------------------------------------------------

def test_keep_working_keeps_the_comparison_running(chess_window, qtbot, held_comparison):
    window = chess_window
    asked = []
    window.ask_before_quitting = lambda what: asked.append(what) or False  # "Keep working"
    page = window.compare_page
    page.run()
    held_comparison.started.wait(60)
    assert not window.close()
    assert asked == [["a comparison"]]
    assert window.isVisible() and page.task.running and not page.task.token.cancelled
    held_comparison.release()
    qtbot.waitUntil(lambda: not page.task.running, timeout=WORK)
    assert not window.state.comparison.cancelled  # it ran to the end


def test_cancel_in_the_save_question_stops_nothing(chess_window, qtbot, held_comparison):
    window = chess_window
    window.ask_before_quitting = lambda what: True
    window.ask_to_save = lambda: QMessageBox.Cancel
    window.state.dirty = True
    page = window.compare_page
    page.run()
    held_comparison.started.wait(60)
    assert not window.close()
    assert window.isVisible() and page.task.running and not page.task.token.cancelled
    held_comparison.release()
    qtbot.waitUntil(lambda: not page.task.running, timeout=WORK)


def test_stop_and_quit_returns_at_once_and_closes_when_the_comparison_has_stopped(chess_window, qtbot,
                                                                                 held_comparison, monkeypatch):
    from dpdesk.gui.workers import Task

    def waited(*_args):
        raise AssertionError("the GUI thread waited for a worker: the window froze until it stopped")

    monkeypatch.setattr(Task, "wait", waited)
    window = chess_window
    window.ask_before_quitting = lambda what: True
    window.state.dirty = False
    page = window.compare_page
    page.run()
    held_comparison.started.wait(60)
    assert not window.close()  # returns at once (the worker is held): the event loop is never blocked
    assert window.isVisible() and page.task.token.cancelled
    assert "closes when it has stopped" in window.statusBar().currentMessage()
    held_comparison.release()  # the worker sees the cancel at its next check
    qtbot.waitUntil(lambda: not window.isVisible(), timeout=WORK)
    assert not page.task.running


def test_using_a_recommendation_sets_exactly_its_settings(qapp):
    """AHP's median variant, then plain AHP: the median (and the lean arm's share of ε) must not stay behind, or the
    release would run a mechanism the recommendation never measured."""
    from dpdesk.gui.state import AppState

    state = AppState()
    state.use_recommendation("ahp", {"bound": 20, "small_counts": "median", "threshold": "adaptive",
                                     "counts_share": 0.1}, "lean", ())
    assert state.configurations["ahp"].params == {"small_counts": "median", "threshold": "adaptive",
                                                  "counts_share": 0.1}
    state.use_recommendation("ahp", {"bound": 20}, "plain", ())
    assert state.configurations["ahp"].params == {} and state.bound == 20

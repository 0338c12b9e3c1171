"""The Compare page is safe by default (issue 19): a stand-in unless the steward agrees, once per
dataset, to read the true data; legends beside the plot, not on the curves; bands that stay
readable on log axes; error axes that say lower is better."""

import numpy as np
import pytest
from PySide6.QtCore import Qt

import dpdesk
from dpdesk.data.domain import DomainDeclaration
from dpdesk.gui.compare_page import LOG_BAND_FLOOR_RATIO, STANDIN_BANNER, TRUE_DATA_BANNER, log_band, mean_interval
from tests.gui.test_app import tick


@pytest.fixture
def window(chess_window):
    chess_window.steps.setCurrentRow(2)
    return chess_window


def run(window, qtbot, dialogs):
    page = window.compare_page
    before = len(window.state.comparison_runs)
    page.epsilons.setText("0.1, 1")
    page.repeats.setValue(2)
    qtbot.mouseClick(page.run_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: len(window.state.comparison_runs) > before or bool(dialogs), timeout=120_000)
    assert not dialogs, dialogs
    qtbot.waitUntil(lambda: not page.task.running, timeout=10_000)


def test_the_default_is_a_stand_in(window, qtbot, dialogs, monkeypatch):
    page = window.compare_page
    monkeypatch.setattr(page, "confirm_true_data", lambda text: pytest.fail("asked about the true data"))
    assert page.on_synthetic.isChecked() and not page.on_true.isChecked()
    assert page.banner.text() == STANDIN_BANNER
    run(window, qtbot, dialogs)
    assert window.state.comparison_runs[-1]["on_true_data"] is False
    assert window.state.comparison_dataset is not window.state.dataset
    assert "on a stand-in" in window.release_page.observed.text()


def test_choosing_the_true_data_asks_once_per_dataset(window, qtbot, data_dir, monkeypatch):
    page = window.compare_page
    questions = []
    answers = iter([False, True])
    monkeypatch.setattr(page, "confirm_true_data", lambda text: questions.append(text) or next(answers))
    qtbot.mouseClick(page.on_true, Qt.LeftButton)  # "Keep the stand-in"
    assert len(questions) == 1 and page.on_synthetic.isChecked() and page.banner.text() == STANDIN_BANNER
    assert "reads the true data" in questions[0] and "public report will record" in questions[0]
    qtbot.mouseClick(page.on_true, Qt.LeftButton)  # "Use the true data"
    assert len(questions) == 2 and page.on_true.isChecked() and page.banner.text() == TRUE_DATA_BANNER
    qtbot.mouseClick(page.on_synthetic, Qt.LeftButton)
    qtbot.mouseClick(page.on_true, Qt.LeftButton)
    assert len(questions) == 2 and page.on_true.isChecked()  # asked once for this dataset
    # another dataset starts from the stand-in again, and asks again
    other = dpdesk.load(data_dir / "mushroom.dat.gz")
    window.state.set_dataset(other, {"path": str(data_dir / "mushroom.dat.gz")}, "mushrooms",
                             DomainDeclaration("public-data"))
    assert page.on_synthetic.isChecked()
    monkeypatch.setattr(page, "confirm_true_data", lambda text: questions.append(text) or True)
    qtbot.mouseClick(page.on_true, Qt.LeftButton)
    assert len(questions) == 3 and page.on_true.isChecked()


def test_a_true_data_comparison_is_recorded_for_the_report(window, qtbot, dialogs, monkeypatch):
    page = window.compare_page
    monkeypatch.setattr(page, "confirm_true_data", lambda text: True)
    qtbot.mouseClick(page.on_true, Qt.LeftButton)
    run(window, qtbot, dialogs)
    assert window.state.comparison_runs[-1]["on_true_data"] is True
    assert "on the true data" in window.release_page.observed.text()


def test_legends_sit_beside_the_plot_area(window, qtbot, dialogs):
    run(window, qtbot, dialogs)
    page = window.compare_page
    for panel in (page.error_panel, page.truth_panel):
        plot = panel.plot.getPlotItem()
        legend, view = panel.legend, plot.getViewBox()
        assert len(legend.items) >= 2
        assert legend.isVisible() and legend.sceneBoundingRect().width() > 0
        assert not legend.sceneBoundingRect().intersects(view.sceneBoundingRect())
        assert legend.sceneBoundingRect().left() >= view.sceneBoundingRect().right()


def test_error_axes_say_which_way_is_better(window, qtbot, dialogs):
    run(window, qtbot, dialogs)
    page = window.compare_page
    assert "lower is better" in page.error_panel.plot.getAxis("left").labelText
    page.metric.setCurrentIndex(page.metric.findData("topk_accuracy"))
    assert "higher is better" in page.error_panel.plot.getAxis("left").labelText
    assert "higher is better" in page.topk_panel.plot.getAxis("left").labelText


def test_log_band_cuts_the_lower_end_a_decade_below_the_mean():
    mean, low, high = log_band([500.0, 10.0, 0.0], [-3000.0, 8.0, -1.0], [4000.0, 12.0, 1.0])
    assert np.allclose(low[:2], [500 / LOG_BAND_FLOOR_RATIO, 8.0])  # cut; an interval already tight is kept
    assert np.all(mean > 0) and np.all(low > 0) and np.all(low <= mean) and np.all(high >= mean)
    assert np.allclose(high[:2], [4000.0, 12.0])


def test_bands_at_small_epsilon_do_not_stretch_the_log_axis(window):
    page = window.compare_page
    # at ε = 0.1 two repeats far apart: the 95% interval reaches far below zero
    spread = {0.1: [1.0, 1000.0], 1.0: [10.0, 11.0], 2.0: [5.0, 5.5]}
    page.rows = [{"label": "lpa", "mechanism": "lpa", "epsilon": e, "repeat": r, "mae": v}
                 for e, values in spread.items() for r, v in enumerate(values)]
    page.redraw_errors()
    assert mean_interval(spread[0.1])[1] < 0
    curve, lower, _upper = page.error_panel._items["lpa"]
    means = np.array([np.mean(spread[e]) for e in sorted(spread)])
    drawn_low = lower.yData
    assert np.all(drawn_low >= means / LOG_BAND_FLOOR_RATIO - 1e-9)
    assert drawn_low[0] == pytest.approx(means[0] / LOG_BAND_FLOOR_RATIO)
    # the axis ends about where the lowest drawn value is, not decades below the smallest mean
    view = page.error_panel.plot.getPlotItem().getViewBox()
    view.autoRange()
    bottom = view.viewRange()[1][0]  # log10 units
    assert bottom > np.log10(means.min()) - 1.2


def test_the_synthetic_stand_in_follows_the_declared_typical_row(window):
    window.configure_page.typical.setValue(6.5)
    assert window.compare_page.fact_mean.value() == 6.5


def test_mechanisms_needing_a_bound_are_left_out_with_the_reason(window, qtbot, dialogs):
    window.state.set_bound(None)
    tick(window, {"lpa", "dpsense"})
    run(window, qtbot, dialogs)
    page = window.compare_page
    assert page.skipped.isVisible() and "LPA" in page.skipped.text() and "bound" in page.skipped.text()
    assert set(window.state.comparison.results["mechanism"]) == {"dpsense"}


def test_the_synthetic_stand_in_takes_the_declared_items_not_the_files(window, data_dir):
    """Issue #27 F: chess has 75 items; declared ``range:1000``, the stand-in has 1,000 items named 0..999."""
    window.state.set_publication("chess", DomainDeclaration("range", size=1000))
    page = window.compare_page
    page.on_synthetic.setChecked(True)
    standin, on_standin = page.comparison_data()
    assert on_standin and standin.n_items == 1000
    assert list(standin.item_labels[:3]) == ["0", "1", "2"] and "999" in set(standin.item_labels)
    window.state.set_publication("chess", DomainDeclaration("discovered", delta=1e-6, bound=5))
    with pytest.raises(dpdesk.errors.ParameterError, match="discovered privately"):
        page.comparison_data()

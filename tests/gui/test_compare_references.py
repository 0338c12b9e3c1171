"""The Compare page draws the two reference lines of the comparison (issue 29): publishing zeros and one
average for all, flat across the ε grid, at the values evaluation.compare computed (no DP logic here)."""

import numpy as np
import pytest

from dpdesk.evaluation.compare import AVERAGE, ZEROS
from tests.gui.test_compare_safely import run


@pytest.fixture
def window(chess_window):
    chess_window.steps.setCurrentRow(2)
    return chess_window


def test_reference_lines_are_drawn_flat_at_the_comparisons_values(window, qtbot, dialogs):
    run(window, qtbot, dialogs)
    page = window.compare_page
    page.metric.setCurrentIndex(page.metric.findData("mae"))
    page.redraw_errors()
    series = {name: (x, y) for name, x, y in page.error_panel._series}
    expected = window.state.comparison.reference_values("mae")
    for label in (ZEROS, AVERAGE):
        x, y = series[f"{label} (reference)"]
        assert np.allclose(y, expected[label]) and np.allclose(sorted(x), [0.1, 1.0])
    assert "Flat lines are references" in page.error_panel.caption.text()
    page.metric.setCurrentIndex(page.metric.findData("topk_accuracy"))  # no reference for which items are top
    page.redraw_errors()
    assert not any(name.endswith("(reference)") for name, _, _ in page.error_panel._series)

"""The internal report: labelled everywhere, shows the true-data facts, plots as valid inline SVG
(matplotlib) with a title and their numbers."""

import re
import xml.etree.ElementTree as ElementTree

import numpy as np
import pytest

import dpdesk
from dpdesk.evaluation.compare import Entry, run_comparison
from dpdesk.mechanisms.base import Diagnostic
from dpdesk.report.internal import LABEL, internal_report_html
from tests.conftest import DATA


@pytest.fixture(scope="module")
def groceries():
    return dpdesk.load(DATA / "groceries.csv.gz")


@pytest.fixture(scope="module")
def release(groceries):
    return dpdesk.release(groceries, "lpa", epsilon=0.5, bound=10, rng=3)


SVG = "{http://www.w3.org/2000/svg}"


def svgs(report: str) -> list[ElementTree.Element]:
    return [ElementTree.fromstring(block) for block in re.findall(r"<svg.*?</svg>", report, re.S)]


def drawn(plot: ElementTree.Element, gid: str) -> ElementTree.Element | None:
    """The group matplotlib wrote for the artist with this gid (see dpdesk.report.charts)."""
    return next((g for g in plot.iter(f"{SVG}g") if g.get("id") == gid), None)


def vertices(path: ElementTree.Element) -> list[tuple[float, float]]:
    return [(float(x), float(y)) for x, y in re.findall(r"[ML] ([-\d.]+) ([-\d.]+)", path.get("d"))]


def test_labelled_on_every_section_and_page(groceries, release):
    report = internal_report_html(groceries, release)
    assert f"<title>{LABEL}" in report
    sections = re.findall(r"<h2>.*?</h2>(.{0,120})", report, re.S)
    assert len(sections) >= 4
    assert all(LABEL in after for after in sections)  # a label right under every heading
    body = report.split("<body", 1)[1]
    assert body.count('class="internal-banner"') == 2  # top and bottom
    assert 'class="print-label top"' in body and 'class="print-label bottom"' in body
    # printed from a browser, the label repeats on every page (fixed header and footer)
    assert re.search(r"@media print \{.*?\.print-label \{ position: fixed", report, re.S)


def test_shows_the_true_data_summary_truncation_and_realised_error(groceries, release):
    report = internal_report_html(groceries, release)
    summary = groceries.summary()
    assert f"<td>rows (people)</td><td class=\"num\">{summary['rows']:,}</td>" in report
    assert f"{summary['max_row_count']:,}" in report and f"{summary['mean_row_count']:,.6g}" in report
    over = int((groceries.row_counts > 10).sum())
    assert f"{over:,} (" in report and f"{release.internal['rows_truncated']:,}" in report
    assert over == release.internal["rows_truncated"]
    removed = int(np.maximum(groceries.row_counts - 10, 0).sum())
    assert f"{removed:,} of {groceries.nnz:,}" in report
    from dpdesk.evaluation.metrics import evaluate

    metrics = evaluate(groceries, release)
    assert "mean absolute error" in report and f"{metrics['mae']:,.6g}" in report
    # the promise of the public report against what happened
    within = release.report["expected_error"]["within_95"]
    share = np.mean(np.abs(release.values - groceries.column_counts) <= within)
    assert f"in this release {100 * share:.3g}% do" in report
    # the largest items with their true counts
    top = int(np.argmax(groceries.column_counts))
    assert f"<td>{groceries.item_labels[top]}</td><td class=\"num\">{groceries.column_counts[top]:,}</td>" in report


def test_plots_are_valid_self_contained_svg(groceries, release):
    report = internal_report_html(groceries, release)
    plots = svgs(report)
    assert len(plots) == 3  # items per person, error histogram, true against released
    for plot in plots:
        assert plot.tag == f"{SVG}svg" and plot.get("viewBox") and plot.get("role") == "img"
        title = plot.find(f"{SVG}title").text
        assert title and plot.get("aria-label") == title  # the chart's text alternative
    for outside in ("https://", "<link", "@import", "<script", "<img"):
        assert outside not in report
    assert not re.search(r"url\((?!#)", report)  # url() only to ids inside the page
    points = drawn(plots[2], "points").findall(f".//{SVG}use")
    assert len(points) == groceries.n_items
    # the bars of the items-per-person histogram, and their numbers as a table
    bars = [g for g in plots[0].iter(f"{SVG}g") if g.get("id") == "bars"]
    assert len(bars) == int(groceries.row_counts.max()) + 1  # one bar for each count 0 … max
    assert report.count("<details><summary>The numbers behind the chart</summary>") == 2
    people_with_one = int((groceries.row_counts == 1).sum())
    assert f"<tr><td>1</td><td class=\"num\">{people_with_one:,}</td></tr>" in report


def test_comparison_results_and_plots(groceries, release):
    comparison = run_comparison(groceries, [Entry("lpa", {"bound": 10}), Entry("alpa", {"bound": 10})],
                                [0.1, 1.0], 3, seed=5)
    report = internal_report_html(groceries, release, comparison)
    assert "Comparison on the true data" in report and "Seed 5" in report
    assert "is itself a use of the data" in report
    plots = svgs(report)
    metrics = comparison.summary["metric"].unique()
    assert len(plots) == 3 + len(metrics)
    for metric, plot in zip(metrics, plots[3:]):
        assert drawn(plot, "series-0") is not None and drawn(plot, "series-1") is not None  # one per mechanism
        # and the two reference lines (publishing zeros, one average for all), but not for top-k accuracy
        lines = 2 if comparison.reference_values(metric) else 0
        assert (drawn(plot, f"series-{1 + lines}") is not None) and drawn(plot, f"series-{2 + lines}") is None
        assert drawn(plot, "band-0") is not None  # the 95% band
    assert "publishing zeros" in report and "one average for all" in report
    row = comparison.summary.iloc[0]
    assert f"<td>{row.label}</td><td class=\"num\">{row.epsilon:g}</td>" in report


def test_diagnostics_are_drawn_or_tabulated(groceries, release):
    release = dpdesk.release(groceries, "lpa", epsilon=0.5, bound=10, rng=4)
    release.diagnostics = {
        "quality": Diagnostic("Quality against θ", "Higher is better.", {"θ": np.arange(1, 30), "quality":
                              -np.abs(np.arange(1, 30) - 12.0)}, internal=True, x="θ", y="quality"),
        "chosen": Diagnostic("Chosen value", "What the mechanism picked.", {"θ": 12, "score": -0.5}, internal=True),
    }
    report = internal_report_html(groceries, release)
    assert "Quality against θ (uses the true data)" in report and "Higher is better." in report
    assert len(svgs(report)) == 4
    assert "<td>score</td><td>-0.5</td>" in report


def test_long_diagnostic_series_are_thinned_keeping_the_extremes(groceries):
    release = dpdesk.release(groceries, "lpa", epsilon=0.5, bound=10, rng=4)
    theta = np.arange(1, 50_001, dtype=float)
    quality = -np.abs(np.log(theta) - np.log(3000.5))  # peak at θ = 3000 and 3001
    release.diagnostics = {"quality": Diagnostic("Quality", "", {"theta": theta, "quality": quality,
                                                                "probability": np.exp(quality)}, True, x="theta")}
    report = internal_report_html(groceries, release)
    plots = svgs(report)[3:]
    assert len(plots) == 2  # one chart per series along θ
    for raw in re.findall(r"<svg.*?</svg>", report, re.S)[3:]:
        assert "log scale" in raw  # θ spans four decades (matplotlib names each text in a comment)
    for plot in plots:
        (line,) = drawn(plot, "series-0").findall(f"{SVG}path")
        points = vertices(line)  # matplotlib simplifies the path further where it looks the same
        assert 3 <= len(points) <= 2002
        assert not drawn(plot, "series-0").findall(f".//{SVG}use")  # too many points for markers
    xs = [x for x, _ in points]
    assert xs == sorted(xs) and xs[-1] - xs[0] > 0.7 * float(plot.get("viewBox").split()[2])  # spans the axis
    from dpdesk.report.internal import _thin

    kept_theta, kept_quality = _thin(theta, quality, log=True)
    assert kept_quality.max() == quality.max() and kept_quality.min() == quality.min()
    assert set(range(1, 101)) <= set(kept_theta.astype(int))  # the start of a log axis keeps every point


def test_cell_data_gets_its_summary():
    from dpdesk.mechanisms.base import CellSummary, Release
    from dpdesk.privacy.budget import BudgetSplit

    cells = dpdesk.from_cells([1, 5, 9], [30, 4, 7], 20, name="tiny cells")
    summary_release = Release(mechanism="test", epsilon=1.0, budget=BudgetSplit.single(1.0, "all"), params={},
                              cells=CellSummary(np.array([1, 5]), np.array([29.0, 6.0])))
    report = internal_report_html(cells, summary_release)
    assert "<td>rows (people)</td><td class=\"num\">41</td>" in report
    assert "Realised error of this release" in report and LABEL in report

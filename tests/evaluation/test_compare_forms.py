"""Comparisons that show where a mechanism stands (issue 29): both forms in every row, ``--raw``, and
the two reference lines (publishing zeros, one average for all) in summary.csv and the printed table."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import dpdesk
from dpdesk import cli
from dpdesk.evaluation.compare import AVERAGE, REFERENCE, ZEROS, Entry, run_comparison
from dpdesk.evaluation.metrics import count_metrics
from dpdesk.mechanisms.publish import unrounded_release


@pytest.fixture(scope="module")
def groceries(data_dir_module):
    return dpdesk.load(data_dir_module / "groceries.csv.gz")


@pytest.fixture(scope="module")
def data_dir_module():
    from pathlib import Path

    return Path(__file__).resolve().parent.parent / "data"


def test_every_row_scores_the_published_and_the_raw_form(groceries):
    comparison = run_comparison(groceries, [Entry("lpa", {"bound": 4}), Entry("gs-r", {"bound": 4})], [0.1], 3,
                                seed=7, k=20)
    results = comparison.results
    truth = groceries.column_counts
    for (label, epsilon), release in comparison.examples.items():
        row = results[(results["label"] == label) & (results["epsilon"] == epsilon) & (results["repeat"] == 0)]
        published = count_metrics(release.values, truth, n_rows=groceries.n_rows, k=20)
        raw = count_metrics(unrounded_release(release).values, truth, n_rows=groceries.n_rows, k=20)
        assert row["mae"].item() == pytest.approx(published["mae"])
        assert row["raw_mae"].item() == pytest.approx(raw["mae"])
    # at ε = 0.1 rounding and clamping at 0 move the error: the two forms differ
    assert not np.allclose(results["mae"], results["raw_mae"])


def test_the_reference_lines_are_zeros_and_the_true_average(groceries):
    comparison = run_comparison(groceries, [Entry("alpa", {"bound": 4})], [0.5, 2.0], 2, seed=3, k=20)
    truth = groceries.column_counts.astype(float)
    zeros = comparison.reference_values("mae")[ZEROS]
    assert zeros == pytest.approx(truth.mean())  # publishing 0 misses every count by itself
    assert comparison.reference_values("raw_mae")[AVERAGE] == pytest.approx(np.abs(truth - truth.mean()).mean())
    rounded = max(np.floor(truth.mean() + 0.5), 0)
    assert comparison.reference_values("mae")[AVERAGE] == pytest.approx(np.abs(truth - rounded).mean())
    summary = comparison.summary_with_references()
    lines = summary[summary["mechanism"] == REFERENCE]
    assert set(lines["label"]) == {ZEROS, AVERAGE} and set(lines["epsilon"]) == {0.5, 2.0}
    assert (lines["ci_low"] == lines["mean"]).all() and "topk_accuracy" not in set(lines["metric"])


def test_compare_writes_both_forms_and_ranks_by_the_raw_one_with_raw(tmp_path, dpdesk_home, data_dir, capsys):
    common = ["compare", str(data_dir / "groceries.csv.gz"), "--mechanisms", "lpa,alpa", "--epsilon", "0.1",
              "--bound", "4", "--repeats", "3", "--seed", "2", "--quiet", "--k", "20"]
    assert cli.main([*common, "--out", str(tmp_path / "published")]) == 0
    published_text = capsys.readouterr().out
    assert cli.main([*common, "--raw", "--out", str(tmp_path / "raw")]) == 0
    raw_text = capsys.readouterr().out
    results = pd.read_csv(tmp_path / "raw" / "results.csv")
    assert {"mae", "raw_mae", "topk_mae", "raw_topk_mae"} <= set(results.columns)
    summary = pd.read_csv(tmp_path / "raw" / "summary.csv")
    assert {ZEROS, AVERAGE} <= set(summary["label"])
    lpa = summary[(summary["label"] == "lpa")].set_index("metric")["mean"]
    assert f"{lpa['raw_mae']:,.4g}" in raw_text and f"{lpa['mae']:,.4g}" in published_text
    assert f"{lpa['mae']:,.4g}" not in raw_text.split("\n")[2]  # lpa's row in the raw table has the raw figure
    assert "raw values" in raw_text and ZEROS in raw_text and AVERAGE in published_text

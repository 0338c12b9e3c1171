"""Query answering on sparse-domain summaries, workloads, metrics and diagnostics."""

from __future__ import annotations

import numpy as np
import pytest

import dpdesk
from dpdesk.errors import ParameterError
from dpdesk.evaluation import summaries
from dpdesk.evaluation.compare import Entry, run_comparison
from dpdesk.evaluation.metrics import evaluate
from dpdesk.evaluation.summaries import (error_vs_range_size, error_vs_summary_size, estimate_points,
                                         estimate_ranges, estimate_subsets, evaluate_summary, range_workload,
                                         subset_workload, summary_size, true_ranges, true_subsets)
from dpdesk.mechanisms.base import CellSummary, Release
from dpdesk.mechanisms.sparse.dyadic import DyadicTree
from dpdesk.privacy.budget import BudgetSplit


def cells_data(m=10_000, n=300, seed=2):
    rng = np.random.default_rng(seed)
    indices = np.sort(rng.choice(m, size=n, replace=False))
    return dpdesk.from_cells(indices, rng.integers(1, 200, size=n), m)


def handmade(indices, values, weights=None, **info):
    cells = CellSummary(np.asarray(indices), np.asarray(values), None if weights is None else np.asarray(weights),
                        {"kind": "cells", **info})
    return Release("test", 1.0, BudgetSplit.single(1.0, "test"), {}, cells=cells)


def test_cell_summary_answers():
    release = handmade([2, 5, 9], [10, -3, 7], [20.0, -6.0, 7.0], domain_size=12)
    assert estimate_points(release, [2, 3, 9]).tolist() == [20.0, 0.0, 7.0]
    assert estimate_points(release, [2, 3, 9], use_weights=False).tolist() == [10.0, 0.0, 7.0]
    assert estimate_ranges(release, [0, 3, 6, 0], [3, 9, 12, 12]).tolist() == [20.0, -6.0, 7.0, 21.0]
    assert estimate_subsets(release, [[2, 9], [0, 1], [5]]).tolist() == [27.0, 0.0, -6.0]
    assert estimate_subsets(release, np.array([[2, 5], [9, 11]])).tolist() == [14.0, 7.0]
    with pytest.raises(ParameterError):
        estimate_ranges(release, [5], [4])
    empty = handmade(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), domain_size=12)
    assert estimate_points(empty, [1]).tolist() == [0.0] and estimate_ranges(empty, [0], [12]).tolist() == [0.0]


def test_truth_and_noiseless_summary_agree():
    data = cells_data()
    exact = handmade(data.indices, data.counts, domain_size=data.domain_size)
    starts, stops = range_workload(data.domain_size, 777, 50, seed=1)
    assert np.array_equal(estimate_ranges(exact, starts, stops), true_ranges(data, starts, stops))
    sets = subset_workload(data.domain_size, 2000, 20, seed=1)
    assert np.array_equal(estimate_subsets(exact, sets), true_subsets(data, sets))
    dense = np.zeros(data.domain_size)
    dense[data.indices] = data.counts
    assert true_ranges(data, [0, 100], [5000, 100]).tolist() == [dense[:5000].sum(), 0.0]


def test_dyadic_summary_answers_ranges_from_nodes():
    data = cells_data(m=5000)
    tree = DyadicTree(data.domain_size)
    nodes, counts = tree.transform(data.indices, data.counts)
    release = handmade(nodes, counts, domain_size=data.domain_size, levels=tree.levels)
    release.cells.info["kind"] = "dyadic"
    starts, stops = range_workload(data.domain_size, 1234, 40, seed=3)
    assert np.array_equal(estimate_ranges(release, starts, stops), true_ranges(data, starts, stops))
    assert np.array_equal(estimate_points(release, data.indices[:20]), data.counts[:20])


def test_sketch_without_noise_collisions_is_exact_for_isolated_cells():
    data = cells_data(m=3000, n=5)
    release = dpdesk.release(data, "sketch", epsilon=50.0, width=2**20, depth=4, rng=1)
    # noise of scale 4/50 is almost always 0 and w = 2^20 makes collisions very unlikely
    assert np.allclose(estimate_points(release, data.indices), data.counts, atol=1.0)
    assert estimate_ranges(release, [0], [3000])[0] == pytest.approx(data.total, abs=5 + 3000 * 0.5)


def test_workloads_are_reproducible_and_valid():
    starts, stops = range_workload(10**12, 10**6, 100, seed=4)
    assert np.all(stops - starts == 10**6) and stops.max() <= 10**12
    assert np.array_equal(starts, range_workload(10**12, 10**6, 100, seed=4)[0])
    sets = subset_workload(10**12, 1000, 30, seed=5)
    assert sets.shape == (30, 1000) and np.all(np.diff(sets, axis=1) > 0)
    crowded = subset_workload(100, 90, 10, seed=6)  # most of the domain: drawn without replacement
    assert np.all(np.diff(crowded, axis=1) > 0) and crowded.max() < 100
    big = subset_workload(907_200, 100_000, 3, seed=7)  # many collisions when drawn with replacement
    assert np.all(np.diff(big, axis=1) > 0)


def test_threshold_and_priority_weights_are_unbiased():
    data = cells_data(m=20_000, n=400)
    sets = subset_workload(data.domain_size, 5000, 10, seed=8)
    truth = true_subsets(data, sets)
    for mechanism, params in (("threshold", {"tau": 400.0}), ("priority", {"size": 800})):
        estimates = np.array([estimate_subsets(dpdesk.release(data, mechanism, epsilon=1.0, rng=s, **params), sets)
                              for s in range(300)])
        error = estimates.mean(axis=0) - truth
        standard_error = estimates.std(axis=0, ddof=1) / np.sqrt(estimates.shape[0])
        assert np.all(np.abs(error) < 5.5 * standard_error), (mechanism, error / standard_error)


def test_evaluate_summary_metrics_and_delegation():
    data = cells_data()
    release = dpdesk.release(data, "filter-priority", epsilon=1.0, threshold=3, size=500, rng=2)
    metrics = evaluate_summary(data, release, sizes=[10, 1000], queries=30)
    assert metrics["summary_size"] == 500.0
    for key in ("range_mae", "range_mre", "subset_mae", "subset_mre", "range_mae@10", "subset_mre@1000"):
        assert np.isfinite(metrics[key]) and metrics[key] >= 0, key
    assert evaluate(data, release, k=10, sizes=[10, 1000], queries=30) == metrics
    geometric = dpdesk.release(data, "geometric", epsilon=1.0, rng=2)
    assert summary_size(geometric) == data.domain_size  # the whole table is published


def test_comparison_runner_on_cell_data():
    data = cells_data()
    comparison = run_comparison(data, [Entry("geometric"), Entry("filter2", {"threshold": 4}),
                                       Entry("priority", {"size": 400})], [0.5, 1.0], 2, seed=3,
                                sizes=[100], queries=20)
    assert set(comparison.results["mechanism"]) == {"geometric", "filter2", "priority"}
    assert {"summary_size", "range_mae", "subset_mre"} <= set(comparison.summary["metric"])


def test_diagnostics_are_internal_and_labelled():
    data = cells_data()
    release = dpdesk.release(data, "filter2", epsilon=1.0, threshold=4, rng=1)
    by_range = error_vs_range_size(data, release, queries=20)
    assert by_range.internal and by_range.x and by_range.y and "eyes only" in by_range.caption
    assert by_range.data["range_size"].size == by_range.data["mean_absolute_error"].size > 3
    releases = [dpdesk.release(data, "priority", epsilon=1.0, size=s, rng=1) for s in (200, 400, 800)]
    by_size = error_vs_summary_size(data, releases, range_size=1000, queries=20)
    assert by_size.internal and by_size.data["summary_size"].tolist() == [200, 400, 800]
    assert by_size.data["label"].size == 3 and by_size.x.startswith("summary size")


def test_counts_release_is_refused():
    release = Release("lpa", 1.0, BudgetSplit.single(1.0, "x"), {}, values=np.zeros(3))
    with pytest.raises(ParameterError, match="no cell summary"):
        summaries.estimate_points(release, [0])

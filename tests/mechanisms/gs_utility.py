"""Data and error measurement for GS's utility claims (issue 15), shared by tests and benchmarks/bench_gs.py.

``long_tailed`` makes person × item data whose row lengths have a controllable mean and a
long (Pareto) tail, like BMS-WebView-1 (59,602 sessions over 497 pages, 2.5 pages on
average, 267 at most), which is not in tests/data. ``mean_errors`` runs mechanisms with
seeded repeats and returns each one's mean absolute error per item against the true
(untruncated) counts.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

import dpdesk

EPSILONS = (0.1, math.log(2), 2.0)
BOUND_RATIOS = (2, 5, 20, 50)  # declared Δ ÷ mean row length


def long_tailed(people: int, items: int, mean_length: float, *, tail: float = 2.5, skew: float = 1.0,
                seed: int = 0, name: str | None = None) -> dpdesk.Dataset:
    """Rows of 1 + ⌊Lomax(tail)⌋ distinct items (mean ≈ ``mean_length``), items Zipf(``skew``)-popular.

    A row's items are drawn one after another with probability ∝ popularity among the items
    it does not hold yet (successive sampling), so rows have exactly their drawn length.
    """
    rng = np.random.default_rng(seed)
    scale = (mean_length - 0.5) * (tail - 1.0)  # E⌊X⌋ ≈ E X − 1/2 for the Lomax X of this scale
    lengths = np.minimum(1 + np.floor(scale * rng.pareto(tail, people)).astype(np.int64), items)
    cdf = np.cumsum(1.0 / np.arange(1, items + 1) ** skew)
    cdf /= cdf[-1]
    rows_left = np.arange(people)
    kept_rows, kept_items = [], []
    candidates = 2
    while rows_left.size:
        want = lengths[rows_left]
        per_row = candidates * want + 4
        row_of = np.repeat(rows_left, per_row)
        drawn = np.minimum(np.searchsorted(cdf, rng.random(row_of.size), side="right"), items - 1)
        # first occurrence of each (row, item), in draw order; keep a row's first `length` distinct items
        _, first = np.unique(row_of * items + drawn, return_index=True)
        first.sort()
        row_first = row_of[first]
        starts = np.searchsorted(row_first, rows_left)
        rank = np.arange(first.size) - np.repeat(starts, np.diff(np.append(starts, first.size)))
        distinct = np.bincount(np.searchsorted(rows_left, row_first), minlength=rows_left.size)
        done = distinct >= want
        take = (rank < lengths[row_first]) & done[np.searchsorted(rows_left, row_first)]
        kept_rows.append(row_first[take])
        kept_items.append(drawn[first[take]])
        rows_left = rows_left[~done]
        candidates *= 2
    rows, columns = np.concatenate(kept_rows), np.concatenate(kept_items)
    matrix = sp.csr_matrix((np.ones(rows.size, np.uint8), (rows, columns)), shape=(people, items))
    return dpdesk.from_matrix(matrix, name=name or f"long-tailed {people:,} × {items:,}, mean {mean_length:g}")


def bms_like(seed: int = 0) -> dpdesk.Dataset:
    """Shaped like BMS-WebView-1: 59,602 rows over 497 items, 2.5 items per row on average, a long tail."""
    return long_tailed(59_602, 497, 2.5, seed=seed, name="BMS-WebView-1-like (synthetic)")


def mean_row_length(data: dpdesk.Dataset) -> float:
    """Mean number of items of the non-empty rows (a true figure: for choosing test bounds only)."""
    lengths = data.row_counts
    return float(lengths[lengths > 0].mean())


def bound_for(data: dpdesk.Dataset, ratio: float) -> int:
    """Δ = ``ratio`` × the mean row length, rounded."""
    return max(1, int(round(ratio * mean_row_length(data))))


def mean_errors(data: dpdesk.Dataset, runs: dict, bound: int, epsilon: float, seeds) -> dict:
    """{label: array of MAE per seed} for ``runs`` = {label: (mechanism id, extra parameters)}."""
    truth = data.column_counts
    errors = {}
    for label, (mechanism, extra) in runs.items():
        errors[label] = np.array([
            np.abs(dpdesk.release(data, mechanism, epsilon=epsilon, bound=bound, rng=int(seed), **extra).values
                   - truth).mean() for seed in seeds])
    return errors


COMPARED = {  # the table: gs with both estimators and the parts it should never lose to
    "gs": ("gs", {"diagnostics": False}),
    "gs paper": ("gs", {"diagnostics": False, "estimator": "paper"}),
    "gs-s-col": ("gs-s-col", {"diagnostics": False}),
    "lpa": ("lpa", {}),
}


def best_tuning_error(data: dpdesk.Dataset, bound: int, epsilon: float, seed: int, *, draws: int = 12) -> tuple:
    """(MAE, w) of gs with the truly best group size: a ceiling for any tuning (true data: internal).

    The groups are those of ``dpdesk.release(data, "gs", rng=seed, ...)`` (the same noisy sample and
    order); the MAE is the expected one over ``draws`` simulated noises, against the untruncated counts,
    with the calibrated estimate's noise scale Δ'/(ε_g·w), minimised over every w ≤ 64 and a
    log-spaced grid above.
    """
    from dpdesk.api import prepare
    from dpdesk.mechanisms import gs
    from dpdesk.privacy.randomness import SeededRandom

    mechanism = dpdesk.mechanisms.get("gs")
    params = mechanism.validate(data, epsilon, {"bound": bound})
    source = SeededRandom(np.random.default_rng(seed), seed=seed)
    counts, _, noisy, _ = mechanism.noisy_sample(data, prepare(data, mechanism, epsilon, params), epsilon, params,
                                                 source)
    order = gs.noisy_order(noisy, source)
    d = data.n_items
    numerator = mechanism.effective_bound(bound, d) / mechanism.averages_epsilon(epsilon, params)
    kept, truth = counts[order].astype(np.float64), data.column_counts[order].astype(np.float64)
    noise = np.random.default_rng(10_000 + seed).laplace(size=(draws, d))
    sizes = np.unique(np.concatenate([np.arange(1, min(d, 64) + 1), gs.plot_sizes(d, 80)]))
    best = (math.inf, 0)
    for w in sizes:
        bounds = gs.group_boundaries(d, int(w))
        lengths = np.diff(bounds)
        averages = gs.group_averages(kept, bounds)
        error = np.mean([np.abs(truth - np.repeat(averages + numerator / w * row[:lengths.size], lengths)).mean()
                         for row in noise])
        best = min(best, (float(error), int(w)))
    return best

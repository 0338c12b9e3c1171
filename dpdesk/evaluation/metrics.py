"""Utility metrics against the true data (internal by nature: they read the truth).

* MAE — mean absolute error over all items.
* MRE — mean relative error with a sanity bound s: mean |noisy − true| / max(true, s),
  s = 0.1% of the number of people by default (GS §5), and at least 1.
* top-k MAE / MRE — the same over the k items with the largest true counts.
* top-k accuracy — |top-k(true) ∩ top-k(noisy)| / k (DPSense §5.4).
"""

from __future__ import annotations

import numpy as np

METRICS = ("mae", "mre", "topk_mae", "topk_mre", "topk_accuracy")
METRIC_LABELS = {
    "mae": "Mean absolute error",
    "mre": "Mean relative error",
    "topk_mae": "Top-k mean absolute error",
    "topk_mre": "Top-k mean relative error",
    "topk_accuracy": "Top-k accuracy",
}
LOWER_IS_BETTER = {"mae": True, "mre": True, "topk_mae": True, "topk_mre": True, "topk_accuracy": False}
# a comparison scores the mechanisms' raw values too (evaluation.compare): the same metrics, prefixed
METRIC_LABELS.update({f"raw_{k}": f"{v} (raw values)" for k, v in list(METRIC_LABELS.items())})
LOWER_IS_BETTER.update({f"raw_{k}": v for k, v in list(LOWER_IS_BETTER.items())})


def sanity_bound(n_rows: int, fraction: float = 0.001) -> float:
    return max(1.0, fraction * n_rows)


def mae(noisy, true) -> float:
    return float(np.mean(np.abs(np.asarray(noisy, float) - np.asarray(true, float))))


def mre(noisy, true, sanity: float) -> float:
    true = np.asarray(true, float)
    return float(np.mean(np.abs(np.asarray(noisy, float) - true) / np.maximum(true, sanity)))


def top_k(values, k: int) -> np.ndarray:
    """Indices of the k largest values (ties: lower index first)."""
    values = np.asarray(values, float)
    k = min(int(k), values.size)
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    kth = np.partition(values, values.size - k)[values.size - k]  # the k-th largest value
    above = np.flatnonzero(values > kth)
    ties = np.flatnonzero(values == kth)[: k - above.size]
    chosen = np.concatenate([above, ties])
    return chosen[np.lexsort((chosen, -values[chosen]))]


def topk_accuracy(noisy, true, k: int) -> float:
    truth = set(top_k(true, k).tolist())
    found = set(top_k(noisy, k).tolist())
    return len(truth & found) / max(1, min(int(k), len(truth)))


def topk_accuracies(noisy, true, ks) -> list[float]:
    """:func:`topk_accuracy` for every k in ``ks`` at once: one ranking of each vector, not one per k.

    The k largest in :func:`top_k`'s order (value, then lower index first) are the first k of the
    K largest for any K ≥ k, so each k is a count over prefixes.
    """
    ks = [int(k) for k in ks]
    if not ks:
        return []
    largest = max(ks)
    truth, found = top_k(true, largest), top_k(noisy, largest)
    rank = np.full(np.asarray(noisy).size, np.iinfo(np.int64).max, dtype=np.int64)
    rank[found] = np.arange(found.size)
    ranks_of_truth = rank[truth]
    return [int(np.count_nonzero(ranks_of_truth[:k] < k)) / max(1, min(k, truth[:k].size)) for k in ks]


def count_metrics(noisy, true, *, n_rows: int, k: int = 100, sanity: float | None = None) -> dict:
    s = sanity if sanity is not None else sanity_bound(n_rows)
    top = top_k(true, k)
    noisy, true = np.asarray(noisy, float), np.asarray(true, float)
    return {
        "mae": mae(noisy, true),
        "mre": mre(noisy, true, s),
        "topk_mae": mae(noisy[top], true[top]),
        "topk_mre": mre(noisy[top], true[top], s),
        "topk_accuracy": topk_accuracy(noisy, true, k),
    }


def evaluate(data, release, *, k: int = 100, sanity: float | None = None, **options) -> dict:
    """Metrics of one release against the truth, for either data shape."""
    if data.kind == "cells":
        from .summaries import evaluate_summary  # sparse-domain query workloads

        return evaluate_summary(data, release, **options)
    truth = data.column_counts if data.binary else data.column_sums  # data with values: sums are the truth
    return count_metrics(release.values, truth, n_rows=data.n_rows, k=k, sanity=sanity)

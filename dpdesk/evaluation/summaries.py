"""Answering queries from a sparse-domain summary, query workloads, and their errors.

Estimates (Cormode et al. §2–4, App. C):

* a *cell summary* (``geometric``, filters, samples) lists (cell, value[, weight]); a cell
  not listed counts 0. A sum over a set of cells adds the listed entries in it, using
  the Horvitz–Thompson weights where the summary has them (threshold and priority
  samples: weight = value / inclusion probability, unbiased) unless ``use_weights=False``
  (the raw values, biased but sometimes better for tiny queries, App. C.2);
* a *dyadic* summary lists ranges of the cell order; a range [a, b) is the sum of at most
  two listed ranges per level (:meth:`DyadicTree.range_nodes`), a cell is its leaf;
* a *sketch* estimates a set's sum as the mean over rows of Σ_{i∈S} g_j(i)·C_j[h_j(i)].

Workloads are random ranges [a, a+R) of the cell order and random sets of R distinct
cells, drawn from a seeded generator (evaluation only; never a mechanism's randomness).
Errors against the truth read the true data: every number here is *internal*.
"""

from __future__ import annotations

import numpy as np

from ..errors import ParameterError
from ..mechanisms.base import Diagnostic
from ..mechanisms.sparse.dyadic import DyadicTree
from ..mechanisms.sparse.sketch import estimate_sets, hash_tables

SKETCH_CELLS_LIMIT = 50_000_000  # cells hashed to answer one batch of queries from a sketch


# -- estimates from a release ------------------------------------------------------------

def _cells(release):
    cells = getattr(release, "cells", None)
    if cells is None:
        raise ParameterError("This release has no cell summary (it comes from a count mechanism).")
    return cells


def _entries(cells, use_weights: bool) -> np.ndarray:
    if use_weights and cells.weights is not None:
        return np.asarray(cells.weights, dtype=np.float64)
    return np.asarray(cells.values, dtype=np.float64)


def _lookup(cells, wanted: np.ndarray, use_weights: bool) -> np.ndarray:
    """Estimate of each listed entry number in ``wanted`` (0 where not listed)."""
    indices = cells.indices
    entries = _entries(cells, use_weights)
    if indices.size == 0:
        return np.zeros(wanted.shape)
    position = np.minimum(np.searchsorted(indices, wanted), indices.size - 1)
    return np.where(indices[position] == wanted, entries[position], 0.0)


def _sketch_tables(cells):
    info = cells.info
    key = bytes.fromhex(info["hash_key"])
    return hash_tables(key, int(info["depth"]), int(info["index_bytes"])), int(info["width"])


def _set_sums(cells, members: np.ndarray, groups: np.ndarray, count: int, use_weights: bool) -> np.ndarray:
    """Sum of the estimates of the cells ``members`` per group (cells of the original domain)."""
    kind = cells.info.get("kind", "cells")
    members = np.asarray(members, dtype=np.int64)
    if kind == "sketch":
        if members.size > SKETCH_CELLS_LIMIT:
            raise ParameterError(f"These queries cover {members.size:,} cells; a sketch answers at most "
                                 f"{SKETCH_CELLS_LIMIT:,} at once.")
        tables, width = _sketch_tables(cells)
        return estimate_sets(tables, np.asarray(cells.values, dtype=np.float64), width, members, groups, count)
    # a dyadic summary's leaves are nodes 0..m-1: the same numbers as the cells
    return np.bincount(groups, weights=_lookup(cells, members, use_weights), minlength=count)


def estimate_points(release, cells_wanted, *, use_weights: bool = True) -> np.ndarray:
    """Estimated count of each cell."""
    wanted = np.asarray(cells_wanted, dtype=np.int64).ravel()
    return _set_sums(_cells(release), wanted, np.arange(wanted.size), wanted.size, use_weights)


def estimate_subsets(release, subsets, *, use_weights: bool = True) -> np.ndarray:
    """Estimated sum over each set of cells (a list of arrays, or a 2-D array one set per row)."""
    members, groups = _flatten(subsets)
    return _set_sums(_cells(release), members, groups, len(subsets), use_weights)


def estimate_ranges(release, starts, stops, *, use_weights: bool = True) -> np.ndarray:
    """Estimated sum over each range of cells [start, stop) of the cell order."""
    cells = _cells(release)
    starts = np.asarray(starts, dtype=np.int64).ravel()
    stops = np.asarray(stops, dtype=np.int64).ravel()
    m = int(cells.info.get("domain_size", 0)) or None
    if np.any(starts > stops) or np.any(starts < 0) or (m is not None and np.any(stops > m)):
        raise ParameterError("Ranges must have 0 ≤ start ≤ stop ≤ the number of cells.")
    kind = cells.info.get("kind", "cells")
    if kind == "dyadic":
        tree = DyadicTree(int(cells.info["domain_size"]))
        query, nodes = tree.range_nodes(starts, stops)
        return np.bincount(query, weights=_lookup(cells, nodes, use_weights), minlength=starts.size)
    if kind == "sketch":
        lengths = stops - starts
        members = np.repeat(starts - np.concatenate([[0], np.cumsum(lengths)[:-1]]), lengths) + np.arange(lengths.sum())
        groups = np.repeat(np.arange(starts.size), lengths)
        return _set_sums(cells, members, groups, starts.size, use_weights)
    prefix = np.concatenate([[0.0], np.cumsum(_entries(cells, use_weights))])
    return prefix[np.searchsorted(cells.indices, stops)] - prefix[np.searchsorted(cells.indices, starts)]


def _flatten(subsets) -> tuple[np.ndarray, np.ndarray]:
    if isinstance(subsets, np.ndarray) and subsets.ndim == 2:
        return subsets.ravel().astype(np.int64), np.repeat(np.arange(subsets.shape[0]), subsets.shape[1])
    arrays = [np.asarray(s, dtype=np.int64).ravel() for s in subsets]
    lengths = [a.size for a in arrays]
    members = np.concatenate(arrays) if arrays else np.zeros(0, dtype=np.int64)
    return members, np.repeat(np.arange(len(arrays)), lengths)


# -- the truth (internal) -----------------------------------------------------------------

def true_ranges(data, starts, stops) -> np.ndarray:
    prefix = np.concatenate([[0], np.cumsum(data.counts)])
    starts, stops = np.asarray(starts, dtype=np.int64), np.asarray(stops, dtype=np.int64)
    return (prefix[np.searchsorted(data.indices, stops)] - prefix[np.searchsorted(data.indices, starts)]).astype(float)


def true_subsets(data, subsets) -> np.ndarray:
    members, groups = _flatten(subsets)
    indices = data.indices
    if indices.size == 0:
        return np.zeros(len(subsets))
    position = np.minimum(np.searchsorted(indices, members), indices.size - 1)
    found = np.where(indices[position] == members, data.counts[position], 0)
    return np.bincount(groups, weights=found, minlength=len(subsets))


# -- workloads ----------------------------------------------------------------------------

def range_workload(domain_size: int, size: int, count: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``count`` random ranges [a, a + size) inside the domain (uniform start)."""
    size = min(int(size), int(domain_size))
    rng = np.random.default_rng(np.random.SeedSequence([seed, 1, size]))
    starts = rng.integers(0, int(domain_size) - size + 1, size=count, dtype=np.int64)
    return starts, starts + size


def subset_workload(domain_size: int, size: int, count: int, seed: int = 0) -> np.ndarray:
    """``count`` random sets of ``size`` distinct cells, one per row (uniform over the domain)."""
    m, size = int(domain_size), min(int(size), int(domain_size))
    rng = np.random.default_rng(np.random.SeedSequence([seed, 2, size]))
    sets = np.empty((count, size), dtype=np.int64)
    for row in range(count):
        if size * 4 > m:
            sets[row] = rng.choice(m, size=size, replace=False)
            continue
        # distinct values of iid draws are a uniform random set given their number; top up, then trim
        distinct = np.unique(rng.integers(0, m, size=size + size // 8 + 8, dtype=np.int64))
        while distinct.size < size:
            distinct = np.union1d(distinct, rng.integers(0, m, size=size, dtype=np.int64))
        sets[row] = rng.choice(distinct, size=size, replace=False)
    sets.sort(axis=1)
    return sets


def default_sizes(domain_size: int) -> list[int]:
    """Powers of ten from 10 to m/10 (the largest four)."""
    sizes = [10**k for k in range(1, 19) if 10**k * 10 <= domain_size]
    return sizes[-4:] if sizes else [max(1, domain_size // 2)]


# -- metrics ------------------------------------------------------------------------------

def summary_size(release) -> int:
    """Entries a recipient gets: m for the laborious geometric mechanism (every cell is published)."""
    cells = _cells(release)
    if cells.info.get("dense"):
        return int(cells.info.get("domain_size", len(cells)))
    return len(cells)


def _errors(estimate: np.ndarray, truth: np.ndarray) -> tuple[float, float]:
    error = np.abs(estimate - truth)
    return float(error.mean()), float(np.median(error / np.maximum(np.abs(truth), 1.0)))


def errors_by_size(data, release, sizes=None, *, queries: int = 100, seed: int = 0,
                   use_weights: bool = True, kinds=("range", "subset")) -> list[dict]:
    """Mean absolute error and median relative error (|error| / max(truth, 1)) per query size."""
    m = int(data.domain_size)
    sizes = default_sizes(m) if sizes is None else [int(s) for s in sizes]
    rows = []
    for size in sizes:
        if "range" in kinds:
            starts, stops = range_workload(m, size, queries, seed)
            mae, mre = _errors(estimate_ranges(release, starts, stops, use_weights=use_weights),
                               true_ranges(data, starts, stops))
            rows.append({"kind": "range", "size": size, "mae": mae, "median_relative_error": mre})
        if "subset" in kinds:
            sets = subset_workload(m, size, queries, seed)
            mae, mre = _errors(estimate_subsets(release, sets, use_weights=use_weights), true_subsets(data, sets))
            rows.append({"kind": "subset", "size": size, "mae": mae, "median_relative_error": mre})
    return rows


def evaluate_summary(data, release, *, sizes=None, queries: int = 100, seed: int = 0, use_weights: bool = True,
                     **options) -> dict:
    """Metrics of one summary against the truth (internal): size, range and subset-query errors.

    Keys: ``summary_size``; ``range_mae`` / ``range_mre`` / ``subset_mae`` / ``subset_mre``
    (mean absolute error, median relative error, over all sizes); and the same per query
    size as ``range_mae@R`` etc. The workload is the same for every release (``seed``),
    so differences between mechanisms are not workload noise.
    """
    rows = errors_by_size(data, release, sizes, queries=queries, seed=seed, use_weights=use_weights)
    metrics = {"summary_size": float(summary_size(release))}
    for kind in ("range", "subset"):
        mine = [row for row in rows if row["kind"] == kind]
        metrics[f"{kind}_mae"] = float(np.mean([row["mae"] for row in mine]))
        metrics[f"{kind}_mre"] = float(np.median([row["median_relative_error"] for row in mine]))
        for row in mine:
            metrics[f"{kind}_mae@{row['size']}"] = row["mae"]
            metrics[f"{kind}_mre@{row['size']}"] = row["median_relative_error"]
    return metrics


# -- diagnostics for plots (internal: they use the true data) -------------------------------

def error_vs_range_size(data, release, sizes=None, *, queries: int = 100, seed: int = 0,
                        use_weights: bool = True) -> Diagnostic:
    """Absolute and median relative error of range queries against the range length."""
    m = int(data.domain_size)
    if sizes is None:
        sizes = sorted({int(s) for s in np.unique(np.geomspace(1, max(1, m // 2), 12).round())})
    rows = errors_by_size(data, release, sizes, queries=queries, seed=seed, use_weights=use_weights,
                          kinds=("range",))
    return Diagnostic(
        title=f"Range-query error vs range size — {release.mechanism}, ε = {release.epsilon:g}",
        caption=("How far the published summary's answers to random ranges of cells are from the true sums, "
                 "for ranges of growing length. Uses the true data: for your eyes only."),
        data={"range_size": np.array([r["size"] for r in rows]),
              "mean_absolute_error": np.array([r["mae"] for r in rows]),
              "median_relative_error": np.array([r["median_relative_error"] for r in rows])},
        internal=True, x="range size (cells)", y="mean absolute error")


def error_vs_summary_size(data, releases, *, range_size: int | None = None, queries: int = 100,
                          seed: int = 0, use_weights: bool = True) -> Diagnostic:
    """Range-query error of several summaries against their size (one point per release)."""
    m = int(data.domain_size)
    size = int(range_size) if range_size is not None else default_sizes(m)[-1]
    starts, stops = range_workload(m, size, queries, seed)
    truth = true_ranges(data, starts, stops)
    sizes, maes, mres, labels = [], [], [], []
    for release in releases:
        mae, mre = _errors(estimate_ranges(release, starts, stops, use_weights=use_weights), truth)
        sizes.append(summary_size(release))
        maes.append(mae)
        mres.append(mre)
        labels.append(f"{release.mechanism} (ε = {release.epsilon:g})")
    return Diagnostic(
        title=f"Error vs summary size (ranges of {size:,} cells)",
        caption=("Each point is one published summary: how many cells it lists, and how far its answers to "
                 "random ranges are from the truth. Smaller and lower is better. Uses the true data: for your "
                 "eyes only."),
        data={"summary_size": np.array(sizes), "mean_absolute_error": np.array(maes),
              "median_relative_error": np.array(mres), "label": np.array(labels, dtype=object)},
        internal=True, x="summary size (cells listed)", y="mean absolute error")

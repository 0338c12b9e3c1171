"""Declared-bound truncation and budget splits."""

import itertools

import numpy as np
import pytest
import scipy.sparse as sp
from scipy import stats

from dpdesk.errors import ParameterError
from dpdesk.privacy.bounding import bounded_counts, check_bound, prepare_bound, truncate
from dpdesk.privacy.budget import BudgetSplit, check_epsilon
from dpdesk.privacy.randomness import resolve


def test_rows_over_the_bound_keep_a_uniform_subset():
    matrix = sp.csr_matrix(np.array([[1, 1, 1, 1, 1], [1, 0, 1, 0, 0]]))
    source = resolve(6)
    kept_pairs = []
    for _ in range(6000):
        truncated, cut = truncate(matrix, 2, source)
        assert cut == 1
        assert np.diff(truncated.indptr).tolist() == [2, 2]
        assert truncated[1].indices.tolist() == [0, 2]  # rows within the bound are untouched
        kept_pairs.append(tuple(truncated[0].indices.tolist()))
    pairs = list(itertools.combinations(range(5), 2))
    counts = np.array([kept_pairs.count(p) for p in pairs])
    assert stats.chisquare(counts).pvalue > 1e-6  # all 10 pairs equally likely


@pytest.mark.parametrize("length, bound", [(6, 3), (4, 3), (9, 1)])
def test_every_subset_of_the_declared_size_is_equally_likely(length, bound):
    # Floyd's sampler (privacy.bounding.sample_kept), step by step: subsets of 3 of 6 (20), of 3 of 4 (4), and
    # single items; a row within the bound alongside must stay whole
    from dpdesk.privacy.bounding import sample_kept

    matrix = sp.csr_matrix(np.vstack([np.ones(length), np.r_[np.ones(bound), np.zeros(length - bound)]]))
    prepared = prepare_bound(matrix, bound)
    source = resolve(11)
    seen = {}
    for _ in range(8000):
        kept = sample_kept(prepared, source)
        assert np.all(np.diff(kept) > 0) and kept.size == bound  # ascending, distinct, Δ of them
        seen[tuple(matrix.indices[kept])] = seen.get(tuple(matrix.indices[kept]), 0) + 1
    subsets = list(itertools.combinations(range(length), bound))
    assert set(seen) == set(subsets)
    assert stats.chisquare([seen[s] for s in subsets]).pvalue > 1e-6


def test_bounded_counts_equal_counts_of_the_truncated_matrix():
    rng = np.random.default_rng(0)
    matrix = sp.csr_matrix((rng.random((200, 30)) < 0.3).astype(np.uint8))
    prepared = prepare_bound(matrix, 4)
    counts = bounded_counts(matrix, prepared, resolve(3))
    truncated, cut = truncate(matrix, 4, resolve(3))
    assert counts.tolist() == np.bincount(truncated.indices, minlength=30).tolist()
    assert cut == prepared.rows_cut == int((np.diff(matrix.indptr) > 4).sum())
    assert counts.sum() == np.minimum(np.diff(matrix.indptr), 4).sum()


@pytest.mark.parametrize("bad", [0, -1, 2.5, None, True])
def test_bad_bounds(bad):
    with pytest.raises(ParameterError):
        check_bound(bad)


def test_budget_split_sums():
    split = BudgetSplit(1.0).add("selection", 0.1).add("counts", 0.9)
    assert split.check().spent == pytest.approx(1.0)
    assert [s["share"] for s in split.as_list()] == pytest.approx([0.1, 0.9])
    with pytest.raises(ParameterError, match="add up"):
        BudgetSplit(1.0).add("a", 0.5).add("b", 0.6).check()
    with pytest.raises(ParameterError):
        BudgetSplit(1.0).check()
    with pytest.raises(ParameterError):
        BudgetSplit(1.0).add("zero", 0.0)


@pytest.mark.parametrize("bad", [0, -0.1, "abc", float("nan"), float("inf"), 1000])
def test_check_epsilon(bad):
    with pytest.raises(ParameterError):
        check_epsilon(bad)
    assert check_epsilon("0.5") == 0.5

"""Each shortcut summary has the laborious approach's output distribution (Cormode et al. Thm 1–4).

The laborious approach is written here independently of dpdesk: two-sided geometric noise
as the difference of two numpy geometric draws on every cell of a small domain, then the
summary rule applied to the dense noisy table. Both are run thousands of times (seeded)
and compared on

* the number of originally-empty cells in the summary: exactly Bin(m − n, p) for the
  filters and threshold samples (goodness of fit), the same as the laborious approach for
  the priority samples (two-sample chi-square);
* the released values of originally-empty cells: the conditional law from the direct
  geometric pmf (goodness of fit), and the laborious sample (two-sample);
* the inclusion frequency of every non-empty cell: against its exact probability
  Σ_x P(x)·π(c + x) where available, and against the laborious frequencies;
* the summary size and, for priority samples, τ_s (two-sample).

A test fails when a p-value falls below 1e-6 (a correct implementation fails less than once
in a million seeds); the planted bugs at the end — p_θ off by 2, empty cells chosen with
replacement, a tail off by one, a priority sample redrawn instead of extended — each
cross that line.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpdesk.mechanisms.sparse import shortcut
from dpdesk.mechanisms.sparse.dyadic import DyadicTree
from dpdesk.mechanisms.sparse.laws import Selection, ZeroLaw, noise_mu
from dpdesk.mechanisms.sparse.mechanisms import Table, draw_summary
from dpdesk.privacy.randomness import SeededRandom

P_FAIL = 1e-6
EPS = 0.7
M = 1500
RUNS = 2000


def small_table(m=M, n=40, seed=5):
    rng = np.random.default_rng(seed)
    indices = np.sort(rng.choice(m, size=n, replace=False))
    counts = rng.integers(1, 26, size=n)
    return indices, counts


INDICES, COUNTS = small_table()
DENSE = np.zeros(M, dtype=np.int64)
DENSE[INDICES] = COUNTS
SCALE = 1 / EPS
ALPHA = math.exp(-noise_mu(SCALE))


# -- the laborious approach (independent of dpdesk) -----------------------------------------

def two_sided_geometric(rng, alpha, shape):
    """P(X = x) = (1−α)/(1+α)·α^|x|: the difference of two geometrics with P(G=g) = (1−α)α^g."""
    return rng.geometric(1 - alpha, shape) - rng.geometric(1 - alpha, shape)


def summarize_dense(noisy, method, settings, rng):
    """Apply a summary rule to each row of a dense noisy table: list of (cells, values, weights, τ_s)."""
    theta, tau, size = settings.get("theta", 1), settings.get("tau"), settings.get("size")
    magnitude = np.abs(noisy).astype(float)
    if method == "filter":
        keep = noisy >= theta
    else:
        keep = (magnitude >= theta) & (noisy != 0)
    out = []
    if method in ("threshold", "filter-threshold"):
        keep &= rng.random(noisy.shape) < np.minimum(magnitude / tau, 1.0)
    if method in ("priority", "filter-priority"):
        priority = np.where(keep, magnitude, 0.0) / (1.0 - rng.random(noisy.shape))  # r in (0, 1]
        for row in range(noisy.shape[0]):
            order = np.argsort(-priority[row], kind="stable")
            chosen = np.sort(order[:size][priority[row, order[:size]] > 0])  # never a cell whose value is 0
            tau_s = priority[row, order[size]]
            values = noisy[row, chosen]
            out.append((chosen, values, np.sign(values) * np.maximum(np.abs(values), tau_s), tau_s))
        return out
    for row in range(noisy.shape[0]):
        cells = np.flatnonzero(keep[row])
        values = noisy[row, cells]
        weights = np.sign(values) * np.maximum(np.abs(values), tau) if tau is not None else None
        out.append((cells, values, weights, None))
    return out


def laborious(method, settings, runs, seed, dense=DENSE, alpha=ALPHA):
    rng = np.random.default_rng(seed)
    noisy = dense + two_sided_geometric(rng, alpha, (runs, dense.size))
    return summarize_dense(noisy, method, settings, rng)


def shortcut_runs(method, settings, runs, seed, table=None, scale=SCALE, consistency=False):
    table = table or Table(INDICES, COUNTS, M, 1)
    source = SeededRandom(np.random.default_rng(seed))
    out = []
    for _ in range(runs):
        summary = draw_summary(method, table, scale, settings, source, consistency=consistency)
        assert np.all(np.diff(summary.indices) > 0), "cells must be sorted and distinct"
        out.append((summary.indices, summary.values, summary.weights, summary.info.get("tau_s")))
    return out


# -- statistics -----------------------------------------------------------------------------

def _bins(weights, minimum):
    """Group consecutive categories until each group's weight reaches ``minimum``."""
    groups, current, total = [], [], 0.0
    for position, weight in enumerate(weights):
        current.append(position)
        total += weight
        if total >= minimum:
            groups.append(current)
            current, total = [], 0.0
    if current:
        if groups:
            groups[-1].extend(current)
        else:
            groups.append(current)
    return groups


def gof_pvalue(samples, support, probabilities):
    """Chi-square goodness of fit of integer samples to a law given on ``support`` (sorted)."""
    samples = np.asarray(samples)
    support = np.asarray(support)
    probabilities = np.asarray(probabilities, dtype=float)
    assert np.all(np.isin(samples, support)), "a sample outside the law's support"
    observed = np.array([np.count_nonzero(samples == v) for v in support], dtype=float)
    expected = probabilities / probabilities.sum() * samples.size
    groups = _bins(expected, 5.0)
    obs = np.array([observed[g].sum() for g in groups])
    exp = np.array([expected[g].sum() for g in groups])
    if len(groups) < 2:
        return 1.0
    return float(stats.chisquare(obs, exp).pvalue)


def two_sample_pvalue(first, second):
    """Chi-square homogeneity of two integer samples (sparse categories merged)."""
    first, second = np.asarray(first), np.asarray(second)
    values = np.union1d(first, second)
    a = np.array([np.count_nonzero(first == v) for v in values], dtype=float)
    b = np.array([np.count_nonzero(second == v) for v in values], dtype=float)
    groups = _bins(a + b, 20.0)
    table = np.array([[a[g].sum() for g in groups], [b[g].sum() for g in groups]])
    if table.shape[1] < 2:
        return 1.0
    return float(stats.chi2_contingency(table, correction=False).pvalue)


def inclusion_counts(runs, cells):
    counts = np.zeros(cells.size, dtype=np.int64)
    for indices, *_ in runs:
        counts += np.isin(cells, indices)
    return counts


def inclusion_two_sample_pvalue(first, second, cells, runs):
    a, b = inclusion_counts(first, cells), inclusion_counts(second, cells)
    total = a + b
    informative = (total > 0) & (total < 2 * runs)
    a, total = a[informative], total[informative]
    b = b[informative]
    chi2 = ((a - b) ** 2 * 2 * runs / (total * (2 * runs - total))).sum()
    return float(stats.chi2.sf(chi2, informative.sum())) if informative.any() else 1.0


def inclusion_exact_pvalue(runs, cells, counts, selection, alpha):
    """Per-cell inclusion counts against P(keep) = Σ_x P(x)·π(c + x) (chi-square, df = cells)."""
    x = np.arange(-400, 401)
    pmf = (1 - alpha) / (1 + alpha) * alpha ** np.abs(x)
    probability = np.array([(pmf * selection.keep_probability(c + x)).sum() for c in counts])
    observed = inclusion_counts(runs, cells)
    informative = (probability > 1e-12) & (probability < 1 - 1e-12)
    n = len(runs)
    z2 = (observed - n * probability) ** 2 / (n * probability * (1 - probability))
    assert np.all(observed[probability <= 1e-12] == 0)
    return float(stats.chi2.sf(z2[informative].sum(), informative.sum())) if informative.any() else 1.0


def zero_parts(runs, nonzero_cells):
    """Per run: number of originally-empty cells listed; pooled: their values."""
    numbers, values = [], []
    for indices, vals, *_ in runs:
        empty = ~np.isin(indices, nonzero_cells)
        numbers.append(int(empty.sum()))
        values.append(vals[empty])
    return np.array(numbers), np.concatenate(values)


def binomial_pvalue(numbers, trials, probability):
    support = np.arange(trials + 1)
    return gof_pvalue(numbers, support, stats.binom.pmf(support, trials, probability))


def law_pvalue(values, law):
    support = np.arange(-300, 301)
    support = support[law.pmf(support) > 0]
    return gof_pvalue(values, support, law.pmf(support))


# -- the comparisons ------------------------------------------------------------------------

SELECTION_CASES = [
    ("filter", {"theta": 2}, Selection(2, one_sided=True)),
    ("filter2", {"theta": 3}, Selection(3)),
    ("threshold", {"tau": 4.0}, Selection(tau_low=4.0)),
    ("filter-threshold", {"theta": 2, "tau": 5.5}, Selection(2, tau_low=5.5)),
]


@pytest.mark.parametrize("method,settings,selection", SELECTION_CASES, ids=[c[0] for c in SELECTION_CASES])
def test_selection_summaries_match_the_laborious_approach(method, settings, selection):
    fast = shortcut_runs(method, settings, RUNS, seed=11)
    slow = laborious(method, settings, RUNS, seed=12)
    law = ZeroLaw(noise_mu(SCALE), selection)
    numbers, values = zero_parts(fast, INDICES)
    slow_numbers, slow_values = zero_parts(slow, INDICES)
    assert binomial_pvalue(numbers, M - INDICES.size, law.probability) > P_FAIL
    assert binomial_pvalue(slow_numbers, M - INDICES.size, law.probability) > P_FAIL  # the reference itself
    assert law_pvalue(values, law) > P_FAIL
    assert two_sample_pvalue(values, slow_values) > P_FAIL
    assert inclusion_exact_pvalue(fast, INDICES, COUNTS, selection, ALPHA) > P_FAIL
    assert inclusion_two_sample_pvalue(fast, slow, INDICES, RUNS) > P_FAIL
    assert two_sample_pvalue([len(r[0]) for r in fast], [len(r[0]) for r in slow]) > P_FAIL
    if selection.sampled:  # weights are the Horvitz–Thompson ones: sign(v)·max(|v|, τ)
        indices, vals, weights, _ = fast[0]
        assert np.allclose(weights, np.sign(vals) * np.maximum(np.abs(vals), selection.tau_low))


PRIORITY_CASES = [("priority", {"size": 100}), ("filter-priority", {"theta": 2, "size": 80})]


@pytest.mark.parametrize("method,settings", PRIORITY_CASES, ids=[c[0] for c in PRIORITY_CASES])
def test_priority_samples_match_the_laborious_approach(method, settings):
    fast = shortcut_runs(method, settings, RUNS, seed=21)
    slow = laborious(method, settings, RUNS, seed=22)
    check_priority_runs(fast, slow, settings["size"])


def check_priority_runs(fast, slow, size, cells=INDICES):
    assert all(len(r[0]) == size for r in fast)
    numbers, values = zero_parts(fast, cells)
    slow_numbers, slow_values = zero_parts(slow, cells)
    assert two_sample_pvalue(numbers, slow_numbers) > P_FAIL
    assert two_sample_pvalue(values, slow_values) > P_FAIL
    assert inclusion_two_sample_pvalue(fast, slow, cells, len(fast)) > P_FAIL
    taus = np.array([r[3] for r in fast])
    slow_taus = np.array([r[3] for r in slow])
    assert stats.ks_2samp(taus, slow_taus).pvalue > P_FAIL
    indices, vals, weights, tau_s = fast[0]
    assert np.allclose(weights, np.sign(vals) * np.maximum(np.abs(vals), tau_s))
    return numbers, slow_numbers


def test_priority_sample_extended_below_a_bad_guess_is_still_exact(monkeypatch):
    # force the first level far too high (τ = 64): the sample must be extended twice, to 16 (module notes)
    monkeypatch.setattr(shortcut, "first_level", lambda m, mu, theta, size: 6)
    probe = shortcut.priority_summary(INDICES, COUNTS, M, SCALE, 100, SeededRandom(np.random.default_rng(30)))
    assert probe.internal["extensions"] == 2
    fast = shortcut_runs("priority", {"size": 100}, RUNS, seed=31)
    slow = laborious("priority", {"size": 100}, RUNS, seed=32)
    check_priority_runs(fast, slow, 100)


# -- dyadic ranges: the transform of a small domain, with and without the consistency check ----

TREE = DyadicTree(M)
NODES, NODE_COUNTS = TREE.transform(INDICES, COUNTS)
DYADIC_SCALE = TREE.levels / EPS
DYADIC_ALPHA = math.exp(-noise_mu(DYADIC_SCALE))


def laborious_dyadic(method, settings, runs, seed, consistency):
    dense = np.zeros(TREE.node_count, dtype=np.int64)
    dense[NODES] = NODE_COUNTS
    rng = np.random.default_rng(seed)
    noisy = dense + two_sided_geometric(rng, DYADIC_ALPHA, (runs, dense.size))
    if not consistency:
        return summarize_dense(noisy, method, settings, rng)
    # filter, drop nodes with an absent ancestor (checked node by node), then sample
    filtered = summarize_dense(noisy, "filter2", {"theta": settings["theta"]}, rng)
    offsets = np.concatenate([[0], np.cumsum([-(-M // 2**level) for level in range(TREE.levels)])])
    out = []
    for cells, values, _, _ in filtered:
        present = set(cells.tolist())
        keep = np.zeros(cells.size, dtype=bool)
        for k, cell in enumerate(cells.tolist()):
            level = int(np.searchsorted(offsets, cell, side="right") - 1)
            first_leaf = (cell - offsets[level]) << level
            keep[k] = all(offsets[up] + (first_leaf >> up) in present for up in range(level + 1, TREE.levels))
        kept = np.zeros(TREE.node_count, dtype=np.int64)
        kept[cells[keep]] = values[keep]
        out.extend(summarize_dense(kept[None, :], method, settings, rng))
    return out


@pytest.mark.parametrize("method,settings,consistency", [
    ("filter2", {"theta": 35}, True),
    ("filter-priority", {"theta": 30, "size": 120}, True),
    ("threshold", {"tau": 40.0}, False),
], ids=["filter2+consistency", "filter-priority+consistency", "threshold"])
def test_dyadic_summaries_match_the_laborious_approach(method, settings, consistency):
    runs = 500 if consistency else 1000  # the naive consistency reference is slow
    table = Table(NODES, NODE_COUNTS, TREE.node_count, TREE.levels, TREE)
    fast = shortcut_runs(method, settings, runs, seed=41, table=table, scale=DYADIC_SCALE, consistency=consistency)
    slow = laborious_dyadic(method, settings, runs, seed=42, consistency=consistency)
    numbers, values = zero_parts(fast, NODES)
    slow_numbers, slow_values = zero_parts(slow, NODES)
    assert two_sample_pvalue(numbers, slow_numbers) > P_FAIL
    assert two_sample_pvalue(values, slow_values) > P_FAIL
    assert inclusion_two_sample_pvalue(fast, slow, NODES, runs) > P_FAIL
    assert two_sample_pvalue([len(r[0]) for r in fast], [len(r[0]) for r in slow]) > P_FAIL
    if consistency:
        for indices, *_ in fast[:50]:
            assert TREE.consistent(indices).all()


# -- planted bugs cross the thresholds ---------------------------------------------------------

def test_planted_bug_p_theta_off_by_two_is_caught(monkeypatch):
    honest = shortcut.choose_free_cells
    monkeypatch.setattr(shortcut, "choose_free_cells",
                        lambda source, occupied, m, p: honest(source, occupied, m, min(1.0, 2 * p.approx)))
    law = ZeroLaw(noise_mu(SCALE), Selection(3))
    numbers, _ = zero_parts(shortcut_runs("filter2", {"theta": 3}, 500, seed=51), INDICES)
    assert binomial_pvalue(numbers, M - INDICES.size, law.probability) < P_FAIL


def test_planted_bug_empty_cells_with_replacement_is_caught(monkeypatch):
    honest = shortcut.choose_free_cells

    def with_replacement(source, occupied, m, p):
        k = honest(source, occupied, m, p).size  # the right number of draws ...
        free = np.setdiff1d(np.arange(m), occupied)
        return np.unique(free[source.uniform_int(free.size, k)])  # ... but repeats collapse

    monkeypatch.setattr(shortcut, "choose_free_cells", with_replacement)
    law = ZeroLaw(noise_mu(SCALE), Selection(3))
    numbers, _ = zero_parts(shortcut_runs("filter2", {"theta": 3}, 1000, seed=52), INDICES)
    assert binomial_pvalue(numbers, M - INDICES.size, law.probability) < P_FAIL


def test_planted_bug_tail_off_by_one_is_caught(monkeypatch):
    honest = ZeroLaw.sample
    monkeypatch.setattr(ZeroLaw, "sample", lambda self, source, count: honest(self, source, count) + 1)
    law = ZeroLaw(noise_mu(SCALE), Selection(2, one_sided=True))
    _, values = zero_parts(shortcut_runs("filter", {"theta": 2}, 300, seed=53), INDICES)
    assert law_pvalue(values, law) < P_FAIL or np.any(law.pmf(values) == 0)
    slow = laborious("filter", {"theta": 2}, 300, seed=54)
    assert two_sample_pvalue(values, zero_parts(slow, INDICES)[1]) < P_FAIL


def test_planted_bug_priority_redrawn_instead_of_extended_is_caught(monkeypatch):
    # a redraw conditions on the draw reaching s+1 priorities above the first level: τ_s is biased
    monkeypatch.setattr(shortcut, "first_level", lambda m, mu, theta, size: 4)  # τ = 16: enough half the time
    honest = shortcut.priority_summary

    def redraw(indices, counts, m, scale, size, source, theta=1):
        while True:
            sample = honest(indices, counts, m, scale, size, source, theta)
            if sample.internal["extensions"] == 0:
                return sample

    fast = []
    source = SeededRandom(np.random.default_rng(55))
    for _ in range(1500):
        sample = redraw(INDICES, COUNTS, M, SCALE, 150, source)
        fast.append((sample.indices, sample.values, sample.weights, sample.info["tau_s"]))
    slow = laborious("priority", {"size": 150}, 1500, seed=56)
    assert stats.ks_2samp([r[3] for r in fast], [r[3] for r in slow]).pvalue < P_FAIL


@pytest.mark.slow
@pytest.mark.parametrize("method,settings,selection", SELECTION_CASES, ids=[c[0] for c in SELECTION_CASES])
def test_selection_summaries_long(method, settings, selection):
    fast = shortcut_runs(method, settings, 30_000, seed=61)
    slow = laborious(method, settings, 30_000, seed=62)
    law = ZeroLaw(noise_mu(SCALE), selection)
    numbers, values = zero_parts(fast, INDICES)
    assert binomial_pvalue(numbers, M - INDICES.size, law.probability) > P_FAIL
    assert law_pvalue(values, law) > P_FAIL
    assert inclusion_exact_pvalue(fast, INDICES, COUNTS, selection, ALPHA) > P_FAIL
    assert inclusion_two_sample_pvalue(fast, slow, INDICES, 30_000) > P_FAIL


@pytest.mark.slow
@pytest.mark.parametrize("method,settings", PRIORITY_CASES, ids=[c[0] for c in PRIORITY_CASES])
def test_priority_samples_long(method, settings):
    check_priority_runs(shortcut_runs(method, settings, 20_000, seed=71),
                        laborious(method, settings, 20_000, seed=72), settings["size"])

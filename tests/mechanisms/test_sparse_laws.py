"""The laws behind the shortcuts, against direct summation of the geometric pmf.

p_θ, p_τ, p_{θ,τ} and every conditional CDF — ours, and the paper's closed forms
(App. C.1, C.2, C.4) — are compared with sums of P(ν = x) = (1−α)/(1+α)·α^|x| over
x ∈ [−5000, 5000] times the summary's keep probability. The samplers and the Bernoulli(p)
walk over the empty cells are checked for their exact distributions.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpdesk.errors import ParameterError
from dpdesk.mechanisms.sparse.dyadic import DyadicTree
from dpdesk.mechanisms.sparse.laws import Selection, ZeroLaw, noise_mu
from dpdesk.mechanisms.sparse.walk import (bernoulli_exp, check_output_size, choose_free_cells, choose_ranks,
                                           geometric_gaps, ranks_to_cells)
from dpdesk.privacy.randomness import SeededRandom

from .test_sparse_exactness import P_FAIL, gof_pvalue

X = np.arange(-5000, 5001)


def direct(alpha, selection):
    """(p, conditional pmf on X) by direct summation of the geometric pmf."""
    pmf = (1 - alpha) / (1 + alpha) * alpha ** np.abs(X.astype(float))
    kept = pmf * selection.keep_probability(X)
    return kept.sum(), kept / kept.sum()


def source(seed):
    return SeededRandom(np.random.default_rng(seed))


def as_exponential(gaps, mu, seed):
    """E = μG + (exponential within one step): exactly Exp(1) when P(G ≥ g) = e^{−μg}."""
    v = source(seed).uniform01(len(gaps))
    return np.asarray(gaps, dtype=float) * mu - np.log1p(v * np.expm1(-mu))


# -- the paper's closed forms (App. C) ---------------------------------------------------------

def paper_p_theta(a, theta, two_sided):
    return (2 if two_sided else 1) * a**theta / (1 + a)


def paper_p_tau(a, tau):
    return 2 * a * (1 - a**tau) / (tau * (1 - a * a))


def paper_p_theta_tau(a, theta, tau):
    return 2 / (tau * (1 - a * a)) * (theta * a**theta - (theta - 1) * a ** (theta + 1) - a ** (tau + 1))


def paper_cdf_filter(a, theta, x):
    return 1 - a ** (x - theta + 1) if x >= theta else 0.0


def paper_cdf_threshold(a, tau, v):
    c = 1 / (2 * a * (1 - a**tau))
    if v <= -tau:
        return tau * a ** (-v) * c * (1 - a)
    if v <= 0:
        return c * (-v * a ** (-v) + (v + 1) * a ** (-v + 1) - a ** (tau + 1))
    if v <= tau:
        return 0.5 + a * c * (1 - (v + 1) * a**v + v * a ** (v + 1))
    return 0.5 + a * c * (1 - a**tau - tau * a**v * (1 - a))


def paper_cdf_filter_threshold(a, theta, tau, v):
    c = 1 / (2 * (theta * a**theta - (theta - 1) * a ** (theta + 1) - a ** (tau + 1)))
    if v <= -tau:
        return tau * c * (1 - a) * a ** (-v)
    if v <= -theta:
        return c * (-v * a ** (-v) + (v + 1) * a ** (-v + 1) - a ** (tau + 1))
    if v < theta:
        return 0.5  # no mass strictly between −θ and θ
    if v <= tau:
        return 0.5 + c * (theta * a**theta - (theta - 1) * a ** (theta + 1) - (v + 1) * a ** (v + 1) + v * a ** (v + 2))
    return 1 - tau * c * (1 - a) * a ** (v + 1)


@pytest.mark.parametrize("epsilon", [0.1, 0.5, 1.0, 2.0])
@pytest.mark.parametrize("theta", [1, 2, 7, 30])
def test_p_theta_and_filter_cdfs(epsilon, theta):
    mu = noise_mu(1 / epsilon)
    a = math.exp(-mu)
    for two_sided in (False, True):
        selection = Selection(theta, one_sided=not two_sided)
        law = ZeroLaw(mu, selection)
        p, conditional = direct(a, selection)
        assert law.probability == pytest.approx(p, rel=1e-9)
        assert law.probability == pytest.approx(paper_p_theta(a, theta, two_sided), rel=1e-9)
        assert np.allclose(law.pmf(X), conditional, atol=1e-14)
        ours = np.cumsum(law.pmf(X))
        if not two_sided:
            paper = np.array([paper_cdf_filter(a, theta, x) for x in X[4000:6000]])
            assert np.allclose(ours[4000:6000], paper, atol=1e-12)
        else:  # the paper: |X| has the one-sided law, with a fair sign
            magnitude = np.array([paper_cdf_filter(a, theta, x) for x in range(0, 200)])
            ours_magnitude = np.cumsum([law.pmf(np.array([x]))[0] * (2 if x else 1) for x in range(0, 200)])
            assert np.allclose(ours_magnitude, magnitude, atol=1e-12)


@pytest.mark.parametrize("epsilon", [0.1, 0.7, 2.0])
@pytest.mark.parametrize("tau", [1, 3, 10, 57])
def test_p_tau_and_threshold_cdf(epsilon, tau):
    mu = noise_mu(1 / epsilon)
    a = math.exp(-mu)
    selection = Selection(tau_low=float(tau))
    law = ZeroLaw(mu, selection)
    p, conditional = direct(a, selection)
    assert law.probability == pytest.approx(p, rel=1e-9)
    assert law.probability == pytest.approx(paper_p_tau(a, tau), rel=1e-9)
    cdf = np.cumsum(conditional)
    assert np.allclose(np.cumsum(law.pmf(X)), cdf, atol=1e-12)
    for v in range(-3 * tau - 20, 3 * tau + 20):
        assert paper_cdf_threshold(a, tau, v) == pytest.approx(cdf[v + 5000], abs=1e-12), v


@pytest.mark.parametrize("epsilon", [0.1, 0.7, 2.0])
@pytest.mark.parametrize("theta,tau", [(1, 5), (2, 5), (5, 6), (10, 40), (3, 3)])
def test_p_theta_tau_and_its_cdf(epsilon, theta, tau):
    mu = noise_mu(1 / epsilon)
    a = math.exp(-mu)
    selection = Selection(theta, tau_low=float(tau))
    law = ZeroLaw(mu, selection)
    p, conditional = direct(a, selection)
    assert law.probability == pytest.approx(p, rel=1e-9)
    assert law.probability == pytest.approx(paper_p_theta_tau(a, theta, tau), rel=1e-9)
    if theta == 1:
        assert law.probability == pytest.approx(paper_p_tau(a, tau), rel=1e-9)  # "θ = 0 gives p_τ"
    cdf = np.cumsum(conditional)
    assert np.allclose(np.cumsum(law.pmf(X)), cdf, atol=1e-12)
    for v in range(-3 * tau - 20, 3 * tau + 20):
        assert paper_cdf_filter_threshold(a, theta, tau, v) == pytest.approx(cdf[v + 5000], abs=1e-12), v


@pytest.mark.parametrize("selection", [
    Selection(tau_low=7.5), Selection(4, tau_low=12.25), Selection(2, tau_low=3.3, tau_high=9.1),
    Selection(1, tau_low=1.0, tau_high=1e4), Selection(tau_low=2e5)])
def test_non_integer_thresholds_and_bands_against_direct_sums(selection):
    mu = noise_mu(1 / 0.3)
    law = ZeroLaw(mu, selection)
    p, conditional = direct(math.exp(-mu), selection)
    assert law.probability == pytest.approx(p, rel=1e-9)
    assert np.allclose(law.pmf(X), conditional, atol=1e-14)


def test_a_band_is_the_difference_of_two_thresholds():
    mu = noise_mu(2.0)
    high, low = ZeroLaw(mu, Selection(2, tau_low=30.0)), ZeroLaw(mu, Selection(2, tau_low=7.0))
    band = ZeroLaw(mu, Selection(2, tau_low=7.0, tau_high=30.0))
    assert band.probability == pytest.approx(low.probability - high.probability, rel=1e-12)


def test_extreme_thresholds():
    mu = noise_mu(1.0)
    assert ZeroLaw(mu, Selection(2000)).probability == 0.0  # underflows to exactly 0, no warnings
    assert ZeroLaw(mu, Selection(tau_low=0.5)).probability == pytest.approx(2 * math.exp(-mu) / (1 + math.exp(-mu)))
    with pytest.raises(ParameterError):
        Selection(0)


@pytest.mark.parametrize("selection,epsilon", [
    (Selection(3, one_sided=True), 0.5), (Selection(4), 0.2), (Selection(tau_low=6.0), 0.5),
    (Selection(3, tau_low=9.5), 0.3), (Selection(2, tau_low=4.0, tau_high=20.0), 0.4),
    (Selection(tau_low=3000.0), 0.05)])
def test_sampled_values_follow_the_law(selection, epsilon):
    law = ZeroLaw(noise_mu(1 / epsilon), selection)
    values = law.sample(source(7), 60_000)
    support = np.arange(-3000, 3001)
    support = support[law.pmf(support) > 0]
    assert gof_pvalue(values, support, law.pmf(support)) > P_FAIL


# -- the walk over the empty cells ---------------------------------------------------------------

def test_bernoulli_exp_is_exact_in_law_and_handles_the_edges():
    x = np.full(400_000, 2.0**-21)
    flips = bernoulli_exp(source(1), x)
    assert stats.binomtest(int((~flips).sum()), flips.size, -math.expm1(-(2.0**-21))).pvalue > P_FAIL
    assert bernoulli_exp(source(2), np.zeros(1000)).all()
    x = np.full(200_000, 2.0**-20)
    assert stats.binomtest(int(bernoulli_exp(source(3), x).sum()), x.size, math.exp(-(2.0**-20))).pvalue > P_FAIL
    with pytest.raises(ValueError):
        bernoulli_exp(source(4), np.array([0.5]))


def test_bernoulli_exp_undecided_words_go_to_the_exact_path():
    class Fixed(SeededRandom):  # first word exactly at the float threshold: undecided in floating point
        def __init__(self):
            super().__init__(np.random.default_rng(0))
            self.first = True

        def words(self, count):
            if self.first:
                self.first = False
                return np.array([int(math.exp(-(2.0**-30)) * 2.0**64)], dtype=np.uint64)
            return super().words(count)

    result = bernoulli_exp(Fixed(), np.array([2.0**-30]))
    assert result.dtype == bool and result.size == 1


@pytest.mark.parametrize("mu", [0.3, 2.0**-31, 2.0**-50, 2.0**-70, 2.0**-100])
def test_gaps_are_geometric_for_any_mu(mu):
    cap = 2**61
    gaps = geometric_gaps(source(5), mu, 100_000, cap)
    assert gaps.min() >= 0 and gaps.max() <= cap
    if mu * cap > 40:  # P(G ≥ g) = e^{−μg}
        assert stats.kstest(as_exponential(gaps, mu, 6), "expon").pvalue > P_FAIL
    else:  # mostly past the cap: P(G < cap) = 1 − e^{−μ·cap}
        below = int(np.count_nonzero(gaps < cap))
        assert stats.binomtest(below, gaps.size, -math.expm1(-mu * cap)).pvalue > P_FAIL


def test_gaps_small_mu_low_bits_are_right():
    # for μ = 2^-40 the low part R = G mod D must be (nearly uniform but exactly) geometric
    mu = 2.0**-40
    gaps = geometric_gaps(source(8), mu, 200_000, 2**62)
    low = gaps % 1024
    assert stats.chisquare(np.bincount(low, minlength=1024)).pvalue > P_FAIL
    assert stats.kstest(as_exponential(gaps, mu, 13), "expon").pvalue > P_FAIL


@pytest.mark.parametrize("free,probability", [(5000, 0.01), (5000, 0.5), (200, 0.999), (10**12, 3e-9)])
def test_chosen_ranks_are_distinct_and_binomial(free, probability):
    counts, firsts = [], []
    rng_source = source(9)
    for _ in range(1500):
        ranks = choose_ranks(rng_source, free, probability)
        assert np.all(np.diff(ranks) > 0) and (ranks.size == 0 or (ranks[0] >= 0 and ranks[-1] < free))
        counts.append(ranks.size)
        if ranks.size:
            firsts.append(ranks[0])
    support = np.arange(0, min(free, int(free * probability * 3 + 50)) + 1)
    assert gof_pvalue(np.minimum(counts, support[-1]), support, stats.binom.pmf(support, free, probability)) > P_FAIL
    # the first chosen rank is geometric: P(first ≥ g) = (1 − p)^g
    assert stats.kstest(as_exponential(firsts, -math.log1p(-probability), 10), "expon").pvalue > P_FAIL


def test_ranks_skip_the_occupied_cells():
    occupied = np.array([0, 1, 5, 6, 7, 12])
    free = np.setdiff1d(np.arange(20), occupied)
    assert np.array_equal(ranks_to_cells(occupied, np.arange(free.size)), free)
    chosen = choose_free_cells(source(11), occupied, 20, 1.0)
    assert np.array_equal(chosen, free)
    assert choose_free_cells(source(11), occupied, 20, 0.0).size == 0


def test_every_empty_cell_equally_likely():
    occupied = np.sort(np.random.default_rng(3).choice(300, 60, replace=False))
    hits = np.zeros(300)
    rng_source = source(12)
    for _ in range(3000):
        hits[choose_free_cells(rng_source, occupied, 300, 0.05)] += 1
    assert np.all(hits[occupied] == 0)
    free = np.setdiff1d(np.arange(300), occupied)
    assert stats.chisquare(hits[free]).pvalue > P_FAIL


def test_output_size_refused_from_public_quantities():
    with pytest.raises(ParameterError, match="max_cells"):
        check_output_size(0.01, 10**12, 10**6, "The summary 'filter'")
    check_output_size(1e-7, 10**12, 10**6, "The summary 'filter'")


# -- dyadic ranges -----------------------------------------------------------------------------------

@pytest.mark.parametrize("m", [1, 2, 3, 7, 8, 9, 1000, 4097, 10**15])
def test_dyadic_transform_and_range_decomposition(m):
    tree = DyadicTree(m)
    assert tree.levels == (m - 1).bit_length() + 1
    rng = np.random.default_rng(m % 1000)
    indices = np.unique(rng.integers(0, m, size=min(m, 50)))
    counts = rng.integers(1, 9, size=indices.size)
    nodes, sums = tree.transform(indices, counts)
    assert np.all(np.diff(nodes) > 0) and nodes.max() < tree.node_count
    starts, stops = tree.node_ranges(nodes)
    assert np.all(sums == [counts[(indices >= a) & (indices < b)].sum() for a, b in zip(starts, stops)])
    assert tree.consistent(nodes).all()  # true counts are always consistent
    low = rng.integers(0, m, size=200)
    high = np.minimum(low + rng.integers(0, m + 1, size=200), m)
    query, used = tree.range_nodes(low, high)
    assert np.bincount(query, minlength=200).max() <= 2 * max(tree.levels - 1, 1)
    u_start, u_stop = tree.node_ranges(used)
    # the nodes of each range tile it exactly
    for q in range(0, 200, 20):
        mine = np.sort(u_start[query == q])
        assert np.all(mine == np.sort(u_start[query == q]))
        assert (u_stop[query == q] - u_start[query == q]).sum() == high[q] - low[q]
    exact = np.array([counts[(indices >= a) & (indices < b)].sum() for a, b in zip(low, high)])
    lookup = dict(zip(nodes.tolist(), sums.tolist()))
    estimate = np.bincount(query, weights=[lookup.get(int(v), 0) for v in used], minlength=200)
    assert np.array_equal(estimate, exact)


def test_consistency_drops_nodes_under_an_absent_ancestor():
    tree = DyadicTree(8)  # levels: 8 leaves (0–7), 4 (8–11), 2 (12–13), root 14
    released = np.array([0, 1, 2, 8, 12, 14])  # leaf 2's parent (9) is absent
    assert tree.consistent(released).tolist() == [True, True, False, True, True, True]
    assert not tree.consistent(np.array([0, 8, 12])).any()  # no root: nothing stands
    with pytest.raises(ParameterError):
        DyadicTree(2**61)

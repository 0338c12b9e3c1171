"""The exact exponential mechanism against its probabilities."""

from decimal import Decimal

import numpy as np
import pytest
from scipy import stats

from dpdesk.errors import ParameterError
from dpdesk.privacy import exponential as em
from dpdesk.privacy.randomness import resolve


def frequencies(scores, runs, **kwargs):
    source = resolve(kwargs.pop("seed", 1))
    picks = [em.sample(scores, source=source, **kwargs) for _ in range(runs)]
    return np.bincount(picks, minlength=len(scores))


@pytest.mark.parametrize("monotone", [False, True])
def test_frequencies_match_exp_eps_q(monotone):
    scores = np.array([0.0, 1.0, 2.5, 3.0, 3.0, -4.0])
    epsilon, sensitivity = 1.2, 1.0
    counts = frequencies(scores, 6_000, epsilon=epsilon, sensitivity=sensitivity, monotone=monotone)
    coefficient = epsilon / (sensitivity if monotone else 2 * sensitivity)
    expected = np.exp(coefficient * scores)
    expected /= expected.sum()
    assert np.allclose(em.probabilities(scores, epsilon, sensitivity, monotone), expected, rtol=1e-9)
    keep = expected * counts.sum() > 5
    p = stats.chisquare(counts[keep], expected[keep] / expected[keep].sum() * counts[keep].sum()).pvalue
    assert p > 1e-6
    # the other form's probabilities are far enough apart to be rejected: the test can fail
    other = np.exp((epsilon / (2 * sensitivity) if monotone else epsilon / sensitivity) * scores)
    other /= other.sum()
    assert stats.chisquare(counts[keep], other[keep] / other[keep].sum() * counts[keep].sum()).pvalue < 1e-6


def test_a_million_candidates_is_stable():
    rng = np.random.default_rng(0)
    scores = rng.normal(size=1_000_000) * 1e5  # huge score range: naive exp would overflow
    scores[123_456] = scores.max() + 50.0
    pick = em.sample(scores, epsilon=1.0, sensitivity=1.0, source=resolve(2))
    assert pick == 123_456  # the leader wins with probability 1 − e^{-25}·…
    flat = np.zeros(1_000_000)
    picks = [em.sample(flat, epsilon=1.0, sensitivity=1.0, source=resolve(s)) for s in range(200)]
    assert len(set(picks)) > 190  # uniform over a million: almost no repeats
    probabilities = em.probabilities(scores, 1.0, 1.0)
    assert np.isfinite(probabilities).all() and probabilities.sum() == pytest.approx(1.0)


def test_tiny_probabilities_still_reachable():
    # a candidate 60 units below the best keeps probability e^{-30}: never dropped to exactly 0
    scores = np.array([60.0] + [0.0] * 9)
    probabilities = em.probabilities(scores, 1.0, 1.0)
    assert probabilities[1] > 0


def test_exact_bernoulli_decides_near_ties():
    source = resolve(4)
    # U = 1/2 exactly in its first 64 bits and p = 1/2 ± 2^-200: only the extended bits decide
    above = em._bernoulli(2**63, 0.5, source, lambda prec: Decimal("0.5") + Decimal(2) ** -200)
    assert above in (True, False)
    assert em._bernoulli(2**63 - 2**20, 0.5, source, lambda prec: Decimal("0.5")) is True
    assert em._bernoulli(2**63 + 2**20, 0.5, source, lambda prec: Decimal("0.5")) is False
    # U in [1/2, 1/2 + 2^-64) and p in its middle: the extended bits make it a fair coin
    middle = Decimal("0.5") + Decimal(2) ** -65
    wins = sum(em._bernoulli(2**63, 0.5, resolve(s), lambda prec: middle) for s in range(400))
    assert 140 < wins < 260
    assert not any(em._bernoulli(2**63, 0.5, resolve(s), lambda prec: Decimal("0.5")) for s in range(50))


def test_bad_inputs():
    with pytest.raises(ParameterError):
        em.sample([], epsilon=1.0, sensitivity=1.0, source=resolve(1))
    with pytest.raises(ParameterError):
        em.sample([1.0, np.nan], epsilon=1.0, sensitivity=1.0, source=resolve(1))
    with pytest.raises(ParameterError):
        em.sample([1.0], epsilon=0.0, sensitivity=1.0, source=resolve(1))

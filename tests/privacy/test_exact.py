"""Exact draws from real-number probabilities (dpdesk.privacy.exact).

The enclosures must contain the true values (checked against 120-digit decimal
arithmetic); a draw must equal the comparison of the full uniform with the true boundary
even when the first 64 bits cannot decide it (words planted on the boundary); and the
frequencies must match the probabilities.
"""

from __future__ import annotations

import math
from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from dpdesk.privacy.exact import ExactDraw, Interval, Real, exp_neg, uniform_below
from dpdesk.privacy.randomness import SeededRandom

P_FAIL = 1e-6


def source(seed):
    return SeededRandom(np.random.default_rng(seed))


def high(expression) -> Decimal:
    """An expression in Decimal at 120 digits (the reference the enclosures must contain)."""
    with localcontext() as ctx:
        ctx.prec = 120
        return expression()


def contains(interval: Interval, value: Decimal) -> bool:
    return interval.lo <= value <= interval.hi


def test_enclosures_contain_the_true_values_and_are_narrow():
    mu = 0.37
    for digits in (20, 40, 80):
        alpha = exp_neg(mu, digits)
        truth = high(lambda: (-Decimal(mu)).exp())
        assert contains(alpha, truth) and alpha.width <= truth * Decimal(10) ** (2 - digits)
        ratio = (1 - alpha) / (1 + alpha)
        assert contains(ratio, high(lambda: (1 - (-Decimal(mu)).exp()) / (1 + (-Decimal(mu)).exp())))
        third = Interval.exact(Fraction(1, 3), digits)
        assert contains(third, high(lambda: Decimal(1) / 3)) and third.width > 0
        assert Interval.exact(0.1, digits).width == 0  # a float is an exact binary fraction
    tiny = exp_neg(10**9, 30)  # far below the float range: still a positive enclosure
    assert tiny.lo > 0 and tiny.hi.adjusted() == -434_294_482  # e^(−10⁹) = 1.2495…·10^(−434294482)
    with pytest.raises(ZeroDivisionError):
        Interval.exact(1, 20) / Interval(Decimal(-1), Decimal(1), 20)


def test_real_numbers_combine_exactly():
    p = Real(lambda digits: exp_neg(1.0, digits), math.exp(-1.0))
    q = Real.of(0.75)
    assert q.exact == Fraction(3, 4) and q.complement().exact == Fraction(1, 4)
    ratio = (p / q.complement()).enclosure(50)
    assert contains(ratio, high(lambda: (-Decimal(1)).exp() * 4))
    assert (p.complement().enclosure(50).lo < 1 - Decimal(math.exp(-1.0)) + Decimal(1e-15))


class Planted(SeededRandom):
    """Words from a list first, then from a seeded generator."""

    def __init__(self, first_words, seed=0):
        super().__init__(np.random.default_rng(seed))
        self.queue = [int(w) for w in first_words]
        self.used = 0

    def words(self, count):
        out = []
        while self.queue and len(out) < count:
            out.append(self.queue.pop(0))
        rest = count - len(out)
        self.used += count
        tail = super().words(rest) if rest else np.zeros(0, dtype=np.uint64)
        return np.concatenate([np.array(out, dtype=np.uint64), tail])


def truth_of(words: list[int], boundary: Decimal) -> bool | None:
    """U < boundary for U pinned by these 64-bit words (None when they cannot tell)."""
    prefix = 0
    for word in words:
        prefix = (prefix << 64) | word
    bits = 64 * len(words)
    with localcontext() as ctx:
        ctx.prec = 200
        low, high_end = Decimal(prefix) / Decimal(2) ** bits, Decimal(prefix + 1) / Decimal(2) ** bits
        if high_end <= boundary:
            return True
        if low >= boundary:
            return False
    return None


def test_a_word_on_the_boundary_is_decided_by_more_bits_exactly():
    """The first word straddles p = e^(−1)/3: only the following words decide, and correctly."""
    probability = Real(lambda digits: exp_neg(1.0, digits) / 3, math.exp(-1) / 3)
    exact = high(lambda: (-Decimal(1)).exp() / 3)
    boundary_word = int(exact * 2**64)  # U ∈ [w, w + 1)/2^64 contains p
    rng = np.random.default_rng(5)
    decided = 0
    for trial in range(300):
        second = int(rng.integers(0, 2**64, dtype=np.uint64))
        planted = Planted([boundary_word, second], seed=trial)
        draw = ExactDraw.bernoulli(probability.enclosure)
        result = bool(draw.draw(planted, 1)[0] == 0)
        assert planted.used >= 2  # the slow path ran
        expected = truth_of([boundary_word, second], exact)
        if expected is not None:
            assert result == expected, (trial, second)
            decided += 1
    assert decided > 290


def test_words_clearly_below_or_above_are_decided_at_once():
    exact = high(lambda: (-Decimal(1)).exp() / 3)
    word = int(exact * 2**64)
    probability = Real(lambda digits: exp_neg(1.0, digits) / 3, math.exp(-1) / 3)
    for first, expected in ((word - 2, True), (word + 2, False), (0, True), (2**64 - 1, False)):
        planted = Planted([first])
        assert bool(ExactDraw.bernoulli(probability.enclosure).draw(planted, 1)[0] == 0) == expected
        assert planted.used == 1


def test_certain_outcomes_at_the_edges():
    """p = 1 and p = 0 (exact) and a boundary of exactly 1 never go astray, even for the largest word."""
    for p, expected in ((Fraction(1), 0), (Fraction(0), 1)):
        planted = Planted([2**64 - 1, 0])
        assert ExactDraw.bernoulli(Real.of(p).enclosure).draw(planted, 1)[0] == expected


def test_categorical_frequencies_match_the_weights():
    weights = [math.exp(-1.0), 1.0, math.exp(-0.5), 0.0]
    draw = ExactDraw.from_weights(lambda digits: [exp_neg(1.0, digits), Interval.exact(1, digits),
                                                  exp_neg(0.5, digits), Interval.exact(0, digits)])
    counts = np.bincount(draw.draw(source(1), 300_000), minlength=4)
    assert counts[3] == 0  # a weight of exactly 0 is never drawn
    expected = np.array(weights[:3]) / sum(weights) * counts.sum()
    assert stats.chisquare(counts[:3], expected).pvalue > P_FAIL


def test_bernoulli_of_a_rational_is_exact_in_law():
    draw = ExactDraw.bernoulli(Real.of(Fraction(1, 3)).enclosure)
    hits = int(np.count_nonzero(draw.draw(source(2), 600_000) == 0))
    assert stats.binomtest(hits, 600_000, 1 / 3).pvalue > P_FAIL


@pytest.mark.parametrize("high_end", [1, 3, 7, 2**40 + 3, 2**53, 2**62 + 1])
def test_uniform_below_is_uniform(high_end):
    draws = uniform_below(source(3), np.full(120_000, high_end))
    assert draws.min() >= 0 and draws.max() < high_end
    if high_end == 1:
        assert not draws.any()
    elif high_end <= 7:
        assert stats.chisquare(np.bincount(draws, minlength=high_end)).pvalue > P_FAIL
    else:  # the top bit and the lowest bits are fair
        assert stats.binomtest(int(np.count_nonzero(draws >= high_end // 2)), draws.size,
                               (high_end - high_end // 2) / high_end).pvalue > P_FAIL
        assert stats.chisquare(np.bincount(draws % 8, minlength=8)).pvalue > P_FAIL
    assert uniform_below(source(4), np.zeros(0, dtype=np.int64)).size == 0
    with pytest.raises(ValueError):
        uniform_below(source(4), np.array([0]))


def test_uniform_below_rejects_the_incomplete_top_block():
    """K = 3·2^61: 2^64 mod K = 2^62, so a plain modulo would give residues below 2^61 with probability
    3/8 instead of 1/3; the words of the incomplete block are redrawn."""
    k = 3 * 2**62 // 2  # 2^64 mod k is large: a plain modulo would favour the low residues
    draws = uniform_below(source(6), np.full(200_000, k))
    assert stats.binomtest(int(np.count_nonzero(draws < k // 3)), draws.size, 1 / 3).pvalue > P_FAIL

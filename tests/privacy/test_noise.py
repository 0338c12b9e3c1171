"""The exact samplers against their exact distributions (chi-square with fixed seeds).

Thresholds: p-values below 1e-6 fail. A correct sampler fails about once in a million
runs; a planted bug (half the scale, a wrong ratio, a lost "−0" rejection) gives p-values
far below that at these sample sizes — checked explicitly below.
"""

import math
from decimal import Decimal

import numpy as np
import pytest
from scipy import stats

from dpdesk.errors import ParameterError
from dpdesk.privacy import noise
from dpdesk.privacy.randomness import SecureRandom, SeededRandom, resolve

P_FAIL = 1e-6


def discrete_laplace_pmf(values, scale):
    alpha = math.exp(-1.0 / scale)
    return (1 - alpha) / (1 + alpha) * alpha ** np.abs(values)


def chi_square_p(samples, pmf, support):
    """p-value of samples against pmf on support, pooling the tails into one bin each side."""
    counts = np.array([(samples == v).sum() for v in support], dtype=float)
    expected = pmf(np.asarray(support)) * samples.size
    low = (samples < support[0]).sum()
    high = (samples > support[-1]).sum()
    tail_mass = 1 - pmf(np.asarray(support)).sum()
    # split the outside mass by symmetry-free direct sums
    below = sum(pmf(np.arange(support[0] - 2000, support[0]))) if support[0] > -10**6 else 0
    above = tail_mass - below
    counts = np.concatenate([counts, [low, high]])
    expected = np.concatenate([expected, [below * samples.size, above * samples.size]])
    keep = expected > 5
    return stats.chisquare(counts[keep], expected[keep] * counts[keep].sum() / expected[keep].sum()).pvalue


@pytest.mark.parametrize("scale", [0.3, 1.0, 1 / 0.69, 10.0, 250.0])
def test_discrete_laplace_matches_pmf(scale):
    samples = noise.discrete_laplace(resolve(17), scale, 400_000)
    width = int(max(3, 4 * scale))
    support = list(range(-width, width + 1))
    p = chi_square_p(samples, lambda v: discrete_laplace_pmf(v, scale), support)
    assert p > P_FAIL, p


def test_half_scale_would_be_caught():
    # the same test rejects a sampler with half the noise: the threshold has teeth
    samples = noise.discrete_laplace(resolve(17), 5.0, 400_000)
    p = chi_square_p(samples, lambda v: discrete_laplace_pmf(v, 10.0), list(range(-40, 41)))
    assert p < 1e-100


def test_secure_source_matches_pmf():
    samples = noise.discrete_laplace(SecureRandom(), 2.0, 300_000)
    p = chi_square_p(samples, lambda v: discrete_laplace_pmf(v, 2.0), list(range(-12, 13)))
    assert p > P_FAIL


@pytest.mark.parametrize("mu", [0.05, 1.0, 3.0])
def test_geometric_matches_pmf(mu):
    samples = noise.geometric(resolve(5), mu, 300_000)
    alpha = math.exp(-mu)
    top = int(math.ceil(12 / mu))
    observed = np.bincount(np.minimum(samples, top), minlength=top + 1).astype(float)
    expected = (1 - alpha) * alpha ** np.arange(top + 1)
    expected[-1] = alpha**top  # the pooled tail P(G ≥ top)
    keep = expected * samples.size > 5
    p = stats.chisquare(observed[keep], expected[keep] / expected[keep].sum() * observed[keep].sum()).pvalue
    assert p > P_FAIL and samples.min() >= 0


def test_per_element_scales():
    scales = np.array([1.0, 100.0] * 100_000)
    samples = noise.discrete_laplace(resolve(2), scales)
    small, large = samples[0::2], samples[1::2]
    assert np.var(small) == pytest.approx(2 * math.exp(-1) / (1 - math.exp(-1)) ** 2, rel=0.03)
    a = math.exp(-0.01)
    assert np.var(large) == pytest.approx(2 * a / (1 - a) ** 2, rel=0.03)


def test_exact_fallback_stage_has_the_right_distribution(monkeypatch):
    # force every draw through the slow decimal path and check it against the pmf
    original = noise._geometric_interval

    def undecided(k, inv_mu, bits):
        low, certain = original(k, inv_mu, bits)
        return low, np.zeros_like(certain)

    monkeypatch.setattr(noise, "_geometric_interval", undecided)
    samples = noise.discrete_laplace(resolve(9), 1.5, 4000)
    p = chi_square_p(samples, lambda v: discrete_laplace_pmf(v, 1.5), list(range(-6, 7)))
    assert p > P_FAIL


def test_decimal_path_against_the_definition():
    # G = floor(−ln U / μ) with U in (k·2^-63·2^-64, …]: compare with a direct high-precision evaluation
    source = SeededRandom(np.random.default_rng(4))
    for k in [1, 2, 12345, 2**62, 2**63 - 1]:
        for mu in [0.001, 0.7, 5.0]:
            state = source.generator.bit_generator.state
            value = noise._geometric_exact(k, 63, mu, source)
            source.generator.bit_generator.state = state
            extra = int(source.words(1)[0])
            u = (Decimal(k * 2**64 + extra) + Decimal("0.5")) / Decimal(2) ** 127
            assert value == math.floor(-(u.ln()) / Decimal(mu))


def test_grid_laplace_outputs_on_grid_and_costs_accounted():
    gamma, scale = noise.grid_scale(sensitivity=3.0, epsilon=0.5, changing_coordinates=10)
    assert math.log2(gamma).is_integer()
    assert (3.0 + 10 * gamma) / scale == pytest.approx(0.5, rel=1e-12)  # rounding cost paid by the scale
    values = np.array([0.1, 2.71828, -5.5, 1e6 / 3])
    noisy = noise.grid_laplace(values, scale, gamma, resolve(1))
    assert np.all(np.round(noisy / gamma) * gamma == noisy)


def test_scale_limits():
    with pytest.raises(ParameterError):
        noise.discrete_laplace(resolve(1), 0.0, 3)
    with pytest.raises(ParameterError):
        noise.discrete_laplace(resolve(1), 2.0**51, 3)
    with pytest.raises(ParameterError):
        noise.add_discrete_laplace(np.array([0.5]), 1.0, resolve(1))


def test_quantile_and_mean_abs():
    samples = noise.discrete_laplace(resolve(3), 7.0, 500_000)
    z = noise.discrete_laplace_quantile(7.0, 0.95)
    assert np.mean(np.abs(samples) <= z) >= 0.95 > np.mean(np.abs(samples) <= z - 1)
    assert np.mean(np.abs(samples)) == pytest.approx(noise.discrete_laplace_mean_abs(7.0), rel=0.01)


def test_randomness_modes():
    assert resolve(None).secure and not resolve(3).secure
    assert not resolve(np.random.default_rng(1)).secure
    a = noise.discrete_laplace(resolve(11), 5.0, 10)
    b = noise.discrete_laplace(resolve(11), 5.0, 10)
    assert np.array_equal(a, b)  # exploration is reproducible
    c = noise.discrete_laplace(SecureRandom(), 5.0, 1000)
    d = noise.discrete_laplace(SecureRandom(), 5.0, 1000)
    assert not np.array_equal(c, d)
    with pytest.raises(ParameterError):
        resolve("seed")


def test_uniform_int_and_permutation_are_uniform():
    source = resolve(8)
    draws = source.uniform_int(7, size=70_000)
    assert stats.chisquare(np.bincount(draws, minlength=7)).pvalue > P_FAIL
    firsts = np.array([source.permutation(4)[0] for _ in range(20_000)])
    assert stats.chisquare(np.bincount(firsts, minlength=4)).pvalue > P_FAIL

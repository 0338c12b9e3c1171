"""Measuring the ε a noise step really spends, to check it against its budget table (issue 22).

A step that adds noise of scale ``b`` to a query of L1 sensitivity ``Δ`` spends ``ε = Δ/b``.
The tests run a mechanism many times (seeded) on a fixed small input whose true answer
they know, collect the noise actually added, and solve for the ε that makes the expected
absolute noise equal the observed one: the *measured* ε. It must agree with the ε the
budget table claims for the step.

Thresholds. A check passes when ``|ln(ε_measured / ε_claimed)| < MARGIN = ln(1.5)/2``:
halfway, on a log scale, between the claim and a step that spends 1.5× what it says. Every
check first computes the standard error of ``ln ε_measured`` that a correct implementation
has for its draws (the delta method on the mean absolute noise, from the exact moments
of the claimed noise) and requires ``Z·se < MARGIN`` with ``Z = 5``: a correct step then
fails less than once in 10⁶ runs (two-sided normal tail at 4.9σ), and a step that spends
1.5× its claim (or 2×, or half) passes less than once in 10⁶ too, its measured ε lying at
least ``MARGIN`` beyond the threshold. The seeds are fixed, so the outcome is reproducible.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize

from dpdesk.privacy.noise import discrete_laplace_mean_abs, discrete_laplace_variance

MARGIN = math.log(1.5) / 2
Z = 5.0  # standard errors between the claim and the threshold: P(fail | correct) < 1e-6


@dataclass
class Measured:
    """A measured ε, the claim it is checked against and the standard error of the logarithm."""

    epsilon: float
    claimed: float
    log_se: float
    draws: int
    what: str
    quantity: str = "ε"

    @property
    def log_ratio(self) -> float:
        return math.log(self.epsilon / self.claimed)

    def __str__(self) -> str:
        return (f"{self.what}: measured {self.quantity} = {self.epsilon:.4g} against the claimed {self.claimed:.4g} "
                f"(ln ratio {self.log_ratio:+.3f}, standard error {self.log_se:.3f}, {self.draws} draws)")


def _moments(sensitivity: np.ndarray, unit: np.ndarray, epsilon: float) -> tuple[np.ndarray, np.ndarray]:
    """E|X| and Var|X| of each draw when its noise has scale ``sensitivity/ε`` in steps of ``unit``.

    ``unit`` 0 means continuous Laplace (E|X| = b, Var|X| = b²); otherwise the noise is
    ``unit``·DiscreteLaplace(``sensitivity``/ε): the scale is counted in units.
    """
    scale = sensitivity / epsilon
    mean = np.empty(scale.size)
    variance = np.empty(scale.size)
    continuous = unit == 0
    mean[continuous] = scale[continuous]
    variance[continuous] = scale[continuous] ** 2
    for i in np.flatnonzero(~continuous):
        mean_abs = discrete_laplace_mean_abs(float(scale[i]))
        mean[i] = unit[i] * mean_abs
        variance[i] = unit[i] ** 2 * (discrete_laplace_variance(float(scale[i])) - mean_abs**2)
    return mean, variance


def measured_epsilon(noise, sensitivity, claimed: float, *, unit=1.0, what: str = "") -> Measured:
    """The ε whose noise (scale ``sensitivity/ε`` per draw, in steps of ``unit``) has the observed
    mean absolute value; with the standard error of its logarithm under the claim.

    ``sensitivity`` and ``unit`` are per draw or one for all. With per-draw sensitivities
    Δ_i the step's privacy loss is ε when each draw's scale is Δ_i/ε (e.g. a group average of
    |g| items gets Δ_i = |g|·Δ'/w in units of 1/|g|).
    """
    noise = np.abs(np.asarray(noise, dtype=np.float64).ravel())
    k = np.broadcast_to(np.asarray(sensitivity, dtype=np.float64), noise.shape).astype(np.float64)
    u = np.broadcast_to(np.asarray(unit, dtype=np.float64), noise.shape).astype(np.float64)
    # group draws of the same (sensitivity, unit): the moments are computed once per group
    keys, counts = np.unique(np.column_stack([k, u]), axis=0, return_counts=True)

    def expected(epsilon: float) -> tuple[float, float]:
        mean, variance = _moments(keys[:, 0], keys[:, 1], epsilon)
        return float(mean @ counts), float(variance @ counts)

    observed = float(noise.sum())
    low, high = claimed / 100, claimed * 100  # a measured ε outside fails anyway
    if observed >= expected(low)[0]:
        epsilon = low
    elif observed <= expected(high)[0]:
        epsilon = high
    else:
        epsilon = optimize.brentq(lambda e: math.log(max(expected(e)[0], 1e-300)) - math.log(observed), low, high, xtol=1e-12,
                                  rtol=1e-10)
    # delta method: ln ε̂ moves by d ln ε / d S per unit of the sum S of |noise|
    total, variance = expected(claimed)
    step = 1e-4
    slope = (math.log(expected(claimed * math.exp(step))[0]) - math.log(expected(claimed * math.exp(-step))[0])) / (
        2 * step)  # d ln E[S] / d ln ε (negative)
    log_se = math.sqrt(variance) / total / abs(slope)
    return Measured(epsilon, claimed, log_se, int(noise.size), what)


def check(measured: Measured) -> Measured:
    """Assert that the design can tell a 1.5× error apart, then that the measured ε matches the claim."""
    print(measured)
    assert Z * measured.log_se < MARGIN, f"too few draws to tell a 1.5× error apart: {measured}"
    assert abs(measured.log_ratio) < MARGIN, str(measured)
    return measured


def exponential_choice(scores, picks, claimed_coefficient: float, epsilon_per_coefficient: float,
                       what: str = "") -> Measured:
    """The ε of an exponential mechanism measured from its picks: the maximum-likelihood c of
    Pr[i] ∝ exp(c·q_i) over the candidates' exact scores, times ``epsilon_per_coefficient``
    (2Δq for the standard form, Δq for the one-directional one).

    The log-likelihood is concave in c; its derivative is mean(q_picked) − E_c[q]. The
    standard error under the claim is 1/√(N·Var_c(q)) at the claimed c (Fisher information).
    """
    scores = np.asarray(scores, dtype=np.float64)
    picks = np.asarray(picks)
    target = float(scores[picks].mean())

    def moments(c: float) -> tuple[float, float]:
        logits = c * (scores - scores.max())
        weights = np.exp(logits - logits.max())
        weights /= weights.sum()
        mean = float(weights @ scores)
        return mean, float(weights @ (scores - mean) ** 2)

    low, high = claimed_coefficient / 1e4, claimed_coefficient * 1e4
    if moments(high)[0] <= target:
        c = high
    elif moments(low)[0] >= target:
        c = low
    else:
        c = optimize.brentq(lambda x: moments(x)[0] - target, low, high, xtol=1e-14, rtol=1e-12)
    log_se = 1.0 / math.sqrt(picks.size * moments(claimed_coefficient)[1]) / claimed_coefficient
    return Measured(c * epsilon_per_coefficient, claimed_coefficient * epsilon_per_coefficient, log_se,
                    int(picks.size), what)

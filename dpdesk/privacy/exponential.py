"""The exponential mechanism (McSherry & Talwar), sampled exactly in log space.

Choosing candidate ``i`` with probability ``∝ exp(c · q_i)`` where

* standard form: ``c = ε / (2Δq)`` — ε-DP for any quality function with sensitivity Δq;
* one-directional form: ``c = ε / Δq`` — ε-DP when, between neighbours, every score
  moves in the same direction (DPSense §4.1: adding a row raises every q(θ)).

Floating point
--------------
The scores are computed in floating point by the caller. ``score_error`` bounds how far a
computed score can be from its exact value (default ``8·2⁻⁵³·max|q|``, a few roundings);
the mechanism uses the sensitivity ``Δq + 2·score_error`` so that the proof covers the
computed scores, and rounds ``c`` down. The target distribution is then defined exactly
by the float scores and ``c``; we sample it *exactly* by rejection:

1. proposal: with probability 1/64 a uniform candidate, otherwise candidate ``i`` with
   probability ``W_i / ΣW`` where ``W_i = ⌊e^{−g_i}·2^B⌋`` are integers
   (``g_i = c·(q_max − q_i)``), drawn with exact integer arithmetic;
2. accept with probability ``a_i = e^{−γ_i} / (M·p_i)`` where ``p_i`` is the (rational)
   proposal probability and ``M`` a rigorous upper bound of ``e^{−γ_i}/p_i``;
3. the Bernoulli(a_i) is decided from 64 random bits against a float value of ``a_i``
   with an error margin of 2⁻⁴⁰; inside the margin it is recomputed in ``decimal`` at
   high precision with more random bits.

The accepted candidate has exactly the exponential mechanism's distribution (up to the
ε-DP-preserving adjustments above). Costs are a few vector passes over the candidates;
10⁶–10⁷ candidates take well under a second.
"""

from __future__ import annotations

import math
from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np

from ..errors import ParameterError
from .randomness import RandomSource

_MIX = Fraction(1, 64)  # share of uniform proposals: every candidate stays reachable


def coefficient(epsilon: float, sensitivity: float, monotone: bool) -> float:
    """The factor ``c`` in ``exp(c·q)``, rounded down."""
    if not (epsilon > 0 and sensitivity > 0):
        raise ParameterError("The exponential mechanism needs ε > 0 and a positive sensitivity.")
    c = epsilon / (sensitivity if monotone else 2.0 * sensitivity)
    return float(np.nextafter(c, 0.0))


def probabilities(scores, epsilon: float, sensitivity: float, monotone: bool = False) -> np.ndarray:
    """The mechanism's selection probabilities (float, log-space softmax) — for plots and tests."""
    scores = np.asarray(scores, dtype=np.float64)
    c = coefficient(epsilon, sensitivity, monotone)
    logits = c * (scores - scores.max())
    weights = np.exp(logits)
    return weights / weights.sum()


def _effective_sensitivity(scores: np.ndarray, sensitivity: float, score_error: float | None) -> float:
    if score_error is None:
        score_error = 8 * 2.0**-53 * float(np.max(np.abs(scores))) if scores.size else 0.0
    return float(sensitivity) + 2.0 * float(score_error)


def sample(scores, *, epsilon: float, sensitivity: float, source: RandomSource,
           monotone: bool = False, score_error: float | None = None) -> int:
    """Index of the selected candidate (see the module notes for the exact method)."""
    return Sampler(scores, epsilon=epsilon, sensitivity=sensitivity, monotone=monotone,
                   score_error=score_error).draw(source)


class Sampler:
    """The deterministic part of :func:`sample` for fixed scores, reusable across draws.

    A mechanism that draws many times from the same scores (comparisons repeat a release)
    builds it once; each :meth:`draw` then costs a few small operations instead of passes
    over every candidate. Holds the scores and the cumulative proposal weights.
    """

    def __init__(self, scores, *, epsilon: float, sensitivity: float, monotone: bool = False,
                 score_error: float | None = None):
        scores = np.asarray(scores, dtype=np.float64).ravel()
        n = scores.size
        if n == 0:
            raise ParameterError("The exponential mechanism needs at least one candidate.")
        if not np.all(np.isfinite(scores)):
            raise ParameterError("Quality scores must be finite numbers.")
        c = coefficient(epsilon, _effective_sensitivity(scores, sensitivity, score_error), monotone)
        q_max = float(scores.max())
        gaps = c * (q_max - scores)  # ≥ 0; float, within 2⁻⁵¹ relative of the exact γ_i
        bits = max(8, min(40, 62 - math.ceil(math.log2(n + 1))))
        approx = np.exp(-gaps)
        weights = np.floor(approx * 2.0**bits).astype(np.uint64)
        self.cumulative = np.cumsum(weights, dtype=np.uint64)
        self.total = int(self.cumulative[-1])  # ≥ 2^bits·(1 − tiny): the best candidate has weight ≈ 1
        # proposal probability of each candidate: (1−η)·W_i/ΣW + η/n
        eta = float(_MIX)
        proposal = (1 - eta) * weights.astype(np.float64) / self.total + eta / n
        # M ≥ max e^{−γ}/p; the float ratio is within ~2⁻⁴⁰ relative, so 1 + 2⁻²⁰ is ample
        self.bound = float(np.max(approx / proposal)) * (1 + 2.0**-20)
        self.scores, self.c, self.q_max, self.n = scores, c, q_max, n

    def _weights(self, picks: np.ndarray) -> np.ndarray:
        previous = np.where(picks > 0, self.cumulative[np.maximum(picks - 1, 0)], np.uint64(0))
        return self.cumulative[picks] - previous

    def draw(self, source: RandomSource) -> int:
        n, total, bound = self.n, self.total, self.bound
        eta = float(_MIX)
        while True:
            batch = 32
            choose_uniform = source.uniform_int(int(1 / _MIX), size=batch) == 0
            uniform_pick = source.uniform_int(n, size=batch)
            weighted_pick = np.searchsorted(self.cumulative, source.uniform_int(np.uint64(total), size=batch)
                                            .astype(np.uint64), side="right")
            picks = np.where(choose_uniform, uniform_pick, weighted_pick)
            weights = self._weights(picks)
            approx = np.exp(-(self.c * (self.q_max - self.scores[picks])))
            proposal = (1 - eta) * weights.astype(np.float64) / total + eta / n
            accept_float = approx / (bound * proposal)
            u = source.words(batch)
            for j in range(batch):
                i = int(picks[j])
                if _bernoulli(int(u[j]), float(accept_float[j]), source,
                              _exact_acceptance(i, self.scores, self.c, self.q_max, int(weights[j]), total, n,
                                                bound)):
                    return i


def _bernoulli(word: int, p_float: float, source: RandomSource, exact) -> bool:
    """Decide U < p for U uniform (64 bits now, more lazily) and p known to 2⁻⁴⁰ relative."""
    u = word / 2.0**64
    margin = p_float * 2.0**-40 + 2.0**-60
    if u + 2.0**-64 <= p_float - margin:
        return True
    if u >= p_float + margin:
        return False
    # too close to call in floating point: exact comparison with extended bits
    numerator, bits = word, 64
    for precision in (80, 160, 320, 640):
        p = exact(precision)
        if p > 1:
            raise AssertionError("exponential mechanism acceptance exceeded 1")  # pragma: no cover
        for _ in range(2):
            numerator = (numerator << 64) | int(source.words(1)[0])
            bits += 64
        scaled = p * (Decimal(2) ** bits)
        slack = Decimal(10) ** (-(precision - 30)) * scaled
        if numerator + 1 <= scaled - slack:
            return True
        if numerator >= scaled + slack:
            return False
    raise RuntimeError("exponential mechanism acceptance undecided")  # pragma: no cover


def _exact_acceptance(i, scores, c, q_max, weight, total, n, bound):
    def compute(precision: int) -> Decimal:
        with localcontext() as ctx:
            ctx.prec = precision
            gamma = Decimal(c) * (Decimal(q_max) - Decimal(float(scores[i])))
            target = (-gamma).exp()
            proposal = (Decimal(1) - Decimal(1) / 64) * Decimal(weight) / Decimal(total) + Decimal(1) / (64 * n)
            return target / (Decimal(bound) * proposal)
    return compute

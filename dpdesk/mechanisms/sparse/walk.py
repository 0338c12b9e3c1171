"""Choosing the upgraded empty cells: each one independently with probability p, in O(k).

In the laborious approach every empty cell enters the summary independently with the
same probability p (Remark 1). The shortcut reproduces exactly that: it walks over the
free cells (those not already listed) with geometric gaps, ``P(gap ≥ g) = (1−p)^g``,
i.e. an exact geometric with μ = −ln(1−p). The positions it lands on form a Bernoulli(p)
process, so their number is Bin(free, p) and, given the number, they are a uniformly
random set of *distinct* free cells — what the paper asks for, without rejection
sampling and in time proportional to the number chosen.

Positions are ranks among the free cells; :func:`ranks_to_cells` maps them to cell
numbers by skipping the sorted occupied cells (``searchsorted`` on
``occupied − arange(n)``), so memory stays proportional to n plus the output, never m.

Tiny p
------
``dpdesk.privacy.noise.geometric`` is exact for any μ, but for μ below about 2⁻³⁰ its draws
exceed the float range in which it decides quickly (and past 2⁶³ they overflow). A small p
is common (p ≈ t/m for a target size t in a domain of m = 10¹² cells), so below 2⁻³⁰ the
gap is split exactly as G = D·Q + R with D = 2^d, μD ∈ [2⁻³⁰, 2⁻²⁹): Q = ⌊G/D⌋ is geometric
with parameter μD, and R = G mod D, independent of Q, has P(R = r) ∝ e^{−μr} on [0, D).
R is drawn by rejection from a uniform integer Y on [0, D), accepted with probability
e^{−μY} ≥ e^{−2⁻²⁹} (:func:`bernoulli_exp`, exact). When even D = 2⁶² gives μD < 2⁻³⁰,
only whether Q ≥ 1 matters (G ≥ 2⁶² is past every domain), which is Bernoulli(e^{−μD}).

Exact p
-------
The geometric gaps are exact for a *float* μ, but p is a real number (e.g. 2α^θ/(1+α) with
α = e^{−ε}), and −ln(1 − p) is not a float. So the walk runs at a float rate μ_q with
q = 1 − e^{−μ_q} ≥ p (rounded up, checked with an enclosure of p), and keeps each cell it
lands on with probability exactly p/q (an :class:`~dpdesk.privacy.exact.ExactDraw`, which
compares a uniform with enclosures of p/q). Thinning a Bernoulli(q) process this way gives
exactly a Bernoulli(p) process; q/p − 1 is about 2⁻⁵⁰, so almost every landing is kept.
"""

from __future__ import annotations

import math
from decimal import Decimal, localcontext
from functools import lru_cache

import numpy as np

from ...errors import ParameterError
from ...privacy.exact import ExactDraw, Interval, Real, contexts, enclose
from ...privacy.noise import geometric
from ...privacy.randomness import RandomSource
from .laws import draw_in_blocks

FAST_MU = 2.0**-30  # below this, gaps are split into D·Q + R (module notes)
EXP_LIMIT = 2.0**-20  # bernoulli_exp's float path is checked for x up to this
_MARGIN = 2.0**-48  # covers the float error of exp and of the product μ·Y
_TWO64 = 2.0**64


def bernoulli_exp(source: RandomSource, x) -> np.ndarray:
    """Coin flips that are True with probability exactly e^{−x}, for 0 ≤ x ≤ 2⁻²⁰.

    A 64-bit word pins a uniform U to an interval of width 2⁻⁶⁴; the flip is U < e^{−x}.
    With e^{−x} known in floating point to within 2⁻⁴⁸, the answer is certain unless the
    interval lies within 2⁻⁴⁸ of it (probability about 2⁻⁴⁷); those few are finished with
    more words and exact decimal arithmetic.
    """
    x = np.asarray(x, dtype=np.float64)
    if np.any(x < 0) or np.any(x > EXP_LIMIT):
        raise ValueError("bernoulli_exp needs 0 ≤ x ≤ 2^-20")
    threshold = np.exp(-x)
    words = source.words(x.size)
    below = (threshold - _MARGIN) * _TWO64  # < 2^64: every U under it is surely below e^{-x}
    above = (threshold + _MARGIN) * _TWO64
    result = words < below.astype(np.uint64)  # (w + 1)·2^-64 ≤ e^{-x} − margin
    sure_no = (above < _TWO64) & (words >= np.minimum(above, _TWO64 - 4096).astype(np.uint64))
    for i in np.flatnonzero(~result & ~sure_no):
        result[i] = _bernoulli_exp_exact(float(x[i]), int(words[i]), source)
    return result


def _bernoulli_exp_exact(x: float, word: int, source: RandomSource) -> bool:
    bits, prefix = 64, word
    with localcontext() as ctx:
        ctx.prec = 80
        target = (-Decimal(x)).exp()  # Decimal(x) is the float's exact value
        for _ in range(100):
            low = Decimal(prefix) / (Decimal(2) ** bits)
            high = Decimal(prefix + 1) / (Decimal(2) ** bits)
            if high <= target:
                return True
            if low >= target:
                return False
            prefix = (prefix << 64) | int(source.words(1)[0])
            bits += 64
            ctx.prec += 20
    raise RuntimeError("bernoulli_exp did not converge")  # pragma: no cover


def geometric_gaps(source: RandomSource, mu: float, size: int, cap: int) -> np.ndarray:
    """``size`` draws of min(G, cap) for G with P(G ≥ g) = e^{−μg} (exact, any μ > 0)."""
    size, cap = int(size), int(cap)
    if mu >= FAST_MU:
        return np.minimum(draw_in_blocks(lambda k: geometric(source, mu, k), size), cap)
    exponent = math.ceil(math.log2(FAST_MU) - math.log2(mu))  # (FAST_MU / μ overflows for subnormal μ)
    out = np.full(size, cap, dtype=np.int64)
    if exponent <= 62:
        block = 2**exponent
        quotient = geometric(source, mu * block, size)
        inside = np.flatnonzero(quotient <= cap // block)  # the others are ≥ cap already
    else:
        block = 2**62  # larger than any domain: G ≥ block means "past the end"
        inside = np.flatnonzero(~bernoulli_exp(source, np.full(size, mu * block)))
        quotient = np.zeros(size, dtype=np.int64)
    if inside.size:
        remainder = _truncated_geometric(source, mu, block, inside.size)
        out[inside] = np.minimum(quotient[inside] * block + remainder, cap)
    return out


def _truncated_geometric(source: RandomSource, mu: float, block: int, size: int) -> np.ndarray:
    """R on [0, block) with P(R = r) ∝ e^{−μr}, by rejection from uniform (μ·block ≤ 2⁻²⁰)."""
    out = np.empty(size, dtype=np.int64)
    pending = np.arange(size)
    while pending.size:
        proposal = source.uniform_int(block, pending.size)
        accepted = bernoulli_exp(source, mu * proposal.astype(np.float64))
        out[pending[accepted]] = proposal[accepted]
        pending = pending[~accepted]
    return out


@lru_cache(maxsize=256)
def rate_above(probability: Real) -> float:
    """A float μ > 0 with 1 − e^{−μ} ≥ p (so that thinning by p/q is possible)."""
    width = Decimal(2) ** -80
    high = enclose(lambda digits: [probability.enclosure(digits)], width)[0].hi
    if high >= 1:
        raise ValueError("rate_above needs p < 1")
    down, up = contexts(60)
    if high < Decimal(2) ** -20:  # −ln(1 − h) = h + h²/2 + … ≤ h/(1 − h), without cancellation
        bound = up.divide(high, down.subtract(1, high))
    else:
        bound = -(down.ln(down.subtract(1, high)).next_minus(down))
    mu = float(bound)
    if Decimal(mu) < bound:
        mu = math.nextafter(mu, math.inf)
    return max(mu, math.ulp(0.0))


def choose_ranks(source: RandomSource, free: int, probability) -> np.ndarray:
    """Sorted ranks in [0, free), each included independently with exactly ``probability``.

    ``probability``: a float or Fraction (its exact value) or an exact :class:`Real`.
    """
    free = int(free)
    probability = Real.of(probability)
    if free <= 0 or probability.exact == 0:
        return np.zeros(0, dtype=np.int64)
    if probability.exact is not None and probability.exact >= 1:
        return np.arange(free, dtype=np.int64)
    mu = rate_above(probability)
    landed = _walk(source, free, mu)
    if landed.size == 0:
        return landed
    return landed[_thinning(probability, mu).draw(source, landed.size) == 0]


@lru_cache(maxsize=256)
def _thinning(probability: Real, mu: float) -> ExactDraw:
    """Keep a landing with probability p/q, q = 1 − e^{−μ} (cached: repeated summaries reuse it)."""
    return ExactDraw.bernoulli(lambda digits: probability.enclosure(digits) / (1 - Interval.exact(-mu, digits).exp()))


def _walk(source: RandomSource, free: int, mu: float) -> np.ndarray:
    """Sorted ranks in [0, free), each included independently with probability 1 − e^{−μ} (float μ)."""
    rate = -math.expm1(-mu)
    expected = rate * free
    batch = int(min(free, expected + 6.0 * math.sqrt(expected) + 64))
    chunks, position = [], 0  # position: the first rank not yet walked over
    while position < free:
        gaps = geometric_gaps(source, mu, batch, free)
        ranks = position + np.cumsum(gaps + 1) - 1  # gaps ≤ free, so no overflow before the end
        beyond = np.flatnonzero(ranks >= free)
        if beyond.size:
            chunks.append(ranks[: beyond[0]])
            break
        chunks.append(ranks)
        position = int(ranks[-1]) + 1
    return np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.int64)


def ranks_to_cells(occupied: np.ndarray, ranks: np.ndarray) -> np.ndarray:
    """Cell numbers of the given ranks among the cells not in ``occupied`` (sorted, distinct)."""
    if occupied.size == 0:
        return ranks.astype(np.int64)
    skip = occupied - np.arange(occupied.size, dtype=np.int64)
    return ranks + np.searchsorted(skip, ranks, side="right")


def choose_free_cells(source: RandomSource, occupied: np.ndarray, domain_size: int, probability) -> np.ndarray:
    """Each cell of [0, domain_size) not in sorted ``occupied`` independently with ``probability`` (exact)."""
    free = int(domain_size) - int(occupied.size)
    return ranks_to_cells(occupied, choose_ranks(source, free, probability))


def check_output_size(probability: float, domain_size: int, limit: int, what: str) -> None:
    """Refuse (before any noise is drawn) a summary expected to list more than ``limit`` cells.

    Uses only public quantities (p and m), so refusing reveals nothing about the data.
    """
    expected = probability * float(domain_size)
    if expected > limit:
        raise ParameterError(
            f"{what} would list about {expected:,.0f} empty cells (probability {probability:.3g} each over "
            f"{domain_size:,} cells), more than the limit max_cells = {limit:,}. Raise the threshold, lower "
            "the target or sample size, or raise max_cells if you have the memory (16 bytes a cell).")

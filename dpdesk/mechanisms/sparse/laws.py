"""What the laborious approach does to one cell that is empty in the true table.

Cormode et al. (§2, App. C) add geometric noise ν with ``P(ν = x) = (1−α)/(1+α)·α^|x|``
(α = e^{−ε/Δ}) to *every* one of the m cells and then summarize. A cell whose true count
is 0 ends up in the summary with a probability p that is the same for all such cells
(Remark 1), and, given that it is there, its released value has a fixed conditional law.
This module computes both, for every summary of the paper, from one description of
"what a summary keeps" (:class:`Selection`):

* one-sided high-pass filter (``filter``): keep v when v ≥ θ;
* two-sided filter (``filter2``): keep v when |v| ≥ θ;
* threshold sampling with τ, after an optional two-sided filter θ (``threshold``,
  ``filter-threshold``): keep v with probability min(|v|/τ, 1) when |v| ≥ θ;
* the band between two sampling thresholds τ_low < τ_high (used to extend a threshold
  sample into a priority sample): probability min(|v|/τ_low, 1) − min(|v|/τ_high, 1).

Every rule keeps v with a probability π(v) that is symmetric in v (except the one-sided
filter) and, on the magnitudes a = |v| ≥ θ, piecewise affine: π(a) = c0 + c1·a on integer
segments, constant on the last one. Hence

    p = (sides)·(1−α)/(1+α) · Σ_{a ≥ θ} α^a·π(a),

summed per segment in closed form (or directly, for short segments). For integer τ this
is the paper's p_θ = α^θ/(1+α) (one-sided), 2α^θ/(1+α) (two-sided),
p_τ = 2α(1−α^τ)/(τ(1−α²)) and p_{θ,τ} = 2(θα^θ − (θ−1)α^{θ+1} − α^{τ+1})/(τ(1−α²));
``tests/mechanisms/test_sparse_laws.py`` checks all of them, and the paper's four-piece
CDFs, against direct summation of the geometric pmf.

Drawing the released value of an upgraded empty cell: its magnitude has weights
α^a·π(a). Where π is constant up to infinity the magnitude is ``start + G`` with G an
exact geometric draw (``dpdesk.privacy.noise.geometric``), so the filters' values are
exact (App. C.1: M′ given M′ ≥ θ is θ + Geometric(α)). On the affine segments the
magnitude is drawn by inverting a table of the cumulative weights with a uniform on the
2⁻⁵³ grid (``source.uniform01``); the table stops where the remaining weight is below
2⁻⁵⁸ of the total. The sign is a fair coin for the symmetric rules. The value of an empty
cell does not depend on the data, so this float resolution cannot reveal anything about
which cells are empty beyond an event of probability about 2⁻⁵³.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property, lru_cache

import numpy as np

from ...errors import ParameterError
from ...privacy.noise import _mu_from_scale, geometric
from ...privacy.randomness import RandomSource

DIRECT_SUM = 1 << 16  # segments up to this length are summed term by term (no cancellation)
MAX_TABLE = 10_000_000  # magnitudes in a sampling table; more means ε/Δ below ~4·10⁻⁶
BLOCK = 1 << 16  # exact samplers run 2-3x faster on blocks that fit the CPU cache


def draw_in_blocks(draw, size: int) -> np.ndarray:
    """``draw(k)`` called on cache-sized blocks of at most :data:`BLOCK`, concatenated.

    Same distribution as one call of ``size``; only the memory traffic changes.
    """
    size = int(size)
    if size <= BLOCK:
        return draw(size)
    return np.concatenate([draw(min(BLOCK, size - start)) for start in range(0, size, BLOCK)])


@lru_cache(maxsize=256)
def noise_mu(scale: float) -> float:
    """μ = −ln α of the exact discrete Laplace noise of this scale (the sampler's own μ)."""
    return float(_mu_from_scale(scale))


@dataclass(frozen=True)
class Selection:
    """Which noisy values v a summary keeps, and with what probability.

    ``theta``: filter, keep only |v| ≥ θ (v ≥ θ when ``one_sided``); θ ≥ 1, and θ = 1
    keeps every non-zero value. ``tau_low``: sampling, keep with probability
    min(|v|/τ_low, 1) (None: keep every value that passes the filter). ``tau_high``: the
    band rule, minus min(|v|/τ_high, 1).
    """

    theta: int = 1
    one_sided: bool = False
    tau_low: float | None = None
    tau_high: float | None = None

    def __post_init__(self) -> None:
        if int(self.theta) != self.theta or self.theta < 1:
            raise ParameterError("The filter threshold θ must be a whole number of at least 1.")
        if self.one_sided and self.tau_low is not None:
            raise ValueError("sampling after a one-sided filter is not a summary of the paper")
        if self.tau_low is not None and not self.tau_low > 0:
            raise ParameterError("The sampling threshold τ must be positive.")
        if self.tau_high is not None and (self.tau_low is None or not self.tau_high > self.tau_low):
            raise ValueError("a band needs tau_low < tau_high")

    @property
    def sampled(self) -> bool:
        return self.tau_low is not None

    def keep_probability(self, values) -> np.ndarray:
        """π(v) for each noisy value (float array)."""
        v = np.asarray(values)
        magnitude = np.abs(v).astype(np.float64)
        passed = (v >= self.theta) if self.one_sided else (magnitude >= self.theta)
        probability = passed.astype(np.float64)
        if self.tau_low is not None:
            share = np.minimum(magnitude / self.tau_low, 1.0)
            if self.tau_high is not None:
                share -= np.minimum(magnitude / self.tau_high, 1.0)
            probability *= share
        return probability

    def segments(self) -> list[tuple[int, float, float, float]]:
        """π on magnitudes a ≥ θ as ``(first, last, c0, c1)``: π(a) = c0 + c1·a (last may be inf)."""
        theta = int(self.theta)
        if self.tau_low is None:
            return [(theta, math.inf, 1.0, 0.0)]
        low_end = math.floor(self.tau_low)  # a ≤ low_end: a/τ_low ≤ 1
        if self.tau_high is None:
            parts = [(theta, low_end, 0.0, 1.0 / self.tau_low), (max(theta, low_end + 1), math.inf, 1.0, 0.0)]
        else:
            high_end = math.floor(self.tau_high)
            parts = [(theta, low_end, 0.0, 1.0 / self.tau_low - 1.0 / self.tau_high),
                     (max(theta, low_end + 1), high_end, 1.0, -1.0 / self.tau_high)]
        return [part for part in parts if part[0] <= part[1]]


def _segment_sums(log_alpha: float, first: int, last: float, origin: int) -> tuple[float, float]:
    """Σ_{a=first}^{last} α^{a−origin} and Σ a·α^{a−origin} (last may be inf)."""
    one_minus = -math.expm1(log_alpha)
    scale = math.exp((first - origin) * log_alpha)
    if scale == 0.0:
        return 0.0, 0.0
    if last != math.inf and last - first < DIRECT_SUM:
        a = np.arange(first, int(last) + 1, dtype=np.float64)
        weights = np.exp((a - first) * log_alpha)
        return scale * float(weights.sum()), scale * float((weights * a).sum())
    # Σ_{j<N} α^j = (1 − α^N)/(1 − α);  Σ_{j<N} j α^j = α(1 − N α^{N−1} + (N−1) α^N)/(1 − α)²
    if last == math.inf:
        s0 = 1.0 / one_minus
        s1 = math.exp(log_alpha) / one_minus**2
    else:
        count = int(last) - first + 1
        alpha_n = math.exp(count * log_alpha)
        s0 = -math.expm1(count * log_alpha) / one_minus
        s1 = math.exp(log_alpha) * (1.0 - count * alpha_n / math.exp(log_alpha) + (count - 1) * alpha_n) / one_minus**2
    return scale * s0, scale * (first * s0 + s1)


class ZeroLaw:
    """Inclusion probability and conditional value law of an empty cell under a :class:`Selection`.

    ``mu`` is the noise's −ln α (see :func:`noise_mu`).
    """

    def __init__(self, mu: float, selection: Selection):
        if not mu > 0:
            raise ParameterError("The noise parameter must be positive.")
        self.mu = float(mu)
        self.selection = selection
        self.log_alpha = -self.mu
        self.alpha = math.exp(-self.mu)
        self.sides = 1 if selection.one_sided else 2
        origin = int(selection.theta)
        masses = []
        for first, last, c0, c1 in selection.segments():
            s0, s1 = _segment_sums(self.log_alpha, first, last, origin)
            masses.append(c0 * s0 + c1 * s1)
        self._segment_masses = masses
        self.relative_mass = float(sum(masses))  # Σ α^{a−θ} π(a)
        # p = sides·(1−α)/(1+α)·α^θ·relative_mass, in logs so a large θ underflows to exactly 0
        if self.relative_mass > 0:
            log_p = (math.log(self.sides) + math.log(-math.expm1(-self.mu)) - math.log1p(self.alpha)
                     - origin * self.mu + math.log(self.relative_mass))
            self.probability = math.exp(log_p) if log_p > -745 else 0.0
        else:
            self.probability = 0.0
        self.probability = min(self.probability, 1.0)

    # -- the law -----------------------------------------------------------------------
    def magnitude_weights(self, magnitudes) -> np.ndarray:
        """α^{a−θ}·π(a) for magnitudes a (unnormalized; 0 below θ)."""
        a = np.asarray(magnitudes, dtype=np.float64)
        pi = np.zeros(a.shape)
        for first, last, c0, c1 in self.selection.segments():
            inside = (a >= first) & (a <= last)
            pi[inside] = c0 + c1 * a[inside]
        return np.exp((a - self.selection.theta) * self.log_alpha) * pi

    def pmf(self, values) -> np.ndarray:
        """P(released value = v | the empty cell is in the summary)."""
        v = np.asarray(values)
        weights = self.magnitude_weights(np.abs(v)) / self.relative_mass
        if self.sides == 1:
            return np.where(v > 0, weights, 0.0)
        return np.where(v != 0, weights / 2.0, 0.0)

    # -- sampling ----------------------------------------------------------------------
    @cached_property
    def _sampler(self):
        """(table start, cumulative table weights, tail start, tail weight) for magnitudes."""
        theta = int(self.selection.theta)
        tail_start, tail_weight = None, 0.0
        table_end = theta - 1
        for (first, last, c0, c1), mass in zip(self.selection.segments(), self._segment_masses):
            if last == math.inf and c1 == 0.0:
                tail_start, tail_weight = first, mass  # constant to infinity: exact geometric
            else:
                table_end = max(table_end, int(last))
        cutoff = theta + math.ceil(64 * math.log(2) / self.mu)  # α^(cutoff−θ) ≤ 2^-64
        table_end = min(table_end, cutoff, tail_start - 1 if tail_start is not None else table_end)
        if table_end - theta + 1 > MAX_TABLE:
            raise ParameterError(f"The noise is too wide (ε/Δ = {self.mu:.3g}) for this summary's sampling table; "
                                 "use a larger ε.")
        if table_end >= theta:
            cumulative = np.cumsum(self.magnitude_weights(np.arange(theta, table_end + 1)))
        else:
            cumulative = np.zeros(0)
        return theta, cumulative, tail_start, tail_weight

    def sample(self, source: RandomSource, count: int) -> np.ndarray:
        """``count`` released values of upgraded empty cells (int64)."""
        count = int(count)
        if count == 0:
            return np.zeros(0, dtype=np.int64)
        table_start, cumulative, tail_start, tail_weight = self._sampler
        table_weight = float(cumulative[-1]) if cumulative.size else 0.0
        magnitudes = np.empty(count, dtype=np.int64)
        if tail_start is not None and table_weight > 0:
            in_tail = source.uniform01(count) * (table_weight + tail_weight) >= table_weight
        else:
            in_tail = np.full(count, tail_start is not None)
        tail = np.flatnonzero(in_tail)
        if tail.size:
            magnitudes[tail] = tail_start + draw_in_blocks(lambda k: geometric(source, self.mu, k), tail.size)
        body = np.flatnonzero(~in_tail)
        if body.size:
            u = source.uniform01(body.size) * table_weight
            position = np.searchsorted(cumulative, u, side="right")
            magnitudes[body] = table_start + np.minimum(position, cumulative.size - 1)
        if self.sides == 1:
            return magnitudes
        negative = source.bits(count)
        return np.where(negative, -magnitudes, magnitudes)

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

The float p above is for reports and size checks. What the shortcut *draws* must be exact,
or the release is only (ε, δ)-DP: an empty cell listed with a float approximation of p,
or with a value whose law is rounded, is an event whose probability differs between a
table where the cell is empty and one where a person sits in it. So the draws use exact
arithmetic only (:mod:`dpdesk.privacy.exact`):

* p is a real number known by rigorous enclosures (:meth:`ZeroLaw.enclose_probability`,
  the same closed forms in interval arithmetic), used by the walk (:mod:`.walk`);
* the magnitude of a listed empty cell has weights α^a·π(a). Each affine piece of π is
  split into parts with weights α^a (a truncated geometric: F + G mod (K+1) for an exact
  geometric G — memoryless, so exactly truncated), (a − F)α^a (a triangle: i + k for two
  truncated geometrics, kept when i + k ≤ K — at least half are) or (L − a)α^a (a
  truncated geometric g kept when a uniform integer on [0, K] is ≥ g — at least half
  are), with rational coefficients from θ and τ. The part is chosen with exact
  probabilities (:class:`~dpdesk.privacy.exact.ExactDraw` over enclosures of the parts'
  masses), then drawn with exact geometric draws (``dpdesk.privacy.noise.geometric``)
  and uniform integers. The sign is a fair coin for the symmetric rules.

Nothing here is a float probability, so the shortcut has *exactly* the laborious
approach's distribution and the summaries stay ε-DP with δ = 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property, lru_cache

import numpy as np

from ...errors import ParameterError
from ...privacy.exact import ExactDraw, Interval, Real
from ...privacy.noise import mu_from_scale, geometric
from ...privacy.randomness import RandomSource

DIRECT_SUM = 1 << 16  # segments up to this length are summed term by term (no cancellation)
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
    return float(mu_from_scale(scale))


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

    def keep(self, values, source: RandomSource) -> np.ndarray:
        """Whether each noisy value is kept: π(v) as an exact coin flip (τ is a float, hence rational)."""
        v = np.asarray(values, dtype=np.int64)
        magnitude = np.abs(v)
        passed = (v >= self.theta) if self.one_sided else (magnitude >= self.theta)
        if self.tau_low is None:
            return passed
        if self.tau_high is not None:
            raise ValueError("bands are drawn for empty cells only")
        tau = Fraction(self.tau_low)
        if tau.numerator >= 2**62:
            raise ValueError("sampling thresholds above 2^52 are not supported")
        unsure = np.flatnonzero(passed & (magnitude < math.ceil(tau)))  # π(v) = |v|/τ < 1
        keep = passed.copy()
        # |v|·den < num ≤ 2^62 for these, so the products cannot overflow
        keep[unsure] = source.uniform_int(tau.numerator, unsure.size) < magnitude[unsure] * tau.denominator
        return keep

    def exact_segments(self) -> list[tuple[int, int | None, Fraction, Fraction]]:
        """π on magnitudes a ≥ θ as ``(first, last, c0, c1)``: π(a) = c0 + c1·a, exact rationals.

        ``last`` None: no end. τ_low and τ_high are floats, hence exact rationals.
        """
        theta = int(self.theta)
        if self.tau_low is None:
            return [(theta, None, Fraction(1), Fraction(0))]
        low_end = math.floor(self.tau_low)  # a ≤ low_end: a/τ_low ≤ 1
        low = 1 / Fraction(self.tau_low)
        if self.tau_high is None:
            parts = [(theta, low_end, Fraction(0), low), (max(theta, low_end + 1), None, Fraction(1), Fraction(0))]
        else:
            high = 1 / Fraction(self.tau_high)
            parts = [(theta, low_end, Fraction(0), low - high),
                     (max(theta, low_end + 1), math.floor(self.tau_high), Fraction(1), -high)]
        return [part for part in parts if part[1] is None or part[0] <= part[1]]

    def segments(self) -> list[tuple[int, float, float, float]]:
        """:meth:`exact_segments` in floating point (last = inf for no end), for the float figures."""
        return [(first, math.inf if last is None else last, float(c0), float(c1))
                for first, last, c0, c1 in self.exact_segments()]


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

    # -- exact draws -----------------------------------------------------------------------
    @cached_property
    def parts(self) -> list[tuple[str, int, int | None, Fraction]]:
        """π split into drawable parts ``(shape, F, L, coefficient)`` (module notes).

        Shapes on magnitudes F ≤ a ≤ L (L None: no end): "flat" α^a, "rising"
        (a − F + 1)α^a, "falling" (L − a + 1)α^a; the weights α^a·π(a) are the sum of
        coefficient × shape over the parts.
        """
        out = []
        for first, last, c0, c1 in self.selection.exact_segments():
            if c1 > 0:  # π(a) = c1·(a − F) + π(F): rising on [F+1, L] plus flat
                if last is not None and last > first:
                    out.append(("rising", first + 1, last, c1))
                out.append(("flat", first, last, c0 + c1 * first))
            elif c1 < 0:  # π(a) = |c1|·(L − a) + π(L): falling on [F, L−1] plus flat
                if last > first:
                    out.append(("falling", first, last - 1, -c1))
                out.append(("flat", first, last, c0 + c1 * last))
            else:
                out.append(("flat", first, last, c0))
        return [part for part in out if part[3] > 0]

    def enclose_masses(self, digits: int) -> list[Interval]:
        """Σ_a α^(a−θ)·(coefficient × shape) of each part, enclosed."""
        mu = Interval.exact(self.mu, digits)
        alpha = (-mu).exp()
        one_minus = 1 - alpha
        theta = int(self.selection.theta)
        masses = []
        for shape, first, last, coefficient in self.parts:
            start = (mu * (theta - first)).exp()  # α^(F−θ)
            if last is None:
                total = 1 / one_minus
            else:
                count = last - first + 1
                flat = (1 - (mu * -count).exp()) / one_minus  # Σ_{j<count} α^j
                if shape == "flat":
                    total = flat
                elif shape == "rising":  # Σ (j+1)α^j = (flat − count·α^count)/(1 − α)
                    total = (flat - (mu * -count).exp() * count) / one_minus
                else:  # Σ (count − j)α^j = (count − α·flat)/(1 − α)
                    total = (count - alpha * flat) / one_minus
            masses.append(start * total * coefficient)
        return masses

    def enclose_probability(self, digits: int) -> Interval:
        """p = sides·(1−α)/(1+α)·α^θ·Σ masses, enclosed."""
        mu = Interval.exact(self.mu, digits)
        alpha = (-mu).exp()
        total = Interval.exact(0, digits)
        for mass in self.enclose_masses(digits):
            total = total + mass
        return ((1 - alpha) / (1 + alpha) * (mu * -int(self.selection.theta)).exp() * total * self.sides).clamp01()

    @cached_property
    def inclusion(self) -> Real:
        """p as an exact real (what the walk draws with)."""
        if not self.parts:
            return Real.of(0)
        return Real(self.enclose_probability, self.probability)

    @cached_property
    def _choose_part(self) -> ExactDraw:
        return ExactDraw.from_weights(self.enclose_masses)

    def sample(self, source: RandomSource, count: int) -> np.ndarray:
        """``count`` released values of upgraded empty cells (int64), drawn exactly."""
        count = int(count)
        magnitudes = np.empty(count, dtype=np.int64)
        if count == 0:
            return magnitudes
        parts = self.parts
        which = self._choose_part.draw(source, count) if len(parts) > 1 else np.zeros(count, dtype=np.int64)
        for number, (shape, first, last, _) in enumerate(parts):
            chosen = np.flatnonzero(which == number)
            if chosen.size:
                magnitudes[chosen] = first + self._offsets(source, shape, None if last is None else last - first,
                                                           chosen.size)
        if self.sides == 1:
            return magnitudes
        negative = source.bits(count)
        return np.where(negative, -magnitudes, magnitudes)

    def _truncated(self, source: RandomSource, span: int | None, count: int) -> np.ndarray:
        """G (span None) or G mod (span + 1): exactly P(j) ∝ α^j on [0, span]."""
        draws = draw_in_blocks(lambda k: geometric(source, self.mu, k), count)
        return draws if span is None else draws % (span + 1)

    def _offsets(self, source: RandomSource, shape: str, span: int | None, count: int) -> np.ndarray:
        """a − F for ``count`` draws of a part's shape on [F, F + span]."""
        if shape == "flat":
            return self._truncated(source, span, count)
        out = np.empty(count, dtype=np.int64)
        pending = np.arange(count)
        while pending.size:  # each round keeps at least half on average (module notes)
            first = self._truncated(source, span, pending.size)
            if shape == "rising":
                offset = first + self._truncated(source, span, pending.size)
                kept = offset <= span
            else:
                offset = first
                kept = source.uniform_int(span + 1, pending.size) >= first
            out[pending[kept]] = offset[kept]
            pending = pending[~kept]
        return out


@lru_cache(maxsize=1024)
def zero_law(mu: float, selection: Selection) -> ZeroLaw:
    """The law for these public inputs, built once: comparisons repeat the same summary many times,
    and the exact draws' enclosures are computed on first use and kept."""
    return ZeroLaw(mu, selection)

"""The shortcut summaries: draw M″ directly from the n non-zero cells (Cormode et al. §2).

Each function returns a :class:`Summary` with the same distribution as the laborious
approach — noise on all m cells, then summarize — in time and memory proportional to n
plus the output:

* the n non-zero cells get exact discrete Laplace noise and go through the summary rule
  exactly as in the laborious approach;
* the empty cells that the rule would keep are a Bernoulli(p) subset of the free cells
  (:mod:`.walk`), and their values follow the rule's conditional law (:mod:`.laws`).

Priority sampling (§2.3, App. C.3). The priority of a cell is |v|/r with r uniform; the
sample is the s largest, and τ_s the (s+1)-th. Here r lives on a fixed grid,
r = (2w + 1)/2⁵³ with w uniform on [0, 2⁵²) — every such r is an exact float — for *every*
cell, so a priority is a function of (v, w) alone and the published τ_s is the float of
the exact rational |v|·2⁵³/(2w + 1) of the (s+1)-th cell: nothing in it depends on how
the sample was found (an earlier version computed r from a data-dependent guess τ, and
τ_s carried that guess in its last bits).

The cells with priority above a level τ are a threshold sample with τ. With τ = 2^k
(k ≤ 52) this holds *exactly* on the grid: |v|/r > 2^k ⇔ w < min(|v|, 2^k)·2^(52−k), an
event of probability min(|v|/τ, 1). So the shortcut draws the threshold sample of the
empty cells at τ = 2^k (:mod:`.laws`), gives each a w uniform below that bound, and keeps
the s + 1 largest priorities — exact as soon as at least s + 1 priorities exceed τ. If
fewer do, the sample is extended downwards to τ/2, τ/4, … (never redrawn, which would
condition on the first attempt): every empty cell not yet drawn lies in the band
τ′ < priority ≤ τ independently with probability (p_τ′ − p_τ)/(1 − p_τ), with values from
the band law and w uniform on [bound(τ), bound(τ′)). The non-zero cells' w are all drawn.

The first level 2^k comes from public inputs only (m, s, θ and the noise scale): the
largest power of two at which the m cells, were they all empty, would give a quarter of
s + 1 + 4√(s+1) + 16 priorities above it (:func:`first_level`). It sets the running time,
not the output. Priorities are ordered by their floats (rounding is monotone) and, where two floats tie
at the boundary, by the exact rationals, then by cell number: the same rule as the
laborious approach with the same r grid.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache

import numpy as np

from ...privacy.exact import Real, uniform_below
from ...privacy.noise import discrete_laplace
from ...privacy.randomness import RandomSource
from .laws import Selection, ZeroLaw, draw_in_blocks, noise_mu, zero_law
from .walk import choose_free_cells, choose_ranks, ranks_to_cells

GRID_BITS = 52  # r = (2w + 1)/2^53, w < 2^52: exact floats in (0, 1)
TOP_LEVEL = 52  # levels τ = 2^k with k ≤ 52 keep min(|v|/τ, 1) exact on that grid


@dataclass
class Summary:
    """Cells (sorted), their released values, optional Horvitz–Thompson weights.

    ``info`` holds public facts of the draw (functions of the output and public inputs);
    ``internal`` how it was computed (e.g. the level at which a priority sample ended and
    how often it was extended), for the internal report only.
    """

    indices: np.ndarray
    values: np.ndarray
    weights: np.ndarray | None = None
    info: dict = field(default_factory=dict)
    internal: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return int(self.indices.size)

    def subset(self, keep: np.ndarray) -> "Summary":
        weights = None if self.weights is None else self.weights[keep]
        return Summary(self.indices[keep], self.values[keep], weights, dict(self.info), dict(self.internal))


def add_noise(counts: np.ndarray, scale: float, source: RandomSource) -> np.ndarray:
    """Counts plus exact discrete Laplace noise of ``scale`` (drawn in cache-sized blocks)."""
    return counts + draw_in_blocks(lambda k: discrete_laplace(source, scale, k), counts.size)


def ht_weights(values: np.ndarray, tau: float) -> np.ndarray:
    """sign(v)·max(|v|, τ): value over inclusion probability min(|v|/τ, 1) (unbiased)."""
    values = np.asarray(values, dtype=np.float64)
    return np.sign(values) * np.maximum(np.abs(values), tau)


def _merge(indices_a, indices_b, *pairs):
    """Merge two sorted, disjoint cell lists into one, with aligned arrays given as (of a, of b) pairs."""
    size = indices_a.size + indices_b.size
    where_b = np.searchsorted(indices_a, indices_b) + np.arange(indices_b.size)
    from_a = np.ones(size, dtype=bool)
    from_a[where_b] = False

    def combine(a, b):
        out = np.empty(size, dtype=np.result_type(a, b))
        out[where_b] = b
        out[from_a] = a
        return out

    return [combine(indices_a, indices_b)] + [combine(a, b) for a, b in pairs]


def selection_summary(indices: np.ndarray, counts: np.ndarray, domain_size: int, scale: float,
                      selection: Selection, source: RandomSource) -> Summary:
    """Filter and/or threshold sample (``filter``, ``filter2``, ``threshold``, ``filter-threshold``)."""
    noisy = add_noise(counts, scale, source)
    keep = selection.keep(noisy, source)
    law = zero_law(noise_mu(scale), selection)
    zero_cells = choose_free_cells(source, indices, domain_size, law.inclusion)
    zero_values = law.sample(source, zero_cells.size)
    cells, values = _merge(indices[keep], zero_cells, (noisy[keep], zero_values))
    info = {"zero_cell_probability": law.probability}
    weights = ht_weights(values, selection.tau_low) if selection.sampled else None
    return Summary(cells, values, weights, info)


def grid_words(source: RandomSource, size: int) -> np.ndarray:
    """w uniform on [0, 2^52): the grid position of r = (2w + 1)/2^53."""
    return (source.words(size) >> np.uint64(64 - GRID_BITS)).astype(np.int64)


def priorities_of(magnitudes: np.ndarray, words: np.ndarray) -> np.ndarray:
    """The float of the exact priority |v|·2^53/(2w + 1) (0 where |v| = 0)."""
    r = (2 * words + 1).astype(np.float64) * 2.0**-53  # exact: 2w + 1 < 2^53
    out = magnitudes.astype(np.float64) / r  # one correctly rounded division when |v| < 2^53
    for i in np.flatnonzero(magnitudes >= 2**53):  # |v| itself is not a float: round the rational once
        out[i] = float(Fraction(int(magnitudes[i]) << 53, 2 * int(words[i]) + 1))
    return out


def grid_bound(magnitudes: np.ndarray, level: int) -> np.ndarray:
    """How many grid words give |v|/r > 2^level: min(|v|, 2^level)·2^(52 − level)."""
    return np.minimum(magnitudes, 1 << level) << (GRID_BITS - level)


def above_level(magnitudes: np.ndarray, words: np.ndarray, priorities: np.ndarray, level: int) -> np.ndarray:
    """Which exact priorities exceed 2^level (floats decide all but ties with 2^level)."""
    bound = 2.0**level
    out = priorities > bound
    for i in np.flatnonzero(priorities == bound):
        out[i] = (int(magnitudes[i]) << (53 - level)) > 2 * int(words[i]) + 1
    return out


def top_priorities(indices: np.ndarray, values: np.ndarray, magnitudes: np.ndarray, words: np.ndarray,
                   size: int, priorities: np.ndarray | None = None) -> Summary:
    """The ``size`` largest priorities, τ_s = the next one (0 if fewer are positive), weights.

    Order: larger exact priority first; equal ones by smaller cell number (module notes).
    The cells need not be sorted; the sample is returned sorted by cell.
    """
    if priorities is None:
        priorities = priorities_of(magnitudes, words)
    positive = np.flatnonzero(priorities > 0)
    if positive.size > size:
        kth = positive.size - size - 1  # ascending: the (s+1)-th largest float lands at kth, larger after it
        order = positive[np.argpartition(priorities[positive], kth)]
        boundary = priorities[order[kth]]
        tied = positive[priorities[positive] == boundary]
        if tied.size == 1:
            chosen, following = order[kth + 1:], order[kth]
        else:  # floats tie at the boundary: rank those by the exact rationals, then cell number
            ranked = sorted(tied.tolist(), key=lambda i: (-Fraction(int(magnitudes[i]), 2 * int(words[i]) + 1),
                                                          int(indices[i])))
            above = positive[priorities[positive] > boundary]
            need = size - above.size
            chosen = np.concatenate([above, np.array(ranked[:need], dtype=np.int64)])
            following = ranked[need]
        tau_s = float(priorities[following])
    else:
        chosen, tau_s = positive, 0.0
    # positions in ascending order, then cells: a few sorted runs, which a stable sort merges quickly
    picked = np.zeros(indices.size, dtype=bool)
    picked[chosen] = True
    chosen = np.flatnonzero(picked)
    chosen = chosen[np.argsort(indices[chosen], kind="stable")]
    values = values[chosen]
    return Summary(indices[chosen], values, ht_weights(values, tau_s), {"tau_s": tau_s})


def explicit_threshold(summary: Summary, tau: float, source: RandomSource) -> Summary:
    """Threshold sampling of an explicit list (every other cell is 0 and never sampled)."""
    kept = summary.subset(Selection(tau_low=tau).keep(summary.values, source))
    kept.weights = ht_weights(kept.values, tau)
    return kept


def explicit_priority(summary: Summary, size: int, source: RandomSource) -> Summary:
    """Priority sample of size s of an explicit list."""
    magnitudes = np.abs(summary.values.astype(np.int64))
    sample = top_priorities(summary.indices, summary.values, magnitudes, grid_words(source, len(summary)), size)
    sample.info = {**summary.info, **sample.info}
    return sample


def solve_tau(expected_size, wanted: float) -> float:
    """The τ ≥ 1 at which the decreasing function ``expected_size(τ)`` is about ``wanted``.

    Bisection in log τ to within a few per cent (1.0 when even τ = 1 gives fewer); the
    result never lists more than ``wanted`` in expectation.
    """
    if expected_size(1.0) <= wanted:
        return 1.0
    low, high = 1.0, 2.0
    while expected_size(high) > wanted:
        low, high = high, high * 2.0
    for _ in range(12):
        middle = math.sqrt(low * high)
        if expected_size(middle) > wanted:
            low = middle
        else:
            high = middle
    return high


def zero_probability(mu: float, theta: int, tau: float) -> float:
    """p_{θ,τ}: probability that an empty cell is kept by a two-sided filter θ and sampling τ."""
    return zero_law(mu, Selection(theta, tau_low=tau)).probability


def wanted_above(size: int) -> float:
    """Priorities wanted above the final level: s + 1 with a margin of four standard deviations."""
    return size + 1 + 4.0 * math.sqrt(size + 1) + 16


@lru_cache(maxsize=256)
def first_level(domain_size: int, mu: float, theta: int, size: int) -> int:
    """k of the first level τ = 2^k, from public inputs only (module notes).

    The largest k at which m empty cells would give a quarter of the wanted priorities:
    the non-empty cells often supply the rest (then fewer empty cells are drawn), and
    when they do not, two extensions (each doubling the empty ones) usually suffice.
    """
    wanted = wanted_above(size) / 4

    def enough(k: int) -> bool:
        return domain_size * zero_probability(mu, theta, 2.0**k) >= wanted

    if not enough(0):
        return 0
    low, high = 0, TOP_LEVEL  # enough(low) holds; find the largest such k
    if enough(high):
        return high
    while high - low > 1:
        middle = (low + high) // 2
        if enough(middle):
            low = middle
        else:
            high = middle
    return low


def count_above(magnitudes: np.ndarray, words: np.ndarray, priorities: np.ndarray, level: int) -> int:
    """How many exact priorities exceed 2^level."""
    bound = 2.0**level
    count = int(np.count_nonzero(priorities > bound))
    ties = np.flatnonzero(priorities == bound)
    if ties.size:  # floats equal to 2^level: decide those exactly
        count += int(np.count_nonzero(above_level(magnitudes[ties], words[ties], priorities[ties], level)))
    return count


def priority_summary(indices: np.ndarray, counts: np.ndarray, domain_size: int, scale: float, size: int,
                     source: RandomSource, theta: int = 1) -> Summary:
    """Priority sample of size s of M′ (after a two-sided filter θ when θ > 1): see the module notes."""
    mu = noise_mu(scale)
    noisy = add_noise(counts, scale, source)
    magnitudes = np.abs(noisy)
    magnitudes[magnitudes < theta] = 0  # filtered out: priority 0, never sampled
    words = grid_words(source, noisy.size)
    priorities = priorities_of(magnitudes, words)

    # empty cells are handled as ranks among the cells without a count (:mod:`.walk`)
    free = int(domain_size) - int(indices.size)
    level = first_level(domain_size, mu, theta, size)
    law = zero_law(mu, Selection(theta, tau_low=2.0**level))
    drawn = choose_ranks(source, free, law.inclusion)  # sorted ranks of the empty cells drawn so far
    ranks, values = [drawn], [law.sample(source, drawn.size)]
    zero_words = [uniform_below(source, grid_bound(np.abs(values[0]), level))]

    extensions = 0
    while level > 0 and count_above(magnitudes, words, priorities, level) + drawn.size < size + 1:
        lower = level - 1
        band = zero_law(mu, Selection(theta, tau_low=2.0**lower, tau_high=2.0**level))
        # each empty cell not drawn yet, independently: ranks among those, mapped past the drawn ones
        new = ranks_to_cells(drawn, choose_ranks(source, free - drawn.size, band_conditional(band, law)))
        new_values = band.sample(source, new.size)
        new_magnitudes = np.abs(new_values)
        low, high = grid_bound(new_magnitudes, level), grid_bound(new_magnitudes, lower)
        ranks.append(new)
        values.append(new_values)
        zero_words.append(low + uniform_below(source, high - low))
        drawn = _merge(drawn, new)[0]
        law = zero_law(mu, Selection(theta, tau_low=2.0**lower))
        level = lower
        extensions += 1

    # the ranking needs no cell order: concatenate (the sample is sorted at the end)
    zero_cells = ranks_to_cells(indices, np.concatenate(ranks))
    zero_values, zero_words = np.concatenate(values), np.concatenate(zero_words)
    zero_magnitudes = np.abs(zero_values)  # ≥ θ by the law
    sample = top_priorities(np.concatenate([indices, zero_cells]), np.concatenate([noisy, zero_values]),
                            np.concatenate([magnitudes, zero_magnitudes]), np.concatenate([words, zero_words]),
                            size, np.concatenate([priorities, priorities_of(zero_magnitudes, zero_words)]))
    sample.internal = {"threshold_sample_tau": 2.0**level, "extensions": extensions}
    return sample


@lru_cache(maxsize=256)
def band_conditional(band: ZeroLaw, law: ZeroLaw) -> Real:
    """P(an empty cell not in the sample at the upper level lies in the band) = p_band/(1 − p_upper)."""
    return band.inclusion / law.inclusion.complement()

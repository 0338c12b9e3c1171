"""The shortcut summaries: draw M″ directly from the n non-zero cells (Cormode et al. §2).

Each function returns a :class:`Summary` with the same distribution as the laborious
approach — noise on all m cells, then summarize — in time and memory proportional to n
plus the output:

* the n non-zero cells get exact discrete Laplace noise and go through the summary rule
  exactly as in the laborious approach;
* the empty cells that the rule would keep are a Bernoulli(p) subset of the free cells
  (:mod:`.walk`), and their values follow the rule's conditional law (:mod:`.laws`).

Priority sampling (§2.3, App. C.3). The priority of a cell is |v|/r with r uniform on
(0, 1]; the sample is the s largest, and τ_s the (s+1)-th. Cells with priority above a
level τ are exactly a threshold sample with τ (P(|v|/r > τ) = min(|v|/τ, 1)), and given
that a cell is in it, r is uniform on (0, min(|v|/τ, 1)). So we draw the threshold sample
at a guessed τ, give each of its cells an r consistent with being there, and keep the s
largest priorities — exact as soon as at least s + 1 priorities exceed τ. If fewer do,
the sample is extended downwards, not redrawn (a redraw would condition on the first
attempt's failure): every empty cell not yet drawn lies in the band τ′ < priority ≤ τ
independently with probability (p_τ′ − p_τ)/(1 − p_τ), with values from the band law
and r uniform on (|v|/τ, min(|v|/τ′, 1)]. The non-zero cells' priorities are all drawn.
The guess only sets the running time: it may use anything, since the output does not
depend on it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ...privacy.noise import discrete_laplace
from ...privacy.randomness import RandomSource
from .laws import Selection, ZeroLaw, draw_in_blocks, noise_mu
from .walk import choose_free_cells


@dataclass
class Summary:
    """Cells (sorted), their released values, optional Horvitz–Thompson weights.

    ``info`` holds public facts of the draw (functions of the output and public inputs);
    ``internal`` how it was computed (e.g. the guessed τ of a priority sample, which used
    noisy values that are not released), for the internal report only.
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


def _merge(indices_a, values_a, indices_b, values_b, *extra_pairs):
    """Merge two sorted, disjoint sparse lists (and aligned extra arrays) into one sorted list."""
    size = indices_a.size + indices_b.size
    where_b = np.searchsorted(indices_a, indices_b) + np.arange(indices_b.size)
    from_a = np.ones(size, dtype=bool)
    from_a[where_b] = False

    def combine(a, b):
        out = np.empty(size, dtype=np.result_type(a, b))
        out[where_b] = b
        out[from_a] = a
        return out

    return [combine(indices_a, indices_b), combine(values_a, values_b)] + [combine(a, b) for a, b in extra_pairs]


def selection_summary(indices: np.ndarray, counts: np.ndarray, domain_size: int, scale: float,
                      selection: Selection, source: RandomSource) -> Summary:
    """Filter and/or threshold sample (``filter``, ``filter2``, ``threshold``, ``filter-threshold``)."""
    noisy = add_noise(counts, scale, source)
    keep_probability = selection.keep_probability(noisy)
    keep = source.bernoulli(keep_probability) if selection.sampled else keep_probability >= 1.0
    law = ZeroLaw(noise_mu(scale), selection)
    zero_cells = choose_free_cells(source, indices, domain_size, law.probability)
    zero_values = law.sample(source, zero_cells.size)
    cells, values = _merge(indices[keep], noisy[keep], zero_cells, zero_values)
    info = {"zero_cell_probability": law.probability}
    weights = ht_weights(values, selection.tau_low) if selection.sampled else None
    return Summary(cells, values, weights, info)


def top_priorities(indices: np.ndarray, values: np.ndarray, priorities: np.ndarray, size: int) -> Summary:
    """The ``size`` largest priorities, τ_s = the next one (0 if fewer are positive), weights."""
    positive = np.flatnonzero(priorities > 0)
    if positive.size > size:
        # the (size+1)-th largest at position `size`, larger ones before it (ties have probability 0)
        order = positive[np.argpartition(-priorities[positive], size)]
        chosen, tau_s = order[:size], float(priorities[order[size]])
    else:
        chosen, tau_s = positive, 0.0
    chosen = chosen[np.argsort(indices[chosen], kind="stable")]
    values = values[chosen]
    return Summary(indices[chosen], values, ht_weights(values, tau_s), {"tau_s": tau_s})


def explicit_threshold(summary: Summary, tau: float, source: RandomSource) -> Summary:
    """Threshold sampling of an explicit list (every other cell is 0 and never sampled)."""
    keep = source.bernoulli(Selection(tau_low=tau).keep_probability(summary.values))
    kept = summary.subset(keep)
    kept.weights = ht_weights(kept.values, tau)
    return kept


def explicit_priority(summary: Summary, size: int, source: RandomSource) -> Summary:
    """Priority sample of size s of an explicit list."""
    priorities = np.abs(summary.values) / source.uniform01(len(summary))
    sample = top_priorities(summary.indices, summary.values, priorities, size)
    sample.info = {**summary.info, **sample.info}
    return sample


def solve_tau(expected_size, wanted: float) -> float:
    """The τ ≥ 1 at which the decreasing function ``expected_size(τ)`` is about ``wanted``.

    Bisection in log τ to within a few per cent (1.0 when even τ = 1 gives fewer).
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
    return ZeroLaw(mu, Selection(theta, tau_low=tau)).probability


def priority_summary(indices: np.ndarray, counts: np.ndarray, domain_size: int, scale: float, size: int,
                     source: RandomSource, theta: int = 1) -> Summary:
    """Priority sample of size s of M′ (after a two-sided filter θ when θ > 1): see the module notes."""
    mu = noise_mu(scale)
    noisy = add_noise(counts, scale, source)
    magnitude = np.abs(noisy).astype(np.float64)
    magnitude[magnitude < theta] = 0.0  # filtered out: priority 0, never sampled
    priorities = magnitude / source.uniform01(noisy.size)
    free = int(domain_size) - int(indices.size)
    wanted = size + 1 + 4.0 * math.sqrt(size + 1) + 16
    ranked = np.sort(priorities)

    def expected_above(level: float) -> float:  # priorities above τ: known ones, expected empty ones
        known = ranked.size - np.searchsorted(ranked, level, side="right")
        return known + free * zero_probability(mu, theta, level)

    tau = solve_tau(expected_above, wanted)

    law = ZeroLaw(mu, Selection(theta, tau_low=tau))
    zero_cells = choose_free_cells(source, indices, domain_size, law.probability)
    zero_values = law.sample(source, zero_cells.size)
    zero_magnitude = np.abs(zero_values).astype(np.float64)
    zero_r = source.uniform01(zero_cells.size) * np.minimum(zero_magnitude / tau, 1.0)
    zero_priorities = zero_magnitude / zero_r

    def above(level: float) -> int:
        return int(np.count_nonzero(priorities > level)) + int(zero_cells.size)

    extensions = 0
    while above(tau) < size + 1 and tau > 1.0:
        lower = max(tau / 2.0, 1.0)
        band = ZeroLaw(mu, Selection(theta, tau_low=lower, tau_high=tau))
        conditional = band.probability / (1.0 - law.probability)
        occupied = np.union1d(indices, zero_cells)
        new_cells = choose_free_cells(source, occupied, domain_size, conditional)
        new_values = band.sample(source, new_cells.size)
        new_magnitude = np.abs(new_values).astype(np.float64)
        r_low = new_magnitude / tau
        r_high = np.minimum(new_magnitude / lower, 1.0)
        new_r = r_low + source.uniform01(new_cells.size) * (r_high - r_low)
        zero_cells, zero_values, zero_priorities = _merge(zero_cells, zero_values, new_cells, new_values,
                                                          (zero_priorities, new_magnitude / new_r))
        law = ZeroLaw(mu, Selection(theta, tau_low=lower))
        tau = lower
        extensions += 1

    cells, values, all_priorities = _merge(indices, noisy, zero_cells, zero_values, (priorities, zero_priorities))
    sample = top_priorities(cells, values, all_priorities, size)
    sample.internal = {"threshold_sample_tau": tau, "extensions": extensions}
    return sample

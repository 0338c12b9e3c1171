"""The GS family (Kellaris & Papadopoulos, VLDB 2013): grouping and smoothing.

Every mechanism here partitions the d items into groups, publishes one noisy average per
group and gives it to every item of the group. They differ in how the groups are formed.

Notation: c = the column counts after truncation to the declared bound Δ (each person
keeps at most Δ items, dpdesk.privacy.bounding), Δ' = min(Δ, d) (a person cannot hold
more than d items), w = the group size, ε the total budget.

Groups (GS Fig. 2)
------------------
Items are put in an order (random for GS-R; for GS-S and GS from the largest noisy
sample count down) and cut into ⌊d/w⌋ consecutive groups of w items; the last group
takes the remainder (w + d mod w items). Every group has at least w items. Sorting from
the largest down puts that larger last group among the many small, similar counts
rather than among the few largest ones, where merging extra items would cost the most
(on retail.dat, Δ = 20: 4–9% less smoothing error at w = 4, 7, 8, where d mod w ≠ 0).

Noise on the group sums, exactly (Lemma 1 and 2)
-----------------------------------------------
Let S_j = Σ_{i∈g_j} c_i (an integer). One person holds m_j of their items in group j and
Σ_j m_j ≤ Δ'. Adding discrete Laplace noise of scale |g_j|·b to S_j and publishing
(S_j + noise)/|g_j| is the same as Laplace(b) on the average but exact (no floating-point
attack surface, docs/ARCHITECTURE.md §3). Its privacy loss is

    Σ_j m_j / (|g_j|·b) ≤ Σ_j m_j / (w·b) ≤ Δ'/(w·b),

so b = Δ'/(w·ε_g) makes this step ε_g-DP whatever the grouping, provided the grouping does
not depend on the data except through already-private values (GS Theorems 3–6).

* GS-R: random order (independent of the data), w = Δ', b = 1/ε: ε-DP.
* GS-S: order from a noisy sample t_s (ε/2, below), w = Δ', b = 2/ε: ε/2 + ε/2 = ε.
* GS, ``estimator = paper``: order from t_s, w = w* chosen from t_s only,
  b = 2Δ'/(ε·w*): ε/2 + ε/2 = ε.
* GS, ``estimator = calibrated`` (default): order from t_s, a noisy total Ñ of the kept
  items (ε_t = 5% of ε, below), w* chosen from t_s and Ñ only, b = Δ'/(ε_g·w*) with
  ε_g = ε/2 − ε_t: ε/2 + ε_t + ε_g = ε. Three steps in the budget table.

The noisy sample t_s (GS §3.2, module M_s)
-----------------------------------------
* Row sampling: every (truncated) row enters D_s with probability
  β = (e^{ε/2} − 1)/(e^{εΔ'/2} − 1); t_s = counts(D_s) + DiscreteLaplace(2/ε). Without
  sampling this is (εΔ'/2)-DP (sensitivity Δ'); sampling with rate β makes it
  ln(1 + β(e^{εΔ'/2} − 1)) = ε/2 (Li, Qardaji & Su; GS Corollary 1, Theorem 4). β is
  public; the coin uses β rounded *down* by a relative 2⁻⁴⁰ and an absolute 2⁻⁵³ so
  that the float computation of β and the 2⁻⁵³ resolution of the coin never make the
  true sampling probability larger than β.
* Column sampling: every (truncated) non-empty row keeps exactly one of its items,
  uniformly at random; t_s = counts(D_s) + DiscreteLaplace(2/ε). One person changes
  counts(D_s) by exactly one in one item: sensitivity 1, so ε/2-DP (GS Theorem 5).

Ties in t_s are broken uniformly at random (fresh random bits, independent of the data).
The grouping is a function of t_s and that randomness only: post-processing.

Truncation and sampling compose: both are done row by row with independent randomness,
so removing a person removes their truncated row and their sampled item together, and
the neighbouring truncated datasets are still neighbours (each row has ≤ Δ' items).

Fine-tuning (GS §3.3, Fig. 6) — post-processing of private values
-----------------------------------------------------------------
With an estimate c̃ of c, for every w = 1..d the mechanism simulates the release: groups
g_w in the order of t_s, averages of c̃ plus simulated noise Lap(Δ'/(ε_g·w)), and the
estimated error L1(c̃, t̃_w). It releases with the w* of least estimated error. This reads
nothing but private values (t_s, and Ñ for the calibrated estimate) and fresh randomness,
so it costs no further budget; the simulated noise may be floating-point (drawn from the
release's random source) because it is never published. ``tuning_draws`` averages
several simulations. The same standard Laplace draws serve every w (common random
numbers): each w's simulation keeps its exact distribution, and comparisons between sizes
are less noisy. Only the slope of c̃ = a·t_s + const matters: a constant moves the values
and their group averages alike and changes no error.

The paper's estimate, c̃ = Δ'·t_s (``estimator = paper``, GS Fig. 6 line 4). With column
sampling every non-empty row adds exactly one item to c_s, so E c_s,i = Σ_{rows ∋ i} 1/ℓ
(ℓ the row's kept length) ≈ c_i/r, where r = N/n is the mean kept row length (N kept
items, n non-empty rows). Δ'·t_s overstates every count by Δ'/r — ×50 where a generous
Δ is 50 typical rows — so the simulated smoothing error dwarfs the simulated noise and w*
collapses towards 1 (issue 15: on BMS-WebView-1 at ε = ln 2, Δ = 267, MAE 697 against
288 for GS-S). Averaging more simulations does not help: the estimate is biased, not noisy.

The calibrated estimate (``estimator = calibrated``, the default), c̃ = a·t_s with

1. Ñ = N + DiscreteLaplace(Δ'/ε_t), ε_t = ``TOTAL_SHARE``·ε, taken from the averages'
   half. Adding or removing a person changes N by their kept items, min(ℓ, Δ) ≤ Δ':
   sensitivity Δ', so this step is ε_t-DP. Ñ is used here only and never published.
2. r̂ = Ñ_low/n_high clipped to [1, Δ']: Ñ_low = Ñ − σ_N and n_high = Σt_s + σ_n, one
   standard deviation of their noise towards fewer items per row (σ_N² = Var DL(Δ'/ε_t);
   Σ c_s = n exactly, so Σ t_s is n plus d independent DL(2/ε) noises, σ_n² = d·Var DL(2/ε)).
   Erring low on purpose: a slope too steep makes the tuning pick small groups whose noise
   (∝ Δ'/w) can exceed any smoothing error many times over, one too flat costs at most
   smoothing error, which the counts' spread bounds.
3. Shrinkage. t_s,i = s_i + z_i with s_i = E c_s,i ≈ c_i/r and z_i the noise: DL(2/ε)
   (variance σ²) plus the sampling variation of c_s,i (variance Σ_{rows ∋ i} (1/ℓ)(1 − 1/ℓ)
   ≈ (1 − 1/r)·s_i). Grouping r·t_s would count the noise's spread as the counts' own; the
   best linear predictor of c from t_s instead has slope Cov(c, t)/Var t = r·λ with
   λ = 1 − E Var z/Var t, the share of t_s's variance across items that is signal. λ̂ uses
   the variance of t_s over the items, E Var z ≈ σ² + (1 − 1/r̂)·mean(t_s), and counts as
   signal only what exceeds the noise by two standard errors of a variance estimated from d
   values (relative standard error √((κ − 1)/d), κ = 6 for Laplace tails): pure noise gives
   λ̂ = 0. On noisy samples (few people per item, small ε) c̃ flattens and the tuning
   chooses large groups instead of collapsing to small ones.
4. A cap from the total: whatever the grouping, the counts' spread Σ|c_i − c̄| is at most
   2N, so a = min(r̂·λ̂, 2·Ñ_low/Σ|t_s,i − mean t_s|). a = 0 (no evidence of any spread)
   gives w* = d, one group.
5. The spread c̃ cannot see. Items next to each other in the order of t_s differ in
   their true counts by more than their t_s do, because c_s,i varies with the sample. In
   the model of step 3 that part of s_i has posterior variance λ·(1 − 1/r)·s_i, in counts
   r·a·(1 − 1/r)·s_i = a·(r − 1)·s_i. Around its group's mean an item's residual then has
   variance τ_g² ≈ (the group's mean of a·(r̂ − 1)·t_s)·(1 − 1/|g|), and its expected error
   E|y + ξ| (y its simulated error without it) is at least E|ξ| = √(2/π)·τ_g for Gaussian ξ.
   The simulation counts max(|y|, √(2/π)·τ_g), which is the mean of |y ± √(2/π)·τ_g|: two
   evaluations of the prefix-sum formula, no extra randomness (one random draw per group
   made the choice of w erratic where few large groups carry it), and nothing at w = 1.
   Without it c̃, sorted, looks smoother than the counts in that order and the tuning
   prefers groups too large where the sample is precise (chess at ε = 2: w* = 3, MAE 0.15×
   GS-S's, against w* = 1, 0.08×). The DL(2/ε) part of z is left out: where it dominates,
   the counts are small and alike (the noise-only tail) and the shrinkage has removed it.

The cost: the averages get ε/2 − ε_t instead of ε/2, noise ×1.11 at a fixed w. On
BMS-WebView-1-shaped data (``tests/mechanisms/gs_utility.py``) at ε = ln 2 and Δ = 267
the estimated L1 curve is within 13% of the true one at every w and both are least at the
same w; the paper's is 8–110× too high and chooses w* = 1 (benchmarks/bench_gs.py
--utility prints both curves and the whole comparison).

Speed: c̃ is sorted in the order of t_s and every group is a contiguous run of it, so a
group's term Σ_{k∈g}|c̃_k − v| is v·(2p − s − e) + P[s] + P[e] − 2P[p] with prefix sums P,
the group's range [s, e) and p the first position with c̃_p ≥ v, clipped to the group.
p comes from one binary search — or, since t_s is a whole number, from a table of
"how many values lie below m" for every m in t_s's range, one memory read per group.
All d sizes together have Σ_w ⌊d/w⌋ ≈ d·ln d groups, evaluated in batches of about 2²⁰
groups per numpy call; the calibrated estimate's residual term (step 5) evaluates every
group twice (benchmarks/bench_gs.py, d = 10⁶: 1.3 s with the paper's estimate, 1.8 s
calibrated, against a 10 s target).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..privacy.bounding import BoundedRows, bounded_counts, effective_bound, matrix_of, prepare_bound, sample_kept
from ..privacy.budget import BudgetSplit
from ..privacy.noise import add_discrete_laplace, discrete_laplace_variance
from ..privacy.randomness import RandomSource
from . import register
from .base import BOUND, SHARED_NOISE, Diagnostic, Mechanism, Param, cut_words
from .counts import CLAMP
from .margins import (BOUND_HOLDS, MARGIN_SHARE_PARAM, NO_SHARE, SPREAD_STEP, Margins, count_margins, estimate_spread,
                      margin_budget, needs_loss, spread_margin, spread_step_text, spread_weights, unlocated)
from .publish import discrete_laplace_margin, round_up

FAMILY = "Grouping and smoothing (Kellaris & Papadopoulos)"
PAPER = "Kellaris & Papadopoulos, Practical Differential Privacy via Grouping and Smoothing (VLDB 2013)"

BATCH_GROUPS = 1 << 20  # groups evaluated per numpy call in the fine-tuning
PLOT_POINTS = 2000  # the most points a curve hands to the GUI
REAL_CURVE_POINTS = 30  # group sizes at which the internal true-error curve is evaluated
ORDER_BINS = 500  # bins of the ordering-quality plot
ESTIMATORS = ("calibrated", "paper")  # how the fine-tuning estimates the counts from t_s
TOTAL_SHARE = 0.05  # share of ε the calibrated estimator spends on the noisy total of kept items


# --- groups -------------------------------------------------------------------------------

def group_boundaries(d: int, w: int) -> np.ndarray:
    """Start positions of the ⌊d/w⌋ groups of size w, then d (the last group takes the remainder)."""
    if not 1 <= w <= d:
        raise ValueError(f"group size {w} outside 1..{d}")
    groups = d // w
    bounds = np.arange(groups + 1, dtype=np.int64) * w
    bounds[-1] = d
    return bounds


def group_averages(values_in_order: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """The average of each group of a vector already put in group order."""
    sums = np.add.reduceat(values_in_order, bounds[:-1]).astype(np.float64)
    return sums / np.diff(bounds)


def spread(group_values: np.ndarray, bounds: np.ndarray, order: np.ndarray) -> np.ndarray:
    """Each item gets its group's value: the published vector t (GS Fig. 2, lines 11–13)."""
    values = np.empty(order.size, dtype=np.float64)
    values[order] = np.repeat(group_values, np.diff(bounds))
    return values


def release_grouped(counts: np.ndarray, order: np.ndarray, w: int, average_scale: float,
                    source: RandomSource) -> tuple[np.ndarray, np.ndarray]:
    """Noisy group averages, spread to the items: (values, boundaries).

    Discrete Laplace of scale |g|·``average_scale`` on each integer group sum, divided by
    |g| — Laplace(``average_scale``) on the average, sampled exactly (module notes).
    """
    bounds = group_boundaries(order.size, w)
    sizes = np.diff(bounds)
    sums = np.add.reduceat(counts[order].astype(np.int64), bounds[:-1])
    noisy = add_discrete_laplace(sums, sizes * average_scale, source)
    return spread(noisy / sizes, bounds, order), bounds


def group_noise_margin(order: np.ndarray, bounds: np.ndarray, average_scale: float) -> np.ndarray:
    """Per item, the 95% half-width of the noise on its group's average: DL(|g|·b)/|g| (public sizes)."""
    sizes = np.diff(bounds).astype(np.float64)
    return spread(discrete_laplace_margin(sizes * average_scale, sizes), bounds, order)


def smoothing_l1(counts: np.ndarray, order: np.ndarray, w: int) -> float:
    """Σ_i |c_i − average of i's group|: the error of smoothing alone (internal when c is true)."""
    ordered = counts[order].astype(np.float64)
    bounds = group_boundaries(order.size, w)
    return float(np.abs(ordered - np.repeat(group_averages(ordered, bounds), np.diff(bounds))).sum())


def noisy_order(noisy_counts: np.ndarray, source: RandomSource) -> np.ndarray:
    """Items from the largest integer noisy count down, ties broken uniformly at random."""
    descending = -np.asarray(noisy_counts, dtype=np.int64)
    tie_bits = (source.words(descending.size) >> np.uint64(44)).astype(np.int64)  # 20 random bits
    if descending.size and int(np.abs(descending).max()) < 2**42:
        return np.argsort(descending * (1 << 20) + tie_bits)
    return np.lexsort((tie_bits, descending))


# --- the private sample t_s (module M_s) ------------------------------------------------

@dataclass
class PreparedRows:
    """Deterministic row structure for truncation and sampling (cached per dataset and Δ)."""

    bounded: BoundedRows
    within_rows: np.ndarray  # non-empty rows with at most Δ items
    within_starts: np.ndarray  # their first cell in the CSR arrays
    within_lengths: np.ndarray  # their number of items


def prepare_rows(data, bound: int) -> PreparedRows:
    bounded = prepare_bound(data, bound)
    if bounded.over is not None:  # data held by an engine: the rows within Δ are streamed at release
        return PreparedRows(bounded, None, None, None)
    matrix = matrix_of(data)
    lengths = np.diff(matrix.indptr).astype(np.int64)
    within = np.flatnonzero((lengths > 0) & (lengths <= bounded.bound))
    return PreparedRows(bounded, within, matrix.indptr[:-1][within].astype(np.int64), lengths[within])


def _kept_by_row(prepared: PreparedRows, source: RandomSource) -> np.ndarray:
    """Kept cells of the over-bound rows, one row of Δ CSR positions per over-bound row."""
    bounded = prepared.bounded
    kept = sample_kept(bounded, source)  # ascending: a row's Δ cells together, rows in order
    return kept.reshape(bounded.over_rows.size, bounded.bound)


def _cells(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """CSR positions of whole rows given their starts and lengths."""
    total = int(lengths.sum())
    first = np.concatenate([[0], np.cumsum(lengths)[:-1]]) if lengths.size else lengths
    return np.arange(total, dtype=np.int64) + np.repeat(starts - first, lengths)


def truncated_and_column_sample(data, prepared: PreparedRows,
                                source: RandomSource) -> tuple[np.ndarray, np.ndarray]:
    """Counts c of the truncated data and counts c_s of one uniform item per truncated row."""
    if prepared.bounded.over is not None:
        from ..engine.dataset import column_sample

        return column_sample(data, prepared.bounded, source)
    matrix = matrix_of(data)
    d = matrix.shape[1]
    kept = _kept_by_row(prepared, source)
    counts = prepared.bounded.base_counts + np.bincount(matrix.indices[kept.ravel()], minlength=d)
    picked_within = prepared.within_starts + source.uniform_int(prepared.within_lengths)
    picked_over = kept[np.arange(kept.shape[0]), source.uniform_int(prepared.bounded.bound, kept.shape[0])]
    sample = np.bincount(matrix.indices[np.concatenate([picked_within, picked_over])], minlength=d)
    return counts, sample.astype(np.int64)


def truncated_and_row_sample(data, prepared: PreparedRows, rate: float,
                             source: RandomSource) -> tuple[np.ndarray, np.ndarray, int]:
    """Counts c of the truncated data, counts c_s of the rows sampled at ``rate``, rows sampled."""
    if prepared.bounded.over is not None:
        from ..engine.dataset import row_sample

        return row_sample(data, prepared.bounded, rate, source)
    matrix = matrix_of(data)
    d = matrix.shape[1]
    kept = _kept_by_row(prepared, source)
    counts = prepared.bounded.base_counts + np.bincount(matrix.indices[kept.ravel()], minlength=d)
    sampled = source.bernoulli(np.full(matrix.shape[0], rate))
    take_within = sampled[prepared.within_rows]
    cells = np.concatenate([_cells(prepared.within_starts[take_within], prepared.within_lengths[take_within]),
                            kept[sampled[prepared.bounded.over_rows]].ravel()])
    sample = np.bincount(matrix.indices[cells], minlength=d).astype(np.int64)
    return counts, sample, int(sampled.sum())


def row_sampling_rate(epsilon: float, bound: int) -> float:
    """β = (e^{ε/2} − 1)/(e^{εΔ/2} − 1) (GS Theorem 4)."""
    if bound == 1:
        return 1.0
    large = epsilon * bound / 2
    if large > 700:  # e^{εΔ/2} overflows a float: β = (e^{ε/2} − 1)·e^{−εΔ/2} / (1 − e^{−εΔ/2})
        return math.expm1(epsilon / 2) * math.exp(-large) / -math.expm1(-large)
    return math.expm1(epsilon / 2) / math.expm1(large)


def safe_rate(rate: float) -> float:
    """β rounded down so that the coin's true probability never exceeds β (module notes)."""
    return max(0.0, rate * (1.0 - 2.0**-40) - 2.0**-53)


# --- fine-tuning ---------------------------------------------------------------------------

@dataclass
class Calibration:
    """The calibrated slope a of c̃ = a·t_s (+ a constant) and the estimates it comes from."""

    multiplier: float  # a = min(r̂·λ̂, cap)
    row_length: float  # r̂, a low estimate of the mean kept row length N/n
    signal_share: float  # λ̂, the share of t_s's variance across items that is not noise
    spread_cap: float  # 2·Ñ_low / Σ|t_s − mean t_s|: the steepest slope the total allows

    def residual_variance(self, noisy_sample: np.ndarray) -> np.ndarray:
        """a·(r̂ − 1)·t_s per item: the variance of its count around c̃ that column sampling hides (step 5)."""
        return self.multiplier * (self.row_length - 1.0) * np.maximum(np.asarray(noisy_sample, np.float64), 0.0)


@dataclass
class Tuning:
    """GS's choice of group size (module notes, "Fine-tuning")."""

    total_epsilon: float  # ε_t, 0 for the paper's estimate
    total: int | None = None  # Ñ, the noisy total of kept items (calibrated only; never published)
    calibration: Calibration | None = None
    numerator: float = 0.0  # the noise on a group average of size w has scale numerator/w
    simulation: np.ndarray | None = None  # the standard Laplace draws of the simulated releases
    curve: np.ndarray | None = None  # estimated L1 for w = 1..d
    w: int = 0  # w*, the size of least estimated L1


def calibrate(noisy_sample: np.ndarray, noisy_total: float, sample_scale: float, total_scale: float,
              bound: int) -> Calibration:
    """The calibrated slope of c̃ = a·t_s, from t_s, Ñ and public scales only (module notes)."""
    t = np.asarray(noisy_sample, dtype=np.float64)
    d = t.size
    sample_noise = discrete_laplace_variance(sample_scale)
    # one standard deviation towards fewer items per row: a slope too steep costs far more than one too flat
    total = max(float(noisy_total) - math.sqrt(discrete_laplace_variance(total_scale)), 0.0)
    rows = float(t.sum()) + math.sqrt(d * sample_noise)  # Σ c_s = n exactly: only the noise blurs it
    row_length = min(max(total / rows, 1.0), float(bound)) if rows > 0 else 1.0
    noise = sample_noise + (1.0 - 1.0 / row_length) * max(float(t.mean()), 0.0)
    variance = float(t.var())
    # signal: what t_s's variance exceeds the noise's by, beyond two standard errors of a variance
    # estimate from d values (relative standard error √((kurtosis − 1)/d), kurtosis 6 for Laplace)
    excess = noise * (1.0 + 2.0 * math.sqrt(5.0 / d))
    signal_share = min(max(1.0 - excess / variance, 0.0), 1.0) if variance > 0 else 0.0
    deviation = float(np.abs(t - t.mean()).sum())
    spread_cap = 2.0 * total / deviation if deviation > 0 else math.inf
    return Calibration(min(row_length * signal_share, spread_cap), row_length, signal_share, spread_cap)


def standard_laplace(source: RandomSource, draws: int, size: int) -> np.ndarray:
    """Floating-point Laplace(1) draws (for simulations only; never published)."""
    u = source.uniform01(draws * size).reshape(draws, size) - 0.5
    return -np.sign(u) * np.log1p(-2.0 * np.abs(u))


def estimated_l1(sample_sorted: np.ndarray, multiplier: float, noise_numerator: float,
                 noise: np.ndarray, residual_variance: np.ndarray | None = None) -> np.ndarray:
    """Mean over draws of L1(c̃, t̃_w) for every group size w = 1..d (``out[w − 1]``).

    ``sample_sorted`` holds whole numbers in ascending order and c̃ = ``multiplier`` ·
    ``sample_sorted`` (``multiplier`` ≥ 0); group j of size w gets simulated noise
    ``noise_numerator / w · noise[:, j]`` on its average (``noise`` has shape (draws, d)).
    With ``residual_variance`` (per item, same order) each item's error |c̃_k − v| becomes
    max(|c̃_k − v|, κ·τ_g), the mean of |c̃_k − v ∓ κ·τ_g|: τ_g² is the group's mean residual
    variance × (1 − 1/|g|) and κ = √(2/π) (module notes, step 5).
    Prefix sums and, per group, the number of values below the noisy average, clipped to
    the group (module notes). That number comes from a table indexed by ⌈v/multiplier⌉
    when the values span a moderate range (one memory read instead of a binary search),
    else from a binary search; with ``multiplier`` = 0 every value is 0 and needs neither.
    """
    t = np.asarray(sample_sorted, dtype=np.int64)
    d = t.size
    noise = np.atleast_2d(noise)
    x = multiplier * t.astype(np.float64)
    prefix = np.concatenate([[0.0], np.cumsum(x)])
    if residual_variance is not None:
        residual_prefix = np.concatenate([[0.0], np.cumsum(residual_variance, dtype=np.float64)])
    low, span = int(t[0]), int(t[-1] - t[0])
    table = multiplier > 0 and span <= 4 * d + (1 << 20)
    below = np.searchsorted(t, low + np.arange(span + 2)) if table else None

    def group_l1(v, start, end, outer, width):
        """Σ_{k∈[start, end)} |x_k − v| for every group at once (v is overwritten)."""
        if multiplier == 0:  # all values are 0: every one lies below a positive v, none below the rest
            p = np.where(v > 0, end, start)
        elif below is not None:
            m = np.ceil(v / multiplier)
            m -= low
            np.clip(m, 0, span + 1, out=m)
            p = below[m.astype(np.int64)]
        else:
            p = np.searchsorted(x, v)
        np.clip(p, start, end, out=p)
        # Σ_{k<p}(v − x_k) + Σ_{k≥p}(x_k − v) over the group [start, end)
        l1 = outer - 2.0 * prefix[p]
        v *= 2 * p + width
        l1 += v
        return l1

    sizes = np.arange(1, d + 1, dtype=np.int64)
    per_size = d // sizes  # number of groups for each w
    cumulative = np.cumsum(per_size)
    cuts = np.searchsorted(cumulative, np.arange(BATCH_GROUPS, cumulative[-1], BATCH_GROUPS))
    edges = np.unique(np.concatenate([[0], cuts, [d]]))
    total = np.zeros(d, dtype=np.float64)
    for lo, hi in zip(edges[:-1], edges[1:]):
        ws, counts = sizes[lo:hi], per_size[lo:hi]
        first = np.concatenate([[0], np.cumsum(counts)[:-1]])
        w_of = np.repeat(ws, counts)
        j = np.arange(int(counts.sum()), dtype=np.int64) - np.repeat(first, counts)
        start = j * w_of
        end = start + w_of
        end[first + counts - 1] = d  # the last group takes the remainder
        p_start, p_end = prefix[start], prefix[end]
        average = (p_end - p_start) / (end - start)
        scale = noise_numerator / w_of
        outer = p_start + p_end
        width = -(start + end)
        if residual_variance is not None:
            size = end - start
            shift = math.sqrt(2.0 / math.pi) * np.sqrt(
                (residual_prefix[end] - residual_prefix[start]) / size * (1.0 - 1.0 / size))
        for row in noise:
            v = row[j]
            v *= scale
            v += average
            if residual_variance is None:
                l1 = group_l1(v, start, end, outer, width)
            else:
                l1 = group_l1(v + shift, start, end, outer, width)
                l1 += group_l1(v - shift, start, end, outer, width)
                l1 *= 0.5
            total[lo:hi] += np.add.reduceat(l1, first)
    return total / noise.shape[0]


def real_l1(counts_in_order: np.ndarray, sizes: np.ndarray, noise_numerator: float,
            noise: np.ndarray) -> np.ndarray:
    """Mean over draws of L1(c, t_w) for the given group sizes (true counts: internal)."""
    c = counts_in_order.astype(np.float64)
    out = np.empty(sizes.size)
    for k, w in enumerate(sizes):
        bounds = group_boundaries(c.size, int(w))
        lengths = np.diff(bounds)
        averages = group_averages(c, bounds)
        errors = [np.abs(c - np.repeat(averages + noise_numerator / w * row[:lengths.size], lengths)).sum()
                  for row in np.atleast_2d(noise)]
        out[k] = float(np.mean(errors))
    return out


def plot_sizes(d: int, points: int, must: tuple[int, ...] = ()) -> np.ndarray:
    """About ``points`` group sizes spread evenly on a log scale over 1..d, plus ``must``."""
    if d <= points:
        return np.arange(1, d + 1, dtype=np.int64)
    grid = np.unique(np.round(np.geomspace(1, d, num=points)).astype(np.int64))
    extra = np.array([m for m in must if 1 <= m <= d], dtype=np.int64)
    return np.unique(np.concatenate([grid, extra]))


# --- diagnostics ---------------------------------------------------------------------------

def average_ranks(values: np.ndarray) -> np.ndarray:
    """Ranks 1..n, tied values sharing the average of their ranks."""
    _, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    return (np.cumsum(counts) - (counts - 1) / 2.0)[inverse]


def rank_correlation(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman's rank correlation (NaN when either vector is constant)."""
    if a.size < 2 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return float("nan")
    return float(np.corrcoef(average_ranks(a), average_ranks(b))[0, 1])


def ordering_diagnostic(sample: np.ndarray, counts: np.ndarray, order: np.ndarray, w: int) -> Diagnostic:
    """How well the noisy sample t_s ranks the items, judged against the true counts (internal)."""
    d = counts.size
    in_order = counts[order].astype(np.float64)
    by_truth = -np.sort(-counts).astype(np.float64)  # the true counts, largest first
    bins = np.unique(np.linspace(0, d, min(ORDER_BINS, d) + 1).astype(np.int64))
    centre = (bins[:-1] + bins[1:] - 1) / 2
    correlation = rank_correlation(sample, counts)
    sample_error = smoothing_l1(counts, order, w)
    best_error = smoothing_l1(counts, np.argsort(-counts, kind="stable"), w)
    return Diagnostic(
        title="How well the noisy sample orders the items (internal)",
        caption=("Items are lined up by their noisy sample count (left: largest). The solid line is the "
                 "average TRUE count in each stretch of that line-up; the reference line is the true counts "
                 "in perfect order. The closer they are, the better the groups: similar counts end up "
                 f"together. Rank correlation {correlation:.3f}; grouping error (smoothing alone, {items_text(w)} "
                 f"per group) {sample_error:,.0f} against {best_error:,.0f} for a perfect order. "
                 "Computed from the true data: for your eyes only."),
        data={"position": centre, "true_count_in_sample_order": group_averages(in_order, bins),
              "true_count_sorted": group_averages(by_truth, bins), "rank_correlation": correlation,
              "group_size": int(w), "smoothing_l1_sample_order": sample_error,
              "smoothing_l1_true_order": best_error},
        internal=True, x="items in the order of the noisy sample", y="average true count")


# --- mechanisms ----------------------------------------------------------------------------

def items_text(n: int) -> str:
    """"1 item", "8 items": a number of items in words."""
    return f"{n:,} item" if n == 1 else f"{n:,} items"


def bound_symbol(bound: int, declared) -> str:
    """How the report writes the bound in a formula: Δ when Δ' = min(Δ, d) is the declared Δ, else Δ′."""
    return "Δ" if declared is None or int(bound) == int(declared) else "Δ′"


def bound_note(bound: int, declared, joint: str = ", and ") -> str:
    """", and Δ′ = min(Δ, d) = 3" when the bound used differs from the declared Δ (d < Δ), else nothing."""
    return "" if bound_symbol(bound, declared) == "Δ" else f"{joint}Δ′ = min(Δ, d) = {bound:,}"


def beta_text(step_epsilon: float, bound: int, declared, *, explained: bool = True) -> str:
    """The row sampling rate β with its formula, in the noisy sample's own ε (ε_s = ε/2) and Δ'."""
    sym = bound_symbol(bound, declared)
    text = f"β = (e^(ε_s) − 1)/(e^(ε_s·{sym}) − 1) = {row_sampling_rate(2 * step_epsilon, bound):.4g}"
    if not explained:  # the budget row says what ε_s is next to it
        return text + bound_note(bound, declared, " with ")
    return (text + f", where ε_s = {step_epsilon:.6g} is the noisy sample's ε" + bound_note(bound, declared)
            + "; from ε and Δ only")


def _average_noise_error(scale: float, what: str, w: int) -> dict:
    """The noise on a full group's average: discrete Laplace of scale w·b on the sum, divided by w (the same
    quantile as the published margin95 of a full group), rounded up to the margin's 3 significant digits so
    that the text and the table quote the same figure and never a smaller one."""
    z95 = float(round_up(discrete_laplace_margin(w * scale, w)))
    return {"noise_scale": scale, "within_95": z95, "mean_abs_error": scale, "text":
            f"The noise on each published group average has scale {scale:,.3g} ({what}): in a full group of "
            f"{items_text(w)}, 95% of the time it is within ±{z95:,.6g} (the margin95 column gives each value's "
            "margin, including the rounding to whole numbers when they are published). On top of it, each item is "
            "off by the distance between its true count and its group's average (the smoothing error), which depends "
            "on the data."}


#: why GS-R publishes no margin of error (dpdesk.mechanisms.publish)
NO_MARGIN_RANDOM = ("the groups are random, so a group can hold one large count among small ones, and nothing the "
                    "release computes privately tells which of its items is the large one")

DIAGNOSTICS = Param(
    "diagnostics", "bool", True, label="Compute plot data",
    help="Also compute the numbers behind the plots (error curves, ordering quality; some use the true data and "
         "are kept internal). Turn off to speed up long comparisons: the published counts do not change.",
    reference="GS §5, Fig. 8", advanced=True, plots_only=True)


class _Grouping(Mechanism):
    """Shared by the GS family: truncation, public facts, the grouped release."""

    family = FAMILY
    purpose = SHARED_NOISE
    paper = PAPER

    def prepare_key(self, epsilon, params):
        return (params["bound"],)

    def prepare(self, data, epsilon, params, progress, cancel):
        return prepare_rows(data, params["bound"])

    effective_bound = staticmethod(effective_bound)  # Δ' = min(Δ, d) (dpdesk.privacy.bounding)

    fixed_group_size = True  # w = Δ' (GS-R, GS-S); GS tunes it

    def public_group_size(self, params, facts) -> int:
        """w = Δ' = min(Δ, d) from the declared Δ and the public d (GS-R, GS-S)."""
        d = facts.get("number of items (d)") or 0
        return self.effective_bound(params["bound"], d) if d else max(1, int(params["bound"]))

    @staticmethod
    def group_words(w: int, declared) -> str:
        """"8 items" (w = Δ), or "3 items (w = Δ′ = min(Δ, d) = 3)" when d is below the declared Δ."""
        if bound_symbol(w, declared) == "Δ":
            return items_text(w)
        return f"{items_text(w)} (w = Δ′ = min(Δ, d) = {w:,})"

    def public_facts(self, data, params):
        facts = super().public_facts(data, params)
        if data is not None and self.fixed_group_size:
            w = self.effective_bound(params["bound"], data.n_items)
            facts["group size w"] = w
            facts["number of groups"] = data.n_items // w
        return facts

    def finish(self, data, epsilon, params, budget, source, values, prepared, **fields):
        if params["clamp"]:
            values = np.maximum(values, 0.0)
        if not fields.get("margin_withheld") and fields.get("error_margin") is None and "margins" not in fields:
            fields["error_margin"] = fields["noise_margin"]  # groups of one item, no cut: the noise is all
        margins = fields.pop("margins", None)
        if margins is not None:
            fields.update(margins.fields())
        internal = {"rows_truncated": prepared.bounded.rows_cut}
        internal.update(fields.pop("internal", {}))
        release = self.new_release(data, epsilon, params, budget, source, values=values, internal=internal, **fields)
        return margins.attach(release) if margins is not None else release

    def report_notes(self, params):
        return ("Items in the same group get the same published value: the group's noisy average.",
                "People with more than Δ items keep a random Δ of them before anything is counted.")

    #: what the columns of the release files hold (dpdesk.report.export.column_meanings): group averages
    column_meanings = {
        "noisy_count": "the noisy average count of the item's group, shared by every item of the group: an "
                       "estimate of the item's count, not its own noisy count (differentially private)",
    }

    def publication_notes(self, params, whole):
        if not whole:
            return ("Items of the same group share one published value, their group's noisy average.",)
        return ("Items of the same group share one published value: their group's noisy average, rounded once, "
                "so the published figures of a group stay equal.",)

    def margin_covers(self, params):
        cut = cut_words(params, estimated=False)
        if cut.startswith(" and"):
            return ("the noise on the group's average, the item's distance from that average" + cut.replace(" and", ",", 1)
                    .replace(", the counts", " and the counts", 1) + ", the last two estimated privately")
        return "the noise on the group's average and the item's distance from that average (estimated privately)" + cut

    def margin_pull(self, params, estimates):
        """How far the largest values are pulled towards their group's average, from the spread estimate."""
        smoothing = (estimates or {}).get("smoothing") or {}
        spread, windows = smoothing.get("smoothing_error_by_window"), smoothing.get("first_window")
        if not spread or not windows:
            return ""
        items, average = windows["items"], max(float(spread[0]), 0.0) / max(int(windows["items"]), 1)
        text = (f"Large counts are pulled towards their group's average: among the {items:,} largest values, the true "
                f"counts are about {average:,.0f} away from the published ones on average for that reason alone (the "
                "largest of a group above, the smallest below), by this release's own private estimate.")
        truncation = (estimates or {}).get("truncation") or {}
        if truncation.get("lost_share", 0.0) >= 0.005:  # (a cut of less than 0.5% is not worth a sentence)
            text += (f" The cut to Δ = {items_text(params['bound'])} per person also lowered the counts, by about "
                     f"{truncation['lost_share']:.0%} on the whole.")
        return text


@register
class GSR(_Grouping):
    id = "gs-r"
    name = "GS-R — random groups, averaged"
    reference = "GS §3.1, Fig. 2, Theorem 3"
    summary = "Random groups of Δ items; publishes each group's average with noise of scale 1/ε."
    order = 20
    params = (BOUND, CLAMP)

    def run(self, data, prepared, epsilon, params, source):
        d = data.n_items
        w = self.effective_bound(params["bound"], d)
        counts = bounded_counts(data, prepared.bounded, source)
        order = source.permutation(d)
        values, bounds = release_grouped(counts, order, w, 1.0 / epsilon, source)
        budget = BudgetSplit.single(epsilon, "noisy group averages",
                                    f"random groups of {self.group_words(w, params['bound'])}; noise of scale "
                                    f"1/ε_g = {1 / epsilon:.6g} on each average, where ε_g = {epsilon:.6g} is "
                                    "this step's ε")
        return self.finish(data, epsilon, params, budget, source, values, prepared,
                           internal={"smoothing_l1": smoothing_l1(counts, order, w)},
                           noise_margin=group_noise_margin(order, bounds, 1.0 / epsilon),
                           margin_withheld=NO_MARGIN_RANDOM)

    def public_facts(self, data, params):
        facts = super().public_facts(data, params)
        facts["grouping"] = "uniformly random, independent of the data"
        return facts

    def expected_error(self, epsilon, params, facts):
        return _average_noise_error(1.0 / epsilon, f"1/ε_g, where ε_g = {epsilon:.4g} is the averages' ε",
                                    self.public_group_size(params, facts))


class _SampledGrouping(_Grouping):
    """GS-S and GS: the grouping comes from a noisy sample t_s that spends ε/2."""

    margins_published = True  # dpdesk.mechanisms.margins

    sampling = "column"

    def noisy_sample(self, data, prepared, epsilon, params, source):
        """(true truncated counts, sample counts c_s, t_s, facts about the sample for internal use)."""
        bound = self.effective_bound(params["bound"], data.n_items)
        if self.sampling == "row":
            rate = safe_rate(row_sampling_rate(epsilon, bound))
            counts, sample, rows = truncated_and_row_sample(data, prepared, rate, source)
            info = {"rows_sampled": rows}
        else:
            counts, sample = truncated_and_column_sample(data, prepared, source)
            info = {}
        noisy = add_discrete_laplace(sample, 2.0 / epsilon, source)
        return counts, sample, noisy, info

    @staticmethod
    def margin_shares(epsilon: float, params: dict, w: int | None = None, located: bool = True) -> dict[str, float]:
        """The ε of the margins' estimates, taken from the averages' half: the spread (groups of more than one
        item) and the loss (Δ may cut). With groups of one item (w = 1: no smoothing error) the spread's share goes
        to the loss estimate when there is one. None when the noisy sample cannot locate the large counts
        (``located`` False, :func:`.margins.unlocated`): no margin is published and nothing is set aside."""
        if not located:
            return {}
        shares = margin_budget(epsilon, params, ("spread", "loss"))
        if w == 1 and "spread" in shares:
            spare = shares.pop("spread")
            if "loss" in shares:
                shares["loss"] += spare
        return shares

    def grouped_margins(self, data, prepared, counts, values, order, bounds, noise, shares, budget, params,
                        source, sample, sample_scale) -> Margins:
        """The margins of a grouped release: the spread step (groups of more than one item), then the loss step
        (when Δ may cut), both with windows over the groups in the order of t_s (dpdesk.mechanisms.margins)."""
        grouped = int(np.diff(bounds).max()) > 1
        reason = unlocated(sample, sample_scale)
        if reason:
            return Margins(withheld=reason)
        if (grouped or needs_loss(params)) and not shares:
            return Margins(withheld=NO_SHARE)
        spread_part, report = 0.0, {}
        if grouped:
            bound = self.effective_bound(params["bound"], data.n_items)
            weights = spread_weights(values, order, bounds, sample, sample_scale)
            estimate = estimate_spread(counts, order, bounds, bound, weights, shares["spread"], source)
            budget.add(SPREAD_STEP, shares["spread"], spread_step_text(estimate, bound, params["bound"]))
            spread_part = spread_margin(estimate)
            report["smoothing"] = estimate.to_report()
        margins = count_margins(data, prepared.bounded, values, noise, budget.total, params, budget, source,
                                order=order, bounds=bounds, spread=spread_part, loss_epsilon=shares.get("loss"))
        margins.report = {**report, **margins.report}
        return margins

    def sample_step(self, epsilon, params, d):
        """The noisy sample's budget row, worded in its own ε_s = ε/2 (not the release's ε, which a discovery
        step may make larger)."""
        share = epsilon / 2
        noise = (f"counts of the sample plus noise of scale 1/ε_s = {1 / share:.6g}, where ε_s = {share:.6g} is "
                 "this step's ε; used only to form the groups")
        if self.sampling == "row":
            bound = self.effective_bound(params["bound"], d)
            what = (f"rows (people) sampled with rate {beta_text(share, bound, params['bound'], explained=False)}; "
                    f"{noise}")
        else:
            what = f"one random item per person; {noise}"
        return "noisy sample t_s", share, what

    def public_facts(self, data, params):
        facts = super().public_facts(data, params)
        facts["grouping"] = ("items sorted by a noisy sample (ties broken at random); "
                             + ("row sampling" if self.sampling == "row" else "one random item per person"))
        return facts


class _GSS(_SampledGrouping):
    reference = "GS §3.2, Fig. 4, Theorems 4–5"
    params = (BOUND, DIAGNOSTICS, CLAMP, MARGIN_SHARE_PARAM, BOUND_HOLDS)

    def run(self, data, prepared, epsilon, params, source):
        d = data.n_items
        w = self.effective_bound(params["bound"], d)
        counts, sample, noisy, info = self.noisy_sample(data, prepared, epsilon, params, source)
        located = not unlocated(noisy, 2.0 / epsilon)
        shares = self.margin_shares(epsilon, params, w, located)
        averages = self.averages_epsilon(epsilon, params, w, located)
        order = noisy_order(noisy, source)
        values, bounds = release_grouped(counts, order, w, 1.0 / averages, source)
        budget = BudgetSplit(epsilon).add(*self.sample_step(epsilon, params, d)).add(
            "noisy group averages", averages,
            f"groups of {self.group_words(w, params['bound'])} in the order of the noisy sample t_s; noise of "
            f"scale 1/ε_g = {1 / averages:.6g} on each average, where ε_g = {averages:.6g} is this step's ε")
        noise = group_noise_margin(order, bounds, 1.0 / averages)
        margins = self.grouped_margins(data, prepared, counts, values, order, bounds, noise, shares, budget, params,
                                       source, noisy, 2.0 / epsilon)
        diagnostics = {}
        if params["diagnostics"]:
            diagnostics["ordering"] = ordering_diagnostic(noisy, counts, order, w)
            info["smoothing_l1"] = smoothing_l1(counts, order, w)
        release = self.finish(data, epsilon, params, budget, source, values, prepared, diagnostics=diagnostics,
                              internal=info, noise_margin=noise, margins=margins)
        # the averages' ε as it ran (an unlocated sample sets nothing aside for margins)
        release.report["expected_error"] = _average_noise_error(
            1.0 / averages, f"1/ε_g, where ε_g = {averages:.4g} is the averages' ε", w)
        return release

    def averages_epsilon(self, epsilon: float, params: dict, w: int | None = None, located: bool = True) -> float:
        """ε_g: the second half of ε, less what the margins' estimates spend."""
        return epsilon / 2 - sum(self.margin_shares(epsilon, params, w, located).values())

    def expected_error(self, epsilon, params, facts):
        w = self.public_group_size(params, facts)
        averages = self.averages_epsilon(epsilon, params, w)
        return _average_noise_error(1.0 / averages, f"1/ε_g, where ε_g = {averages:.4g} is the averages' ε", w)


@register
class GSSRow(_GSS):
    id = "gs-s-row"
    name = "GS-S (row sampling) — groups from a noisy sample of people"
    summary = ("Groups items with similar counts in a small random sample of people (ε/2), then publishes "
               "group averages with noise of scale 2/ε (ε/2).")
    order = 21
    sampling = "row"

    def public_facts(self, data, params):
        facts = super().public_facts(data, params)
        facts["row sampling rate β"] = (
            "β = (e^(ε_s) − 1)/(e^(ε_s·Δ′) − 1), where ε_s = ε/2 is the noisy sample's ε and Δ′ = min(Δ, d); "
            "from ε and Δ only")
        return facts

    def public_report(self, data, release):
        """The β fact with its value, in the ε the noisy sample spent (ε/2 of this mechanism's ε)."""
        report = super().public_report(data, release)
        facts = report["public_facts"]
        d = facts.get("number of items (d)")
        if d:
            bound = self.effective_bound(release.params["bound"], d)
            facts["row sampling rate β"] = beta_text(release.epsilon / 2, bound, release.params["bound"])
        return report


@register
class GSSCol(_GSS):
    id = "gs-s-col"
    name = "GS-S (column sampling) — groups from one item per person"
    summary = ("Groups items with similar counts in a noisy sample of one random item per person (ε/2), "
               "then publishes group averages with noise of scale 2/ε (ε/2).")
    order = 22
    sampling = "column"


@register
class GS(_SampledGrouping):
    id = "gs"
    name = "GS — grouping and smoothing with tuned group size"
    reference = "GS §3.3, Fig. 6, Theorem 6"
    summary = ("Like GS-S with one random item per person, but tries every group size on the noisy sample and "
               "uses the one with the least estimated error (by default the sample is scaled using a noisy total of "
               f"the kept items, {TOTAL_SHARE:.0%} of ε).")
    order = 23
    fixed_group_size = False
    params = (
        BOUND,
        Param("estimator", "choice", "calibrated", label="Estimate used to choose the group size",
              choices=ESTIMATORS,
              help="calibrated: scales the noisy sample by an estimate of the typical number of items per person "
                   f"(a noisy total of the kept items, {TOTAL_SHARE:.0%} of ε) and discounts its noise; reliable "
                   "when Δ is generous or the sample is noisy. paper: scales the sample by Δ, as in the paper (GS "
                   "§3.3), which overstates counts when people hold far fewer than Δ items; spends nothing extra.",
              reference="GS §3.3, Fig. 6 line 4", advanced=True),
        Param("tuning_draws", "int", 1, label="Simulated releases per group size",
              help="The group size is chosen by simulating the release on the noisy sample. Averaging several "
                   "simulations steadies the choice; it costs no privacy (it only uses privacy-protected values) "
                   "but takes longer.", minimum=1, maximum=100, reference="GS §3.3, Fig. 6 lines 5–11",
              advanced=True),
        DIAGNOSTICS,
        CLAMP,
        MARGIN_SHARE_PARAM,
        BOUND_HOLDS,
    )

    @staticmethod
    def summary_for(params: dict, epsilon: float | None = None) -> str:
        """The summary of what this run did: the noisy total (and its ε) only with the calibrated estimate.

        ``epsilon`` is the ε GS itself ran with, which a discovery step before it may make smaller than the
        release's: the total's share is stated as a share of GS's own ε, with its value.
        """
        head = "Like GS-S with one random item per person, but tries every group size on the noisy sample ("
        if params.get("estimator") == "paper":
            how = "scaled by the declared bound Δ, as in the paper; this choice spends no extra ε"
        else:
            how = f"scaled using a noisy total of the kept items, which spends {TOTAL_SHARE:.0%} of the ε GS ran with"
            if epsilon is not None:
                how += f": ε_t = {TOTAL_SHARE * epsilon:.4g}"
        return head + how + ") and uses the one with the least estimated error."

    def public_report(self, data, release):
        report = super().public_report(data, release)
        report["mechanism"]["summary"] = self.summary_for(release.params, release.epsilon)
        return report

    def averages_epsilon(self, epsilon: float, params: dict, w: int | None = None, located: bool = True) -> float:
        """ε_g, the budget of the noisy group averages: ε/2, less the total's share when calibrated and less what
        the margins' estimates spend (for the group size ``w``; None: before w* is chosen)."""
        total = 0.0 if params["estimator"] == "paper" else TOTAL_SHARE * epsilon
        return epsilon / 2 - total - sum(self.margin_shares(epsilon, params, w, located).values())

    @staticmethod
    def noisy_total(counts: np.ndarray, bound: int, total_epsilon: float, source: RandomSource) -> int:
        """Ñ = Σ c + DiscreteLaplace(Δ'/ε_t): a person keeps at most Δ' items, so sensitivity Δ'."""
        return int(add_discrete_laplace(np.array([counts.sum()]), bound / total_epsilon, source)[0])

    def fine_tune(self, counts: np.ndarray, noisy: np.ndarray, order: np.ndarray, epsilon: float, params: dict,
                  source: RandomSource, located: bool = True) -> Tuning:
        """Everything between t_s and the release: the noisy total (calibrated), c̃'s slope and w*."""
        d = noisy.size
        bound = self.effective_bound(params["bound"], d)
        tuning = Tuning(0.0 if params["estimator"] == "paper" else TOTAL_SHARE * epsilon)
        residual = {}
        if params["estimator"] == "paper":
            multiplier = float(bound)  # c̃ = Δ'·t_s
            tuning.numerator = bound / self.averages_epsilon(epsilon, params, None, located)  # Lap(Δ/(ε_g·w))
        else:
            tuning.total = self.noisy_total(counts, bound, tuning.total_epsilon, source)  # never published
            tuning.calibration = calibrate(noisy, tuning.total, 2.0 / epsilon, bound / tuning.total_epsilon, bound)
            multiplier = tuning.calibration.multiplier
            tuning.numerator = bound / self.averages_epsilon(epsilon, params, None, located)  # Lap(Δ/(ε_g·w))
            if multiplier > 0:
                residual["residual_variance"] = tuning.calibration.residual_variance(noisy[order])
        tuning.simulation = standard_laplace(source, params["tuning_draws"], d)
        # c̃ = a·t_s in the release order (descending), negated to be ascending: |x − v| and the
        # symmetric noise are unchanged by the mirror, so the groups and their errors are the same
        tuning.curve = estimated_l1(-noisy[order], multiplier, tuning.numerator, -tuning.simulation, **residual)
        tuning.w = int(np.argmin(tuning.curve)) + 1
        return tuning

    def run(self, data, prepared, epsilon, params, source):
        d = data.n_items
        bound = self.effective_bound(params["bound"], d)
        counts, sample, noisy, info = self.noisy_sample(data, prepared, epsilon, params, source)
        order = noisy_order(noisy, source)
        located = not unlocated(noisy, 2.0 / epsilon)
        tuning = self.fine_tune(counts, noisy, order, epsilon, params, source, located)
        w = tuning.w
        # w* = 1: the spread's share is not needed; unlocated: nothing is set aside for margins
        averages_epsilon = self.averages_epsilon(epsilon, params, w, located)
        scale = bound / (averages_epsilon * w)
        values, bounds = release_grouped(counts, order, w, scale, source)
        budget = BudgetSplit(epsilon).add(*self.sample_step(epsilon, params, d))
        sym, note = bound_symbol(bound, params["bound"]), bound_note(bound, params["bound"])
        # 2Δ'/(ε·w*) (paper) and Δ'/(ε_g·w*) (calibrated) alike: ε_g is the averages' own ε
        noise_formula = f"{sym}/(ε_g·w*)"
        if tuning.calibration is not None:
            budget.add("noisy total of kept items", tuning.total_epsilon,
                       f"the number of items kept after truncation plus noise of scale {sym}/ε_t = "
                       f"{bound / tuning.total_epsilon:.6g}, where ε_t = {tuning.total_epsilon:.6g} is this step's "
                       f"ε{note}; used only to choose the group size, not published")
            info.update(kept_items=int(counts.sum()), noisy_total_kept_items=tuning.total,
                        true_mean_kept_row_length=float(counts.sum() / max(int(sample.sum()), 1)),
                        estimated_mean_kept_row_length=tuning.calibration.row_length,
                        estimated_signal_share=tuning.calibration.signal_share,
                        calibrated_slope=tuning.calibration.multiplier)
        budget.add("noisy group averages", averages_epsilon,
                   f"groups of w* = {items_text(w)} in the order of the noisy sample t_s; noise of scale "
                   f"{noise_formula} = {scale:.6g} on each average, where ε_g = {averages_epsilon:.6g} is this "
                   f"step's ε{note}")
        noise = group_noise_margin(order, bounds, scale)
        margins = self.grouped_margins(data, prepared, counts, values, order, bounds, noise,
                                       self.margin_shares(epsilon, params, w, located), budget, params, source,
                                       noisy, 2.0 / epsilon)
        diagnostics = {}
        if params["diagnostics"]:
            diagnostics = self.tuning_diagnostics(tuning.curve, w, params["bound"], counts[order], tuning.numerator,
                                                  tuning.simulation, info)
            diagnostics["ordering"] = ordering_diagnostic(noisy, counts, order, w)
            info["smoothing_l1"] = smoothing_l1(counts, order, w)
        release = self.finish(data, epsilon, params, budget, source, values, prepared, diagnostics=diagnostics,
                              internal=info, noise_margin=noise, margins=margins)
        # w* is a function of private values only (t_s, Ñ and fresh randomness): it may be published
        release.report["chosen_group_size"] = w
        release.report["expected_error"] = _average_noise_error(
            scale, f"{noise_formula} with w* = {w:,}, ε_g = {averages_epsilon:.4g}"
                   + bound_note(bound, params["bound"], " and "), w)
        return release

    @staticmethod
    def tuning_diagnostics(curve, w, declared, counts_in_order, numerator, simulation, internal) -> dict:
        """The estimated error curve (private: from t_s) and the true one on a grid (internal, GS Fig. 8)."""
        d = curve.size
        shown = plot_sizes(d, PLOT_POINTS, (w, declared))
        estimated = Diagnostic(
            title="Estimated error for each group size",
            caption=("Before publishing, GS tried every group size on its noisy sample and estimated the total "
                     f"error of each. It chose {items_text(w)} per group, where the estimate is lowest. Small groups "
                     "need more noise; large groups blur different counts together. The estimate uses only "
                     "privacy-protected values (the noisy sample and, by default, a noisy total), so this plot may "
                     "be shown."),
            data={"group_size": shown, "estimated_l1": curve[shown - 1], "chosen_group_size": w,
                  "declared_bound": int(declared)},
            internal=False, x="items per group (w)", y="estimated total error (L1)")
        grid = plot_sizes(d, REAL_CURVE_POINTS, (w, declared))
        truth = real_l1(counts_in_order, grid, numerator, simulation)
        best = int(grid[np.argmin(truth)])
        real = Diagnostic(
            title="True error for each group size (internal)",
            caption=("The same groups compared with the TRUE counts, as in the paper's Fig. 8: how much error "
                     f"each group size would really give. GS chose {w}; of these sizes the truly best is "
                     f"{best}. Computed from the true data: for your eyes only, and do not pick a group size "
                     "from it (that choice would leak)."),
            data={"group_size": grid, "real_l1": truth, "estimated_l1": curve[grid - 1], "chosen_group_size": w,
                  "best_group_size_on_grid": best},
            internal=True, x="items per group (w)", y="total error (L1)")
        internal["real_l1_at_chosen"] = float(truth[np.searchsorted(grid, w)])
        internal["real_l1_best_on_grid"] = float(truth.min())
        return {"estimated_l1": estimated, "real_l1": real}

    def expected_error(self, epsilon, params, facts):
        d = facts.get("number of items (d)") or 0
        bound = self.effective_bound(params["bound"], d) if d else params["bound"]
        averages = self.averages_epsilon(epsilon, params)
        sym = bound_symbol(bound, params["bound"]) if d else "Δ"
        note = bound_note(bound, params["bound"]) if d else ""
        low = bound / (averages * d) if d else None
        text = (f"The noise on each published group average has scale {sym}/(ε_g·w), with ε_g = {averages:.4g} the "
                f"averages' ε{note} and w the group size GS chooses: {bound / averages:,.3g} for w = 1"
                + (f", down to {low:,.3g} for one group of all items" if low else "")
                + ". On top of it, each item is off by the distance between its true count and its group's "
                  "average (the smoothing error), which depends on the data.")
        return {"text": text}

    def report_notes(self, params):
        if params["estimator"] == "paper":
            how = "on the noisy sample only: no extra privacy cost."
        else:
            how = ("on the noisy sample, scaled by a noisy total of the kept items (its share of ε is in the budget "
                   "table; the total itself is not published).")
        return super().report_notes(params) + ("The group size was chosen by simulating the release " + how,)

"""Margins that cover the total error: the noise and the mechanism's own bias (issue 28).

A published value differs from the item's TRUE count — the count of everyone who holds
it, before any truncation — by its noise plus the mechanism's bias:

* **truncation** (every mechanism with a declared bound Δ): people with more than Δ items
  keep Δ of them, so counts are too low by D_i = the number of lost holdings of item i;
* **smoothing** (the GS family): an item gets its group's average c̄_g, off by c_i − c̄_g.

Neither can be read off the data for free, and neither can be bounded from values the
release already publishes (the noisy sample t_s of GS orders the items, but within a group
it cannot tell an item held by people with long rows from one held by people with short
ones: on groceries, items with t_s 87, 85, 83 and 82 have true counts 299, 422, 269 and
414). So a release that publishes margins spends a declared share of ε on two estimates,
each its own line in the budget table, and derives every margin from them, from the
published values and from public settings only.

Windows
-------
Both estimates are sums over *windows*: runs of consecutive groups in an order the release has
already made private (GS: its groups, in the order of t_s; LPA and DIFF: the items by noisy
count, largest first, each a group of its own), each holding at least ``WINDOW_ITEMS`` items and
enough weight to stand above the estimate's own noise (``weighted_windows``: the published values
adding up to ``LOSS_PRECISION`` noise deviations of the loss estimate, at most ``LOSS_WINDOWS``
windows; the items' spread weights ω, below, adding up to ``SPREAD_PRECISION`` deviations of the
spread estimate). A window is a function of private values and public scales only, fixed before
the estimate looks at the data, so each estimate is a separate ε-DP step composed after them
(adaptive sequential composition).

The loss estimate (truncation) — ``estimate_loss``
--------------------------------------------------
Simulated loss: every person with ℓ > level items (level = Δ' = min(Δ, d)) gets
a fresh uniformly random subset of k = min(ℓ − level, (F − 1)·level) of their items
(``FAR`` = F = 4); ``lost_i`` counts the people whose subset holds item i. For a person
with ℓ ≤ F·level, E[their part of lost_i] = (ℓ − level)/ℓ = the chance that truncation
to ``level`` random items drops item i; so E lost_i = E D_i up to the people beyond F·level ("far" people), who are
counted at (F − 1)·level lost items only. The vector released is (L_b) = (Σ_{i∈b} lost_i)
over the windows b, plus n_far, the number of far people.

Sensitivity. Adding or removing one person changes Σ_b |ΔL_b| by their k ≤ (F − 1)·level
and n_far by at most 1. With discrete Laplace noise of scale b_L = (F − 1)·level /
(ε_L·(1 − f)) on each L_b and b_n = 1/(ε_L·f) on n_far (f = ``FAR_SHARE``) the privacy
loss is at most (F − 1)·level/b_L + 1/b_n = ε_L(1 − f) + ε_L·f = ε_L: the step is
ε_L-DP. No person is left out: level ≥ 1 and a row never holds more than d items, so
level = Δ' = min(Δ, d) bounds every contribution.

The spread estimate (smoothing) — ``estimate_spread``
-----------------------------------------------------
For a group g of the published grouping (sizes public, membership private), B_g =
Σ_{i∈g} ||g|·c_i − S_g| (an integer; S_g the group's sum of kept counts c) is |g| times
its smoothing error A_g = Σ_{i∈g}|c_i − c̄_g|. A person holding m_g of their kept items in
g changes c_i by x_i ∈ {0, 1} and c̄_g by m_g/|g|, so A_g by at most
Σ_{i∈g}|x_i − m_g/|g|| = 2·m_g·(1 − m_g/|g|) ≤ 2·m_g, and Σ_g m_g ≤ Δ': the vector of the
A_g, and of their window sums A_b, has L1 sensitivity 2Δ'. A window holds groups of one
size s_b (GS's last, larger group is a window of its own), so Σ_{g∈b} B_g = s_b·A_b is an
integer and gets discrete Laplace noise of scale s_b·2Δ'/ε_A: Laplace(2Δ'/ε_A) on A_b,
exactly; the step is ε_A-DP. A grouping with every group of one item has no smoothing
error and needs no estimate (the mechanism gives the share to its averages instead).

The margins
-----------
Per item, from the estimates (post-processing):

* the loss: D̂_i = κ_t·(L̃_b/V_b)·v_i, with v_i = max(published raw value, 0), V_b = Σ_{i∈b} v_i
  (each less its noise's 95% point, and the rate L̃_b/V_b at most FAR − 1: ``loss_rates``):
  the window's loss rate applied to the item, times κ_t = ``LOSS_SAFETY``, because within a
  window an item held mostly by people with long rows loses more than the average (on retail,
  groceries and MovieLens at Δ = the mean row length the top 100 items' loss rates reach
  1.3–1.6 times their window's);
* the spread (grouped releases): Ŝ_i = κ_s·((max(Ã_b, 0) + σ_A)/Ω_b)·ω_i, Ω_b = Σ_{i∈b} ω_i, with
  ω_i = |r̂·t_i − v_g(i)| + r̂·√(σ_t² + max(t_i, 0)) + h·v_g(i) (``spread_weights``): how far the
  noisy sample puts the item from its group's value, that sample's own error (its noise and the
  sampling, in counts: r̂ = Σv/Σt), and h = ``HOLDERS_SPREAD`` of the value for what the sample
  cannot see (items alike in the sample whose holders hold many or few items differ in their
  counts). The window's smoothing error is shared out in proportion to ω, taken one noise
  deviation σ_A high (a noisy estimate errs wide, not narrow), times κ_s = ``SPREAD_SAFETY`` for the
  95% point of a spread whose mean is known;
* the noise: q_i, the 95% half-width of the noise on the published value (public scales).

margin_i = √(q_i² + Ŝ_i²) + D̂_i: the noise and the smoothing error are independent and
symmetric, so their 95% points add in quadrature; the loss is one-sided and is added.
The safety factors and h are public constants, measured on the seven public datasets of
``benchmarks/bench_coverage.py`` like the recommendation's rule — never on the data of a
release.

A grouped release publishes no margin when its noisy sample cannot locate the large counts
(``unlocated``, decided from t_s before anything is set aside for the margins): then a large count
may sit in a group of small ones, and no margin of a sensible width covers it.

DPSense publishes no margin: its normalisation to θ* is a cut of the same kind, which the loss
step could simulate, but on sparse data (MovieLens, Last.fm, UCI Adult as items) the noise pushes
many small counts above the large ones, so a window of the largest values holds mostly small counts
and its loss rate misses the large ones' (coverage of the 100 largest 27–85% in
benchmarks/bench_coverage.py).

When the estimate cannot carry a margin (``loss_withheld``): the release publishes no
margin, and says why, when the noise on the loss estimate exceeds ``UNCERTAIN`` of the
kept items (small data at a small ε), or when the far people may carry more than
``FAR_TOLERANCE`` of the loss (their true loss is unbounded: a heavy tail beyond F·Δ).
Both tests read only the noisy estimates and the published values.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..privacy.noise import add_discrete_laplace, discrete_laplace_quantile, discrete_laplace_variance
from ..privacy.randomness import RandomSource
from .base import Param

MARGIN_SHARE = 0.05  # default share of ε each estimate of the margins spends
FAR = 4  # a person's simulated loss is clipped at (FAR − 1)·level items
FAR_SHARE = 0.2  # share of the loss step's ε for the count of far people
WINDOW_ITEMS = 32  # the fewest items in a window
LOSS_WINDOWS = 8  # the most windows of the loss estimate (its noise grows with their number)
LOSS_PRECISION = 8  # a loss window's published values add up to at least this many sd of the step's noise
SPREAD_PRECISION = 4  # a spread window's weights add up to at least this many sd of the step's noise
HOLDERS_SPREAD = 0.25  # the holders of items alike in the sample differ in row length: about ± this share of a count
LOCATE_TOP, LOCATE = 100, 1.5  # the k-th largest sample count must be 1.5 times what the sample may misplace it by
LOSS_SAFETY = 1.7  # κ_t
SPREAD_SAFETY = 2.5  # κ_s
SPREAD_NOISE_SDS = 1.0  # each window's estimate is taken one noise deviation high: a noisy estimate errs wide
UNCERTAIN = 0.25  # withheld when the loss estimate's noise (sd) exceeds this share of the kept items
FAR_TOLERANCE = 0.25  # withheld when far people may carry more than this share of the simulated loss


MARGIN_SHARE_PARAM = Param(
    "margin_share", "float", MARGIN_SHARE, label="Share of ε for each estimate behind the margins",
    help="The margin of error of every value covers the noise and what the mechanism itself moves (the cut to Δ "
         "items per person, the averaging in groups). Those are estimated privately, each with this share of ε "
         "(listed in the budget table). 0 spends nothing on them and publishes no margins.",
    minimum=0.0, maximum=0.25, reference="docs/ARCHITECTURE.md §2 (margins); issue 28", advanced=True)
BOUND_HOLDS = Param(
    "bound_holds", "bool", False, label="No one holds more than Δ items",
    help="Declare it only if you know it without looking at the data (one answer per question of a survey, a "
         "list capped at Δ when it was collected). The margins then leave out the cut to Δ and nothing is spent "
         "on estimating it; the report says you declared it.",
    reference="docs/ARCHITECTURE.md §3 (declared, never observed)", advanced=True)


def margin_budget(epsilon: float, params: dict, parts: tuple[str, ...]) -> dict[str, float]:
    """The ε of each estimate the margins need (``parts``: "loss", "spread"), from the declared settings:
    none when the share is 0, no "loss" when the steward declared that no one holds more than Δ items."""
    share = float(params.get("margin_share") or 0.0)
    needed = [part for part in parts if not (part == "loss" and (params.get("bound_holds")
                                                                 or params.get("bound") is None))]
    return {part: share * epsilon for part in needed} if share > 0 else {}


NO_SHARE = ("the data steward spent no share of ε on the estimates the margins need (margin_share = 0), so they "
            "could not cover what the mechanism itself moves")

LOSS_STEP = "estimate of what Δ cut off"
SPREAD_STEP = "estimate of the smoothing error"


def _level_words(level: int, declared, what: str) -> tuple[str, str]:
    """(symbol, note): Δ, or Δ′ with "Δ′ = min(Δ, d) = …" when the level used is below the declared Δ."""
    if what != "Δ" or declared is None or int(declared) == int(level):
        return what, ""
    return "Δ′", f", and Δ′ = min(Δ, d) = {level:,}"


def loss_step_text(level: int, estimate: "LossEstimate", what: str = "Δ", declared=None) -> str:
    """The budget table's description of the loss step, worded in its own ε (ε_l)."""
    sym, note = _level_words(level, declared, what)
    far_scale = 1 / (estimate.epsilon * FAR_SHARE)
    return (f"for each person with more than {sym} items, a random min(ℓ − {sym}, {FAR - 1}{sym}) of them (ℓ their "
            f"items), counted per window of at least {WINDOW_ITEMS} items; noise of scale "
            f"{FAR - 1}{sym}/({1 - FAR_SHARE:g}·ε_l) = {estimate.scale:.6g} on each window's count and "
            f"1/({FAR_SHARE:g}·ε_l) = {far_scale:.6g} on the number of people with more than {FAR}{sym} items, where "
            f"ε_l = {estimate.epsilon:.6g} is this step's ε{note}; used only for the margins of error")


def spread_step_text(estimate: "SpreadEstimate", level: int, declared=None) -> str:
    """The budget table's description of the spread step, worded in its own ε (ε_a)."""
    sym, note = _level_words(level, declared, "Δ")
    return (f"the total distance of the items from their group's average, per window of at least {WINDOW_ITEMS} "
            f"items; noise of scale 2{sym}/ε_a = {estimate.scale:.6g} on each window's total, where ε_a = "
            f"{estimate.epsilon:.6g} is this step's ε{note}; used only for the margins of error")


# --- windows ----------------------------------------------------------------------------------------

# --- the loss estimate ------------------------------------------------------------------------------

def random_subsets(lengths: np.ndarray, sizes: np.ndarray, source: RandomSource) -> np.ndarray:
    """Offsets of a uniformly random ``sizes[r]``-subset of 0..``lengths[r]``−1 for every row r, rows in
    order (Floyd's algorithm, as ``privacy.bounding.sample_kept``, with a size per row)."""
    lengths = np.asarray(lengths, dtype=np.int64)
    sizes = np.asarray(sizes, dtype=np.int64)
    if sizes.size == 0 or int(sizes.max(initial=0)) == 0:
        return np.zeros(0, dtype=np.int64)
    most = int(sizes.max())
    chosen = np.full((most, sizes.size), -1, dtype=np.int64)
    for step in range(most):
        active = np.flatnonzero(sizes > step)
        last = lengths[active] - sizes[active] + step
        drawn = source.uniform_int(last + 1).astype(np.int64)
        already = (chosen[:step, active] == drawn).any(axis=0)
        chosen[step, active] = np.where(already, last, drawn)
    mask = np.arange(most)[:, None] < sizes[None, :]
    return chosen.T[mask.T]


def simulated_loss(columns: np.ndarray, starts: np.ndarray, lengths: np.ndarray, level: int, n_items: int,
                   source: RandomSource) -> tuple[np.ndarray, int]:
    """(lost_i for every item, number of far people) for the rows given by their cells' ``columns``,
    ``starts`` and ``lengths`` (module notes: a random min(ℓ − level, (F − 1)·level) of each row's items)."""
    lengths = np.asarray(lengths, dtype=np.int64)
    over = lengths > level
    row_lengths, row_starts = lengths[over], np.asarray(starts, dtype=np.int64)[over]
    sizes = np.minimum(row_lengths - level, (FAR - 1) * level)
    offsets = random_subsets(row_lengths, sizes, source)
    cells = np.repeat(row_starts, sizes) + offsets
    lost = np.bincount(np.asarray(columns)[cells], minlength=n_items).astype(np.int64)
    return lost, int((row_lengths > FAR * level).sum())


def bounded_loss(data, bounded, source: RandomSource) -> tuple[np.ndarray, int]:
    """:func:`simulated_loss` for the rows a truncation to Δ' cuts (``bounded``: a ``BoundedRows``)."""
    # each over row's cells are contiguous in the arrays ``over_columns`` indexes; its first is at
    # over_positions[block_starts] (in memory: the dataset's CSR arrays; from an engine: the over rows alone)
    starts = bounded.over_positions[bounded.block_starts] if bounded.over_lengths.size else bounded.block_starts
    return simulated_loss(bounded.over_columns(data), starts, bounded.over_lengths, bounded.bound,
                          bounded.base_counts.size, source)


@dataclass
class LossEstimate:
    """The noisy loss per window and the noisy number of far people (module notes)."""

    window: np.ndarray  # window of each item (item order)
    lost: np.ndarray  # L̃_b
    far: int  # ñ_far
    level: int
    scale: float  # b_L, the noise scale of each L̃_b
    epsilon: float
    what: str = "Δ"  # the bound's name in the report's words

    def to_report(self, values: np.ndarray) -> dict:
        """The public account of the step: its noisy figures, and the share of the counts it says were lost."""
        kept = float(np.maximum(np.asarray(values, dtype=np.float64), 0.0).sum())
        lost = float(np.maximum(self.lost, 0).sum())
        return {"lost_by_window": [int(x) for x in self.lost], "far_people": int(self.far), "level": int(self.level),
                "what": self.what, "noise_scale": self.scale,
                "lost_share": lost / (lost + kept) if lost + kept > 0 else 0.0}


def loss_scales(level: int, epsilon: float) -> tuple[float, float]:
    """(b_L, b_n): the noise scales of the window losses and of the far count (module notes)."""
    return (FAR - 1) * level / (epsilon * (1 - FAR_SHARE)), 1.0 / (epsilon * FAR_SHARE)


def estimate_loss(lost: np.ndarray, far: int, window: np.ndarray, windows: int, level: int, epsilon: float,
                  source: RandomSource) -> LossEstimate:
    """The ε_L-DP loss step: L̃_b = Σ_{i∈b} lost_i + DL(b_L), ñ_far = n_far + DL(b_n)."""
    scale, far_scale = loss_scales(level, epsilon)
    sums = np.bincount(window, weights=lost, minlength=windows).astype(np.int64)
    noisy = add_discrete_laplace(sums, scale, source)
    noisy_far = int(add_discrete_laplace(np.array([far]), far_scale, source)[0])
    return LossEstimate(window, noisy, noisy_far, int(level), scale, epsilon)


def loss_rates(values: np.ndarray, estimate: LossEstimate, noise=0.0) -> np.ndarray:
    """L̃_b/V_b per window, with V_b = Σ_{i∈b} max(v_i − q_i, 0): each value less its noise's 95% point, because a
    window of the largest published values also holds small counts its noise pushed up, whose loss is small
    (module notes), at most ``FAR`` − 1.

    The cap: a person with ℓ ≤ FAR·Δ' items keeps Δ' and loses ℓ − Δ' ≤ (FAR − 1)·Δ', so all of them together lose
    at most FAR − 1 items per item kept. A window's rate above it comes from a denominator its noise emptied (at a
    small ε nearly every count is within its noise's 95% point and shrinks to 0), not from the data, and gave
    margins that covered by their size only (LPA on retail at ε = 0.1, Δ = 11: a median margin of ±573,587 for a
    median published value of 24)."""
    v = np.maximum(np.asarray(values, dtype=np.float64), 0.0)
    shrunk = np.maximum(v - np.asarray(noise, dtype=np.float64), 0.0)
    totals = np.bincount(estimate.window, weights=np.broadcast_to(shrunk, v.shape), minlength=estimate.lost.size)
    rates = np.maximum(estimate.lost.astype(np.float64), 0.0) / np.maximum(totals, 1.0)
    return np.minimum(rates, FAR - 1)


def loss_margin(values: np.ndarray, estimate: LossEstimate, noise=0.0) -> np.ndarray:
    """D̂_i = κ_t·(L̃_b/V_b)·v_i for every item (:func:`loss_rates`)."""
    v = np.maximum(np.asarray(values, dtype=np.float64), 0.0)
    return LOSS_SAFETY * loss_rates(values, estimate, noise)[estimate.window] * v


def loss_withheld(values: np.ndarray, estimate: LossEstimate, what: str = "Δ") -> str | None:
    """Why the loss estimate cannot carry a margin, or None (module notes; private values only)."""
    kept = float(np.maximum(np.asarray(values, dtype=np.float64), 0.0).sum())
    noise = math.sqrt(estimate.lost.size * discrete_laplace_variance(estimate.scale))
    if noise > UNCERTAIN * max(kept, 1.0):
        return (f"the estimate of how many items the cut to {what} removed is too uncertain at this ε for these "
                "counts (its noise is more than a quarter of all the counts), so no value gets a margin of error "
                "that could be trusted; a larger ε, or data of more people, gives margins")
    lost = float(np.maximum(estimate.lost, 0).sum())
    far_noise = math.sqrt(discrete_laplace_variance(loss_scales(estimate.level, estimate.epsilon)[1]))
    # evidence of far people (3 noise deviations) whose clipped loss is a large part of a loss told apart from noise
    if estimate.far > 3 * far_noise and estimate.far * (FAR - 1) * estimate.level > FAR_TOLERANCE * max(lost, 2 * noise):
        return (f"some people hold more than {FAR} times {what} items (an estimate from this release), and what "
                f"the cut to {what} removed from them cannot be bounded, so no value gets a margin of error; a "
                f"larger {what} gives margins")
    return None


# --- the spread estimate ----------------------------------------------------------------------------

@dataclass
class SpreadEstimate:
    """The noisy smoothing error Ã_b per window (module notes)."""

    window: np.ndarray  # window of each item (item order)
    spread: np.ndarray  # Ã_b
    scale: float  # the noise scale of each Ã_b (2Δ'/ε_A)
    epsilon: float
    weights: np.ndarray  # ω_i (item order)

    def to_report(self) -> dict:
        """The public account of the step: its noisy figures and the size of the first (largest values) window."""
        first = int(np.count_nonzero(self.window == 0))
        return {"smoothing_error_by_window": [round(float(x), 3) for x in self.spread], "noise_scale": self.scale,
                "first_window": {"items": first}}


def spread_weights(values: np.ndarray, order: np.ndarray, bounds: np.ndarray, sample: np.ndarray,
                   sample_scale: float) -> np.ndarray:
    """ω_i = |r̂·t_i − v_g(i)| + r̂·√(σ² + max(t_i, 0)) per item: how far the noisy sample t puts the item from its
    group's published value, plus that sample's own error, in counts (r̂ = Σ v/Σ t scales the sample to counts;
    σ² the variance of the sample's noise). Private values only (module notes)."""
    v = np.asarray(values, dtype=np.float64)
    t = np.asarray(sample, dtype=np.float64)
    scale = max(float(np.maximum(v, 0.0).sum()) / max(float(t.sum()), 1.0), 1.0)
    noise = discrete_laplace_variance(sample_scale)
    return np.abs(scale * t - v) + scale * np.sqrt(noise + np.maximum(t, 0.0)) + HOLDERS_SPREAD * np.maximum(v, 0.0)


def unlocated(sample: np.ndarray, sample_scale: float) -> str:
    """Why the noisy sample cannot say which items are large, or "" (private values only, module notes).

    An item's sample count t can be off by its noise's 95% point z₉₅ plus about 2√t from the sampling itself (a
    sampled count varies like a Poisson count), so it can sit among items whose sample counts are up to that much
    smaller; when the k-th largest sample count (k = min(``LOCATE_TOP``, d/10)) is below ``LOCATE`` times that
    reach, large counts hide among small ones in numbers no margin of a sensible width covers. Decided from t_s alone, before
    the averages are released, so that no share of ε is set aside for margins that will not be published."""
    t = np.asarray(sample, dtype=np.float64)
    k = max(1, min(LOCATE_TOP, -(-t.size // 10)))
    kth = float(np.partition(t, t.size - k)[t.size - k]) if t.size else 0.0
    reach = discrete_laplace_quantile(sample_scale, 0.95) + 2.0 * math.sqrt(max(kth, 0.0))
    if kth < LOCATE * reach:
        return ("the noisy sample that forms the groups is too noisy at this ε to tell the large counts from the "
                "small ones, so a large count may sit in a group of small ones and no margin of a sensible width "
                "would cover it; a larger ε gives margins")
    return ""


def estimate_spread(counts: np.ndarray, order: np.ndarray, bounds: np.ndarray, bound: int, weights: np.ndarray,
                    epsilon: float, source: RandomSource) -> SpreadEstimate:
    """The ε_A-DP spread step over the groups ``bounds`` of ``order`` (kept counts ``counts``), windows holding
    about ``SPREAD_PRECISION`` noise deviations of ``weights`` (module notes)."""
    sizes = np.diff(bounds)
    scale = 2.0 * bound / epsilon
    need = SPREAD_PRECISION * math.sqrt(discrete_laplace_variance(scale))
    window, windows = weighted_windows(weights, order, bounds, need, separate_last=True)
    group_window = window[order][bounds[:-1]]
    ordered = np.asarray(counts, dtype=np.int64)[order]
    sums = np.add.reduceat(ordered, bounds[:-1])
    scaled = np.abs(np.repeat(sizes, sizes) * ordered - np.repeat(sums, sizes))  # ||g|·c_i − S_g|
    per_group = np.add.reduceat(scaled, bounds[:-1])
    window_sums = np.bincount(group_window, weights=per_group, minlength=windows).astype(np.int64)
    window_size = np.zeros(windows, dtype=np.int64)
    window_size[group_window] = sizes  # one size per window
    noisy = add_discrete_laplace(window_sums, window_size * scale, source) / window_size
    return SpreadEstimate(window, noisy, scale, epsilon, np.asarray(weights, dtype=np.float64))


def spread_margin(estimate: SpreadEstimate) -> np.ndarray:
    """Ŝ_i = κ_s·(Ã_b/Ω_b)·ω_i, Ω_b = Σ_{i∈b} ω_i (module notes)."""
    totals = np.bincount(estimate.window, weights=estimate.weights, minlength=estimate.spread.size)
    upper = np.maximum(estimate.spread, 0.0) + SPREAD_NOISE_SDS * math.sqrt(discrete_laplace_variance(estimate.scale))
    rate = upper / np.maximum(totals, 1e-300)
    return SPREAD_SAFETY * rate[estimate.window] * estimate.weights


def value_order(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(order, bounds): the items by published value, largest first, each its own group (for windows)."""
    order = np.argsort(-np.asarray(values, dtype=np.float64), kind="stable")
    return order, np.arange(order.size + 1, dtype=np.int64)


def weighted_windows(weights: np.ndarray, order: np.ndarray, bounds: np.ndarray, need: float,
                     most: int | None = None, separate_last: bool = False) -> tuple[np.ndarray, int]:
    """(window of each item, number of windows): runs of whole groups (``bounds`` over ``order``), each of at
    least ``WINDOW_ITEMS`` items whose ``weights`` (item order, ≥ 0) add up to at least ``need`` — and, with
    ``most``, to at least 1/``most`` of all — greedily from the first group; a short last window joins the one
    before. With ``separate_last`` a last group of another size than the first is a window of its own (so every
    window holds groups of one size). A function of the weights, sizes and ``need`` only."""
    sizes = np.diff(bounds)
    groups = sizes.size
    window = np.zeros(order.size, dtype=np.int64)
    if groups == 0:
        return window, 1
    odd = bool(separate_last and groups > 1 and sizes[-1] != sizes[0])
    body = groups - 1 if odd else groups
    w = np.maximum(np.asarray(weights, dtype=np.float64), 0.0)[order]
    group_weights = np.add.reduceat(w, bounds[:-1])[:body]
    items_through = np.cumsum(sizes[:body])
    weight_through = np.cumsum(group_weights)
    if most:
        need = max(need, float(weight_through[-1]) / most)
    cuts, start_items, start_weight = [], 0, 0.0
    while True:
        last = max(int(np.searchsorted(items_through, start_items + WINDOW_ITEMS)),
                   int(np.searchsorted(weight_through, start_weight + need * (1 - 1e-12))))
        if last >= body - 1:
            break
        if (items_through[-1] - items_through[last] < WINDOW_ITEMS
                or weight_through[-1] - weight_through[last] < need):  # a short last window joins this one
            break
        cuts.append(last + 1)
        start_items, start_weight = int(items_through[last]), float(weight_through[last])
    group_window = np.zeros(groups, dtype=np.int64)
    for cut in cuts:
        group_window[cut:] += 1
    if odd:
        group_window[-1] = len(cuts) + 1
    window[order] = np.repeat(group_window, sizes)
    return window, int(group_window[-1]) + 1


def truncation_margin(data, bounded, values: np.ndarray, order: np.ndarray, bounds: np.ndarray, epsilon: float,
                      source: RandomSource, what: str = "Δ", noise=0.0) -> tuple[np.ndarray | None, str | None,
                                                                                  LossEstimate]:
    """(D̂ per item or None, why withheld, the estimate): the loss step for a truncation to Δ' (``bounded``)
    with windows over the groups ``bounds`` of ``order``, and its margins."""
    level = max(1, min(int(bounded.bound), int(values.size)))
    need = LOSS_PRECISION * math.sqrt(discrete_laplace_variance(loss_scales(level, epsilon)[0]))
    window, windows = weighted_windows(values, order, bounds, need, most=LOSS_WINDOWS)
    lost, far = bounded_loss(data, bounded, source)
    estimate = estimate_loss(lost, far, window, windows, level, epsilon, source)
    estimate.what = what
    reason = loss_withheld(values, estimate, what)
    return (None if reason else loss_margin(values, estimate, noise)), reason, estimate


@dataclass
class Margins:
    """What a mechanism hands to :class:`~.base.Release`: the total margins, or why there are none, and the
    public account of the estimates behind them (``report['margin_estimates']``)."""

    error: np.ndarray | None = None
    withheld: str = ""
    report: dict = field(default_factory=dict)

    def fields(self) -> dict:
        return {"error_margin": self.error, "margin_withheld": self.withheld}

    def attach(self, release):
        """Put the estimates' public account into ``release.report`` (after ``new_release``) and return it."""
        if self.report:
            release.report["margin_estimates"] = self.report
        return release


def needs_loss(params: dict) -> bool:
    """Whether the margins must cover a cut to Δ: a bound is declared and not declared to hold."""
    return params.get("bound") is not None and not params.get("bound_holds")


def count_margins(data, bounded, values: np.ndarray, noise, epsilon: float, params: dict, budget, source,
                  order: np.ndarray | None = None, bounds: np.ndarray | None = None, spread=0.0,
                  loss_epsilon: float | None = None) -> Margins:
    """The margins of counts whose noise has 95% half-width ``noise`` (and smoothing part ``spread``):
    with the loss step (its ε ``loss_epsilon``, by default from :func:`margin_budget`; added to ``budget``)
    when Δ may cut, windows over ``order``/``bounds`` (default: the values, largest first)."""
    if not needs_loss(params):
        return Margins(total_margin(noise, spread))
    share = loss_epsilon if loss_epsilon is not None else margin_budget(epsilon, params, ("loss",)).get("loss")
    if not share:
        return Margins(withheld=NO_SHARE)
    if order is None:
        order, bounds = value_order(values)
    loss, reason, estimate = truncation_margin(data, bounded, values, order, bounds, share, source, noise=noise)
    budget.add(LOSS_STEP, share, loss_step_text(estimate.level, estimate, declared=params.get("bound")))
    report = {"truncation": estimate.to_report(values)}
    if reason:
        return Margins(withheld=reason, report=report)
    return Margins(total_margin(noise, spread, loss), report=report)


def total_margin(noise, spread=0.0, loss=0.0) -> np.ndarray:
    """√(q² + Ŝ²) + D̂ (module notes)."""
    noise = np.asarray(noise, dtype=np.float64)
    return np.sqrt(noise * noise + np.square(spread)) + loss

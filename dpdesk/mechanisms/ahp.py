"""AHP (Zhang, Chen, Xu, Meng, Xie, *Towards accurate histogram publication under differential
privacy*, SDM 2014): noisy counts, small ones set to 0, sorted, clustered greedily, one noisy
average per cluster. DPBench (Hay et al., SIGMOD 2016) found it the strongest method for
histograms whose order carries no meaning, such as item counts.

Notation: c = the column counts after truncation to the declared bound Δ (each person keeps at
most Δ items, dpdesk.privacy.bounding), Δ' = min(Δ, d) (nobody holds more than d items),
ε₁ = ρ·ε the noisy counts' share (ρ = ``counts_share``, 0.85 by default as in the paper and
DPBench) and ε₂ = ε − ε₁ the cluster averages' share.

Steps
-----
1. **Noisy counts** (ε₁): ĉ = c + DiscreteLaplace(b₁), b₁ = Δ'/ε₁. One person changes at most
   Δ' counts by one each: L1 sensitivity Δ', so this step is ε₁-DP (exact integer noise,
   dpdesk.privacy.noise). ĉ is used to form the clusters and is never published.
2. **Small counts to 0**: every ĉ_i ≤ θ becomes 0, with θ = η·ln(d)·b₁ (η = ``threshold_factor``,
   0.35 by default, as DPBench's implementation of the paper has it; with η = 0 only the counts
   at or below 0 become 0). θ is a function of η, d, Δ and ε: public. Post-processing of ĉ.
3. **Sort** the thresholded ĉ ascending, ties broken uniformly at random with fresh random bits
   (independent of the data). Post-processing.
4. **Cluster greedily** (the paper's greedy strategy): the error of a cluster C of L consecutive
   sorted values is estimated as E(C) = SSE(C) + V/L, SSE the sum of squared deviations of its
   thresholded ĉ from their mean and V/L the expected squared noise the cluster's published
   average spreads over its L items (noise of scale b₂ on the sum: variance V = 2·b₂², divided
   by L² per item, L items). Scanning from the smallest value, the next value x_j joins the
   current cluster unless that raises E by at least e*(j), the least error x_j would have as
   the first item of a new cluster: e*(j) = min over L of (x_j − mean(x_j..x_{j+L−1}))² + V/L².
   The minimum is taken over L = 1…64 and a grid of ratio 1.05 beyond (with the longest run),
   where the paper stops the scan early at a local minimum: both are the same estimate of a
   value that only steers the clustering. Post-processing of ĉ and fresh randomness.
5. **Noisy cluster averages** (ε₂): each cluster's integer total S_k = Σ_{i∈C_k} c_i gets
   DiscreteLaplace(b₂), b₂ = Δ'/ε₂, and every item of the cluster gets (S_k + noise)/|C_k|.
   One person holds m_k of their items in cluster k, Σ_k m_k ≤ Δ', so the privacy loss is
   Σ_k m_k/b₂ ≤ Δ'/b₂ = ε₂ *for any given clustering*; the clustering is a function of ĉ
   (already ε₁-DP) and fresh randomness only, so by sequential composition the whole release
   is ε₁ + ε₂ = ε-DP. Dividing the exact noisy integer by the public-after-step-4 size is
   post-processing (no floating-point attack surface: the noise is added to integers).

What a release publishes beyond the values — the number of clusters, how many noisy counts were at
most θ — is a function of ĉ and fresh randomness: it may be published (as GS publishes its w*).

dpdesk's variants (parameters; the defaults are the paper's)
------------------------------------------------------------
* ``small_counts = median``. In the paper the items whose ĉ ≤ θ join the clustering as zeros and
  publish their cluster's noisy *average*; where most counts are tiny and a few are large (listening
  or rating data) that average lies far above most of them and even publishing 0 does better
  (issue 29: lastfm, MovieLens). Here those items form a group S of their own that publishes one
  *median*: m ∈ {0, 1, …, K} chosen by the exponential mechanism with quality u(m) = −Σ_{i∈S} |c_i − m|
  and ε₂, K = ⌊θ⌋ (or the largest ĉ when θ is infinite, below), at most 2²⁰ − 1. S is fixed by ĉ.
  One person changes each of their m_S ≤ Δ' counts in S by one, so u moves by at most m_S:
  Pr[m] ∝ exp(ε₂·u(m)/(2Δ')) costs ε₂·m_S/Δ' (McSherry & Talwar), and the clusters' sums, now
  over the other items only, cost ε₂·Σ_k m_k/Δ'; since m_S + Σ_k m_k ≤ Δ', the step is ε₂-DP.
  u(m) are exact integers (below 2⁵³) and the sampler is exact (dpdesk.privacy.exponential).
  The margin of those items is K: the published median and the one without noise both lie in 0..K.
* ``threshold = adaptive``. θ from the paper's formula lets through about ½·d^{1−η} counts that
  are noise alone (2% of the items at d = 10⁴), and each becomes a cluster value with the large
  noise b₂/|C|: at ε = 0.1 with a generous Δ that is most of the error. The adaptive θ is the
  least t ≥ the paper's θ at which noise alone would explain at most a tenth of the counts above
  t (d·P(Z > t) ≤ 0.1·#{ĉ_i > t}, Benjamini–Hochberg false-discovery control), or +∞ when no t
  does — then every item is small. A function of ĉ only: post-processing, and publishable.

Unlike DPComp's AHP*, nothing here is chosen from the true total or any other true figure:
ρ and η are declared (or left at their defaults), and θ follows from them, d, Δ and ε (and, when
adaptive, from ĉ).

Efficiency: E(C) grows by (L−1)/L·(x_j − mean)² − V/(L(L−1)) when x_j joins a cluster of L−1
values, so each cluster's end is found by one vectorised scan over a doubling window of prefix
sums; e*(j) for every j at once costs one vector operation per candidate length. In all about
d·150 operations in numpy and one Python step per cluster.
"""

from __future__ import annotations

import math

import numpy as np

from ..privacy import exponential
from ..privacy.bounding import bounded_counts, effective_bound, prepare_bound
from ..privacy.budget import BudgetSplit
from ..privacy.noise import add_discrete_laplace
from ..privacy.randomness import RandomSource
from . import register
from .base import BOUND, SHARED_NOISE, Mechanism, Param
from .counts import CLAMP, check_noise_scale
from .gs import noisy_order
from .publish import discrete_laplace_margin, round_up

COUNTS_SHARE = 0.85  # ρ: the paper's and DPBench's share of ε for the noisy counts
THRESHOLD_FACTOR = 0.35  # η: DPBench's default (θ = η·ln(d)·b₁)
EXACT_LENGTHS = 64  # e*(j): every cluster length up to this, then a geometric grid
LENGTH_RATIO = 1.05
FIRST_WINDOW = 32  # values scanned at once when looking for a cluster's end (doubled as needed)
SMALL_COUNTS = ("average", "median")
THRESHOLDS = ("paper", "adaptive")  # θ from declared settings only, or raised by the noisy counts themselves
FALSE_SHARE = 0.1  # the adaptive θ: noise alone would push at most this share of the items above it  # what the items whose noisy counts were set to 0 publish
MEDIAN_CANDIDATES = 1 << 20  # the most candidate values of the small counts' median (0, 1, …)


def zero_threshold(factor: float, d: int, counts_scale: float) -> float:
    """θ = η·ln(d)·b₁: noisy counts at or below it become 0 (public: η, d, Δ and ε only)."""
    return float(factor) * math.log(max(int(d), 1)) * float(counts_scale)


def adaptive_threshold(noisy: np.ndarray, counts_scale: float, floor: float) -> float:
    """The least θ ≥ ``floor`` above which noise alone would put at most a tenth of the noisy counts above it.

    d·P(Z > t), Z ~ DiscreteLaplace(b₁), is how many of d counts of 0 noise alone lifts above t; the
    adaptive θ is the least t ≥ ``floor`` among the noisy counts' values (and ``floor``) with
    d·P(Z > t) ≤ ``FALSE_SHARE``·#{ĉ_i > t}, as Benjamini and Hochberg's false-discovery control, or
    +∞ when no t qualifies (the noisy counts show nothing beyond noise). A function of ĉ only.
    """
    d = noisy.size
    alpha = math.exp(-1.0 / counts_scale)
    ascending = np.sort(np.asarray(noisy, dtype=np.int64))
    candidates = np.unique(np.concatenate([[math.floor(floor)], ascending[ascending > floor]]))
    above = d - np.searchsorted(ascending, candidates, side="right")
    # P(Z > t) = α^{t+1}/(1 + α) for whole t ≥ 0 (discrete Laplace with P(Z = z) ∝ α^|z|)
    exponent = np.maximum(candidates, 0).astype(np.float64) + 1.0
    expected = d * np.exp(exponent * math.log(alpha)) / (1.0 + alpha)
    good = np.flatnonzero(expected <= FALSE_SHARE * above)
    return float(max(candidates[good[0]], floor)) if good.size else math.inf


def candidate_lengths(n: int) -> np.ndarray:
    """Cluster lengths e*(j) is minimised over: 1…64, then a grid of ratio 1.05 up to n."""
    exact = np.arange(1, min(EXACT_LENGTHS, n) + 1, dtype=np.int64)
    if n <= EXACT_LENGTHS:
        return exact
    grid = np.unique(np.round(np.geomspace(EXACT_LENGTHS, n, num=int(
        math.ceil(math.log(n / EXACT_LENGTHS) / math.log(LENGTH_RATIO))) + 1)).astype(np.int64))
    return np.unique(np.concatenate([exact, grid]))


def new_cluster_errors(values: np.ndarray, variance: float) -> np.ndarray:
    """e*(j) for every position j of the sorted ``values`` (module notes, step 4)."""
    x = np.asarray(values, dtype=np.float64)
    n = x.size
    prefix = np.concatenate([[0.0], np.cumsum(x)])
    best = np.full(n, np.inf)
    for length in candidate_lengths(n):
        starts = n - int(length) + 1  # positions j with j + L ≤ n
        if starts <= 0:
            break
        mean = (prefix[length:length + starts] - prefix[:starts]) / length
        error = (x[:starts] - mean) ** 2 + variance / float(length) ** 2
        np.minimum(best[:starts], error, out=best[:starts])
    # the run to the end, whatever its length: (x_j − mean(x_j..x_n))² + V/(n − j)²
    remaining = np.arange(n, 0, -1, dtype=np.float64)
    tail = (x - (prefix[-1] - prefix[:-1]) / remaining) ** 2 + variance / remaining**2
    return np.minimum(best, tail)


def greedy_clusters(values: np.ndarray, variance: float) -> np.ndarray:
    """Boundaries of the greedy clusters of the ascending ``values``: starts, then n (module notes, step 4)."""
    x = np.asarray(values, dtype=np.float64)
    n = x.size
    if n == 0:
        return np.zeros(1, dtype=np.int64)
    prefix = np.concatenate([[0.0], np.cumsum(x)])
    joining_limit = new_cluster_errors(x, variance)
    starts = [0]
    start, scanned = 0, 0  # the current cluster starts at ``start``; x[start+1 .. scanned] stay in it
    window = FIRST_WINDOW
    while True:
        first = max(scanned + 1, start + 1)
        if first >= n:
            break
        stop = min(n, first + window)
        j = np.arange(first, stop)
        size = (j - start).astype(np.float64)  # values in the cluster before x_j joins
        mean = (prefix[j] - prefix[start]) / size
        # E(start..j) − E(start..j−1) with L = size + 1 values after joining
        rise = size / (size + 1.0) * (x[j] - mean) ** 2 + variance / (size + 1.0) - variance / size
        closing = np.flatnonzero(rise >= joining_limit[j])
        if closing.size:
            start = int(j[closing[0]])
            starts.append(start)
            scanned = start
            window = FIRST_WINDOW
        else:
            scanned = stop - 1
            window *= 2
    return np.array(starts + [n], dtype=np.int64)


def median_candidates(theta: float, noisy: np.ndarray) -> int:
    """K + 1 candidate values 0..K of the small counts' median: K = ⌊θ⌋, or the largest noisy count when θ is
    infinite, and at most 2²⁰ − 1. A function of declared settings and ĉ only."""
    top = theta if math.isfinite(theta) else max(float(np.max(noisy, initial=0)), 0.0)
    return int(min(math.floor(top), MEDIAN_CANDIDATES - 1)) + 1


def median_scores(counts: np.ndarray, candidates: int) -> np.ndarray:
    """u(m) = −Σ_i |c_i − m| for m = 0..``candidates`` − 1, exact integers (as floats below 2⁵³)."""
    c = np.sort(np.asarray(counts, dtype=np.int64))
    prefix = np.concatenate([[0], np.cumsum(c)])
    m = np.arange(candidates, dtype=np.int64)
    below = np.searchsorted(c, m, side="right")  # values ≤ m
    total = m * below - prefix[below] + (prefix[-1] - prefix[below]) - m * (c.size - below)
    return -total.astype(np.float64)


def cluster_release(counts: np.ndarray, order: np.ndarray, bounds: np.ndarray, sum_scale: float,
                    source: RandomSource) -> np.ndarray:
    """Each cluster's integer total plus DiscreteLaplace(``sum_scale``), divided by its size, for its items.

    ``order`` lists the clustered items (all of them, or those not set aside); the others get 0 here.
    """
    values = np.zeros(counts.size, dtype=np.float64)
    if order.size == 0:
        return values
    sizes = np.diff(bounds)
    totals = np.add.reduceat(counts[order].astype(np.int64), bounds[:-1])
    noisy = add_discrete_laplace(totals, sum_scale, source)
    values[order] = np.repeat(noisy / sizes, sizes)
    return values


@register
class AHP(Mechanism):
    id = "ahp"
    name = "AHP — noisy counts clustered, one noisy average per cluster"
    family = "Clustering (Zhang et al., AHP)"
    purpose = SHARED_NOISE
    paper = ("Zhang, Chen, Xu, Meng, Xie, Towards Accurate Histogram Publication under Differential Privacy "
             "(SDM 2014)")
    reference = "AHP §4 (Alg. 1: threshold, sort, greedy clustering); DPBench (Hay et al. 2016)"
    summary = ("Adds noise to every count with most of ε, sets the small noisy counts to 0, sorts them and "
               "clusters similar ones, then publishes one noisy average per cluster with the rest of ε.")
    order = 24
    params = (
        BOUND,
        Param("counts_share", "float", COUNTS_SHARE, label="Share of ε for the noisy counts (ρ)",
              help="Part of ε spent on the noisy counts that decide the clusters (ε₁ = ρ·ε); the rest pays for the "
                   "noisy cluster averages that are published. The paper uses 0.85.",
              minimum=0.05, maximum=0.95, reference="AHP Alg. 1 line 1", advanced=True),
        Param("threshold_factor", "float", THRESHOLD_FACTOR, label="Threshold factor (η)",
              help="Noisy counts at or below θ = η·ln(d)·Δ/ε₁ are set to 0 before clustering, so that items whose "
                   "counts are small next to the noise end up in one cluster. 0 sets only negative counts to 0. "
                   "θ comes from declared settings only.",
              minimum=0.0, maximum=10.0, reference="AHP §4.1; DPBench's default η = 0.35", advanced=True),
        Param("small_counts", "choice", "average", label="Value of the items whose noisy count was set to 0",
              choices=SMALL_COUNTS,
              help="average: as in the paper, those items are clustered like the others (as zeros) and publish "
                   "their cluster's noisy average. median: they form one group that publishes a private median of "
                   "its counts (a whole number from 0 to θ, chosen by the exponential mechanism with the averages' "
                   "share of ε), which suits many small counts with a few large ones, where an average is pulled "
                   "up by the large ones.",
              reference="AHP §4.1; dpdesk's variant (median by the exponential mechanism)"),
        Param("threshold", "choice", "paper", label="Threshold rule", choices=THRESHOLDS,
              help="paper: θ = η·ln(d)·Δ/ε₁, from declared settings only. adaptive: θ is raised, from the noisy "
                   "counts alone (no further privacy cost), until noise alone would explain at most a tenth of the "
                   "counts above it; when the noisy counts show nothing beyond noise, every item counts as small.",
              reference="Benjamini & Hochberg (1995) false-discovery control on the noisy counts", advanced=True),
        CLAMP,
    )

    # -- budget --------------------------------------------------------------------------------
    @staticmethod
    def shares(epsilon: float, params: dict) -> tuple[float, float]:
        """(ε₁, ε₂): the noisy counts' and the cluster averages' ε."""
        counts = epsilon * params["counts_share"]
        return counts, epsilon - counts

    def scales(self, epsilon: float, params: dict, d: int) -> tuple[float, float]:
        """(b₁, b₂) = (Δ'/ε₁, Δ'/ε₂) from declared inputs."""
        bound = effective_bound(params["bound"], d)
        first, second = self.shares(epsilon, params)
        return bound / first, bound / second

    def check(self, data, epsilon, params):
        """From Δ, d and ε only: the larger scale (the averages') must be one the sampler can draw."""
        d = data.n_items if data is not None else params["bound"]
        check_noise_scale(max(self.scales(epsilon, params, d)), f"Δ = {params['bound']}")
        return params

    # -- work -----------------------------------------------------------------------------------
    def prepare_key(self, epsilon, params):
        return (params["bound"],)

    def prepare(self, data, epsilon, params, progress, cancel):
        return prepare_bound(data, params["bound"])

    @staticmethod
    def noisy_counts(counts: np.ndarray, scale: float, source: RandomSource) -> np.ndarray:
        """ĉ = c + DiscreteLaplace(b₁) (step 1): the only view of the counts the clustering gets."""
        return add_discrete_laplace(counts, scale, source)

    def clusters(self, noisy: np.ndarray, epsilon: float, params: dict, source: RandomSource):
        """(order, boundaries, θ, small) from the noisy counts ĉ and fresh randomness only (steps 2–4).

        ``small`` marks the items whose ĉ ≤ θ; with ``small_counts = median`` they are set aside (module
        notes, "The median variant") and ``order`` lists the others, else every item.
        """
        d = noisy.size
        counts_scale, sum_scale = self.scales(epsilon, params, d)
        theta = zero_threshold(params["threshold_factor"], d, counts_scale)
        if params["threshold"] == "adaptive":
            theta = adaptive_threshold(noisy, counts_scale, theta)
        small = noisy <= theta
        kept = np.where(small, 0, noisy).astype(np.int64)
        items = np.flatnonzero(~small) if params["small_counts"] == "median" else np.arange(d)
        order = items[noisy_order(-kept[items], source)]  # ascending, ties at random
        bounds = greedy_clusters(kept[order], 2.0 * sum_scale**2)
        return order, bounds, theta, small

    def run(self, data, prepared, epsilon, params, source):
        d = data.n_items
        counts = bounded_counts(data, prepared, source)
        counts_scale, sum_scale = self.scales(epsilon, params, d)
        noisy = self.noisy_counts(counts, counts_scale, source)
        order, bounds, theta, small = self.clusters(noisy, epsilon, params, source)
        values = cluster_release(counts, order, bounds, sum_scale, source)
        first, second = self.shares(epsilon, params)
        bound = effective_bound(params["bound"], d)
        sizes = np.diff(bounds)
        item_sizes = np.zeros(d, dtype=np.int64)
        item_sizes[order] = np.repeat(sizes, sizes)
        margin = discrete_laplace_margin(np.full(d, sum_scale), np.maximum(item_sizes, 1))
        median = params["small_counts"] == "median"
        candidates = median_candidates(theta, noisy)
        if median and small.any():
            # exponential mechanism, u(m) = −Σ|c_i − m| over the set-aside items: sensitivity Δ' (module notes)
            values[small] = exponential.sample(median_scores(counts[small], candidates), epsilon=second,
                                               sensitivity=bound, source=source)
            margin[small] = candidates - 1  # the published and the noise-free median both lie in 0..K
        if params["clamp"]:
            values = np.maximum(values, 0.0)
        sym = "Δ" if bound == params["bound"] else "Δ′"
        note = "" if sym == "Δ" else f", and Δ′ = min(Δ, d) = {bound:,}"
        averages = (f"each cluster's total plus noise of scale {sym}/ε₂ = {sum_scale:.6g}, divided by the cluster's "
                    f"size, where ε₂ = {second:.6g} is this step's ε")
        if median:
            averages += (f"; in parallel, the items whose noisy count was at most θ publish one median of their "
                         f"counts, a whole number from 0 to {candidates - 1:,} chosen by the exponential mechanism "
                         f"with ε₂ and quality sensitivity {sym}")
        budget = BudgetSplit(epsilon).add(
            "noisy counts for clustering", first,
            f"every count plus noise of scale {sym}/ε₁ = {counts_scale:.6g}, where ε₁ = {first:.6g} is this step's "
            f"ε{note}; counts at or below θ = {theta:.6g} set to 0, then sorted and clustered; used only to form the "
            "clusters, not published").add(
            "noisy cluster averages and median of the small counts" if median else "noisy cluster averages", second,
            averages)
        internal = {"rows_truncated": prepared.rows_cut}
        release = self.new_release(data, epsilon, params, budget, source, values=values, internal=internal,
                                   noise_margin=margin)
        #: each item's cluster size, 0 for the items set aside for the median (private-derived; in memory only)
        release.cluster_sizes = item_sizes
        # the clusters are a function of the noisy counts and fresh randomness: their number may be published
        release.report["clusters"] = {"number of clusters": int(sizes.size),
                                      "largest cluster": int(sizes.max()) if sizes.size else 0,
                                      "noisy counts at or below θ": int(small.sum())}
        return release

    # -- public descriptions --------------------------------------------------------------------
    def public_facts(self, data, params):
        facts = super().public_facts(data, params)
        if data is not None:
            d = data.n_items
            rule = (f"θ = η·ln(d)·Δ'/ε₁ with η = {params['threshold_factor']:g}: from declared settings and ε only")
            if params["threshold"] == "adaptive":
                rule += ("; raised, from the noisy counts alone, until noise alone would explain at most a tenth of the "
                         "counts above it")
            facts["threshold θ for setting noisy counts to 0"] = rule
            facts["clustering"] = ("items sorted by their noisy counts (ties broken at random) and clustered "
                                   f"greedily; d = {d:,} items")
        return facts

    def expected_error(self, epsilon, params, facts):
        d = facts.get("number of items (d)") or params["bound"]
        _, sum_scale = self.scales(epsilon, params, d)
        single = float(round_up(discrete_laplace_margin(sum_scale)))
        text = (f"Each cluster's total gets noise of scale {sum_scale:,.3g}, divided among its items: for an item "
                f"alone in its cluster the noise is within ±{single:,.6g} 95% of the time, for larger clusters "
                "proportionally less (the margin95 column gives each value's margin). On top of it, each item is off "
                "by the distance between its true count and its cluster's average, which depends on the data.")
        if params["small_counts"] == "median":
            text += (" The items whose noisy count was small share one private median of their counts, a whole number "
                     "from 0 to θ.")
        return {"noise_scale": sum_scale, "within_95": single, "text": text}

    def report_notes(self, params):
        notes = ["Items in the same cluster get the same published value: the cluster's noisy average.",
                 "The clusters were formed from noisy counts (their share of ε is in the budget table); those noisy "
                 "counts are not published."]
        if params["small_counts"] == "median":
            notes.append("The items whose noisy count was at most θ publish one value together: a median of their "
                         "counts chosen privately (exponential mechanism), not an average.")
        notes.append("People with more than Δ items keep a random Δ of them before anything is counted.")
        return tuple(notes)

    estimates_whole_numbers = False  # a cluster's average count

    column_meanings = {
        "noisy_count": "the noisy value of the item's cluster, shared by every item of the cluster (its noisy average; "
                       "with small_counts = median, the items whose noisy count was small share a private median of "
                       "their counts): an estimate of the item's count, not its own noisy count (differentially "
                       "private)",
    }

    def publication_notes(self, params, whole):
        if not whole:
            return ("Items of the same cluster share one published value, their cluster's noisy average.",)
        return ("Items of the same cluster share one published value: their cluster's noisy average, rounded once, "
                "so the published figures of a cluster stay equal.",)

    def margin_notes(self, params):
        notes = ["Each item's count also differs from its cluster's value by an amount that depends on the data: "
                 "the margin is that of the cluster's noisy average."]
        if params["small_counts"] == "median":
            notes.append("For the items whose noisy count was small, the margin is the width of the range their "
                         "median was chosen from.")
        return (*notes, *super().margin_notes(params))

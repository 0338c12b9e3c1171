"""Private discovery of labels (partition selection): which items, or attribute values, a release lists.

A release publishes one figure per label of its domain, so a domain taken from the data would
publish the labels one person holds. ``--items discover`` lists only labels whose noisy count
passes a threshold τ fixed by ε, δ and the contribution bound k before the data is read
(Korolova, Kenthapadi, Mishra, Ntoulas, "Releasing search queries and clicks privately", WWW
2009; Wilson, Zhang, Lam, Desfontaines, Simmons-Marengo, Gipson, "Differentially private SQL
with bounded user contribution", PoPETs 2020, whose post-aggregation thresholding OpenDP and
PipelineDP also offer; Desfontaines, Voss, Gipson, Mandayam, "Differentially private partition
selection", PoPETs 2022). Two routes use it (the choice is made from declared inputs only, in
:mod:`dpdesk.evaluation.discovery`):

* **one pass** (:func:`stability_histogram`, the stability-based histogram): the counts are
  noised once with the whole ε; the labels whose noisy count passes τ are listed *with those
  noisy counts* as the release. Nothing else is spent.
* **two steps** (:func:`discover_items`): a share of ε finds the labels (bounded to k labels per
  person, k may be smaller than the mechanism's Δ), and the mechanism then runs on the found
  labels with the rest of ε. The second step re-truncates each person among the found labels
  only, so far fewer of a person's items are cut than when every item competes for Δ places.

Both are (ε, δ)-DP by :func:`discovery_threshold`; the δ achieved (never above the δ asked
for) is what the budget table, the report and the ledger state.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..data.domain import HOW_DISCOVERED, CellDomain, ItemDomain
from ..errors import ParameterError
from ..privacy.bounding import bounded_counts, prepare_bound
from ..privacy.noise import discrete_laplace

ONE_PASS, TWO_STEP = "one-pass", "two-step"
ROUTES = (ONE_PASS, TWO_STEP)
ONE_PASS_NOTE = ("The items were chosen by the same noisy counts that are published (one pass): an item listed "
                 "because its noise happened to be high keeps that high count, so counts just above the "
                 "threshold tend to be too high.")


def listing_probability(gap, q: float) -> np.ndarray:
    """P(Z ≥ gap) for whole-number ``gap`` and discrete Laplace Z with P(Z = z) ∝ q^|z|.

    P(Z ≥ m) = q^m / (1 + q) for m ≥ 1 and 1 − q^(1−m) / (1 + q) for m ≤ 0.
    """
    gap = np.asarray(gap, dtype=np.float64)
    with np.errstate(over="ignore", under="ignore"):
        upper = np.power(q, np.maximum(gap, 1.0)) / (1 + q)
        lower = 1 - np.power(q, np.maximum(1.0 - gap, 1.0)) / (1 + q)
    return np.where(gap >= 1, upper, lower)


def discovery_threshold(epsilon: float, delta: float, bound: int) -> tuple[int, float]:
    """The integer threshold τ and the δ it achieves, for noisy-threshold label discovery.

    Each person contributes to at most k = ``bound`` labels (rows longer than k keep a
    uniformly random k, as for any declared bound). Every label with a bounded count c ≥ 1
    gets c + Z, Z two-sided geometric with P(Z = z) ∝ q^|z|, q = exp(−ε/k) (exact, the same
    discrete Laplace as everywhere), and is listed when c + Z ≥ τ. The listing may also
    publish the noisy counts themselves (the one-pass route): the argument is the same.

    Why this is (ε, δ)-DP. Take D′ = D plus one person p; couple the truncation of every other
    row (it is drawn row by row, independently of p). Of p's kept labels K (|K| ≤ k), K_old
    have bounded count ≥ 1 in D and K_new = K − K_old are no candidate in D (count 0). Labels
    outside K have the same count in both. On the candidates of D, the noisy counts form the
    Laplace mechanism with L1 sensitivity |K_old| ≤ k − |K_new|, so they are ε_old-DP with
    ε_old = (k − |K_new|)·ε/k ≤ ε; the listing and the published noisy counts are
    post-processing of them ("old"). Each label of K_new has count 1 in D′ and is listed with
    probability P1 = P(1 + Z ≥ τ) = q^(τ−1)/(1 + q), independently of the rest; let p_new be
    the chance that any is, p_new = 1 − (1 − P1)^|K_new| ≤ k·P1.

    * D′ against D: P[M(D′) ∈ S] ≤ P[old(D′) ∈ S] + p_new ≤ e^ε·P[M(D) ∈ S] + k·P1.
    * D against D′ (M(D) never lists a label of K_new): P[M(D′) ∈ S] ≥ (1 − p_new)·P[old(D′) ∈ S],
      so P[M(D) ∈ S] ≤ e^(ε_old)·P[old(D′) ∈ S] ≤ e^(ε_old)/(1 − p_new)·P[M(D′) ∈ S]. With
      |K_new| = m ≥ 1, e^(ε_old)/(1 − p_new) ≤ e^ε exactly when (1 − P1)^m ≥ q^m, i.e. P1 ≤ 1 − q;
      with m = 0 it is e^(ε_old) ≤ e^ε. So this direction holds with δ = 0 once P1 ≤ 1 − q.
      (Without that condition it would need δ = e^(ε_old)·p_new, which exceeds k·P1 for ε > 1.)

    τ is the smallest integer with k·P1 ≤ δ and P1 ≤ 1 − q. Every term depends on k: a
    threshold computed for one label per person when a person may hold k would be met by
    each of a new person's k labels, so the chance that one of them shows is k times larger.
    The δ achieved, k·P1, is returned (never more than the δ asked for).
    """
    k = int(bound)
    if k < 1 or not epsilon > 0 or not 0 < delta < 1:
        raise ParameterError("Discovery needs ε > 0, 0 < δ < 1 and a bound of at least 1 item per person.")
    q = math.exp(-epsilon / k)
    limit = min(delta / k, 1 - q) * (1 - 1e-12)  # P1 may not exceed this

    def p1(m):  # P(Z ≥ m) for m ≥ 1
        return q ** m / (1 + q)

    # smallest m = τ − 1 ≥ 1 with p1(m) ≤ limit, from logs, then corrected by single steps
    m = max(1, math.ceil(math.log(1 / (limit * (1 + q))) / (epsilon / k)))
    while m > 1 and p1(m - 1) <= limit:
        m -= 1
    while p1(m) > limit:
        m += 1
    return m + 1, k * p1(m)


@dataclass(frozen=True)
class NoisyThreshold:
    """One noisy threshold over bounded counts: which labels passed, their noisy counts, τ and δ."""

    listed: np.ndarray  # boolean, one per label
    noisy: np.ndarray  # bounded count + noise, one per label (only the listed ones may be published)
    threshold: int
    delta: float
    candidates: int  # labels with a bounded count ≥ 1 (internal)


def noisy_threshold(counts: np.ndarray, epsilon: float, delta: float, bound: int, source) -> NoisyThreshold:
    """Noise the bounded ``counts`` (every person in at most ``bound`` of them) and keep those ≥ τ.

    Labels of bounded count 0 are no candidates: they are in no kept row. Noise is exact
    discrete Laplace of scale k/ε from ``source``, drawn for every label alike.
    """
    tau, achieved = discovery_threshold(epsilon, delta, bound)
    counts = np.asarray(counts, dtype=np.int64)
    noisy = counts + discrete_laplace(source, bound / epsilon, counts.size)
    candidates = counts > 0
    return NoisyThreshold(candidates & (noisy >= tau), noisy, tau, achieved, int(candidates.sum()))


def _bounded(data, bound: int, source) -> tuple[np.ndarray, int]:
    """The counts with every person truncated to ``bound`` items, and how many people were cut (internal)."""
    prepared = prepare_bound(data, bound)
    return bounded_counts(data, prepared, source), prepared.rows_cut


def discover_items(data, epsilon: float, delta: float, bound: int, source) -> ItemDomain:
    """The two-step route's first step: the items whose noisy count, each person bounded to
    ``bound`` items, passes τ (:func:`discovery_threshold`), in the data's order."""
    counts, cut = _bounded(data, bound, source)
    found = noisy_threshold(counts, epsilon, delta, bound, source)
    return _item_domain(data, found, epsilon, bound, TWO_STEP, cut)


def stability_histogram(data, epsilon: float, delta: float, bound: int, source) -> tuple[ItemDomain, np.ndarray]:
    """The one-pass route: ``(domain, noisy counts)`` of the items whose noisy count passes τ.

    Each person is truncated to ``bound`` = Δ items, every count gets discrete Laplace noise of
    scale Δ/ε (LPA's noise), and the items at or above τ(ε, δ, Δ) are listed with those very
    counts: (ε, δ)-DP by :func:`discovery_threshold`, nothing else spent. A listed count near τ
    tends to be too high (it was listed because its noise was high); the report says so.
    """
    counts, cut = _bounded(data, bound, source)
    found = noisy_threshold(counts, epsilon, delta, bound, source)
    return _item_domain(data, found, epsilon, bound, ONE_PASS, cut), found.noisy[found.listed]


def _item_domain(data, found: NoisyThreshold, epsilon: float, bound: int, route: str, cut: int) -> ItemDomain:
    labels = np.asarray(data.item_labels, dtype=object)[found.listed]
    per_person = "1 item" if bound == 1 else f"{bound} items"
    return ItemDomain(labels, HOW_DISCOVERED, f"noisy threshold {found.threshold}, at most {per_person} per person",
                      epsilon=float(epsilon), delta=float(found.delta), route=route, threshold=found.threshold,
                      discovery_bound=int(bound),
                      internal={"items in the data": found.candidates, "items listed": int(found.listed.sum()),
                                "threshold τ": found.threshold, "rows truncated": cut})


def discover_cell_domains(cells, epsilon: float, delta: float, source) -> CellDomain:
    """Attribute values listed by private discovery: each person has one value per attribute.

    With A attributes a person contributes to exactly A (attribute, value) labels, so the
    argument of :func:`discovery_threshold` applies with k = A and no bounding.
    """
    if cells.domains is None:
        raise ParameterError("Private discovery of values needs a table with named attributes.")
    digits = cells.decode(cells.indices)
    counts = []
    for k, values in enumerate(cells.domains):
        counts.append(np.bincount(digits[:, k], weights=cells.counts, minlength=len(values)).astype(np.int64))
    flat = np.concatenate(counts) if counts else np.zeros(0, np.int64)
    found = noisy_threshold(flat, epsilon, delta, len(cells.domains), source)
    kept, start = [], 0
    for values in cells.domains:
        mask = found.listed[start:start + len(values)]
        kept.append(tuple(v for v, keep in zip(values, mask) if keep))
        start += len(values)
    return CellDomain(tuple(cells.attributes), tuple(kept), HOW_DISCOVERED,
                      f"noisy threshold, {len(cells.domains)} values per person", epsilon=float(epsilon),
                      delta=float(found.delta))


__all__ = ["ONE_PASS", "ONE_PASS_NOTE", "ROUTES", "TWO_STEP", "NoisyThreshold", "discover_cell_domains", "discover_items",
           "discovery_threshold", "listing_probability", "noisy_threshold", "stability_histogram"]

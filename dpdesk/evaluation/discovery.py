"""Planning a private discovery (``--items discover``) from declared inputs only, before anything is spent.

A discovery lists the items whose noisy count passes a threshold τ (:mod:`dpdesk.mechanisms.discovery`).
τ is a function of ε, δ and the contribution bound alone, so it is known before the data is
read; how many items will pass is not, so the plan says what a **stand-in** would give: the
synthetic baskets of :func:`dpdesk.evaluation.standin.synthetic_incidence`, shaped by declared
facts (the number of people, the typical items per person, the number of distinct items and the
skew of their popularity — each declared by the steward, or assumed and said to be), whose
expectations are computed exactly (:class:`_Standin`): no data, and no random draw.

Two routes, and the settings of each, are candidates:

* **one pass** (mechanism ``lpa`` with whole-number noise only): the counts, each person bounded
  to Δ items, get noise of scale Δ/ε once; the items above τ(ε, δ, Δ) are published with those
  counts. Lowest threshold at a given ε; the counts keep the truncation's loss (a person with
  more than Δ items loses some of them from every item, popular ones included).
* **two steps**: a share s of ε finds the items with each person bounded to k ≤ Δ items (a small
  k gives a much lower threshold, k·ln(k/δ)/(sε), while popular items keep most of their
  count, since most people hold few items), then the mechanism runs on the found items with
  the rest of ε, each person re-truncated among the found items only — so little is cut.

For every candidate the plan computes, on the stand-in and without drawing any noise: each
item's chance of being listed (the exact discrete Laplace tail at τ, for its count after the
expected truncation), the expected number of items listed, the chance that none is, the
expected recall of the stand-in's top 100 items, and their expected absolute error (an item not
listed counts as an error of its whole count). The route chosen is the candidate with the
lowest expected top-100 error; every input is declared (ε, δ, Δ, the mechanism, the facts), so
the choice, τ and the expected figures are public and the same before and after the data is read.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property, lru_cache

import numpy as np

from ..data.domain import HOW_DISCOVERED, DomainDeclaration
from ..errors import ParameterError
from ..mechanisms.discovery import ONE_PASS, TWO_STEP, discovery_threshold, listing_probability

TOP_K = 100  # the plan scores the stand-in's 100 most common items
SHARES = (0.3, 0.5, 0.7)  # two-step: the share of ε that finds the items
DISCOVERY_BOUNDS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64)  # two-step: items per person while finding them
CELL_SHARE = 0.1  # attribute values (cell tables) are found with this share unless one is declared
ASSUMED_PEOPLE, ASSUMED_ITEMS, ASSUMED_SKEW = 10_000, 1_000, 1.0
STANDIN_SEED = 0
FACT_NAMES = {"people": "people", "row_length": "typical items per person", "expected_items": "distinct items",
              "skew": "skew of item popularity (Zipf exponent)"}


@dataclass(frozen=True)
class Candidate:
    """One way to discover, and what the stand-in expects of it."""

    route: str
    share: float  # of ε spent finding the items (1 for one pass: the counts are the discovery)
    discovery_bound: int  # items per person while finding them
    threshold: int
    delta: float  # δ achieved
    expected_items: float
    chance_nothing: float
    expected_recall: float  # of the stand-in's top items
    expected_error: float  # mean absolute error on the stand-in's top items

    def to_json(self) -> dict:
        return {"route": self.route, "share": self.share, "discovery_bound": self.discovery_bound,
                "threshold": self.threshold, "delta": self.delta, "expected_items": self.expected_items,
                "chance_nothing": self.chance_nothing, "expected_recall_top": self.expected_recall,
                "expected_error_top": self.expected_error}


@dataclass
class DiscoveryPlan:
    """The discovery a release will run, decided from declared inputs only (see the module notes)."""

    mechanism: str
    epsilon: float
    delta: float
    bound: int | None  # the mechanism's Δ (None: it takes none)
    chosen: Candidate
    candidates: list[Candidate] = field(default_factory=list)
    facts: dict = field(default_factory=dict)  # the stand-in's facts
    assumed: list[str] = field(default_factory=list)  # the facts that were not declared
    fixed: list[str] = field(default_factory=list)  # the settings the steward declared
    top_k: int = TOP_K

    @property
    def route(self) -> str:
        return self.chosen.route

    @property
    def share(self) -> float:
        return self.chosen.share

    @property
    def discovery_epsilon(self) -> float:
        return self.epsilon * self.chosen.share

    @property
    def mechanism_epsilon(self) -> float:
        """The ε the mechanism runs with: all of it in one pass (the counts are the discovery), the rest in two."""
        return self.epsilon if self.route == ONE_PASS else self.epsilon - self.discovery_epsilon

    @property
    def discovery_bound(self) -> int:
        return self.chosen.discovery_bound

    @property
    def threshold(self) -> int:
        return self.chosen.threshold

    def to_json(self) -> dict:
        return {"route": self.route, "mechanism": self.mechanism, "epsilon": self.epsilon, "delta": self.delta,
                "bound": self.bound, "discovery_share": self.share, "discovery_epsilon": self.discovery_epsilon,
                "discovery_bound": self.discovery_bound, "threshold": self.threshold,
                "delta_achieved": self.chosen.delta,
                "standin": {"facts": dict(self.facts), "assumed": list(self.assumed), "top_k": self.top_k,
                            "expected_items": self.chosen.expected_items,
                            "chance_nothing": self.chosen.chance_nothing,
                            "expected_recall_top": self.chosen.expected_recall,
                            "expected_error_top": self.chosen.expected_error},
                "declared_settings": list(self.fixed),
                "candidates": [c.to_json() for c in self.candidates]}

    def lines(self) -> list[str]:
        """The plan in words, for the steward (the CLI prints these; the GUI can show them)."""
        c = self.chosen
        per_person = "1 item" if c.discovery_bound == 1 else f"{c.discovery_bound} items"
        if c.route == ONE_PASS:
            how = (f"one pass: every count (at most {per_person} per person) gets noise once with all of "
                   f"ε = {self.epsilon:g}; items whose noisy count reaches {c.threshold:,} are published with it")
        else:
            how = (f"two steps: {c.share:.0%} of ε (ε = {self.discovery_epsilon:.4g}) finds the items whose noisy "
                   f"count, at most {per_person} per person, reaches {c.threshold:,}; then {self.mechanism} runs on "
                   f"them with ε = {self.mechanism_epsilon:.4g}")
        facts = ", ".join(f"{FACT_NAMES[k]} {v:,g}" + (" (assumed)" if k in self.assumed else "")
                          for k, v in self.facts.items())
        lines = [f"Discovery: {how}. The threshold is fixed by ε, δ = {self.delta:g} and the bound, before the "
                 f"data is read.",
                 f"On a stand-in with {facts}: about {c.expected_items:,.0f} items would be listed, "
                 f"{c.expected_recall:.0%} of its {self.top_k} most common ones; the chance that none is listed is "
                 f"{chance_text(c.chance_nothing)}. Your data may differ from the stand-in."]
        if c.chance_nothing >= 0.01:
            lines.append("If nothing passes, the release stops and the ε and δ it spent stay recorded in the budget "
                         "ledger. A larger ε or δ, a smaller bound, or items declared in a list avoid that.")
        if self.assumed:
            lines.append("Declare the assumed facts (" + ", ".join(f"--{k.replace('_', '-')}" if k != "row_length"
                                                                  else "--typical-row-length"
                                                                  for k in self.assumed)
                         + ") to make the stand-in closer to your data.")
        return lines


def chance_text(p: float) -> str:
    """A probability in words a steward reads at a glance."""
    if p < 1e-4:
        return "below 0.01%"
    if p > 0.9999:
        return "above 99.99%"
    return f"{p:.2%}" if p < 0.1 else f"{p:.0%}"


def standin_facts(declaration: DomainDeclaration, bound: int | None) -> tuple[dict, list[str]]:
    """The stand-in's facts: the declared ones, the rest assumed (typical items per person: Δ/2)."""
    facts, assumed = {}, []
    defaults = {"people": ASSUMED_PEOPLE, "row_length": max(1.0, (bound or 2) / 2), "expected_items": ASSUMED_ITEMS,
                "skew": ASSUMED_SKEW}
    for name, default in defaults.items():
        value = getattr(declaration, name)
        if value is None:
            value = default
            assumed.append(name)
        facts[name] = value
    facts["row_length"] = min(float(facts["row_length"]), float(facts["expected_items"]))
    return facts, assumed


EXACT_RANKS = 2_000  # items ranked beyond this are grouped (log-spaced ranks of equal weight)
EXACT_LENGTHS = 400  # row lengths beyond this are grouped likewise


@dataclass(frozen=True)
class _Standin:
    """The stand-in's expectations: item groups (weight w, multiplicity m), row lengths l with their shares h.

    The synthetic baskets of :func:`~dpdesk.evaluation.standin.synthetic_incidence` (row lengths
    geometric with the declared mean, each of a row's l draws an item of Zipf weight w) hold item j
    in a row of length l with probability π = 1 − (1 − w_j)^l. Everything the plan needs is an
    expectation over those rows, computed exactly here (no random stand-in is drawn)."""

    people: float
    weights: np.ndarray  # per item group
    multiplicity: np.ndarray
    lengths: np.ndarray  # row lengths
    shares: np.ndarray  # share of people with each length
    holds: np.ndarray  # π[group, length]
    top: int  # the first ``top`` groups are the single top items

    @cached_property
    def counts(self) -> np.ndarray:
        return self.people * (self.holds @ self.shares)

    def kept(self, per_row_keep: np.ndarray) -> np.ndarray:
        """Each group's expected count when a row of length l keeps a share ``per_row_keep[l]`` of its items."""
        return self.people * (self.holds @ (self.shares * per_row_keep))

    def halved(self) -> "_Standin":
        return _Standin(self.people / 2, self.weights, self.multiplicity, self.lengths, self.shares, self.holds,
                        self.top)


def _grouped(n: int, exact: int, groups: int) -> tuple[np.ndarray, np.ndarray]:
    """Values 1..n as representatives (1..exact each alone, then log-spaced groups) and their multiplicities."""
    if n <= exact + groups:
        return np.arange(1, n + 1, dtype=np.float64), np.ones(n)
    edges = np.unique(np.round(np.geomspace(exact + 1, n + 1, groups + 1)).astype(np.int64))
    middle = np.sqrt(edges[:-1] * (edges[1:] - 1.0))
    return (np.concatenate([np.arange(1, exact + 1, dtype=np.float64), middle]),
            np.concatenate([np.ones(exact), np.diff(edges).astype(np.float64)]))


@lru_cache(maxsize=16)
def _standin(people: int, items: int, row_length: float, skew: float) -> _Standin:
    ranks, multiplicity = _grouped(items, EXACT_RANKS, 200)
    total = float(np.sum(multiplicity / ranks ** skew))
    weights = 1.0 / ranks ** skew / total
    # row lengths: P(L = l) = p(1 − p)^l, l ≥ 0, p = 1/(1 + mean), capped at the number of items
    p = 1.0 / (1.0 + row_length)
    longest = int(min(items, max(1, math.ceil(math.log(1e-12) / math.log1p(-p)))))
    lengths, width = _grouped(longest + 1, EXACT_LENGTHS, 200)
    lengths = lengths - 1  # representatives of 0..longest
    # the share of each group of lengths: P(L ≥ a) − P(L ≥ b), the cap's tail on the longest
    starts = np.concatenate([[0.0], np.cumsum(width)[:-1]])
    upper = np.power(1 - p, starts)
    lower = np.append(np.power(1 - p, starts[1:] if starts.size > 1 else []), 0.0)
    shares = upper - lower
    holds = -np.expm1(np.outer(np.log1p(-np.minimum(weights, 1 - 1e-15)), lengths))
    return _Standin(float(people), weights, multiplicity, lengths, shares, holds, min(TOP_K, items))


def _keep_share(lengths: np.ndarray, bound: float) -> np.ndarray:
    """The share of its items a row of each length keeps when truncated to ``bound``."""
    return np.minimum(1.0, bound / np.maximum(lengths, 1.0))


def _abs_error(bias: np.ndarray, scale: float) -> np.ndarray:
    """E|bias + Z| for Laplace noise of ``scale``: |b| + scale·e^(−|b|/scale)."""
    b = np.abs(bias)
    return b + scale * np.exp(-b / scale)


def _candidate(route, share, k, epsilon, delta, bound_values, standin: _Standin) -> Candidate:
    counts = standin.counts
    eps_find = epsilon * share
    tau, achieved = discovery_threshold(eps_find, delta, k)
    expected = standin.kept(_keep_share(standin.lengths, k))
    listed = listing_probability(np.ceil(tau - expected), math.exp(-eps_find / k))
    if route == ONE_PASS:
        values, scale = expected, bound_values / epsilon
    else:
        # the mechanism's step: each row re-truncated among the items it is expected to have found
        found_per_row = (standin.multiplicity * listed) @ standin.holds
        values = standin.kept(_keep_share(found_per_row, bound_values))
        scale = bound_values / (epsilon - eps_find)
    top = slice(0, standin.top)
    p = listed[top]
    error = p * _abs_error(values[top] - counts[top], scale) + (1 - p) * counts[top]
    nothing = float(np.exp(np.sum(standin.multiplicity * np.log1p(-np.minimum(listed, 1 - 1e-16)))))
    return Candidate(route, float(share), int(k), int(tau), float(achieved),
                     float(np.sum(standin.multiplicity * listed)), nothing, float(p.mean()), float(error.mean()))


def plan_discovery(declaration: DomainDeclaration, mechanism_id: str, epsilon: float, params: dict) -> DiscoveryPlan:
    """The discovery a release of ``mechanism_id`` at ``epsilon`` with ``params`` will run (module notes).

    Declared settings (``route``, ``share``, ``bound`` of the declaration) are kept; the others
    are chosen on the stand-in. Nothing here reads the data or draws noise; a
    ``ParameterError`` says what to declare when a discovery cannot be planned.
    """
    if declaration is None or declaration.kind != HOW_DISCOVERED:
        raise ParameterError("A discovery plan is for --items discover.")
    if declaration.cells:
        raise ParameterError("The plan is for items; attribute values are found with "
                             f"{declaration.share or CELL_SHARE:.0%} of ε (--discover-share).")
    eps, delta = float(epsilon), float(declaration.delta)
    bound = params.get("bound")
    bound = int(bound) if bound is not None else None
    fixed = [name for name in ("route", "share", "bound") if getattr(declaration, name) is not None]
    if bound is None and declaration.bound is None:
        raise ParameterError("--items discover needs a bound on how many items one person contributes to the "
                             "discovery: give --discover-bound K (or the mechanism's --bound).")
    bound_values = bound if bound is not None else int(declaration.bound)
    one_pass_possible = (mechanism_id == "lpa" and params.get("noise", "geometric") == "geometric"
                         and bound is not None)
    routes = [declaration.route] if declaration.route else [ONE_PASS, TWO_STEP]
    if declaration.share is not None or declaration.bound is not None:
        routes = [r for r in routes if r == TWO_STEP] or routes
    if ONE_PASS in routes and not one_pass_possible:
        if declaration.route == ONE_PASS:
            raise ParameterError("The one-pass route publishes LPA's own noisy counts: use --mechanism lpa with "
                                 "--bound Δ (and whole-number noise), or --discover-route two-step.")
        routes = [TWO_STEP]
    facts, assumed = standin_facts(declaration, bound_values)
    standin = _standin(int(facts["people"]), int(facts["expected_items"]), float(facts["row_length"]),
                       float(facts["skew"]))
    # a second, sparser stand-in (half the people) guards the choice against a stand-in whose items are
    # more common than the data's: the candidate chosen is the best in the worse of the two
    sparser = standin.halved()
    settings = []
    for route in routes:
        if route == ONE_PASS:
            settings.append((ONE_PASS, 1.0, bound))
            continue
        shares = [declaration.share] if declaration.share is not None else SHARES
        limit = bound_values if bound is not None else max(DISCOVERY_BOUNDS)
        bounds = ([declaration.bound] if declaration.bound is not None
                  else sorted({b for b in DISCOVERY_BOUNDS if b <= limit} | {bound_values}))
        settings.extend((TWO_STEP, float(share), int(k)) for share in shares for k in bounds)
    candidates, worst = [], {}
    for route, share, k in settings:
        candidate = _candidate(route, share, k, eps, delta, bound_values, standin)
        candidates.append(candidate)
        worst[candidate] = max(candidate.expected_error,
                               _candidate(route, share, k, eps, delta, bound_values, sparser).expected_error)
    chosen = min(candidates, key=lambda c: (worst[c], c.route != ONE_PASS, -c.share, c.discovery_bound))
    return DiscoveryPlan(mechanism_id, eps, delta, bound, chosen, candidates, facts, assumed, fixed, standin.top)


def cell_discovery_share(declaration: DomainDeclaration) -> float:
    """The share of ε that finds attribute values (declared, or 10%)."""
    return float(declaration.share) if declaration.share is not None else CELL_SHARE


__all__ = ["Candidate", "DiscoveryPlan", "cell_discovery_share", "chance_text", "plan_discovery", "standin_facts"]

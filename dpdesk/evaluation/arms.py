"""What the recommendation chooses between, and what it may look at (public facts only).

An *arm* is one releasable incidence mechanism with its parameters set from public
inputs: the declared bound Δ (arms that take one) and the number of items d. The same
arms are compared when the rule is learnt (:mod:`.rule_learning`) and named in the rule
file; :mod:`.recommend` turns the chosen arm into a mechanism id and parameters.

A *situation* is what the steward has declared: ε, d, and possibly Δ and a typical row
length L (about how many items a person holds). The rule file holds one tree per
situation (:data:`SITUATIONS`), each splitting on the :data:`FEATURES` available there.
Every feature is a function of those declared numbers: nothing about the data itself.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

FPA_RHO = 20  # the schema's default ρ; capped at d/2 + 1 (what the items allow)


@dataclass(frozen=True)
class Arm:
    """One candidate: a mechanism and how its parameters follow from the declared facts."""

    name: str
    mechanism: str
    takes_bound: bool
    what: str  # what it does, in plain words (the first reason of a recommendation)
    settings: tuple[tuple[str, object], ...] = ()  # fixed parameters that make this arm a variant

    def params(self, items: int, bound: int | None) -> dict:
        """The mechanism's parameters (public: Δ as declared or proposed, ρ from d, the arm's own settings)."""
        params = {}
        if self.takes_bound:
            params["bound"] = int(bound)
        if self.mechanism == "fpa":
            params["rho"] = min(FPA_RHO, items // 2 + 1)
        params.update(self.settings)
        return params


ARMS = (
    Arm("lpa", "lpa", True, "LPA adds its own noise to every count: simple, and best when counts are large next to "
                            "the noise."),
    Arm("gs-r", "gs-r", True, "GS-R puts the items into random groups of Δ and publishes one noisy average per "
                              "group."),
    Arm("gs-s-row", "gs-s-row", True, "GS-S (row sampling) groups items whose counts look alike in a small noisy "
                                      "sample of people, then publishes one noisy average per group."),
    Arm("gs-s-col", "gs-s-col", True, "GS-S (column sampling) groups items whose counts look alike in a noisy "
                                      "sample of one item per person, then publishes one noisy average per group."),
    Arm("gs", "gs", True, "GS groups items whose counts look alike (from a noisy sample) and tries every group size "
                          "on that sample, then publishes one noisy average per group: the noise is shared within "
                          "a group instead of hitting every count."),
    Arm("ahp", "ahp", True, "AHP adds noise to every count with most of ε, sorts the noisy counts and clusters "
                            "similar ones, then publishes one noisy average per cluster (Zhang et al., SDM 2014)."),
    Arm("ahp-median", "ahp", True, "AHP with the small counts' median: like AHP, but the items whose noisy count is "
                                   "small next to the noise share one private median of their counts instead of an "
                                   "average, which suits many rare items and a few very popular ones.",
        (("small_counts", "median"), ("threshold", "adaptive"))),
    Arm("ahp-median-lean", "ahp", True, "AHP with the small counts' median, spending only a tenth of ε on the noisy "
                                        "counts: only counts far above the noise get a value of their own and the "
                                        "rest share one private median bought with most of ε, which suits a small ε "
                                        "on many small counts (where even publishing 0 is hard to beat).",
        (("small_counts", "median"), ("threshold", "adaptive"), ("counts_share", 0.1))),
    Arm("fpa", "fpa", True, "FPA keeps only the broad shape of the counts (their first Fourier coefficients), adds "
                            "noise to it and transforms back."),
    Arm("alpa", "alpa", False, "ALPA publishes one noisy average for every item: almost no noise, but every item "
                               "gets the same value."),
    Arm("dpsense", "dpsense", False, "DPSense needs no bound: it picks a cut-off privately and scales down the "
                                     "rows of people who hold more items than that, then adds noise."),
    Arm("dpsense-s", "dpsense-s", False, "DPSense-S needs no bound: like DPSense it picks a cut-off privately, and "
                                         "it also scales the counts up to undo what the cut-off removed."),
)
ARMS_BY_NAME = {arm.name: arm for arm in ARMS}

#: Δ ÷ L for the arms that need a bound when the steward declared none (the rule proposes one)
BOUND_RATIOS = (0.5, 1.0, 2.0, 4.0, 10.0, 30.0)


def proposed_bound(ratio: float, length: float) -> int:
    """Δ = ratio × L, rounded, at least 1: a function of the declared row length only."""
    return max(1, int(round(ratio * length)))


def choice_name(arm: str, ratio: float | None = None) -> str:
    """The rule file's name of a choice: the arm, with the proposed Δ ÷ L when the rule picks Δ."""
    return arm if ratio is None else f"{arm}@{ratio:g}"


def parse_choice(name: str) -> tuple[Arm, float | None]:
    arm, _, ratio = name.partition("@")
    return ARMS_BY_NAME[arm], (float(ratio) if ratio else None)


# --- features: functions of the declared facts only --------------------------------------------

@dataclass(frozen=True)
class Declared:
    """The facts a recommendation may use: all declared by the steward, none measured."""

    epsilon: float
    items: int  # d
    bound: int | None = None  # Δ
    typical_row_length: float | None = None  # L
    target_count: float | None = None  # N of the goal "counts of at least N within ±R%" (goals.py)
    target_percent: float | None = None  # R


FEATURES = {
    # name: (value from the declared facts, needs Δ, needs L)
    "epsilon": (lambda f: f.epsilon, False, False),
    "items": (lambda f: float(f.items), False, False),
    "bound": (lambda f: float(f.bound), True, False),
    "bound_share": (lambda f: f.bound / f.items, True, False),
    "row_length": (lambda f: float(f.typical_row_length), False, True),
    "row_share": (lambda f: f.typical_row_length / f.items, False, True),
    "bound_over_length": (lambda f: f.bound / f.typical_row_length, True, True),
    # how far Δ is from L either way (≥ 1): a Δ that fits the rows favours every count with its own noise, one far
    # off either way favours a mechanism that picks its own cut-off (issue 29: one split, where Δ ÷ L needs two)
    "bound_fit": (lambda f: max(f.bound / f.typical_row_length, f.typical_row_length / f.bound), True, True),
}
#: the goal "target"'s own features: N and R as the steward declares them (goals.py)
TARGET_FEATURES = {
    "target_count": lambda f: float(f.target_count),
    "target_percent": lambda f: float(f.target_percent),
}

SITUATIONS = {
    # name: (Δ declared, L declared)
    "bound_and_length": (True, True),
    "bound_only": (True, False),
    "length_only": (False, True),
    "nothing": (False, False),
}


def situation_of(facts: Declared) -> str:
    has_bound, has_length = facts.bound is not None, facts.typical_row_length is not None
    return next(name for name, flags in SITUATIONS.items() if flags == (has_bound, has_length))


def features_for(situation: str, goal: str = "all") -> list[str]:
    """The features a situation's tree may split on (for the goal ``target``, also N and R)."""
    has_bound, has_length = SITUATIONS[situation]
    return [name for name, (_, bound, length) in FEATURES.items()
            if (has_bound or not bound) and (has_length or not length)] + (
        list(TARGET_FEATURES) if goal == "target" else [])


def feature_values(facts: Declared, situation: str | None = None, goal: str = "all") -> dict[str, float]:
    situation = situation or situation_of(facts)
    return {name: float(FEATURES[name][0](facts) if name in FEATURES else TARGET_FEATURES[name](facts))
            for name in features_for(situation, goal)}


def choices_for(situation: str) -> list[str]:
    """What a situation's rule may pick: every arm at the declared Δ, or at a proposed Δ ÷ L."""
    has_bound, has_length = SITUATIONS[situation]
    names = []
    for arm in ARMS:
        if not arm.takes_bound or has_bound:
            names.append(choice_name(arm.name))
        elif has_length:
            names.extend(choice_name(arm.name, ratio) for ratio in BOUND_RATIOS)
    return names


def publishes_margins(arm: Arm) -> bool:
    """Whether the arm's mechanism publishes margins of error (ALPA, FPA, GS-R and DPSense never do: issue 28)."""
    from ..mechanisms import get

    return bool(getattr(get(arm.mechanism), "margins_published", False))


def margin_choices(situation: str) -> list[str]:
    """The choices of :func:`choices_for` whose mechanism publishes margins of error."""
    return [name for name in choices_for(situation) if publishes_margins(parse_choice(name)[0])]


def is_finite_positive(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0

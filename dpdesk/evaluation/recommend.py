"""Which mechanism to use, from declared facts only: the recommendation (issue 19).

::

    from dpdesk.evaluation.recommend import recommend

    advice = recommend("incidence", 16_470, 0.69, bound=20, typical_row_length=8)
    advice.mechanism      # "gs"
    advice.params         # {"bound": 20}
    advice.reasons        # plain sentences: the deciding facts, what the mechanism does, the evidence
    advice.alternatives   # the runners-up, each with mechanism, params and why
    advice.to_json()      # what `dpdesk recommend --json` prints

``recommend(kind, domain_size, epsilon, bound=None, typical_row_length=None)`` takes only
public inputs: the kind of data (``"incidence"``: people × items, or ``"cells"``: a table
of counts), the declared domain size (d items, or m cells), ε, the declared bound Δ (if
any) and the steward's own statement of how many items a typical person holds
(``typical_row_length``, L: "people hold about 8 items"). It never sees the data, so
following it costs no privacy budget and the public report may say how the mechanism was
chosen (:attr:`Recommendation.chosen_how`).

For incidence data the choice comes from a rule learnt like Pythia (Kotsogiannis et al.,
SIGMOD 2017): ``resources/recommend/rule.json``, written by
``scripts/learn_recommendation.py`` from comparisons on public and synthetic data
(:mod:`.rule_learning`). It holds one shallow decision tree per situation — Δ and L
declared, only Δ, only L (the rule then also proposes Δ as a multiple of L), neither —
and how often each tree's choice was within 10% of the best error on data it was not
trained on. For cell tables the advice follows Cormode et al.'s experiments (§5) by hand,
and says so.

:func:`recommend_for_file` is what ``dpdesk recommend FILE`` runs: it reads the file's
format (to know its kind) and the declared domain's size, and nothing of the data unless
the steward stated the file's labels are public (then it reads those labels only).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from ..errors import DataError, ParameterError, RecommendationError
from ..privacy.budget import check_epsilon
from .arms import (FEATURES, Declared, SITUATIONS, choices_for, feature_values, features_for, margin_choices, parse_choice,
                   proposed_bound, situation_of)
from .goals import Goal, parse_goal, rule_goals

RULE_SCHEMA = "dpdesk-recommendation-rule/2"
KINDS = ("incidence", "cells")
GEOMETRIC_CELLS = 50_000  # tables up to this size: every cell with its own noise (see _recommend_cells)
GEOMETRIC_LIMIT = 50_000_000  # the geometric mechanism's default max_cells: above it, not even an alternative
SUMMARY_SIZE = 100_000  # the most cells a proposed sample keeps
PASSING_NOISE_SHARE = 0.1  # expected empty cells passing the filter: at most this share of s
ALTERNATIVES = 3


@dataclass
class Alternative:
    mechanism: str
    params: dict
    why: str
    hits: int | None = None  # training cases like this one where it was within 10% of the best
    cases: int | None = None

    def to_json(self) -> dict:
        out = {"mechanism": self.mechanism, "params": self.params, "why": self.why}
        if self.cases:
            out.update(hits=self.hits, cases=self.cases)
        return out


@dataclass
class Recommendation:
    """A mechanism, its parameters and the reasons, from declared facts only."""

    mechanism: str
    params: dict
    reasons: list[str]
    alternatives: list[Alternative] = field(default_factory=list)
    declared: dict = field(default_factory=dict)  # the public inputs it was computed from
    situation: str = ""  # which of the rule's trees decided (incidence data)
    evidence: dict = field(default_factory=dict)  # training cases in the leaf and hits there
    goal: Goal = field(default_factory=Goal)  # what the steward cares about
    margins: bool = True  # whether a margin of error on every value was asked for

    @property
    def chosen_how(self) -> str:
        """A sentence for the public report's "how the mechanism was chosen"."""
        return (f"Recommended by dpdesk from declared facts only ({declared_words(self.declared)}) for "
                f"{self.goal.text}; the data was not looked at to choose it.")

    def to_json(self) -> dict:
        return {"mechanism": self.mechanism, "params": self.params, "reasons": self.reasons,
                "alternatives": [a.to_json() for a in self.alternatives], "declared": self.declared,
                "situation": self.situation, "evidence": self.evidence, "chosen_how": self.chosen_how,
                "goal": self.goal.to_json(), "margins_asked": self.margins}


# --- the rule file --------------------------------------------------------------------------------

def rule_path() -> Path:
    from ..paths import resources_dir

    return resources_dir() / "recommend" / "rule.json"


@lru_cache(maxsize=4)
def _load(path: str) -> dict:
    try:
        rule = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RecommendationError(f"The recommendation rule file {path} is missing: reinstall dpdesk, or "
                                  "regenerate it with scripts/learn_recommendation.py.") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise RecommendationError(f"The recommendation rule file {path} cannot be read ({error}): reinstall "
                                  "dpdesk, or regenerate it with scripts/learn_recommendation.py.") from None
    return check_rule(rule, path)


def load_rule(path=None) -> dict:
    """The learnt rule (``resources/recommend/rule.json`` unless ``path``), checked by :func:`check_rule`."""
    return _load(str(path or rule_path()))


def check_rule(rule, where="the rule") -> dict:
    """Refuse a rule file that does not match this code: schema, situations, features, choices, trees."""
    def bad(what: str):
        raise RecommendationError(f"The recommendation rule file {where} does not match this version of dpdesk "
                                  f"({what}): regenerate it with scripts/learn_recommendation.py.")

    if not isinstance(rule, dict) or rule.get("schema") != RULE_SCHEMA:
        bad(f"its schema is not {RULE_SCHEMA}")
    goals = rule.get("goals")
    if not isinstance(goals, dict) or set(goals) != set(rule_goals()):
        bad("it must have trees for each goal: " + ", ".join(rule_goals()))
    for goal, variants in goals.items():
        if not isinstance(variants, dict) or set(variants) != {"margins", "any"}:
            bad(f"the goal '{goal}' must have trees with and without margins required")
        for variant, situations in variants.items():
            if not isinstance(situations, dict) or set(situations) != set(SITUATIONS):
                bad(f"the goal '{goal}' must have one tree for each of " + ", ".join(SITUATIONS))
            for name, part in situations.items():
                where_part = f"{goal}/{variant}/{name}"
                if part.get("features") != features_for(name, goal):
                    bad(f"the features of '{where_part}' differ")
                expected = margin_choices(name) if variant == "margins" else choices_for(name)
                if part.get("choices") != expected:
                    bad(f"the choices of '{where_part}' differ")
                if not expected:  # nothing to choose from (margins asked, no bound and no row length declared)
                    if part.get("tree") is not None:
                        bad(f"'{where_part}' has a tree but no choices")
                    continue
                _check_node(part.get("tree"), set(part["features"]), set(part["choices"]), bad, where_part)
    return rule


def _check_node(node, features: set, choices: set, bad, name: str) -> None:
    if not isinstance(node, dict):
        bad(f"a node of '{name}' is not an object")
    if "choice" in node:
        if node["choice"] not in choices:
            bad(f"'{name}' picks the unknown choice {node['choice']!r}")
        for choice, hits in node.get("ranking", []):
            if choice not in choices or not isinstance(hits, int):
                bad(f"a ranking in '{name}' is malformed")
        return
    threshold = node.get("threshold")
    if node.get("feature") not in features or not isinstance(threshold, (int, float)) or not math.isfinite(threshold):
        bad(f"a split of '{name}' has an unknown feature or a bad threshold")
    _check_node(node.get("below"), features, choices, bad, name)
    _check_node(node.get("above"), features, choices, bad, name)


# --- checking the declared inputs ----------------------------------------------------------------

def _whole(value, what: str, *, allow_none: bool = False) -> int | None:
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or value != int(value) or value < 1:
        raise ParameterError(f"{what} must be a whole number of at least 1, not {value!r}.")
    return int(value)


def check_inputs(kind, domain_size, epsilon, bound=None, typical_row_length=None) -> Declared:
    """The declared facts, checked: one clear sentence for anything out of range."""
    eps, declared_bound, length = _check_facts(kind, epsilon, bound, typical_row_length)
    size = _whole(domain_size, "The number of items" if kind == "incidence" else "The number of cells")
    if length is not None and length > size:
        raise ParameterError(f"The typical row length {length:g} is more than the {size:,} items: a person "
                             "cannot hold more items than there are.")
    return Declared(eps, size, declared_bound, length)


def _check_facts(kind, epsilon, bound, typical_row_length) -> tuple[float, int | None, float | None]:
    """Everything but the domain size: checked before a label file is read."""
    if kind not in KINDS:
        raise ParameterError(f"Unknown kind of data {kind!r}: choose 'incidence' (people × items, e.g. baskets) or "
                             "'cells' (a table of counts over attribute combinations).")
    eps = check_epsilon(epsilon)
    if kind == "cells":
        if bound is not None or typical_row_length is not None:
            raise ParameterError("A bound Δ or a typical row length applies to incidence data (people × items); in "
                                 "a table of cells each person counts once.")
        return eps, None, None
    declared_bound = _whole(bound, "The declared bound Δ", allow_none=True)
    length = typical_row_length
    if length is not None:
        if isinstance(length, bool) or not isinstance(length, (int, float)) or not math.isfinite(length) \
                or length <= 0:
            raise ParameterError(f"The typical row length (items a typical person holds) must be a number above 0, "
                                 f"not {length!r}.")
        length = float(length)
    return eps, declared_bound, length


# --- the recommendation ------------------------------------------------------------------------

def recommend(kind: str, domain_size: int, epsilon: float, bound: int | None = None,
              typical_row_length: float | None = None, *, goal="all", margins: bool = True,
              rule: dict | None = None) -> Recommendation:
    """The recommended mechanism, its parameters and reasons, from declared facts only (module notes).

    ``goal``: what the steward cares about (:mod:`.goals`: ``all``, ``largest[:K]``, ``target:N,R``, or a Goal);
    ``margins``: the steward wants a margin of error on every value, so a mechanism that never publishes them
    (ALPA, FPA, GS-R, DPSense, filtered or sampled cell summaries) is not proposed."""
    goal = parse_goal(goal)
    facts = check_inputs(kind, domain_size, epsilon, bound, typical_row_length)
    if kind == "cells":
        return _recommend_cells(facts, goal, margins)
    if goal.kind == "target":
        facts = Declared(facts.epsilon, facts.items, facts.bound, facts.typical_row_length, goal.count, goal.percent)
    rule = rule if rule is not None else load_rule()
    situation = situation_of(facts)
    part = rule["goals"][goal.rule_key]["margins" if margins else "any"][situation]
    if part["tree"] is None:
        raise RecommendationError(
            "Every mechanism that needs no bound Δ publishes no margin of error (ALPA's one average, DPSense's "
            "scaling hide how far each count is). Declare a bound Δ, or about how many items a typical person holds "
            "(the recommendation then proposes Δ), to get a mechanism with margins; or ask for one without margins.")
    values = feature_values(facts, situation, goal.kind if goal.kind == "target" else "all")
    node, path = part["tree"], []
    while "choice" not in node:
        below = values[node["feature"]] < node["threshold"]
        path.append((node["feature"], node["threshold"], below))
        node = node["below"] if below else node["above"]
    mechanism, params, proposed = _choice_settings(node["choice"], facts)
    reasons = [_goal_reason(goal, margins)]
    reasons += _path_reasons(path, facts) or ["In every situation like yours the same mechanism did best most often."]
    arm, ratio = parse_choice(node["choice"])
    reasons.append(arm.what)
    reasons.extend(_bound_reasons(arm, facts, proposed, ratio))
    if node.get("cases"):
        within = "5 points of the best share" if goal.kind == "target" else "10% of the lowest error"
        reasons.append(f"In the comparisons the rule was learnt from (public and synthetic datasets), in the "
                       f"{node['cases']:,} situations like this one it came within {within} for this goal "
                       f"{node['hits']:,} times ({node['hits'] / node['cases']:.0%}).")
    reasons.append("This advice used only what you declared — " + _declared_text(facts) + ". It did not look at "
                   "the data, so it costs no privacy budget.")
    alternatives = []
    for choice, hits in node.get("ranking", []):
        if choice == node["choice"] or len(alternatives) == ALTERNATIVES:
            continue
        other, other_params, _ = _choice_settings(choice, facts)
        alternatives.append(Alternative(other, other_params, parse_choice(choice)[0].what, hits, node.get("cases")))
    return Recommendation(mechanism, params, reasons, alternatives, declared=_declared_dict(facts),
                          situation=situation, evidence={"cases": node.get("cases"), "hits": node.get("hits")},
                          goal=goal, margins=margins)


def _goal_reason(goal: Goal, margins: bool) -> str:
    text = f"You asked for what suits {goal.text}"
    if goal.kind == "largest" and goal.rule_key != f"largest:{goal.k}":
        text += f" (the rule was learnt for the {goal.rule_key.split(':')[1]} largest, the nearest it knows)"
    if margins:
        return text + ", with a margin of error on every value: mechanisms that never publish one are left out."
    return text + "; margins of error were not asked for, so every mechanism was considered."


def _choice_settings(choice: str, facts: Declared) -> tuple[str, dict, int | None]:
    """(mechanism id, parameters, proposed Δ or None) of a rule choice for these facts."""
    arm, ratio = parse_choice(choice)
    proposed = proposed_bound(ratio, facts.typical_row_length) if ratio is not None else None
    bound = facts.bound if facts.bound is not None else proposed
    return arm.mechanism, arm.params(facts.items, bound if arm.takes_bound else None), proposed


def _declared_text(facts: Declared) -> str:
    return declared_words(_declared_dict(facts))


def declared_words(declared: dict) -> str:
    """The declared facts a recommendation used, in words for a reader (not its JSON keys)."""
    parts = []
    if declared.get("epsilon") is not None:
        parts.append(f"ε = {declared['epsilon']:g}")
    if declared.get("items") is not None:
        parts.append(f"{declared['items']:,} items")
    if declared.get("cells") is not None:
        parts.append(f"{declared['cells']:,} cells")
    if declared.get("bound") is not None:
        parts.append(f"the bound Δ = {declared['bound']:,}")
    if declared.get("typical_row_length") is not None:
        parts.append(f"about {declared['typical_row_length']:g} items per typical person")
    return ", ".join(parts)


def _declared_dict(facts: Declared) -> dict:
    out = {"kind": "incidence", "items": facts.items, "epsilon": facts.epsilon}
    if facts.bound is not None:
        out["bound"] = facts.bound
    if facts.typical_row_length is not None:
        out["typical_row_length"] = facts.typical_row_length
    return out


def _percent(value: float) -> str:
    return f"{value:.2g}%" if value < 1 else f"{value:.0f}%"


# per feature: the declared fact, and what being below / at least the threshold means
_FACTS = {
    "epsilon": (lambda f: f"ε = {f.epsilon:g}", "a smaller ε means more noise on every count",
                "a larger ε means less noise on every count"),
    "items": (lambda f: f"You have {f.items:,} items", "a short list of items", "a long list of items"),
    "bound": (lambda f: f"Your bound Δ = {f.bound:,} items per person", "", ""),
    "bound_share": (lambda f: f"Your bound Δ = {f.bound:,} is {_percent(100 * f.bound / f.items)} of the items",
                    "", ""),
    "row_length": (lambda f: f"A typical person holds about {f.typical_row_length:g} items", "short rows",
                   "long rows"),
    "row_share": (lambda f: f"A typical person holds about {f.typical_row_length:g} of your {f.items:,} items, "
                            f"that is {_percent(100 * f.typical_row_length / f.items)}",
                  "most people hold few of the items, so most counts are small",
                  "people hold many of the items, so the counts are large"),
    "bound_over_length": (lambda f: f"Your bound Δ = {f.bound:,} is {f.bound / f.typical_row_length:.2g} times what "
                                    f"a typical person holds ({f.typical_row_length:g})",
                          "close to the typical row, so noise scaled to Δ stays small",
                          "generous, so noise scaled to Δ is large"),
    "bound_fit": (lambda f: f"Your bound Δ = {f.bound:,} differs from what a typical person holds "
                            f"({f.typical_row_length:g}) by "
                            f"{_percent(100 * (FEATURES['bound_fit'][0](f) - 1))}",
                  "it fits the rows, so little is cut and the noise is scaled to what people hold",
                  "it does not match the rows, so either some is cut or the noise is scaled to more than people hold"),
}
_SHARES = ("bound_share", "row_share")


def _threshold_text(feature: str, threshold: float) -> str:
    if feature in _SHARES:
        return _percent(100 * threshold)
    if feature == "bound_fit":  # a factor either way, told as a difference
        return _percent(100 * (threshold - 1))
    return f"{threshold:,g}" + (" times" if feature == "bound_over_length" else "")


def _path_reasons(path, facts: Declared) -> list[str]:
    """One sentence per declared fact the tree looked at: the fact, the range it fell in, what that means."""
    ranges: dict[str, list] = {}
    for feature, threshold, below in path:
        low, high = ranges.setdefault(feature, [None, None])
        if below:
            ranges[feature][1] = threshold if high is None else min(high, threshold)
        else:
            ranges[feature][0] = threshold if low is None else max(low, threshold)
    reasons = []
    for feature, (low, high) in ranges.items():
        if feature not in _FACTS:
            raise RecommendationError(f"The rule splits on an unknown fact '{feature}'.")  # check_rule prevents it
        fact, below_means, above_means = _FACTS[feature]
        if low is not None and high is not None:
            bracket, meaning = (f"between {_threshold_text(feature, low)} and {_threshold_text(feature, high)}",
                                "")
        elif high is not None:
            bracket, meaning = f"below {_threshold_text(feature, high)}", below_means
        else:
            bracket, meaning = f"at least {_threshold_text(feature, low)}", above_means
        reasons.append(f"{fact(facts)} ({bracket})" + (f": {meaning}." if meaning else "."))
    return reasons


def _bound_reasons(arm, facts: Declared, proposed: int | None, ratio: float | None) -> list[str]:
    if not arm.takes_bound:
        if facts.bound is not None:
            return [f"It needs no bound, so your Δ = {facts.bound:,} is not used."]
        if facts.typical_row_length is None:
            return ["You declared neither a bound Δ nor how many items a typical person holds, so only mechanisms "
                    "that need no bound were considered. Declaring a typical row length lets dpdesk consider the "
                    "others too."]
        return []
    if proposed is not None:
        length = facts.typical_row_length
        how = "the typical row length" if ratio == 1 else f"{ratio:g} times the typical row length"
        return [f"You declared no bound, so it proposes Δ = {proposed:,} ({how}, {length:g}, rounded): people "
                f"with more than {proposed:,} items keep a random {proposed:,} of them. Declare a different Δ if "
                "you have a reason to."]
    return []


# --- cell tables (by hand, from Cormode et al. §5 and runs on UCI Adult) ---------------------------

def filter_threshold(epsilon: float, cells: int, size: int) -> int:
    """θ such that the empty cells of a table of ``cells`` that pass a two-sided filter number at most
    PASSING_NOISE_SHARE·s on average: m·P(|Z| ≥ θ) with Z discrete Laplace, P = 2α^θ/(1 + α), α = e^{−ε}.
    A function of ε, m and s only."""
    alpha = math.exp(-epsilon)
    target = PASSING_NOISE_SHARE * size * (1 + alpha) / (2 * cells)
    if target >= 1:
        return 1
    return max(1, math.ceil(math.log(target) / math.log(alpha)))


def _recommend_cells(facts: Declared, goal: Goal | None = None, margins: bool = True) -> Recommendation:
    """Small tables: every cell with its own noise; large ones (mostly empty cells): a two-sided filter — unless the
    steward asks for margins of error: then every cell with its own noise (a filter lists cells selected by their
    noisy counts and publishes no margin) up to GEOMETRIC_LIMIT cells, and beyond it no mechanism can.

    The crossover is set by hand: on tables of UCI Adult over 3 to 7 attributes (m = 1,008 to 907,200
    cells, ε = 0.1 and 1, 3 seeded runs, range and subset queries) the geometric mechanism had the least
    error up to m = 15,120 and the filters from m = 90,720 at ε = 0.1 (at ε = 1 they were about even there,
    with a tenth of the output); Cormode et al. (§5) find the same on sparse data.
    """
    m, e = facts.items, facts.epsilon
    declared = {"kind": "cells", "cells": m, "epsilon": e}
    size = min(m, SUMMARY_SIZE)
    theta = filter_threshold(e, m, size)
    privacy = (f"This advice used only what you declared — ε = {e:g} and {m:,} cells. It did not look at the data, "
               "so it costs no privacy budget.")
    by_hand = ("For tables of cells the advice is set by hand from comparisons on UCI Adult tables and Cormode et "
               "al.'s experiments (ICDT 2012, §5); unlike the advice for people × items data it was not learnt by "
               "a rule.")
    filter_what = (f"drops every cell whose noisy count is below θ = {theta} in absolute value; θ comes from ε and "
                   f"the number of cells so that on average at most {round(PASSING_NOISE_SHARE * size):,} empty "
                   "cells pass by noise alone")
    goal = goal or Goal()
    if margins and m > GEOMETRIC_CELLS:
        if m > GEOMETRIC_LIMIT:
            raise RecommendationError(
                f"No mechanism publishes a margin of error on every value for a table of {m:,} cells: only the "
                f"geometric mechanism does (noise on every cell), and it lists at most {GEOMETRIC_LIMIT:,} cells; the "
                "filters and samples list cells chosen by their noisy counts, which no margin covers. Ask without "
                "margins (--no-margins) for a summary, or declare fewer attribute values.")
        return Recommendation(
            "geometric", {"max_cells": int(m)},
            [f"You asked for a margin of error on every value ({goal.text}); only the geometric mechanism publishes "
             "one for cell tables: it adds whole-number noise to every cell, so each value's margin is its noise's.",
             f"Your table has {m:,} cells, so the release lists every cell whose noisy count is above 0 "
             "(max_cells is set to the table's size); a filter would list far fewer but publishes no margin.",
             by_hand, privacy], [], declared=declared, situation="cells", goal=goal, margins=margins)
    sample = Alternative("filter-priority", {"threshold": theta, "size": size},
                         f"Filter-priority {filter_what}, then keeps a priority sample of at most {size:,} cells with "
                         "unbiased weights: an output of fixed size.")
    if m <= GEOMETRIC_CELLS:
        return Recommendation(
            "geometric", {},
            [f"Your table has {m:,} cells (at most {GEOMETRIC_CELLS:,}): few enough to publish every one, and in "
             "tables this small many cells hold people.",
             "The geometric mechanism adds whole-number noise to every cell and lists every cell whose noisy "
             "count is above 0; published raw, every cell's value and any sum of cells are unbiased.",
             by_hand, privacy],
            [Alternative("filter2", {"threshold": theta},
                         f"Filter2 {filter_what}: a smaller output, better if most cells are empty."), sample]
            if not margins else [], declared=declared, situation="cells", goal=goal, margins=margins)
    return Recommendation(
        "filter2", {"threshold": theta},
        [f"Your table has {m:,} cells (more than {GEOMETRIC_CELLS:,}): in a table this large most cells are "
         "usually empty, and noise on every one of them would swamp the sums.",
         f"Filter2 {filter_what}. Most of the noise on empty cells never reaches the output, which is a small "
         "fraction of the table.", by_hand, privacy],
        [sample] + ([Alternative("geometric", {}, "Every cell with its own noise: unbiased, but the output lists all "
                                 f"{m:,} cells.")] if m <= GEOMETRIC_LIMIT else []),
        declared=declared, situation="cells", goal=goal, margins=margins)


# --- from a file and a declaration (the command line) ---------------------------------------------

def kind_of_file(path, format: str = "auto", import_options: dict | None = None) -> str:
    """'incidence' or 'cells', from the format (as given, or sniffed from the file's first lines)."""
    from ..data.detect import sniff

    options = import_options or {}
    if format == "auto":
        format = sniff(path, encoding=options.get("encoding", "auto") or "auto").format
    if format == "cells" or (format in ("records", "pairs", "matrix") and options.get("attributes")):
        return "cells"
    return "incidence"


def declared_size(declaration, path, kind: str, format: str = "auto", import_options: dict | None = None, *,
                  loaded=None) -> int:
    """The number of items (or cells) the declaration gives, reading at most the file's labels.

    ``loaded``: the data already read (the GUI has it), used instead of reading ``path`` again
    when the steward stated its labels are public; then only its labels (or its table's
    declared size) are looked at."""
    from ..data.domain import (HOW_DISCOVERED, HOW_LIST, HOW_PUBLIC_DATA, HOW_RANGE, declared_cell_domain,
                               read_label_file)

    option = "--domains" if kind == "cells" else "--items"
    if declaration is None:
        raise ParameterError(
            "A recommendation needs the number of cells: declare the values of each attribute with --domains FILE "
            '(JSON: {"attribute": ["value", …] or "range:N"}) or --domains from-data --domains-are-public.'
            if kind == "cells" else
            "A recommendation needs the number of items: declare them with --items FILE (one label per line), "
            "--items range:D (ids 0..D-1) or --items from-data --items-are-public (the file's own labels, when "
            "they are public).")
    if declaration.cells != (kind == "cells"):
        raise ParameterError("This file holds a table of cells: declare its values with --domains."
                             if kind == "cells" else
                             "This file holds people × items: declare the items with --items (--domains is for "
                             "tables of cells).")
    if declaration.kind == HOW_DISCOVERED:
        raise ParameterError(f"{option} discover finds the labels privately during a release, so their number is "
                             "not known beforehand. For a recommendation, declare the labels another way"
                             + (" (or --items range:D with the number of items you expect)." if kind == "incidence"
                                else "."))
    if declaration.kind == HOW_RANGE:
        return int(declaration.size)
    if declaration.kind == HOW_LIST:
        if kind == "cells":  # the attributes the import will use, not every one the file lists
            attributes = (import_options or {}).get("attributes")
            cells = declared_cell_domain(declaration.path, attributes)
            if cells is None:  # given by position: their names are the file's header
                from ..data.detect import sniff
                from ..data.table import resolve_column

                names = sniff(path, encoding=(import_options or {}).get("encoding", "auto") or "auto").columns
                cells = declared_cell_domain(declaration.path,
                                             [resolve_column(names, a, "attribute") for a in attributes])
            return cells.size
        return len(read_label_file(declaration.path))
    if declaration.kind == HOW_PUBLIC_DATA:
        from ..loading import load

        # the steward stated the labels are public: only they are read from what the loader returns
        data = loaded if loaded is not None else load(path, format=format, **(import_options or {}))
        if kind == "cells":
            return int(data.domain_size)
        return len(data.item_labels)
    raise ParameterError(f"Unknown way of declaring the domain: {declaration.kind!r}.")  # pragma: no cover


def recommend_for_file(path, epsilon, *, items=None, bound=None, typical_row_length=None, format: str = "auto",
                       import_options: dict | None = None, goal="all", margins: bool = True) -> Recommendation:
    """:func:`recommend` for a data file: its kind from the format, its size from the declaration ``items``
    (a :class:`~dpdesk.data.domain.DomainDeclaration`). Inputs are checked before any label is read."""
    if not Path(path).is_file():
        raise DataError("no such file", path=path, expected="a data file")
    _check_facts("incidence", epsilon, bound, typical_row_length)  # ε, Δ and L well formed, before any reading
    kind = kind_of_file(path, format, import_options)
    _check_facts(kind, epsilon, bound, typical_row_length)  # Δ and L only for incidence data
    goal = parse_goal(goal)  # a misspelt goal is refused before any label is read
    size = declared_size(items, path, kind, format, import_options)
    return recommend(kind, size, epsilon, bound, typical_row_length, goal=goal, margins=margins)


__all__ = ["Alternative", "Recommendation", "check_inputs", "check_rule", "load_rule", "recommend",
           "recommend_for_file"]

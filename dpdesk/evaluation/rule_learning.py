"""Learning the recommendation rule from comparisons on public data (like Pythia, Kotsogiannis
et al., SIGMOD 2017).

1. :func:`measure` runs every arm (:data:`.arms.ARMS`) on each training dataset with the
   comparison runner (seeded exploration runs, :func:`.compare.run_comparison`) over a grid
   of ε and of Δ = ratio × L, L standing for the typical row length a steward would declare
   (for a public training dataset: its mean row length, :func:`typical_row_length`).
2. :func:`situation_cases` turns the measurements into decision cases for one situation
   (what the steward declared, :data:`.arms.SITUATIONS`): each case has the features of its
   declared facts and the mean absolute error (MAE) of every choice the rule may make.
3. :func:`learn_tree` grows a shallow decision tree over those features. A leaf picks the
   choice that is within :data:`TOLERANCE` (10%) of the case's best MAE in the most training
   cases (ties: the smaller mean log-ratio to the best); a split is kept when it adds hits.
4. :func:`hit_rate`, :func:`leave_one_dataset_out` and :func:`baseline_rates` measure how often
   a rule's choice is within 10% of the best on cases it was not trained on.

Per goal (issue 28, :mod:`.goals`): every run is measured for every goal at once — the mean
absolute error (``all``), the mean relative error of the 10 and 100 largest true counts
(``largest:10``, ``largest:100``) and, for counts of at least N within ±R% (``target``), the
share that are, for a grid of N and R (N and R are then features of the target's tree, as the
steward declares them). The rule holds one set of trees per goal, learnt in the same way, and
each goal's hit rates on held-out data. Twice: over every arm, and over the arms that publish
margins of error (the steward who asks for margins is never offered one that withholds them).
For the goals ``largest`` a leaf never picks a choice whose error is more than ``LARGEST_GUARD``
(1.25) times the best on a case of a real (shared) dataset in it, when any choice avoids that; for every
count with margins asked (the default advice) and Δ declared the same with ``MARGINS_GUARD`` (2).
A target hits when its share is within 5 points of the best (a share can be 100%).

Every number here comes from public training data; the learnt tree only ever sees declared
facts. ``scripts/learn_recommendation.py`` runs it all and writes ``resources/recommend/rule.json``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..errors import ParameterError
from ..tasks import CancelToken, ProgressFn, no_progress
from .arms import (ARMS, BOUND_RATIOS, Declared, choice_name, choices_for, feature_values, features_for,
                   margin_choices, proposed_bound, SITUATIONS)
from .compare import Entry, run_comparison
from .goals import TARGET_COUNTS, TARGET_SHARES, TARGET_TOLERANCE, goal_losses, rule_goals, target_column

TOLERANCE = 0.10  # a choice "hits" when its MAE is at most 10% above the case's best
MAX_DEPTH = 3
MIN_LEAF_SHARE = 0.03  # a leaf holds at least this share of the training cases (and 5 cases)
MIN_LEAF_DATASETS = 5  # ... and cases from at least this many datasets
MIN_GAIN_SHARE = 0.01  # a split must add hits in at least this share of the node's cases
LARGEST_GUARD = 1.25  # goal largest: never a choice more than this times the best on a real dataset's case
MARGINS_GUARD = 2.0  # goal all with margins asked (the default advice): never more than this times the best there
GUARD_DEPTH = 12  # levels a tree may grow beyond MAX_DEPTH to keep the guard


@dataclass
class TrainingSet:
    """One public dataset (real or synthetic) and the row length a steward would declare for it."""

    name: str
    data: object  # a Dataset (incidence)
    group: str  # "real", "synthetic" or "held-out synthetic"
    typical_row_length: float


def typical_row_length(data) -> float:
    """Mean items per non-empty row of a *public training* dataset: what its steward would declare as L."""
    lengths = data.row_counts
    return float(lengths[lengths > 0].mean())


def _entries(items: int, length: float, ratios) -> list[Entry]:
    entries = []
    for arm in ARMS:
        fast = {"diagnostics": False} if arm.mechanism in ("gs", "gs-s-row", "gs-s-col", "fpa") else {}
        if arm.takes_bound:
            for ratio in ratios:
                params = {**arm.params(items, proposed_bound(ratio, length)), **fast}
                entries.append(Entry(arm.mechanism, params, label=choice_name(arm.name, ratio)))
        else:
            entries.append(Entry(arm.mechanism, {**arm.params(items, None), **fast}, label=arm.name))
    return entries


def measure(training: list[TrainingSet], epsilons, *, ratios=BOUND_RATIOS, repeats: int = 8, seed: int = 0,
            progress: ProgressFn | None = None, cancel: CancelToken | None = None) -> pd.DataFrame:
    """Mean loss of every arm for every goal on every dataset, ε and Δ ratio (one row each; seeded, reproducible).

    Columns: dataset, group, people, items, row_length, epsilon, arm, ratio (NaN for arms without a
    bound), bound, mae (the goal ``all``), largest:10, largest:100, target:N,R for the grid of
    :mod:`.goals` (NaN where the dataset has too few counts of at least N), repeats, failure. An arm
    that refuses the setting or fails gets infinite losses and the reason in ``failure``: the rule
    then never picks it there.
    """
    progress = progress or no_progress
    epsilons = [float(e) for e in epsilons]
    rows = []
    for k, item in enumerate(training):
        entries = _entries(item.data.n_items, item.typical_row_length, ratios)
        for j, entry in enumerate(entries):
            if cancel is not None:
                cancel.check()
            progress((k + j / len(entries)) / len(training), f"{item.name}: {entry.label}")
            arm, _, ratio = entry.label.partition("@")
            common = {"dataset": item.name, "group": item.group, "people": item.data.n_rows, "items": item.data.n_items,
                      "row_length": item.typical_row_length, "arm": arm,
                      "ratio": float(ratio) if ratio else math.nan,
                      "bound": float(entry.params.get("bound", math.nan))}
            # one seed per dataset and entry: every arm sees its own fixed noise, reproducibly
            for epsilon, losses, runs, failure in _compare(item.data, entry, epsilons, repeats, seed + 1000 * k + j):
                rows.append({**common, "epsilon": epsilon, **losses, "repeats": runs, "failure": failure})
    progress(1.0, "Measured")
    return pd.DataFrame(rows)


def _losses(data, release) -> dict:
    """Every goal's loss of one run (``mae`` is the goal ``all``)."""
    losses = goal_losses(release.values, data.column_counts)
    losses["mae"] = losses.pop("all")
    return losses


LOSS_COLUMNS = ["mae"] + [g for g in rule_goals() if g.startswith("largest")] + [
    target_column(n, r) for n in TARGET_COUNTS for r in TARGET_SHARES]


def _compare(data, entry: Entry, epsilons: list[float], repeats: int, seed: int):
    """(ε, mean loss per goal, repeats, failure) for one entry; an ε it refuses or fails at gets infinite losses."""
    try:
        comparison = run_comparison(data, [entry], epsilons, repeats, seed=seed, metrics=_losses)
    except (ParameterError, OverflowError) as error:  # gs-s-row's β overflows for εΔ' ≳ 1400
        if len(epsilons) > 1:  # find the ε it fails at, keep the others
            return [row for e in epsilons for row in _compare(data, entry, [e], repeats, seed)]
        return [(epsilons[0], {column: math.inf for column in LOSS_COLUMNS}, 0, f"{type(error).__name__}: {error}")]
    table = comparison.summary
    out = []
    for epsilon, block in table.groupby("epsilon", sort=True):
        means = dict(zip(block["metric"], block["mean"]))
        runs = int(block["repeats"].max())
        out.append((float(epsilon), {column: float(means.get(column, math.nan)) for column in LOSS_COLUMNS}, runs, ""))
    return out


# --- decision cases ---------------------------------------------------------------------------

@dataclass
class Cases:
    """Decision cases of one situation and goal: features, and the loss of every choice in every case
    (``mae``: the goal's loss — the mean absolute error for the goal ``all``)."""

    situation: str
    features: list[str]
    choices: list[str]
    values: np.ndarray  # cases × features
    mae: np.ndarray  # cases × choices
    dataset: np.ndarray  # name of each case's dataset
    group: np.ndarray
    goal: str = "all"
    margins: bool = False  # the choices are those that publish margins of error (the default advice)

    def __len__(self) -> int:
        return self.mae.shape[0]

    @property
    def shares(self) -> bool:
        """Whether the loss is 1 − a share (a target), compared in points rather than ratios."""
        return self.goal == "target"

    @property
    def hits(self) -> np.ndarray:
        """cases × choices: within TOLERANCE of the case's best loss (a target: within 5 points of its share)."""
        best = self.mae.min(axis=1, keepdims=True)
        if self.shares:
            return self.mae <= best + TARGET_TOLERANCE
        return self.mae <= (1 + TOLERANCE) * best

    @property
    def regret(self) -> np.ndarray:
        """cases × choices: log of the loss over the case's best (0 for the best); a target: the difference."""
        best = self.mae.min(axis=1, keepdims=True)
        if self.shares:
            return np.where(np.isfinite(self.mae), self.mae - best, 10.0)
        best = np.maximum(best, 1e-12)
        return np.log(np.maximum(self.mae, 1e-12) / best)

    @property
    def guard(self) -> float | None:
        """How many times the best loss a choice may have on a real dataset's case: LARGEST_GUARD for the goals
        ``largest``, MARGINS_GUARD for the default advice (every count, margins asked: an LPA at 3.3 × GS-S on
        adult at ε = 0.1 was the price of counting hits only), None otherwise."""
        if self.goal.startswith("largest"):
            return LARGEST_GUARD
        if self.goal == "all" and self.margins and SITUATIONS[self.situation][0]:
            return MARGINS_GUARD  # with Δ declared; where the rule proposes Δ too, a guard cost more hits than it saved
        return None

    @property
    def guarded(self) -> np.ndarray:
        """cases × choices: False where a choice breaks the guard on a real dataset (its loss more than
        :attr:`guard` times the case's best); True everywhere when there is no guard."""
        if self.guard is None:
            return np.ones(self.mae.shape, dtype=bool)
        best = self.mae.min(axis=1, keepdims=True)
        real = (self.group == "real")[:, None]
        return ~real | (self.mae <= self.guard * best)

    def subset(self, mask) -> "Cases":
        return Cases(self.situation, self.features, self.choices, self.values[mask], self.mae[mask],
                     self.dataset[mask], self.group[mask], self.goal, self.margins)


def situation_cases(measurements: pd.DataFrame, situation: str, goal: str = "all", *,
                    margins: bool = False) -> Cases:
    """One case per dataset × ε (× declared Δ ratio when Δ is declared; × N and R for the goal ``target``), with
    every choice's loss for ``goal``. With ``margins`` the choices are those that publish margins of error."""
    has_bound, has_length = SITUATIONS[situation]
    choices = margin_choices(situation) if margins else choices_for(situation)
    features = features_for(situation, goal)
    if goal == "target":
        targets = [(n, r) for n in TARGET_COUNTS for r in TARGET_SHARES]
    else:
        targets = [None]
    values, losses, datasets, groups = [], [], [], []
    for (dataset, epsilon), block in measurements.groupby(["dataset", "epsilon"], sort=True):
        free_rows = block.loc[block["ratio"].isna()]
        bound_rows = block[block["ratio"].notna()]
        first = block.iloc[0]
        items, length = int(first["items"]), float(first["row_length"])
        declared_ratios = sorted(set(bound_rows["ratio"])) if has_bound else [None]
        for target in targets:
            column = "mae" if goal == "all" else goal if goal != "target" else target_column(*target)
            if column not in block.columns:
                continue
            free = dict(zip(free_rows["arm"], free_rows[column]))
            by_ratio = {(arm, ratio): (loss, bound) for arm, ratio, loss, bound in
                        bound_rows[["arm", "ratio", column, "bound"]].itertuples(index=False)}
            if target is not None and not np.isfinite([v[0] for v in by_ratio.values()] + list(free.values())).any():
                continue  # too few counts of at least N in this dataset: no case
            for ratio in declared_ratios:
                row = []
                for choice in choices:
                    arm, _, proposed = choice.partition("@")
                    loss = free[arm] if arm in free else by_ratio[(arm, ratio if ratio is not None else
                                                                   float(proposed))][0]
                    row.append(loss if np.isfinite(loss) else math.inf)
                bound = int(by_ratio[(next(a for a, _ in by_ratio), ratio)][1]) if ratio is not None else None
                facts = Declared(float(epsilon), items, bound, length if has_length else None,
                                 *(target if target is not None else (None, None)))
                values.append([feature_values(facts, situation, goal)[f] for f in features])
                losses.append(row)
                datasets.append(dataset)
                groups.append(first["group"])
    return Cases(situation, features, choices, np.array(values, dtype=float).reshape(len(values), len(features)),
                 np.array(losses, dtype=float).reshape(len(losses), len(choices)),
                 np.array(datasets, dtype=object), np.array(groups, dtype=object), goal, margins)


# --- the tree ----------------------------------------------------------------------------------

def _round_threshold(low: float, high: float) -> float | None:
    """A readable threshold between two observed values (2 significant digits), or None."""
    middle = math.sqrt(low * high) if low > 0 else (low + high) / 2
    for digits in (2, 3, 4):
        rounded = float(f"{middle:.{digits}g}")
        if low < rounded <= high:
            return rounded
    return high if low < high else None


def _ranked(hits: np.ndarray, regret: np.ndarray, guarded: np.ndarray | None) -> np.ndarray:
    """Choices best first: fewest guard breaks (goal largest), then most hits, then least regret."""
    breaks = (~guarded).sum(axis=0) if guarded is not None else np.zeros(hits.shape[1])
    return np.lexsort((regret.sum(axis=0), -hits.sum(axis=0), breaks))


def _leaf_score(hits: np.ndarray, regret: np.ndarray, guarded: np.ndarray | None = None) -> tuple[int, int, float, int]:
    """(−guard breaks, hits, −regret, choice index) of the best single choice for these cases."""
    best = int(_ranked(hits, regret, guarded)[0])
    breaks = int((~guarded[:, best]).sum()) if guarded is not None else 0
    return -breaks, int(hits[:, best].sum()), -float(regret[:, best].sum()), best


def _leaf(cases: Cases, hits: np.ndarray, regret: np.ndarray, guarded: np.ndarray | None = None) -> dict:
    total_hits = hits.sum(axis=0)
    order = _ranked(hits, regret, guarded)
    ranking = [[cases.choices[int(i)], int(total_hits[i])] for i in order]
    return {"choice": cases.choices[int(order[0])], "cases": int(hits.shape[0]), "hits": int(total_hits[order[0]]),
            "ranking": ranking}


def learn_tree(cases: Cases, *, max_depth: int = MAX_DEPTH, min_leaf: int | None = None,
               min_datasets: int = MIN_LEAF_DATASETS) -> dict:
    """A shallow tree whose leaves pick the choice with the most hits among their cases (module notes).

    A leaf holds at least ``min_leaf`` cases from at least ``min_datasets`` datasets: the cases of one
    dataset are alike, so a leaf drawn around a single dataset would learn that dataset, not a rule.
    """
    hits, regret, guarded = cases.hits, cases.regret, cases.guarded
    min_leaf = min_leaf if min_leaf is not None else max(5, int(math.ceil(MIN_LEAF_SHARE * len(cases))))
    _, dataset_codes = np.unique(cases.dataset.astype(str), return_inverse=True)

    def enough(index: np.ndarray) -> bool:
        return index.size >= min_leaf and np.unique(dataset_codes[index]).size >= min_datasets

    def best_split(index: np.ndarray, allowed) -> tuple | None:
        best = None
        for f, feature in enumerate(cases.features):
            column = cases.values[index, f]
            distinct = np.unique(column)
            for low, high in zip(distinct[:-1], distinct[1:]):
                threshold = _round_threshold(float(low), float(high))
                if threshold is None:
                    continue
                below = column < threshold
                if not (allowed(index[below]) and allowed(index[~below])):
                    continue
                left = _leaf_score(hits[index[below]], regret[index[below]], guarded[index[below]])
                right = _leaf_score(hits[index[~below]], regret[index[~below]], guarded[index[~below]])
                score = (left[0] + right[0], left[1] + right[1], left[2] + right[2])
                if best is None or score > best[0]:
                    best = (score, feature, threshold, below)
        return best

    def guard_split(index: np.ndarray) -> tuple | None:
        """The split (any threshold of any feature) leaving the fewest guard breaks when each side takes its best
        choice; None unless it leaves fewer than the node. Vectorised: per feature, the cases sorted, each choice's
        breaks counted cumulatively on both sides of every cut."""
        broken_here = (~guarded[index]).sum(axis=0).min()
        best = None
        for f, feature in enumerate(cases.features):
            column = cases.values[index, f]
            order = np.argsort(column, kind="stable")
            ordered = column[order]
            cumulative = np.cumsum(~guarded[index[order]], axis=0)
            left = cumulative[:-1].min(axis=1)
            right = (cumulative[-1] - cumulative[:-1]).min(axis=1)
            total = np.where(ordered[:-1] < ordered[1:], left + right, np.iinfo(np.int64).max)
            k = int(np.argmin(total))
            if total[k] < broken_here and (best is None or total[k] < best[0]):
                threshold = _round_threshold(float(ordered[k]), float(ordered[k + 1]))
                if threshold is not None:
                    best = (int(total[k]), feature, threshold, column < threshold)
        if best is None:
            return None
        return (-best[0], 0, 0.0), best[1], best[2], best[3]

    def edge_split(index: np.ndarray) -> tuple | None:
        """No one split removes a break: put a broken case at the edge of a part (the next split can then take it
        apart), on the first feature where it is not already alone."""
        choice = _leaf_score(hits[index], regret[index], guarded[index])[3]
        broken = index[~guarded[index, choice]]
        if not broken.size:
            return None
        case = broken[0]
        for f, feature in enumerate(cases.features):  # the case first on the upper side, or last on the lower
            column = cases.values[index, f]
            value = cases.values[case, f]
            lower, upper = column[column < value], column[column > value]
            bounds = ([(float(lower.max()), float(value))] if lower.size else []) + (
                [(float(value), float(upper.min()))] if upper.size else [])
            for low, high in bounds:
                threshold = _round_threshold(low, high)
                if threshold is not None:
                    return (0, 0, 0.0), feature, threshold, column < threshold
        return None

    def grow(index: np.ndarray, depth: int) -> dict:
        leaf = _leaf(cases, hits[index], regret[index], guarded[index])
        here = _leaf_score(hits[index], regret[index], guarded[index])
        best = None
        if depth < max_depth and index.size >= 2 * min_leaf:
            best = best_split(index, enough)
            if best is not None and best[0][0] <= here[0] and best[0][1] - here[1] < max(1, MIN_GAIN_SHARE * index.size):
                best = None
        if here[0] < 0 and (best is None or best[0][0] <= here[0]) and depth < max_depth + GUARD_DEPTH:
            # the goal largest's guard is broken here and no ordinary split mends it: a split that removes breaks is
            # taken even around few datasets (the guard is about the shared datasets themselves)
            best = guard_split(index) or edge_split(index)
        if best is None:
            return leaf
        _, feature, threshold, below = best
        node = {"feature": feature, "threshold": threshold,
                "below": grow(index[below], depth + 1), "above": grow(index[~below], depth + 1)}
        return _merge(node, cases, hits[index], regret[index], guarded[index])

    return grow(np.arange(len(cases)), 0)


def _merge(node: dict, cases: Cases, hits: np.ndarray, regret: np.ndarray, guarded: np.ndarray) -> dict:
    """Two leaves that pick the same choice are one leaf (the split changes nothing)."""
    below, above = node["below"], node["above"]
    if "choice" in below and "choice" in above and below["choice"] == above["choice"]:
        return _leaf(cases, hits, regret, guarded)
    return node


def leaf_for(tree: dict, values: dict[str, float]) -> dict:
    """The leaf a case with these feature values falls into."""
    node = tree
    while "choice" not in node:
        node = node["below"] if values[node["feature"]] < node["threshold"] else node["above"]
    return node


def predictions(tree: dict, cases: Cases) -> list[str]:
    return [leaf_for(tree, dict(zip(cases.features, row)))["choice"] for row in cases.values]


def hit_rate(tree: dict, cases: Cases) -> float:
    """Share of ``cases`` where the tree's choice is within 10% of the best MAE."""
    if not len(cases):
        return math.nan
    return fixed_rate([cases.choices.index(c) for c in predictions(tree, cases)], cases)


def fixed_rate(chosen, cases: Cases) -> float:
    """Share of cases where the chosen column (one index per case, or one for all) hits."""
    chosen = np.broadcast_to(np.asarray(chosen), (len(cases),))
    return float(cases.hits[np.arange(len(cases)), chosen].mean())


def tree_depth(tree: dict) -> int:
    return 0 if "choice" in tree else 1 + max(tree_depth(tree["below"]), tree_depth(tree["above"]))


def best_single(cases: Cases, arm: str | None = None) -> str | None:
    """The choice (optionally: of one arm, at its best Δ ratio) with the most hits in ``cases``."""
    allowed = [i for i, c in enumerate(cases.choices) if arm is None or c.partition("@")[0] == arm]
    if not allowed:
        return None
    order = _ranked(cases.hits[:, allowed], cases.regret[:, allowed], cases.guarded[:, allowed])
    return cases.choices[allowed[int(order[0])]]


BASELINE_ARMS = ("gs", "lpa")


def baseline_rates(train: Cases, test: Cases) -> dict[str, dict]:
    """Hit rates on ``test`` of always one choice: gs, lpa (each at its best Δ ratio in ``train`` when the
    rule proposes Δ) and the single choice with the most training hits."""
    out = {}
    for name in BASELINE_ARMS:
        choice = best_single(train, name)
        if choice is not None:
            out[f"always {name}"] = {"choice": choice, "hit_rate": fixed_rate(test.choices.index(choice), test)}
    choice = best_single(train)
    out["always the best single choice"] = {"choice": choice, "hit_rate": fixed_rate(test.choices.index(choice), test)}
    return out


def leave_one_dataset_out(cases: Cases, held_out: list[str], *, train_mask=None) -> dict:
    """For each dataset in ``held_out``: learn on the other cases (within ``train_mask``), test on its own.

    Returns per-dataset hit rates of the rule and the baselines, and their means over the datasets.
    """
    train_mask = np.ones(len(cases), bool) if train_mask is None else np.asarray(train_mask, bool)
    per_dataset = {}
    for name in held_out:
        own = cases.dataset == name
        train, test = cases.subset(train_mask & ~own), cases.subset(own)
        tree = learn_tree(train)
        per_dataset[name] = {"cases": len(test), "rule": hit_rate(tree, test),
                             "baselines": {k: v["hit_rate"] for k, v in baseline_rates(train, test).items()}}
    return {"datasets": per_dataset, **_means(per_dataset)}


def _means(per_dataset: dict) -> dict:
    rows = list(per_dataset.values())
    if not rows:
        return {"rule": math.nan, "baselines": {}}
    names = rows[0]["baselines"].keys()
    return {"rule": float(np.mean([r["rule"] for r in rows])),
            "baselines": {n: float(np.mean([r["baselines"][n] for r in rows])) for n in names}}


def held_out_rates(tree: dict, train: Cases, test: Cases) -> dict:
    """The shipped tree's hit rate on held-out cases, with the baselines learnt on the same training cases."""
    return {"cases": len(test), "rule": hit_rate(tree, test),
            "baselines": {k: v["hit_rate"] for k, v in baseline_rates(train, test).items()}}


# --- the rule file ---------------------------------------------------------------------------

RULE_SCHEMA = "dpdesk-recommendation-rule/2"
TRAINED_GROUPS = ("real", "synthetic")
HELD_OUT_GROUP = "held-out synthetic"
VARIANTS = {"margins": True, "any": False}  # over the arms that publish margins of error; over every arm


def worst_guard(tree: dict, cases: Cases) -> dict | None:
    """Where a guard holds (:attr:`Cases.guard`): the largest ratio of the rule's choice's loss to the best on a
    real dataset's case, and the case it happens in."""
    if cases.guard is None or not len(cases):
        return None
    real = np.flatnonzero(cases.group == "real")
    if not real.size:
        return None
    chosen = np.array([cases.choices.index(c) for c in predictions(tree, cases)])
    best = cases.mae.min(axis=1)
    ratios = cases.mae[np.arange(len(cases)), chosen] / np.maximum(best, 1e-12)
    worst = int(real[np.argmax(ratios[real])])
    return {"guard": cases.guard, "worst_ratio": float(ratios[worst]), "dataset": str(cases.dataset[worst]),
            "choice": cases.choices[chosen[worst]], "cases_over_guard": int(np.sum(ratios[real] > cases.guard)),
            "real_cases": int(real.size)}


def learn_part(measurements: pd.DataFrame, situation: str, goal: str, margins: bool, real: list[str]) -> dict:
    """One tree (situation × goal × variant) with its evaluation (module notes)."""
    cases = situation_cases(measurements, situation, goal, margins=margins)
    if not cases.choices:  # e.g. margins asked with nothing declared: every bound-free mechanism withholds them
        return {"features": cases.features, "choices": [], "tree": None, "evaluation": None}
    trained = np.isin(cases.group, TRAINED_GROUPS)
    train, held = cases.subset(trained), cases.subset(cases.group == HELD_OUT_GROUP)
    tree = learn_tree(train)
    evaluation = {
        "training": {"cases": len(train), "rule": hit_rate(tree, train)},
        "leave_one_real_dataset_out": leave_one_dataset_out(cases, real, train_mask=trained),
        "held_out_synthetic": held_out_rates(tree, train, held) if len(held) else None,
    }
    guard = worst_guard(tree, train)
    if guard is not None:
        evaluation["largest_guard" if goal.startswith("largest") else "margins_guard"] = guard
    return {"features": cases.features, "choices": cases.choices, "tree": tree, "evaluation": evaluation}


def learn_rule(measurements: pd.DataFrame, *, datasets: list[dict] | None = None, settings: dict | None = None,
               goals: list[str] | None = None) -> dict:
    """The rule file's content: per goal and variant (margins required or not), one tree per situation, learnt on
    the real and synthetic training data, with how often it hits on data it was not trained on (leave one real
    dataset out; held-out synthetic) and, for the goals ``largest``, the guard's worst case on the real datasets.
    """
    real = sorted(measurements.loc[measurements["group"] == "real", "dataset"].unique())
    learnt = {}
    for goal in goals or rule_goals():
        learnt[goal] = {variant: {situation: learn_part(measurements, situation, goal, margins, real)
                                  for situation in SITUATIONS}
                        for variant, margins in VARIANTS.items()}
    return {
        "schema": RULE_SCHEMA,
        "tolerance": TOLERANCE,
        "target_tolerance": TARGET_TOLERANCE,
        "made_by": "scripts/learn_recommendation.py",
        "settings": dict(settings or {}),
        "epsilons": sorted(float(e) for e in measurements["epsilon"].unique()),
        "bound_ratios": sorted(float(r) for r in measurements["ratio"].dropna().unique()),
        "datasets": datasets or [],
        "goals": learnt,
    }

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
                   proposed_bound, SITUATIONS)
from .compare import Entry, run_comparison

TOLERANCE = 0.10  # a choice "hits" when its MAE is at most 10% above the case's best
MAX_DEPTH = 3
MIN_LEAF_SHARE = 0.03  # a leaf holds at least this share of the training cases (and 5 cases)
MIN_LEAF_DATASETS = 5  # ... and cases from at least this many datasets
MIN_GAIN_SHARE = 0.01  # a split must add hits in at least this share of the node's cases


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
    """Mean MAE of every arm on every dataset, ε and Δ ratio (one row each; seeded, reproducible).

    Columns: dataset, group, people, items, row_length, epsilon, arm, ratio (NaN for arms without a
    bound), bound, mae, repeats, failure. An arm that refuses the setting or fails gets an
    infinite MAE and the reason in ``failure``: the rule then never picks it there.
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
            for epsilon, mae, runs, failure in _compare(item.data, entry, epsilons, repeats, seed + 1000 * k + j):
                rows.append({**common, "epsilon": epsilon, "mae": mae, "repeats": runs, "failure": failure})
    progress(1.0, "Measured")
    return pd.DataFrame(rows)


def _compare(data, entry: Entry, epsilons: list[float], repeats: int, seed: int):
    """(ε, mean MAE, repeats, failure) for one entry; an ε it refuses or fails at gets MAE ∞."""
    try:
        comparison = run_comparison(data, [entry], epsilons, repeats, seed=seed, k=10)
    except (ParameterError, OverflowError) as error:  # gs-s-row's β overflows for εΔ' ≳ 1400
        if len(epsilons) > 1:  # find the ε it fails at, keep the others
            return [row for e in epsilons for row in _compare(data, entry, [e], repeats, seed)]
        return [(epsilons[0], math.inf, 0, f"{type(error).__name__}: {error}")]
    table = comparison.summary[comparison.summary["metric"] == "mae"]
    return [(float(e), float(mae), int(runs), "") for e, mae, runs in
            table[["epsilon", "mean", "repeats"]].itertuples(index=False)]


# --- decision cases ---------------------------------------------------------------------------

@dataclass
class Cases:
    """Decision cases of one situation: features, and the MAE of every choice in every case."""

    situation: str
    features: list[str]
    choices: list[str]
    values: np.ndarray  # cases × features
    mae: np.ndarray  # cases × choices
    dataset: np.ndarray  # name of each case's dataset
    group: np.ndarray

    def __len__(self) -> int:
        return self.mae.shape[0]

    @property
    def hits(self) -> np.ndarray:
        """cases × choices: within TOLERANCE of the case's best MAE."""
        best = self.mae.min(axis=1, keepdims=True)
        return self.mae <= (1 + TOLERANCE) * best

    @property
    def regret(self) -> np.ndarray:
        """cases × choices: log of the MAE over the case's best (0 for the best)."""
        best = np.maximum(self.mae.min(axis=1, keepdims=True), 1e-12)
        return np.log(np.maximum(self.mae, 1e-12) / best)

    def subset(self, mask) -> "Cases":
        return Cases(self.situation, self.features, self.choices, self.values[mask], self.mae[mask],
                     self.dataset[mask], self.group[mask])


def situation_cases(measurements: pd.DataFrame, situation: str) -> Cases:
    """One case per dataset × ε (× declared Δ ratio when Δ is declared), with every choice's MAE."""
    has_bound, has_length = SITUATIONS[situation]
    choices = choices_for(situation)
    features = features_for(situation)
    values, maes, datasets, groups = [], [], [], []
    for (dataset, epsilon), block in measurements.groupby(["dataset", "epsilon"], sort=True):
        free = {arm: mae for arm, mae in block.loc[block["ratio"].isna(), ["arm", "mae"]].itertuples(index=False)}
        bound_rows = block[block["ratio"].notna()]
        by_ratio = {(arm, ratio): (mae, bound) for arm, ratio, mae, bound in
                    bound_rows[["arm", "ratio", "mae", "bound"]].itertuples(index=False)}
        first = block.iloc[0]
        items, length = int(first["items"]), float(first["row_length"])
        declared_ratios = sorted({ratio for _, ratio in by_ratio}) if has_bound else [None]
        for ratio in declared_ratios:
            row = []
            for choice in choices:
                arm, _, proposed = choice.partition("@")
                if arm in free:
                    row.append(free[arm])
                else:
                    row.append(by_ratio[(arm, ratio if ratio is not None else float(proposed))][0])
            bound = int(by_ratio[(next(a for a, _ in by_ratio), ratio)][1]) if ratio is not None else None
            facts = Declared(float(epsilon), items, bound, length if has_length else None)
            values.append([feature_values(facts, situation)[f] for f in features])
            maes.append(row)
            datasets.append(dataset)
            groups.append(first["group"])
    return Cases(situation, features, choices, np.array(values, dtype=float), np.array(maes, dtype=float),
                 np.array(datasets, dtype=object), np.array(groups, dtype=object))


# --- the tree ----------------------------------------------------------------------------------

def _round_threshold(low: float, high: float) -> float | None:
    """A readable threshold between two observed values (2 significant digits), or None."""
    middle = math.sqrt(low * high) if low > 0 else (low + high) / 2
    for digits in (2, 3, 4):
        rounded = float(f"{middle:.{digits}g}")
        if low < rounded <= high:
            return rounded
    return high if low < high else None


def _leaf_score(hits: np.ndarray, regret: np.ndarray) -> tuple[int, float, int]:
    """(hits, −regret, choice index) of the best single choice for these cases."""
    total_hits = hits.sum(axis=0)
    total_regret = regret.sum(axis=0)
    order = np.lexsort((total_regret, -total_hits))
    best = int(order[0])
    return int(total_hits[best]), -float(total_regret[best]), best


def _leaf(cases: Cases, hits: np.ndarray, regret: np.ndarray) -> dict:
    total_hits = hits.sum(axis=0)
    order = np.lexsort((regret.sum(axis=0), -total_hits))
    return {"choice": cases.choices[int(order[0])], "cases": int(hits.shape[0]), "hits": int(total_hits[order[0]]),
            "ranking": [[cases.choices[int(i)], int(total_hits[i])] for i in order[:5]]}


def learn_tree(cases: Cases, *, max_depth: int = MAX_DEPTH, min_leaf: int | None = None,
               min_datasets: int = MIN_LEAF_DATASETS) -> dict:
    """A shallow tree whose leaves pick the choice with the most hits among their cases (module notes).

    A leaf holds at least ``min_leaf`` cases from at least ``min_datasets`` datasets: the cases of one
    dataset are alike, so a leaf drawn around a single dataset would learn that dataset, not a rule.
    """
    hits, regret = cases.hits, cases.regret
    min_leaf = min_leaf if min_leaf is not None else max(5, int(math.ceil(MIN_LEAF_SHARE * len(cases))))
    _, dataset_codes = np.unique(cases.dataset.astype(str), return_inverse=True)

    def enough(index: np.ndarray) -> bool:
        return index.size >= min_leaf and np.unique(dataset_codes[index]).size >= min_datasets

    def grow(index: np.ndarray, depth: int) -> dict:
        leaf = _leaf(cases, hits[index], regret[index])
        if depth >= max_depth or index.size < 2 * min_leaf:
            return leaf
        here = _leaf_score(hits[index], regret[index])
        best = None
        for f, feature in enumerate(cases.features):
            column = cases.values[index, f]
            distinct = np.unique(column)
            for low, high in zip(distinct[:-1], distinct[1:]):
                threshold = _round_threshold(float(low), float(high))
                if threshold is None:
                    continue
                below = column < threshold
                if not (enough(index[below]) and enough(index[~below])):
                    continue
                left = _leaf_score(hits[index[below]], regret[index[below]])
                right = _leaf_score(hits[index[~below]], regret[index[~below]])
                score = (left[0] + right[0], left[1] + right[1])
                if best is None or score > best[0]:
                    best = (score, feature, threshold, below)
        if best is None or best[0][0] - here[0] < max(1, MIN_GAIN_SHARE * index.size):
            return leaf
        _, feature, threshold, below = best
        node = {"feature": feature, "threshold": threshold,
                "below": grow(index[below], depth + 1), "above": grow(index[~below], depth + 1)}
        return _merge(node, cases, hits[index], regret[index])

    return grow(np.arange(len(cases)), 0)


def _merge(node: dict, cases: Cases, hits: np.ndarray, regret: np.ndarray) -> dict:
    """Two leaves that pick the same choice are one leaf (the split changes nothing)."""
    below, above = node["below"], node["above"]
    if "choice" in below and "choice" in above and below["choice"] == above["choice"]:
        return _leaf(cases, hits, regret)
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
    hits = cases.hits[:, allowed].sum(axis=0)
    regret = cases.regret[:, allowed].sum(axis=0)
    return cases.choices[allowed[int(np.lexsort((regret, -hits))[0])]]


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

RULE_SCHEMA = "dpdesk-recommendation-rule/1"
TRAINED_GROUPS = ("real", "synthetic")
HELD_OUT_GROUP = "held-out synthetic"


def learn_rule(measurements: pd.DataFrame, *, datasets: list[dict] | None = None, settings: dict | None = None) -> dict:
    """The rule file's content: one tree per situation, learnt on the real and synthetic training data,
    with how often it hits on data it was not trained on (leave one real dataset out; held-out synthetic).
    """
    real = sorted(measurements.loc[measurements["group"] == "real", "dataset"].unique())
    situations = {}
    for situation in SITUATIONS:
        cases = situation_cases(measurements, situation)
        trained = np.isin(cases.group, TRAINED_GROUPS)
        train, held = cases.subset(trained), cases.subset(cases.group == HELD_OUT_GROUP)
        tree = learn_tree(train)
        situations[situation] = {
            "features": cases.features,
            "choices": cases.choices,
            "tree": tree,
            "evaluation": {
                "training": {"cases": len(train), "rule": hit_rate(tree, train)},
                "leave_one_real_dataset_out": leave_one_dataset_out(cases, real, train_mask=trained),
                "held_out_synthetic": held_out_rates(tree, train, held) if len(held) else None,
            },
        }
    return {
        "schema": RULE_SCHEMA,
        "tolerance": TOLERANCE,
        "made_by": "scripts/learn_recommendation.py",
        "settings": dict(settings or {}),
        "epsilons": sorted(float(e) for e in measurements["epsilon"].unique()),
        "bound_ratios": sorted(float(r) for r in measurements["ratio"].dropna().unique()),
        "datasets": datasets or [],
        "situations": situations,
    }

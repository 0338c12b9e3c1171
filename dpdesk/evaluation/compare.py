"""The comparison runner: mechanisms × ε grid × repeats, prepared once, released many times.

Runs in exploration mode (seeded, reproducible) and reads the true data: every number it
produces is internal. Each run is published as a release would be
(:func:`dpdesk.mechanisms.publish.publish`: whole numbers ≥ 0), and scored in both forms: the
published one (``mae``, ``topk_mae``, …) and the mechanism's raw values (``raw_mae``, …), since
rounding and clamping at 0 can reorder mechanisms (a raw mechanism that wins can lose once
published, and the other way round); ``raw`` chooses which form the printed table ranks.

Two reference lines, which spend no ε and need no mechanism, show where noise drowns the
signal (:func:`reference_rows`): **publishing zeros** (every item 0) and **one average for
all** (every item the true average count, without noise; ALPA publishes the average of the
counts within Δ plus noise). A mechanism whose error is above them publishes less than a
blank or flat answer would. They use the true counts like every other figure here: internal. Progress goes to ``progress(fraction, message)``, each finished run
to ``on_result(row)`` (the GUI streams them into its plots), and ``cancel`` is checked
between runs, so a cancel takes effect within one run.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import stats

from ..mechanisms import running
from ..errors import ParameterError
from ..mechanisms.publish import publish, unrounded_release
from ..privacy.budget import check_epsilon
from ..tasks import CancelToken, ProgressFn, no_progress
from .metrics import count_metrics, evaluate

RAW_PREFIX = "raw_"  # the raw form's metrics in results.csv and summary.csv
ZEROS, AVERAGE = "publishing zeros", "one average for all"
REFERENCE = "reference"  # the ``mechanism`` of the reference rows


@dataclass
class Entry:
    """One mechanism configuration in a comparison (the same mechanism may appear twice)."""

    mechanism: str
    params: dict = field(default_factory=dict)
    label: str = ""

    def __post_init__(self) -> None:
        if not self.label:
            shown = ", ".join(f"{k}={v}" for k, v in self.params.items() if k != "bound")
            self.label = self.mechanism + (f" ({shown})" if shown else "")


@dataclass
class Comparison:
    results: pd.DataFrame  # one row per mechanism, ε, repeat
    summary: pd.DataFrame  # mean and 95% interval per mechanism, ε, metric
    examples: dict  # (label, ε) -> the first repeat's Release (for plots)
    seed: int
    cancelled: bool = False
    references: pd.DataFrame = field(default_factory=pd.DataFrame)  # reference_rows: one row per line and ε
    raw: bool = False  # whether the raw form is the one to rank by (``dpdesk compare --raw``)

    def summary_with_references(self) -> pd.DataFrame:
        """``summary`` and, below it, the reference lines' rows (summary.csv): exact, so their interval is the
        value itself."""
        if self.references.empty or self.summary.empty:
            return self.summary
        metrics = [m for m in self.summary["metric"].unique() if m in self.references.columns]
        lines = summarize(self.references, metrics).dropna(subset=["mean"])
        lines["ci_low"] = lines["ci_high"] = lines["mean"]  # no noise, no repeats
        return pd.concat([self.summary, lines], ignore_index=True)

    def reference_values(self, metric: str) -> dict[str, float]:
        """{reference line: its value} of ``metric`` (empty when it has none, e.g. for cell tables)."""
        if self.references.empty or metric not in self.references.columns:
            return {}
        first = self.references.drop_duplicates("label")
        return {label: float(v) for label, v in zip(first["label"], first[metric]) if np.isfinite(v)}


def reference_rows(data, epsilons, **metric_options) -> pd.DataFrame:
    """The two reference lines' metrics at every ε (they do not depend on it), in both forms.

    Publishing zeros, and the true average count for every item (published: rounded half up,
    at least 0). Incidence data only: a cell table's summaries are scored by query workloads
    over the cells listed, which have no such reference."""
    if data.kind != "incidence":
        return pd.DataFrame()
    truth = np.asarray(data.column_counts if data.binary else data.column_sums, dtype=np.float64)
    average = float(truth.mean()) if truth.size else 0.0
    options = {k: v for k, v in metric_options.items() if k in ("k", "sanity")}
    rows = []
    for label, raw_values in ((ZEROS, np.zeros(truth.size)), (AVERAGE, np.full(truth.size, average))):
        published = np.maximum(np.floor(raw_values + 0.5), 0.0)
        metrics = count_metrics(published, truth, n_rows=data.n_rows, **options)
        raw_metrics = count_metrics(raw_values, truth, n_rows=data.n_rows, **options)
        row = {**metrics, **{RAW_PREFIX + k: v for k, v in raw_metrics.items()}}
        for name in ("topk_accuracy", RAW_PREFIX + "topk_accuracy"):
            row[name] = float("nan")  # every item alike: which are "the top k" is an accident of order
        rows += [{"label": label, "mechanism": REFERENCE, "epsilon": float(e), "repeat": 0, **row} for e in epsilons]
    return pd.DataFrame(rows)


def summarize(results: pd.DataFrame, metrics: list[str]) -> pd.DataFrame:
    rows = []
    for (label, mechanism, epsilon), group in results.groupby(["label", "mechanism", "epsilon"], sort=False):
        for metric in metrics:
            values = group[metric].to_numpy(dtype=float)
            values = values[np.isfinite(values)]
            n = values.size
            mean = float(values.mean()) if n else float("nan")
            if n > 1:
                half = float(stats.t.ppf(0.975, n - 1) * values.std(ddof=1) / math.sqrt(n))
            else:
                half = float("nan")
            rows.append({"label": label, "mechanism": mechanism, "epsilon": epsilon, "metric": metric,
                         "mean": mean, "ci_low": mean - half, "ci_high": mean + half, "repeats": n})
    return pd.DataFrame(rows)


def run_comparison(data, entries: list[Entry], epsilons: list[float], repeats: int, *, seed: int | None = None,
                   progress: ProgressFn | None = None, cancel: CancelToken | None = None,
                   on_result=None, raw: bool = False, metrics=None, **metric_options) -> Comparison:
    """Run every entry at every ε ``repeats`` times; each row has both forms' metrics (module notes).

    ``raw`` says which form to rank by (kept in :attr:`Comparison.raw`); both are always measured.
    ``metrics``: a function (data, published release) → dict of figures measured on each run instead of both
    forms' :func:`.metrics.evaluate` (the recommendation's learning measures every goal's loss with it)."""
    progress = progress or no_progress
    if not entries:
        raise ParameterError("Choose at least one mechanism to compare.")
    if repeats < 1:
        raise ParameterError("The number of repeats must be at least 1.")
    epsilons = [check_epsilon(e) for e in epsilons]
    if not epsilons:
        raise ParameterError("Give at least one ε to compare.")
    if seed is None:
        seed = int.from_bytes(os.urandom(4), "little")
    validated = []
    for entry in entries:
        mechanism, _, params = running.validate(data, entry.mechanism, epsilons[0], entry.params)
        validated.append((entry, mechanism, params))
    total = len(validated) * len(epsilons) * repeats
    done = 0
    rows, examples = [], {}
    cancelled = False
    for i, (entry, mechanism, params) in enumerate(validated):
        for j, epsilon in enumerate(epsilons):
            if cancel is not None and cancel.cancelled:
                cancelled = True
                break
            progress(done / total, f"{entry.label}: preparing (ε = {epsilon:g})")
            prepared = running.prepare(data, mechanism, epsilon, params, cancel=cancel)
            for r in range(repeats):
                if cancel is not None and cancel.cancelled:
                    cancelled = True
                    break
                generator = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(i, j, r)))
                from ..privacy.randomness import SeededRandom

                source = SeededRandom(generator, seed=seed)
                started = time.perf_counter()
                release = publish(mechanism.run(data, prepared, epsilon, params, source), mechanism=mechanism)
                seconds = time.perf_counter() - started
                if metrics is not None:
                    measured = metrics(data, release)
                else:
                    measured = evaluate(data, release, **metric_options)
                    raw_metrics = evaluate(data, unrounded_release(release), **metric_options)
                    measured.update({RAW_PREFIX + k: v for k, v in raw_metrics.items()})
                row = {"label": entry.label, "mechanism": entry.mechanism, "epsilon": epsilon, "repeat": r,
                       **measured, "seconds": seconds}
                rows.append(row)
                if r == 0:
                    examples[(entry.label, epsilon)] = release
                done += 1
                if on_result is not None:
                    on_result(row)
                progress(done / total, f"{entry.label} ε = {epsilon:g} repeat {r + 1}/{repeats}")
            if cancelled:
                break
        if cancelled:
            break
    results = pd.DataFrame(rows)
    metric_names = [c for c in results.columns if c not in ("label", "mechanism", "epsilon", "repeat", "seconds")]
    summary = summarize(results, metric_names) if rows else pd.DataFrame()
    references = reference_rows(data, epsilons, **metric_options) if rows else pd.DataFrame()
    return Comparison(results, summary, examples, seed, cancelled, references, raw)


def comparison_table(comparison: Comparison) -> pd.DataFrame:
    """Mean of every metric per line (mechanisms, then the references) and ε, in the form ranked by
    (``comparison.raw``): the raw form's metrics without their prefix, or the published form's."""
    summary = comparison.summary_with_references()
    if summary.empty:
        return pd.DataFrame()
    raw = summary["metric"].str.startswith(RAW_PREFIX)
    chosen = summary[raw].assign(metric=summary.loc[raw, "metric"].str[len(RAW_PREFIX):]) if comparison.raw \
        else summary[~raw]
    return chosen.pivot_table(index=["label", "epsilon"], columns="metric", values="mean", sort=False)

"""The comparison runner: mechanisms × ε grid × repeats, prepared once, released many times.

Runs in exploration mode (seeded, reproducible) and reads the true data: every number it
produces is internal. Each run is published as a release would be
(:func:`dpdesk.mechanisms.publish.publish`: whole numbers ≥ 0 unless ``raw``), so the errors
measured are those of what would be published. Progress goes to ``progress(fraction, message)``, each finished run
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
from ..mechanisms.publish import publish
from ..privacy.budget import check_epsilon
from ..tasks import CancelToken, ProgressFn, no_progress
from .metrics import evaluate


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
    """``metrics``: a function (data, release) → dict of figures measured on each run instead of
    :func:`.metrics.evaluate` (the rule's learning measures every goal's loss with it)."""
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
                release = publish(mechanism.run(data, prepared, epsilon, params, source), raw=raw,
                                  mechanism=mechanism)
                seconds = time.perf_counter() - started
                measured = metrics(data, release) if metrics is not None else evaluate(data, release, **metric_options)
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
    return Comparison(results, summary, examples, seed, cancelled)

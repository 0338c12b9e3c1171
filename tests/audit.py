"""Privacy audit harness: an empirical lower bound on ε from neighbouring datasets.

For a mechanism M and neighbours D, D′ (one person added or removed), ε-DP promises
``P[M(D) ∈ E] ≤ e^ε · P[M(D′) ∈ E]`` for every output event E. The audit

1. runs M many times on each dataset (seeded, so failures reproduce);
2. turns every output into a few scalar *features* (e.g. the counts of the items the extra
   person holds, their sum);
3. on the first half of the runs, searches threshold events ``{f ≥ t}``, ``{f ≤ t}`` and
   value events ``{f = v}`` over all features, in both directions (D vs D′ and D′ vs D),
   for the largest empirical log-ratio;
4. on the second, independent half, bounds the chosen event's probabilities with
   Clopper–Pearson intervals (one-sided, together 99%) and reports
   ``ε_low = ln(p_low(D) / p_high(D′))``.

Because the event is chosen on data the bound does not use, ``ε_low`` is a valid lower bound
on the true privacy loss at 99% confidence: a correct mechanism gives ``ε_low ≤ ε`` (with
probability ≥ 99% — in practice far more, since the bound is loose), and a mechanism that
leaks more than it claims is caught once the runs resolve the difference.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
from scipy import stats

Features = Callable[[np.ndarray], np.ndarray]


@dataclass
class AuditResult:
    epsilon_lower: float
    event: str
    p_first: float
    p_second: float
    runs: int

    def __str__(self) -> str:
        return (f"empirical ε ≥ {self.epsilon_lower:.3f} (99%) from event {self.event}: "
                f"P = {self.p_first:.4f} vs {self.p_second:.4f} over {self.runs} runs each")


def clopper_pearson(successes: int, trials: int, alpha: float) -> tuple[float, float]:
    """One-sided (1 − alpha) lower and upper bounds of a binomial proportion."""
    lower = 0.0 if successes == 0 else float(stats.beta.ppf(alpha, successes, trials - successes + 1))
    upper = 1.0 if successes == trials else float(stats.beta.ppf(1 - alpha, successes + 1, trials - successes))
    return lower, upper


def _events(search_a: np.ndarray, search_b: np.ndarray, thresholds: int):
    """Candidate events per feature: thresholds at quantiles, and frequent exact values."""
    events = []
    for k in range(search_a.shape[1]):
        values = np.concatenate([search_a[:, k], search_b[:, k]])
        distinct = np.unique(values)
        if distinct.size <= 2 * thresholds:
            cuts = distinct
        else:
            cuts = np.unique(np.quantile(values, np.linspace(0.002, 0.998, thresholds)))
        for t in cuts:
            events.append((k, ">=", float(t)))
            events.append((k, "<=", float(t)))
        if distinct.size <= 200:
            for v in distinct:
                events.append((k, "==", float(v)))
    return events


def _hits(features: np.ndarray, event) -> np.ndarray:
    k, op, t = event
    column = features[:, k]
    if op == ">=":
        return column >= t
    if op == "<=":
        return column <= t
    return column == t


def audit(sample: Callable[[object, np.random.Generator, int], np.ndarray], first, second, *,
          runs: int, features: Features, seed: int = 0, thresholds: int = 60,
          confidence: float = 0.99, min_count: int = 30) -> AuditResult:
    """Empirical ε lower bound for mechanism ``sample`` on neighbours ``first``, ``second``.

    ``sample(data, generator, n)`` returns ``n`` outputs (stacked on axis 0) using only the
    given generator; ``features`` maps those outputs to an ``(n, f)`` array.
    """
    rng = np.random.default_rng(seed)
    seeds = rng.integers(0, 2**63, size=4)
    outputs = {}
    for name, data, s_search, s_test in (("a", first, seeds[0], seeds[1]), ("b", second, seeds[2], seeds[3])):
        outputs[name] = (np.asarray(features(sample(data, np.random.default_rng(s_search), runs)), float),
                         np.asarray(features(sample(data, np.random.default_rng(s_test), runs)), float))
    (search_a, test_a), (search_b, test_b) = outputs["a"], outputs["b"]
    if search_a.ndim == 1:
        search_a, test_a, search_b, test_b = (x.reshape(-1, 1) for x in (search_a, test_a, search_b, test_b))
    best, best_score = None, -np.inf
    for event in _events(search_a, search_b, thresholds):
        count_a, count_b = int(_hits(search_a, event).sum()), int(_hits(search_b, event).sum())
        for direction, (x, y) in (("a>b", (count_a, count_b)), ("b>a", (count_b, count_a))):
            if x < min_count:
                continue
            # a conservative score on the search half, so the choice favours events that can be bounded
            lo, _ = clopper_pearson(x, runs, 0.05)
            _, hi = clopper_pearson(y, runs, 0.05)
            score = np.log(max(lo, 1e-300) / hi)
            if score > best_score:
                best, best_score = (event, direction), score
    if best is None:
        return AuditResult(0.0, "none", 0.0, 0.0, runs)
    event, direction = best
    hits_a, hits_b = int(_hits(test_a, event).sum()), int(_hits(test_b, event).sum())
    x, y = (hits_a, hits_b) if direction == "a>b" else (hits_b, hits_a)
    alpha = (1 - confidence) / 2
    lower, _ = clopper_pearson(x, runs, alpha)
    _, upper = clopper_pearson(y, runs, alpha)
    epsilon_lower = float(np.log(lower / upper)) if lower > 0 else 0.0
    k, op, t = event
    label = f"feature {k} {op} {t:g} ({'D' if direction == 'a>b' else 'D′'} more likely)"
    return AuditResult(max(epsilon_lower, 0.0), label, x / runs, y / runs, runs)


def release_sampler(mechanism_id: str, **params):
    """A ``sample`` function that runs ``dpdesk.release`` n times in exploration mode."""
    import dpdesk

    def sample(data, generator, n):
        return np.stack([dpdesk.release(data, mechanism_id, rng=generator, **params).values for _ in range(n)])

    return sample


def run_sampler(mechanism, epsilon: float, **params):
    """A ``sample`` function calling ``mechanism.run`` directly (for unregistered, planted-bug variants)."""
    from dpdesk.api import prepare
    from dpdesk.privacy.randomness import SeededRandom

    def sample(data, generator, n):
        values = mechanism.validate(data, epsilon, params)
        prepared = prepare(data, mechanism, epsilon, values)
        source = SeededRandom(generator)
        return np.stack([mechanism.run(data, prepared, epsilon, values, source).values for _ in range(n)])

    return sample

"""What the steward cares about: the recommendation's goals (issue 28).

* ``all`` — every count equally: the mean absolute error over all items (the rule's first goal);
* ``largest[:K]`` — the largest counts: the mean relative error of the K largest true counts
  (K = 100 by default; the rule is learnt for K = 10 and K = 100 and uses the nearer);
* ``target:N,R`` — "counts above N within ±R%": the share of the items with a true count of at
  least N whose published value is within R% of it (R in percent, e.g. ``target:1000,10``).

:func:`parse_goal` reads the CLI's ``--goal`` (and the GUI's choice, in the same words);
:func:`goal_losses` measures every goal's loss on one published release against the truth,
for :mod:`.rule_learning` (lower is better: 1 − the share for a target).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import ParameterError

GOAL_KINDS = ("all", "largest", "target")
LARGEST_KS = (10, 100)  # the K the rule is learnt for
DEFAULT_K = 100
TARGET_COUNTS = (10, 30, 100, 300, 1000, 3000, 10000)  # N the rule is learnt for
TARGET_SHARES = (5, 10, 25)  # R (percent) the rule is learnt for
TARGET_ITEMS = 5  # a dataset is a target case only if it has at least this many items at or above N
TARGET_TOLERANCE = 0.05  # a choice hits a target case when its share is within 5 points of the best


@dataclass(frozen=True)
class Goal:
    kind: str = "all"
    k: int = DEFAULT_K  # largest
    count: float = 0.0  # target: N
    percent: float = 0.0  # target: R

    @property
    def rule_key(self) -> str:
        """The rule file's name of the goal this one is decided by."""
        if self.kind == "largest":
            return f"largest:{learnt_k(self.k)}"
        return self.kind

    @property
    def text(self) -> str:
        """The goal in the steward's words."""
        if self.kind == "largest":
            return f"the {self.k:,} largest counts (their relative error)"
        if self.kind == "target":
            return f"counts of at least {self.count:,.0f} within ±{self.percent:g}%"
        return "every count equally (the mean error over all items)"

    def to_json(self) -> dict:
        out = {"kind": self.kind, "text": self.text, "rule": self.rule_key}
        if self.kind == "largest":
            out["k"] = self.k
        if self.kind == "target":
            out.update(count=self.count, percent=self.percent)
        return out


#: the question the Configure page asks, in words: (kind, answer, what the answer needs)
GOAL_CHOICES = (
    ("all", "Every count equally", ""),
    ("largest", "The largest counts", "how many of the largest (K, 100 by default)"),
    ("target", "Counts above a number, within a percentage", "the number N and the percentage R"),
)
GOAL_QUESTION = "What matters most in this release?"


def goal_from_answers(kind: str, *, k: int | None = None, count: float | None = None,
                      percent: float | None = None) -> Goal:
    """The goal from the Configure page's answers (the same checks and messages as ``--goal``)."""
    if kind == "largest":
        return parse_goal(f"largest:{k}" if k is not None else "largest")
    if kind == "target":
        return parse_goal(f"target:{count},{percent}")
    return parse_goal(kind)


def comparison_metric(goal) -> tuple[str, dict]:
    """The comparison's default measure for a goal (evaluation.metrics): the mean absolute error for every count,
    the top-K mean relative error for the largest counts, the mean relative error for a target."""
    goal = parse_goal(goal)
    if goal.kind == "largest":
        return "topk_mre", {"k": goal.k}
    if goal.kind == "target":
        return "mre", {}
    return "mae", {}


def learnt_k(k: int) -> int:
    """The K the rule was learnt for that is nearest to ``k`` on a log scale."""
    return min(LARGEST_KS, key=lambda known: abs(math.log(known) - math.log(max(1, k))))


def parse_goal(text) -> Goal:
    """``all``, ``largest``, ``largest:K`` or ``target:N,R`` (a Goal passes through): a clear error otherwise."""
    if isinstance(text, Goal):
        return text
    if text is None:
        return Goal()
    raw = str(text).strip().lower()
    kind, _, rest = raw.partition(":")
    if kind == "all" and not rest:
        return Goal()
    if kind == "largest":
        if not rest:
            return Goal("largest")
        try:
            k = int(rest)
        except ValueError:
            k = 0
        if k < 1:
            raise ParameterError(f"In --goal largest:K, K is how many of the largest counts matter: a whole number of "
                                 f"at least 1, not '{rest}'.")
        return Goal("largest", k=k)
    if kind == "target":
        parts = [p.strip().rstrip("%") for p in rest.split(",")]
        try:
            count, percent = (float(parts[0]), float(parts[1])) if len(parts) == 2 else (math.nan, math.nan)
        except ValueError:
            count, percent = math.nan, math.nan
        if not (math.isfinite(count) and count >= 1 and math.isfinite(percent) and 0 < percent <= 100):
            raise ParameterError(f"--goal target:N,R means 'counts of at least N within ±R%' (e.g. target:1000,10): N "
                                 f"a count of at least 1 and R a percentage above 0 and at most 100, not '{rest}'.")
        return Goal("target", count=count, percent=percent)
    raise ParameterError(f"Unknown goal '{text}': choose all (every count equally), largest or largest:K (the K "
                         "largest counts), or target:N,R (counts of at least N within ±R%).")


def rule_goals() -> list[str]:
    """Every goal the rule file holds a tree for."""
    return ["all"] + [f"largest:{k}" for k in LARGEST_KS] + ["target"]


def target_column(count: float, percent: float) -> str:
    return f"target:{count:g},{percent:g}"


def goal_losses(noisy, true) -> dict[str, float]:
    """Every goal's loss for one published vector against the true counts (lower is better).

    ``mae``; ``largest:K`` the mean relative error |noisy − true|/true of the K largest true counts;
    ``target:N,R`` 1 − the share of items with true ≥ N whose error is within R% (NaN when fewer than
    ``TARGET_ITEMS`` items reach N: the dataset is no case for that target)."""
    from .metrics import top_k

    noisy, true = np.asarray(noisy, dtype=np.float64), np.asarray(true, dtype=np.float64)
    error = np.abs(noisy - true)
    out = {"all": float(error.mean())}
    for k in LARGEST_KS:
        top = top_k(true, k)
        out[f"largest:{k}"] = float(np.mean(error[top] / np.maximum(true[top], 1.0)))
    for count in TARGET_COUNTS:
        reached = true >= count
        for percent in TARGET_SHARES:
            column = target_column(count, percent)
            if reached.sum() < TARGET_ITEMS:
                out[column] = math.nan
            else:
                out[column] = float(1.0 - np.mean(error[reached] <= percent / 100.0 * true[reached]))
    return out


__all__ = ["DEFAULT_K", "GOAL_CHOICES", "GOAL_KINDS", "GOAL_QUESTION", "Goal", "LARGEST_KS", "TARGET_COUNTS",
           "TARGET_SHARES", "comparison_metric", "goal_from_answers", "goal_losses", "learnt_k", "parse_goal",
           "rule_goals", "target_column"]

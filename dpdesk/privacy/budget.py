"""Explicit budget splits: every sub-step of a mechanism and the ε it spends.

Sequential composition: the sub-steps' ε add up to the total. :meth:`BudgetSplit.check`
refuses a split that does not (up to 1e-9 relative), so a mechanism cannot silently
spend more than it claims. A step may also spend a δ (an (ε, δ) step, e.g. private
partition selection, or a sampler whose floating-point probabilities are bounded rather
than exact); the δ of the steps add up too (basic composition), and a release with
``delta > 0`` is (ε, δ)-DP, which its report and ledger entry state.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import ParameterError


@dataclass(frozen=True)
class BudgetStep:
    name: str
    epsilon: float
    description: str = ""
    delta: float = 0.0


@dataclass
class BudgetSplit:
    total: float
    steps: list[BudgetStep] = field(default_factory=list)

    def add(self, name: str, epsilon: float, description: str = "", *, delta: float = 0.0) -> "BudgetSplit":
        if not epsilon > 0:
            raise ParameterError(f"The budget step '{name}' must spend a positive ε.")
        if not 0.0 <= delta < 1.0:
            raise ParameterError(f"The budget step '{name}' must have a δ in [0, 1), not {delta!r}.")
        self.steps.append(BudgetStep(name, float(epsilon), description, float(delta)))
        return self

    @property
    def spent(self) -> float:
        return sum(step.epsilon for step in self.steps)

    @property
    def delta(self) -> float:
        """The δ of the whole release (0 for pure ε-DP): the steps' δ add up."""
        return sum(step.delta for step in self.steps)

    def check(self) -> "BudgetSplit":
        if not self.steps:
            raise ParameterError("A release must list the steps that spend its budget.")
        if abs(self.spent - self.total) > 1e-9 * max(1.0, self.total):
            raise ParameterError(f"The budget steps add up to ε = {self.spent:.6g}, not the claimed {self.total:.6g}.")
        return self

    def as_list(self) -> list[dict]:
        return [{"step": s.name, "epsilon": s.epsilon, "share": s.epsilon / self.total, "description": s.description,
                 **({"delta": s.delta} if s.delta else {})}
                for s in self.steps]

    @classmethod
    def single(cls, epsilon: float, name: str, description: str = "") -> "BudgetSplit":
        return cls(float(epsilon)).add(name, epsilon, description)


def check_epsilon(epsilon) -> float:
    """ε must be a positive finite number."""
    try:
        value = float(epsilon)
    except (TypeError, ValueError):
        raise ParameterError(f"ε must be a number, not {epsilon!r}.") from None
    if not value > 0 or value != value or value == float("inf"):
        raise ParameterError(f"ε must be a finite number greater than 0 (got {epsilon}).")
    if value > 100:
        raise ParameterError(f"ε = {value:g} gives no meaningful privacy; use at most 100.")
    return value

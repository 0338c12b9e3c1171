"""Privacy core: randomness, exact noise, exponential mechanism, bounding, budgets (no Qt)."""

from .budget import BudgetSplit, BudgetStep, check_epsilon
from .randomness import RandomSource, SecureRandom, SeededRandom, resolve

__all__ = ["BudgetSplit", "BudgetStep", "RandomSource", "SecureRandom", "SeededRandom", "check_epsilon", "resolve"]

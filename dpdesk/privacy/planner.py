"""Shoaran, Thomo & Weber, *Differential Privacy in Practice*: how large the noise is, and
how large a true answer must be for the noisy one to be useful.

* Eq. 4 — noise magnitude: with Laplace noise of scale λ = Δ(q)/ε, ``P(|x| ≥ z) = pr`` for
  ``z = −λ·ln(pr)``.
* Eq. 6 — minimum true answer (MTA): a true answer of at least ``z / re`` has relative error
  at most ``re`` with probability ``1 − pr``.
* Eq. 7–8, 10 — DIFF with a query index γ: ``λ_i = α·γ_i`` with ``α = (1/ε)·Σ_j Δ(q_j)/γ_j``;
  ``MTA_i = −γ_i·(Σ_j Δ(q_j)/γ_j)·ln(pr) / (ε·re)``.
* The inverse a steward needs: the ε that makes every count of at least ``N`` accurate to
  ``re`` with probability ``1 − pr``: ``ε = max_i −γ_i·(Σ_j Δ(q_j)/γ_j)·ln(pr) / (N·re)``
  (one query: ``−Δ·ln(pr)/(N·re)``).

Everything here uses public numbers only; no data is needed.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from ..errors import ParameterError


def _check(probability=None, relative_error=None, epsilon=None, sensitivity=None, answer=None):
    if probability is not None and not 0 < probability < 1:
        raise ParameterError(f"The probability must be between 0 and 1 (exclusive), not {probability}.")
    if relative_error is not None and not relative_error > 0:
        raise ParameterError(f"The relative error must be greater than 0, not {relative_error}.")
    if epsilon is not None and not epsilon > 0:
        raise ParameterError(f"ε must be greater than 0, not {epsilon}.")
    if sensitivity is not None and not sensitivity > 0:
        raise ParameterError(f"The sensitivity must be greater than 0, not {sensitivity}.")
    if answer is not None and not answer > 0:
        raise ParameterError(f"The true answer N must be greater than 0, not {answer}.")


def _index(index: Sequence[float] | None) -> np.ndarray | None:
    if index is None:
        return None
    gamma = np.asarray(index, dtype=np.float64).ravel()
    if gamma.size == 0 or np.any(~np.isfinite(gamma)) or np.any(gamma <= 0):
        raise ParameterError("Every value of the query index must be a positive number.")
    return gamma


def index_constant(epsilon: float, sensitivity: float | Sequence[float], index: Sequence[float]) -> float:
    """α of Eq. 8: ``(1/ε)·Σ Δ(q_i)/γ_i``."""
    gamma = _index(index)
    delta = np.broadcast_to(np.asarray(sensitivity, dtype=np.float64), gamma.shape)
    return float(np.sum(delta / gamma) / epsilon)


def noise_scales(epsilon: float, sensitivity: float = 1.0, index: Sequence[float] | None = None) -> np.ndarray:
    """λ per query: ``Δ/ε`` without an index, ``α·γ_i`` with one."""
    _check(epsilon=epsilon)
    if index is None:
        _check(sensitivity=sensitivity)
        return np.array([sensitivity / epsilon])
    gamma = _index(index)
    return index_constant(epsilon, sensitivity, gamma) * gamma


def noise_magnitude(epsilon: float, probability: float, sensitivity: float = 1.0,
                    index: Sequence[float] | None = None) -> np.ndarray:
    """z per query: the noise magnitude exceeded with probability ``probability`` (Eq. 4)."""
    _check(probability=probability, epsilon=epsilon)
    return -noise_scales(epsilon, sensitivity, index) * math.log(probability)


def minimum_true_answer(epsilon: float, probability: float, relative_error: float, sensitivity: float = 1.0,
                        index: Sequence[float] | None = None) -> np.ndarray:
    """MTA per query (Eq. 6 and 10)."""
    _check(relative_error=relative_error)
    return noise_magnitude(epsilon, probability, sensitivity, index) / relative_error


def epsilon_needed(answer: float, probability: float, relative_error: float, sensitivity: float = 1.0,
                   index: Sequence[float] | None = None) -> float:
    """The smallest ε for which every query with true answer ≥ ``answer`` meets the target."""
    _check(probability=probability, relative_error=relative_error, answer=answer)
    # MTA is proportional to 1/ε: solve MTA_i(ε) = answer for the most demanding query
    mta_at_one = minimum_true_answer(1.0, probability, relative_error, sensitivity, index)
    return float(np.max(mta_at_one) / answer)


def odds_after(epsilon: float, prior: float = 0.5) -> tuple[float, float]:
    """Posterior belief bound: someone at ``prior`` can end at most at this probability, and its odds.

    ε-DP bounds the likelihood ratio by e^ε, so prior odds o become at most o·e^ε.
    """
    odds = prior / (1 - prior) * math.exp(epsilon)
    return odds / (1 + odds), odds

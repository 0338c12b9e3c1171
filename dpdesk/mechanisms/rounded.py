"""LPA with its noisy counts rounded to a public step (post-processing of LPA, GS §2.1)."""

from __future__ import annotations

import numpy as np

from ..privacy.bounding import bounded_counts, prepare_bound
from ..privacy.budget import BudgetSplit
from ..privacy.noise import add_discrete_laplace
from . import register
from .base import BOUND, Mechanism, Param, counts_error


@register
class RoundedLPA(Mechanism):
    id = "lpa-rounded"
    name = "LPA, rounded"
    family = "Baselines (Dwork et al. 2006; DPSense §3)"
    paper = "Dwork, McSherry, Nissim, Smith (TCC 2006)"
    reference = "GS §2.1, Theorem 1; rounding is post-processing"
    summary = "LPA, then every noisy count rounded to a multiple of a public step."
    order = 12
    params = (BOUND, Param("step", "int", 5, label="Rounding step", minimum=1, maximum=10**6,
                           help="Counts are published as multiples of this number."))

    def prepare_key(self, epsilon, params):
        return (params["bound"],)          # the truncation plan depends on Δ only

    def prepare(self, data, epsilon, params, progress, cancel):
        return prepare_bound(data.matrix, params["bound"])

    def run(self, data, prepared, epsilon, params, source):
        counts = bounded_counts(data.matrix, prepared, source)   # truncation: random, from source
        noisy = add_discrete_laplace(counts, params["bound"] / epsilon, source)
        values = np.round(noisy / params["step"]) * params["step"]
        budget = BudgetSplit.single(epsilon, "noisy counts", "discrete Laplace noise of scale Δ/ε, then rounding")
        return self.new_release(data, epsilon, params, budget, source, values=values.astype(np.float64),
                                internal={"rows_truncated": prepared.rows_cut})

    def expected_error(self, epsilon, params, facts):           # public inputs only
        return counts_error(params["bound"] / epsilon, facts.get("number of items (d)", 0))

    def report_notes(self, params):
        return (f"Counts are rounded to multiples of {params['step']}; rounding costs no privacy.",)

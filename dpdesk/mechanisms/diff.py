"""DIFF (Shoaran, Thomo & Weber §6): noise scales set by a public query index.

Each item's count is a query q_i with sensitivity Δ(q_i) = 1. With a query index γ
(public weights: larger γ_i = more noise allowed on item i), DIFF adds Laplace noise of
scale λ_i = α·γ_i, α = (1/ε)·Σ_i 1/γ_i (Eq. 7–8). Privacy: for neighbours the output
density ratio is at most ∏_i e^{|Δc_i|/λ_i} ≤ e^{Σ_i 1/λ_i} = e^{ε} — a person may touch
every item.

Tighter scale with a declared bound Δ (``bound``). After truncating each person to at most
Δ items (dpdesk.privacy.bounding), a person changes at most Δ counts, each by one. The
privacy loss is then Σ_{i∈S} 1/λ_i over the set S of items they hold, |S| ≤ Δ, which is at
most the sum of the Δ largest values of 1/λ_i = 1/(α·γ_i). Choosing
α = (1/ε)·(sum of the Δ largest 1/γ_i) makes that worst case exactly ε, so the release is
ε-DP with less noise than the unbounded α whenever Δ < d. With a uniform index this is
LPA's scale Δ/ε.

Noise is exact discrete Laplace per item (integer counts), so the λ_i are realised exactly.

Public by construction. The weights γ are looked up for the *declared* item list (the
dataset's ``item_labels``, issue #13 S1): α, every λ_i and the published smallest and
largest scale are functions of that list, the index file, Δ and ε — never of which items
the data happens to hold (issue #13, B5). ``check`` reads the index against the same list
before the data is read and refuses, naming them, items of the list the index has no
weight for; index lines for items outside the list are ignored. Refusals of a noise scale
the sampler cannot draw are decided there too.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np

from ..data.textio import decode, read_raw
from ..errors import DataError, ParameterError
from ..privacy.planner import minimum_true_answer
from ..privacy.bounding import bounded_counts, prepare_bound
from ..privacy.budget import BudgetSplit
from ..privacy.noise import add_discrete_laplace, discrete_laplace_quantile
from . import register
from .base import BOUND, EVERY_COUNT, Mechanism, Param
from .counts import CLAMP, check_noise_scale
from .margins import BOUND_HOLDS, MARGIN_SHARE_PARAM, count_margins, margin_budget
from .publish import discrete_laplace_margin

import dataclasses


def read_index(spec: str, labels) -> np.ndarray:
    """Weights γ aligned with ``labels``: 'uniform', or a CSV/TSV file of item,weight lines."""
    labels = [str(label) for label in labels]
    if spec.strip().lower() == "uniform":
        return np.ones(len(labels))
    path = Path(spec)
    text = decode(read_raw(path), "auto", path).text
    delimiter = "\t" if "\t" in text.split("\n", 1)[0] else ","
    weights: dict[str, float] = {}
    for number, row in enumerate(csv.reader(io.StringIO(text), delimiter=delimiter), start=1):
        if not row or all(not field.strip() for field in row):
            continue
        if len(row) < 2:
            raise DataError("a line of the query index has no weight", path=path, line=number,
                            expected="item,weight")
        item, raw = row[0].strip(), row[1].strip()
        try:
            value = float(raw)
        except ValueError:
            if number == 1:
                continue  # a header line
            raise DataError(f"the weight '{raw}' is not a number", path=path, line=number, column=2,
                            expected="a positive number") from None
        if not np.isfinite(value) or value <= 0:
            raise DataError(f"the weight '{raw}' is not positive", path=path, line=number, column=2,
                            expected="a positive number")
        if item in weights:
            raise DataError(f"the item '{item}' is listed twice", path=path, line=number, column=1)
        weights[item] = value
    missing = [label for label in labels if label not in weights]
    if missing:
        shown = ", ".join(f"'{m}'" for m in missing[:5]) + (" …" if len(missing) > 5 else "")
        raise ParameterError(f"The query index {path.name} has no weight for {len(missing)} item(s): {shown}. "
                             "Give every item a weight (or use index=uniform).")
    return np.array([weights[label] for label in labels], dtype=np.float64)


def diff_alpha(epsilon: float, gamma: np.ndarray, bound: int | None) -> float:
    """α of DIFF; with a bound, from the Δ largest 1/γ_i (see the module proof)."""
    inverse = 1.0 / gamma
    if bound is None or bound >= gamma.size:
        total = float(inverse.sum())
    else:
        total = float(np.sort(inverse)[-bound:].sum())
    return total / epsilon


@register
class DIFF(Mechanism):
    id = "diff"
    name = "DIFF — noise guided by a query index"
    family = "Differential in practice (Shoaran, Thomo & Weber)"
    purpose = EVERY_COUNT  # every count has its own noise, only of different scales
    paper = "Shoaran, Thomo & Weber, Differential Privacy in Practice"
    reference = "§6, Eq. 7–10"
    summary = "Gives each item its own noise scale, proportional to a public weight you supply."
    order = 60
    margins_published = True  # dpdesk.mechanisms.margins
    params = (
        Param("index", "file", None, label="Query index",
              help="'uniform' (the same scale for every item) or a CSV file of item,weight lines: a larger "
                   "weight allows more noise on that item. The weights must be public (e.g. last year's "
                   "national figures), not taken from this data.",
              reference="Shoaran §6, Eq. 7", required=True),
        dataclasses.replace(BOUND, required=False, help=(
            "Optional. With it, each person is truncated to Δ items and the scales shrink (α from the Δ "
            "largest 1/γ); without it DIFF assumes a person may have every item.")),
        CLAMP,
        MARGIN_SHARE_PARAM,
        BOUND_HOLDS,
    )

    @staticmethod
    def counts_epsilon(epsilon: float, params: dict) -> float:
        """The ε of the noisy counts: ε less the margins' loss estimate (when Δ is declared and may cut)."""
        return epsilon - sum(margin_budget(epsilon, params, ("loss",)).values())

    def check(self, data, epsilon, params):
        """From the declared item list, the index, Δ and ε only: works on a domain without data."""
        if data is not None:
            summary = self.noise_summary(data, epsilon, params)  # names any item without a weight
            check_noise_scale(summary["largest"], "this query index")
        return params

    def noise_summary(self, domain, epsilon: float, params: dict) -> dict:
        """α and the smallest and largest λ_i over the declared item list (published)."""
        gamma = read_index(params["index"], domain.item_labels)
        alpha = diff_alpha(self.counts_epsilon(epsilon, params), gamma, params["bound"]) if gamma.size else 0.0
        scales = alpha * gamma
        return {"alpha": alpha, "smallest": float(scales.min()) if scales.size else 0.0,
                "largest": float(scales.max()) if scales.size else 0.0}

    def prepare_key(self, epsilon, params):
        return (params["index"], params["bound"])

    def prepare(self, data, epsilon, params, progress, cancel):
        gamma = read_index(params["index"], data.item_labels)
        bounded = prepare_bound(data, params["bound"]) if params["bound"] is not None else None
        return gamma, bounded

    def run(self, data, prepared, epsilon, params, source):
        gamma, bounded = prepared
        if bounded is None:
            counts, rows_cut = data.column_counts, 0
        else:
            counts, rows_cut = bounded_counts(data, bounded, source), bounded.rows_cut
        counts_epsilon = self.counts_epsilon(epsilon, params)
        alpha = diff_alpha(counts_epsilon, gamma, params["bound"])
        scales = alpha * gamma
        values = add_discrete_laplace(counts, scales, source).astype(np.float64)
        if params["clamp"]:
            values = np.maximum(values, 0.0)
        budget = BudgetSplit(epsilon).add("indexed noisy counts", counts_epsilon,
                                          f"item i gets noise of scale α·γ_i with α = {alpha:.6g}")
        noise = discrete_laplace_margin(scales)
        margins = count_margins(data, bounded, values, noise, epsilon, params, budget, source)
        release = margins.attach(self.new_release(data, epsilon, params, budget, source, values=values,
                                                  internal={"rows_truncated": rows_cut}, noise_margin=noise,
                                                  **margins.fields()))
        release.report["noise_scales"] = {"alpha": alpha, "smallest": float(scales.min()),
                                          "largest": float(scales.max())}  # = noise_summary: declared list
        return release

    def public_facts(self, data, params):
        facts = super().public_facts(data, params)
        facts["query index"] = "uniform" if params["index"].strip().lower() == "uniform" else Path(params["index"]).name
        return facts

    def expected_error(self, epsilon, params, facts):
        index = params["index"]
        d = facts.get("number of items (d)", 0)
        if index.strip().lower() != "uniform" or not d:
            return {"text": "Item i's noise has scale α·γ_i; 95% of its errors lie within ±3·α·γ_i (its margin95)."}
        bound = params["bound"] if params["bound"] is not None else d
        scale = min(bound, d) / self.counts_epsilon(epsilon, params)
        z95 = discrete_laplace_quantile(scale, 0.95)
        mta = float(minimum_true_answer(self.counts_epsilon(epsilon, params), 0.05, 0.1, sensitivity=min(bound, d))[0])
        return {"noise_scale": scale, "within_95": z95, "text":
                f"95% of counts lie within ±{z95:,.0f} of the count without noise; counts of at least {mta:,.0f} "
                f"are within 10% of it 95% of the time (Shoaran Eq. 6)."}

"""Count-vector baselines: LPA (Laplace perturbation) and ALPA (one noisy average).

LPA (Dwork et al. 2006; GS §2.1, Theorem 1). After truncating each person to the
declared Δ items, one person changes at most Δ' = min(Δ, d) counts by one (nobody holds more
than the d items): the L1 sensitivity of the count vector is Δ'. Adding independent noise of
scale Δ'/ε to every count is ε-DP; Δ' is a function of the declared Δ and d (issue 29: with
Δ = 148 on the 75 items of chess, noise of scale 148/ε was twice what privacy needs).
The *geometric* variant adds exact discrete Laplace noise (integer outputs); the
*laplace* variant adds Laplace noise on a power-of-two grid γ ≤ 1. Integer counts lie
on that grid already, so no rounding happens and the sensitivity stays exactly Δ
(dpdesk.privacy.noise). The noisy value c + γ·N (N discrete Laplace of scale b/γ) is
formed in floating point from the exact integer c and the exact multiple γ·N, which is the
correctly rounded value of the exact noisy number: post-processing, with no limit on how
large a count may be (an earlier version refused counts above 2⁵²·γ after reading the data).

Every refusal (a noise scale beyond what the sampler takes) is decided in ``check`` from
Δ, d and ε, before the data is read.

ALPA (DPSense §3). Publishes the noisy average count c̄ = Σ_j c_j / d for every column.
One person changes the total by at most their number of items: at most d without a
bound (sensitivity of c̄ is d/d = 1, as in DPSense), at most Δ with one (sensitivity
Δ/d). We add discrete Laplace noise of scale (sensitivity·d)/ε to the integer total and
divide by d — the same as Laplace(sensitivity/ε) on the average, but exact.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..errors import ParameterError
from ..privacy.bounding import bounded_counts, effective_bound, prepare_bound
from ..privacy.budget import BudgetSplit
from ..privacy.noise import MAX_SCALE, add_discrete_laplace, discrete_laplace
from . import register
from .base import BOUND, EVERY_COUNT, NO_BOUND, Mechanism, Param, Release, counts_error
from .margins import BOUND_HOLDS, MARGIN_SHARE_PARAM, count_margins, margin_budget
from .publish import discrete_laplace_margin, round_up

CLAMP = Param("clamp", "bool", False, label="Set negative counts to 0",
              help="Post-processing: a negative noisy count becomes 0. It costs no privacy and "
                   "never moves a count away from the truth, but it biases small counts upwards.",
              reference="post-processing (Dwork & Roth Prop. 2.1)")

BASELINES = "Baselines (Dwork et al. 2006; DPSense §3)"
#: why LPA after a one-pass discovery publishes no margin of error (dpdesk.mechanisms.publish)
ONE_PASS_NO_MARGIN = ("the items were listed because their noisy counts passed a threshold, so a listed count near it "
                      "tends to be too high by an amount no private value bounds, and all of ε went into these counts")
#: why ALPA publishes no margin of error (dpdesk.mechanisms.publish)
NO_MARGIN = ("every item gets the same average, and nothing the release computes privately tells how far an item's "
             "own count is from it")


def check_noise_scale(scale: float, what: str) -> None:
    """Refuse, before the data is read, a noise scale the exact sampler cannot draw."""
    if not scale <= MAX_SCALE:
        raise ParameterError(f"ε is too small for {what}: the noise scale {scale:.3g} exceeds what can be "
                             f"sampled (2^50). Use a larger ε.")


def laplace_grid(scale: float) -> float:
    """γ ≤ 1, a power of two about 2⁻²⁰ of the scale: integer counts lie on it (module notes)."""
    return min(1.0, 2.0 ** np.floor(np.log2(scale) - 20))


@register
class LPA(Mechanism):
    id = "lpa"
    name = "LPA — noise on every count"
    family = BASELINES
    purpose = EVERY_COUNT
    paper = "Dwork, McSherry, Nissim, Smith (TCC 2006), as LPA in Kellaris & Papadopoulos (VLDB 2013)"
    reference = "GS §2.1, Theorem 1"
    summary = "Truncates each person to Δ items and adds noise of scale Δ/ε to every count."
    order = 10
    margins_published = True  # dpdesk.mechanisms.margins
    params = (
        BOUND,
        Param("noise", "choice", "geometric", label="Noise", choices=("geometric", "laplace"),
              help="geometric: whole-number noise (exact discrete Laplace); laplace: Laplace noise on a "
                   "fine power-of-two grid. Both are ε-DP with the same scale Δ/ε.", reference="GS Theorem 1"),
        CLAMP,
        MARGIN_SHARE_PARAM,
        BOUND_HOLDS,
    )

    def check(self, data, epsilon, params):
        """From Δ and ε only (the laplace variant's grid keeps its scale near 2²⁰ grid steps)."""
        if params["noise"] == "geometric":
            check_noise_scale(params["bound"] / self.counts_epsilon(epsilon, params), f"Δ = {params['bound']}")
        return params

    @staticmethod
    def counts_epsilon(epsilon: float, params: dict) -> float:
        """The ε of the noisy counts: ε less the margins' loss estimate (when there is one)."""
        return epsilon - sum(margin_budget(epsilon, params, ("loss",)).values())

    def prepare_key(self, epsilon, params):
        return (params["bound"],)

    def prepare(self, data, epsilon, params, progress, cancel):
        return prepare_bound(data, params["bound"])

    def run(self, data, prepared, epsilon, params, source):
        """Noisy counts with ε_c = ε − ε_L, then (unless Δ is declared to hold or no share is spent) the loss
        estimate with ε_L for the margins (dpdesk.mechanisms.margins)."""
        bound = effective_bound(params["bound"], data.n_items)
        counts = bounded_counts(data, prepared, source)
        counts_epsilon = self.counts_epsilon(epsilon, params)
        scale = bound / counts_epsilon
        budget = BudgetSplit(epsilon).add("noisy counts", counts_epsilon,
                                          f"noise of scale Δ'/ε_c = {scale:.6g} on every count, where Δ' = min(Δ, d) "
                                          f"= {bound} and ε_c = {counts_epsilon:.6g} is this step's ε")
        if params["noise"] == "geometric":
            values = add_discrete_laplace(counts, scale, source).astype(np.float64)
            margin = discrete_laplace_margin(scale)
        else:
            gamma = laplace_grid(scale)
            noise = discrete_laplace(source, scale / gamma, counts.size).astype(np.float64) * gamma  # exact multiples
            values = counts.astype(np.float64) + noise
            margin = discrete_laplace_margin(scale / gamma) * gamma
        if params["clamp"]:
            values = np.maximum(values, 0.0)
        margins = count_margins(data, prepared, values, margin, epsilon, params, budget, source)
        return margins.attach(self.new_release(data, epsilon, params, budget, source, values=values,
                                               internal={"rows_truncated": prepared.rows_cut}, noise_margin=margin,
                                               **margins.fields()))

    def release_noisy_counts(self, data, epsilon, params, noisy, budget, source, internal) -> "Release":
        """LPA's release of counts that already carry discrete Laplace noise of scale Δ/ε from the one-pass
        discovery, whose threshold chose the items by these very counts
        (:func:`dpdesk.mechanisms.discovery.stability_histogram`). It publishes no margin: an item listed because
        its noisy count passed the threshold tends to be too high by an amount no private value bounds, and all of ε
        went into the counts (none is left to estimate the cut to Δ)."""
        values = np.asarray(noisy, dtype=np.float64)
        if params["clamp"]:
            values = np.maximum(values, 0.0)
        return self.new_release(data, epsilon, params, budget, source, values=values, internal=internal,
                                noise_margin=discrete_laplace_margin(params["bound"] / epsilon),
                                margin_withheld=ONE_PASS_NO_MARGIN)

    def expected_error(self, epsilon, params, facts):
        d = facts.get("number of items (d)", 0)
        bound = effective_bound(params["bound"], d) if d else params["bound"]
        return counts_error(bound / self.counts_epsilon(epsilon, params), d,
                            clamped=params["clamp"], discrete=params["noise"] == "geometric")


@register
class ALPA(Mechanism):
    id = "alpa"
    name = "ALPA — one noisy average for all"
    family = BASELINES
    purpose = NO_BOUND  # its bound is optional: without one the average has sensitivity 1
    paper = "Day & Li, DPSense (sensitivity control), §3"
    reference = "DPSense §3"
    summary = "Publishes the noisy average count as the count of every item: tiny noise, large bias."
    order = 11
    params = (
        dataclasses.replace(BOUND, required=False, help=(
            "Optional. With it, each person is truncated to Δ items and the average has sensitivity Δ/d; "
            "without it the average has sensitivity 1 (a person can have all d items).")),
        CLAMP,
    )

    def check(self, data, epsilon, params):
        """From Δ (or d, declared) and ε only."""
        if params["bound"] is not None:
            check_noise_scale(params["bound"] / epsilon, f"Δ = {params['bound']}")
        elif data is not None:
            check_noise_scale(data.n_items / epsilon, f"{data.n_items:,} items without a bound Δ")
        return params

    def prepare_key(self, epsilon, params):
        return (params["bound"],)

    def prepare(self, data, epsilon, params, progress, cancel):
        if params["bound"] is None:
            return None
        return prepare_bound(data, params["bound"])

    def run(self, data, prepared, epsilon, params, source):
        d = data.n_items
        if prepared is None:
            total = int(data.column_counts.sum())
            total_sensitivity = d
            rows_cut = 0
        else:
            total = int(bounded_counts(data, prepared, source).sum())
            total_sensitivity = params["bound"]
            rows_cut = prepared.rows_cut
        noisy_total = total + int(discrete_laplace(source, total_sensitivity / epsilon, 1)[0])
        average = noisy_total / d
        if params["clamp"]:
            average = max(average, 0.0)
        budget = BudgetSplit.single(epsilon, "noisy average",
                                    f"noise of scale {total_sensitivity / epsilon:.6g} on the total, divided by d")
        return self.new_release(data, epsilon, params, budget, source, values=np.full(d, average),
                                internal={"rows_truncated": rows_cut},
                                noise_margin=discrete_laplace_margin(total_sensitivity / epsilon, d),
                                margin_withheld=NO_MARGIN)

    #: what the columns of the release files hold (dpdesk.report.export.column_meanings): not item counts
    column_meanings = {
        "noisy_count": "the one noisy average count of all items (their total count plus noise, divided by the "
                       "number of items), the same in every row: not the item's own count (differentially private)",
    }

    def publication_notes(self, params, whole):
        return ("Every item has the same published value: one noisy average of all the items' counts, not each "
                "item's own count" + (", rounded once." if whole else "."),)


    def expected_error(self, epsilon, params, facts):
        d = facts.get("number of items (d)", 1) or 1
        total_scale = (params["bound"] if params["bound"] else d) / epsilon
        # the same discrete quantile as the margin95 column, rounded up to its 3 significant digits
        z95 = float(round_up(discrete_laplace_margin(total_scale, d)))
        return {"noise_scale": total_scale / d, "text":
                f"The published average is within ±{z95:,.6g} of the average count without noise 95% of the time "
                "(before any rounding to a whole number); every item gets that same value, so items far from the "
                "average are off by their distance to it (which depends on the data)."}

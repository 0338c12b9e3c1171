"""The sparse-domain mechanisms: ``geometric``, ``filter``, ``filter2``, ``threshold``,
``priority``, ``filter-threshold``, ``filter-priority``, ``dyadic`` and ``sketch``.

Privacy. Neighbours differ by one person, who sits in exactly one cell: the cell counts
M have L1 sensitivity Δ = 1 (Δ = L levels for the dyadic transform, d rows for the
sketch). The laborious approach adds exact discrete Laplace noise of scale Δ/ε to all m
cells (the geometric mechanism, α = e^{−ε/Δ}) — ε-DP — and every summary is
post-processing of that noisy table. Each shortcut produces exactly the laborious
approach's output distribution (:mod:`.shortcut`), so it is ε-DP too.

Public facts. m (the domain) is public: it is the shape of the table. Picking θ or τ from
a target size t (App. C.1–C.2) needs n (non-empty cells) and ‖M‖₁ (people counted),
which the paper treats as public. Here they are either declared by the steward
(``nonzeros``, ``total``), or estimated with a recorded share of ε (``estimate_share``):
both have sensitivity 1 (one person adds at most one non-empty cell and one to the
total), so each estimate gets exact discrete Laplace noise of scale 1/ε_i. The public
report says which, and lists the noisy estimates (they are part of the release). They
are never read silently from the data.

Refusals. Everything that can refuse a release — the domain, noise scales too large to
sample, outputs or priority candidates above ``max_cells`` — is decided in
:meth:`SparseMechanism.check` from m, ε and the settings alone, before the data is read
(it works on an object that has only the public ``domain_size``). After the data is read
nothing refuses: when noisy estimates of n or ‖M‖₁ imply a θ or τ that would list more
than ``max_cells`` cells, θ or τ is raised to the smallest value within the limit (a
function of the same public or noisy figures, so post-processing) and the report says so.

Exactness. The shortcuts draw only with exact arithmetic (integer noise, rational coin
flips, and real probabilities compared with random bits through rigorous enclosures, see
:mod:`dpdesk.privacy.exact`), so their output distribution equals the laborious one
exactly: ε-DP with δ = 0, with no floating-point approximation to account for.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from ...errors import ParameterError
from ...privacy.budget import BudgetSplit
from ...privacy.noise import discrete_laplace, discrete_laplace_quantile
from .. import register
from ..base import BIG_COUNTS, EVERY_COUNT, SPECIAL_QUERIES, CellSummary, Mechanism, Param
from ..counts import CLAMP
from ..publish import discrete_laplace_margin
from .dyadic import DyadicTree
from .laws import Selection, noise_mu, zero_law
from .shortcut import (TOP_LEVEL, Summary, add_noise, explicit_priority, explicit_threshold, first_level,
                       priority_summary, selection_summary, solve_tau, zero_probability)
from .sketch import index_bytes, noisy_sketch
from .walk import check_output_size

FAMILY = "Sparse-domain summaries (Cormode, Procopiuc, Srivastava & Tran)"
PAPER = "Cormode, Procopiuc, Srivastava & Tran, Differentially Private Publication of Sparse Data (ICDT 2012)"
LABEL_LIMIT = 100_000  # readable cell labels only for summaries up to this size
MAX_DOMAIN = 2**62  # cell numbers and ranks stay within int64 with room to spare
LABORIOUS_CHUNK = 1 << 16  # cache-sized blocks: the baseline is timed against the shortcut
TAU_LIMIT = 2.0**52  # derived sampling thresholds stay where min(|v|/τ, 1) is an exact coin flip

METHODS = ("geometric", "filter", "filter2", "threshold", "priority", "filter-threshold", "filter-priority")
FILTERS = ("filter", "filter2", "filter-threshold", "filter-priority")

# -- parameters (names are contracts: scripts use them) -------------------------------------
THRESHOLD = Param(
    "threshold", "int", None, label="Filter threshold θ",
    help="Keep a cell only when its noisy count is at least θ (for the two-sided filters: at least θ "
         "in absolute value). Leave empty to derive θ from the target size.",
    minimum=1, maximum=10**9, reference="Cormode et al. §2.2, App. C.1")
TAU = Param(
    "tau", "float", None, label="Sampling threshold τ",
    help="A cell with noisy count v is kept with probability min(|v|/τ, 1) and gets the unbiased weight "
         "max(|v|, τ)·sign(v). Leave empty to derive τ from the target size.",
    minimum=1.0, maximum=1e15, reference="§2.3, App. C.2", log=True)
SIZE = Param(
    "size", "int", None, label="Sample size s",
    help="Exactly s cells: those with the s largest priorities |v|/r (r uniform); their weights are "
         "max(|v|, τ_s)·sign(v), τ_s being the (s+1)-th priority.",
    minimum=1, maximum=10**10, reference="§2.3, App. C.3", required=True, log=True)
TARGET = Param(
    "target_size", "int", None, label="Target size t",
    help="Derive θ (filters) or τ (threshold sampling) so that about t cells are listed. This needs the "
         "number of non-empty cells n and of people ‖M‖₁: declare them (nonzeros, total) or a share of ε "
         "estimates them.",
    minimum=1, maximum=10**10, reference="App. C.1–C.2", log=True)
NONZEROS = Param(
    "nonzeros", "int", None, label="Declared non-empty cells n",
    help="Used only with a target size. The number of non-empty cells, declared as public (for instance "
         "from an earlier publication), never read from this data. Empty: estimated with a share of ε.",
    minimum=0, maximum=10**18, reference="§2.1", advanced=True)
TOTAL = Param(
    "total", "int", None, label="Declared number of people ‖M‖₁",
    help="Used only with a target size for τ. The number of people counted, declared as public. "
         "Empty: estimated with a share of ε.",
    minimum=0, maximum=10**18, reference="§2.1", advanced=True)
ESTIMATE_SHARE = Param(
    "estimate_share", "float", 0.05, label="Share of ε to estimate n and ‖M‖₁",
    help="When a target size needs n or ‖M‖₁ and you did not declare them, this share of ε estimates "
         "them (listed in the budget); the rest makes the summary.",
    minimum=0.001, maximum=0.5, reference="§2.1", advanced=True)
MAX_CELLS = Param(
    "max_cells", "int", 50_000_000, label="Most cells in the output",
    help="Refuse a release that would list more cells than this (memory: about 16 bytes a cell). The "
         "laborious geometric mechanism lists all m cells.",
    minimum=1, maximum=10**10, advanced=True, log=True)
GEOMETRIC_CLAMP = dataclasses.replace(CLAMP, help=CLAMP.help + " (geometric only)")
METHOD = Param(
    "method", "choice", "filter2", label="Summary of the dyadic ranges", choices=METHODS,
    help="Which summary of the noisy dyadic-range counts to publish (each with its own parameters).",
    reference="§3, §4.4")
CONSISTENCY = Param(
    "consistency", "bool", True, label="Consistency check",
    help="Filters only: drop a range whose enclosing range did not pass the filter (its count is at least "
         "as large, so it was most likely noise). Post-processing: costs no privacy.",
    reference="§3 (Consistency Checks)")
WIDTH = Param("width", "int", 65_536, label="Sketch width w", help="Buckets per row.",
              minimum=1, maximum=2**31, reference="App. C.6", log=True)
DEPTH = Param("depth", "int", 1, label="Sketch depth d",
              help="Rows (independent hash functions). More rows average out hashing collisions but each "
                   "row needs noise of scale d/ε; the paper found d = 1 best.",
              minimum=1, maximum=64, reference="App. C.6, Lemma 5")
ESTIMATION = (NONZEROS, TOTAL, ESTIMATE_SHARE)
FILTER_FIRST = dataclasses.replace(THRESHOLD, required=True,
                                   help="Drop cells whose noisy count is below θ in absolute value, before sampling.")


@dataclass
class Table:
    """The sparse vector a summary is drawn from: the cells, or the dyadic transform's nodes."""

    indices: np.ndarray
    counts: np.ndarray
    domain_size: int
    sensitivity: int
    tree: DyadicTree | None = None


def _uses(method: str, params: dict) -> set[str]:
    """Public facts a method's settings need: 'nonzeros' (n) and/or 'total' (‖M‖₁)."""
    if params.get("target_size") is None:
        return set()
    if method in ("filter", "filter2"):
        return {"nonzeros"}
    if method in ("threshold", "filter-threshold"):
        return {"nonzeros", "total"}
    return set()


def _estimated(method: str, params: dict) -> list[str]:
    """The public facts a method's settings need and the steward did not declare (estimated with ε)."""
    return sorted(name for name in _uses(method, params) if params.get(name) is None)


SETTINGS_USED = {"geometric": set(), "filter": {"threshold", "target_size"}, "filter2": {"threshold", "target_size"},
                 "threshold": {"tau", "target_size"}, "priority": {"size"},
                 "filter-threshold": {"threshold", "tau", "target_size"}, "filter-priority": {"threshold", "size"}}


def method_settings(method: str, params: dict, name: str) -> dict:
    """``params`` with the settings ``method`` does not use emptied, after checking the ones it needs.

    The dyadic mechanism lists the settings of every method; those of the other methods are
    ignored (a comparison passes the same settings to all). ``ParameterError`` when one is
    missing or two contradict each other.
    """
    params = dict(params)
    for key in {"threshold", "tau", "size", "target_size"} - SETTINGS_USED[method]:
        params[key] = None
    have = {k for k in SETTINGS_USED[method] if params.get(k) is not None}
    if method in ("filter", "filter2") and ("threshold" in have) == ("target_size" in have):
        raise ParameterError(f"{name} needs either a filter threshold θ (threshold=…) or a target size "
                             "(target_size=…)" + (", not both." if "threshold" in have else "."))
    if method in ("threshold", "filter-threshold") and ("tau" in have) == ("target_size" in have):
        raise ParameterError(f"{name} needs either a sampling threshold τ (tau=…) or a target size "
                             "(target_size=…)" + (", not both." if "tau" in have else "."))
    if method in ("priority", "filter-priority") and "size" not in have:
        raise ParameterError(f"{name} needs a sample size s (size=…).")
    if method in ("filter-threshold", "filter-priority") and "threshold" not in have:
        raise ParameterError(f"{name} needs a filter threshold θ (threshold=…).")
    return params


def theta_for_target(target: int, mu: float, free: int, two_sided: bool) -> int:
    """App. C.1: θ = log((1+α)t/(m−n))/log α (two-sided: t/2), rounded up, at least 1.

    With it at most about t empty cells pass the filter (rounding up can leave as few as
    t·α); the summary also lists the non-empty cells that pass, up to n more.
    """
    alpha = math.exp(-mu)
    ratio = (1 + alpha) * target / ((2 if two_sided else 1) * max(free, 1))
    if ratio >= alpha:  # even θ = 1 passes no more than about t empty cells
        return 1
    return max(1, math.ceil(math.log(ratio) / math.log(alpha) - 1e-9))


def tau_for_target(target: int, mu: float, free: int, total: int, theta: int = 1) -> float:
    """App. C.2: τ with ‖M‖₁/τ + (m−n)·p_{θ,τ} = t (the paper's estimate, exact for the empty cells)."""
    return solve_tau(lambda tau: total / tau + free * zero_probability(mu, theta, tau), target)


def theta_within(limit: int, mu: float, domain: int, one_sided: bool) -> int:
    """The smallest θ whose filter lists at most ``limit`` empty cells in expectation (public)."""
    def expected(theta: int) -> float:
        return domain * zero_law(mu, Selection(theta, one_sided=one_sided)).probability

    if expected(1) <= limit:
        return 1
    low, high = 1, 2  # expected(low) > limit ≥ expected(high)
    while expected(high) > limit:
        low, high = high, 2 * high
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if expected(middle) > limit else (low, middle)
    return high


def tau_within(limit: int, mu: float, domain: int, theta: int) -> float:
    """A τ whose threshold sample lists at most ``limit`` empty cells in expectation (public)."""
    return solve_tau(lambda tau: domain * zero_probability(mu, theta, tau), limit)


def laborious_geometric(table: Table, scale: float, clamp: bool, source) -> Summary:
    """Noise on every one of the m cells (in chunks); lists the cells whose noisy value is not 0."""
    indices, counts, m = table.indices, table.counts, table.domain_size
    cells, values = [], []
    for start in range(0, m, LABORIOUS_CHUNK):
        stop = min(m, start + LABORIOUS_CHUNK)
        dense = np.zeros(stop - start, dtype=np.int64)
        low, high = np.searchsorted(indices, [start, stop])
        dense[indices[low:high] - start] = counts[low:high]
        noisy = add_noise(dense, scale, source)
        if clamp:
            np.maximum(noisy, 0, out=noisy)
        listed = np.flatnonzero(noisy)
        cells.append(listed + start)
        values.append(noisy[listed])
    return Summary(np.concatenate(cells), np.concatenate(values), None, {"dense": True})


def listed_selection(method: str, theta: int | None, tau: float | None, filter_first: bool) -> Selection | None:
    """The rule deciding which cells a method lists (None: a priority sample, of fixed size s).

    ``filter_first``: the filter's output is built in full and sampled afterwards (the
    dyadic consistency check needs it), so the filter alone decides what is drawn.
    """
    theta = theta or 1
    if method == "filter":
        return Selection(theta, one_sided=True)
    if method == "filter2" or (filter_first and method in ("filter-threshold", "filter-priority")):
        return Selection(theta)
    if method == "threshold":
        return Selection(tau_low=tau)
    if method == "filter-threshold":
        return Selection(theta, tau_low=tau)
    return None


def draw_summary(method: str, table: Table, scale: float, settings: dict, source, *,
                 consistency: bool = False) -> Summary:
    """One summary of ``table`` with noise of ``scale`` (the shortcut, or the laborious baseline)."""
    if method == "geometric":
        return laborious_geometric(table, scale, settings.get("clamp", False), source)
    indices, counts, m = table.indices, table.counts, table.domain_size
    theta, tau, size = settings.get("theta"), settings.get("tau"), settings.get("size")
    consistency_check = consistency and table.tree is not None and method in FILTERS
    selection = listed_selection(method, theta, tau, filter_first=consistency_check)
    if selection is None:
        return priority_summary(indices, counts, m, scale, size, source, theta=theta or 1)
    summary = selection_summary(indices, counts, m, scale, selection, source)
    if not consistency_check:
        return summary
    summary = summary.subset(table.tree.consistent(summary.indices))  # §3, then sample what is left
    summary.info["filter_pass_probability"] = summary.info.pop("zero_cell_probability")
    if method == "filter-threshold":
        return explicit_threshold(summary, tau, source)
    if method == "filter-priority":
        return explicit_priority(summary, size, source)
    return summary


class SparseMechanism(Mechanism):
    """Common schema, settings, budget and report of the sparse-domain summaries."""

    data_kind = "cells"
    family = FAMILY
    purpose = BIG_COUNTS
    paper = PAPER
    method = ""  # one of METHODS; the dyadic mechanism reads it from its parameters

    # -- settings -----------------------------------------------------------------------
    def method_of(self, params: dict) -> str:
        return self.method

    def table(self, data, prepared) -> Table:
        return Table(data.indices, data.counts, data.domain_size, 1)

    def sensitivity_for(self, domain_size: int) -> int:
        """L1 sensitivity of the table a summary is drawn from, for a domain of this size."""
        return 1

    def table_shape(self, data) -> tuple[int, int]:
        """(size, sensitivity) of the table a summary is drawn from (public)."""
        return data.domain_size, self.sensitivity_for(data.domain_size)

    def check(self, data, epsilon, params):
        """Every refusal, decided before the data is read from m, ε and the settings alone.

        ``data`` may be an object with the public attributes only (``domain_size``, …).
        Nothing in :meth:`run` refuses: sizes derived from noisy estimates are clamped instead.
        """
        if data is not None and data.domain_size > MAX_DOMAIN:
            raise ParameterError(f"The table has {data.domain_size:,} cells; dpdesk's summaries handle up to 2^62.")
        method = self.method_of(params)
        params = method_settings(method, params, f"'{self.id}'" + (f" with method '{method}'"
                                                                    if method != self.id else ""))
        for name, what in (("target_size", "target size"), ("size", "sample size")):
            if params.get(name) is not None and params[name] > params["max_cells"]:
                raise ParameterError(f"The {what} {params[name]:,} is above max_cells = {params['max_cells']:,}.")
        if data is None:
            return params
        domain, sensitivity = self.table_shape(data)  # the dyadic tree refuses domains above 2^60 here
        missing = _estimated(method, params)
        summary_epsilon = epsilon
        if missing:
            share = params["estimate_share"] * epsilon
            noise_mu(len(missing) / share)  # refuses a noise scale too large to sample
            summary_epsilon = epsilon - share
        scale = sensitivity / summary_epsilon
        mu = noise_mu(scale)
        limit = params["max_cells"]
        if params.get("target_size") is None:
            self.check_size(method, self.settings(method, params, {}, domain, scale), domain, scale, params)
        elif method == "filter-threshold" and self.filters_before_sampling(method, params):
            self.check_size(method, {"theta": params["threshold"]}, domain, scale, params)  # θ alone decides
        elif method in ("threshold", "filter-threshold"):
            check_output_size(zero_probability(mu, params.get("threshold") or 1, TAU_LIMIT), domain, limit,
                              f"The summary '{method}' (at the largest sampling threshold τ = 2^52)")
        if method in ("priority", "filter-priority") and not self.filters_before_sampling(method, params):
            theta = params.get("threshold") or 1
            if first_level(domain, mu, theta, params["size"]) == TOP_LEVEL:
                check_output_size(zero_probability(mu, theta, 2.0**TOP_LEVEL), domain, limit,
                                  f"The priority sample '{method}' (its candidates above τ = 2^52)")
        return params

    def settings(self, method: str, params: dict, facts: dict, domain: int, scale: float) -> dict:
        """θ, τ, s for the draw: as given, or derived from the target size and the public facts."""
        mu = noise_mu(scale)
        theta, tau, target = params.get("threshold"), params.get("tau"), params.get("target_size")
        raised = False
        if target is not None:
            # n and ‖M‖₁ may be noisy estimates: a size they imply above max_cells is clamped
            # (post-processing), never refused after the data was read
            free = max(domain - int(facts["nonzeros"]), 0)
            limit = params["max_cells"]
            if method in ("filter", "filter2"):
                wanted = theta_for_target(target, mu, free, two_sided=method == "filter2")
                theta = max(wanted, theta_within(limit, mu, domain, one_sided=method == "filter"))
                raised = theta > wanted
            elif method in ("threshold", "filter-threshold"):
                wanted = min(tau_for_target(target, mu, free, int(facts["total"]), theta or 1), TAU_LIMIT)
                tau = wanted
                if not self.filters_before_sampling(method, params):
                    tau = max(wanted, tau_within(limit, mu, domain, theta or 1))
                raised = tau > wanted
        return {"theta": theta, "tau": tau, "size": params.get("size"), "clamp": params.get("clamp", False),
                "raised_for_max_cells": raised}

    def filters_before_sampling(self, method: str, params: dict) -> bool:
        """Whether the filter output is materialized before sampling (dyadic consistency check)."""
        return False

    def check_size(self, method: str, settings: dict, domain: int, scale: float, params: dict) -> None:
        """Refuse outputs above ``max_cells`` from public quantities only (m, ε, θ, τ, s)."""
        limit = params["max_cells"]
        if method == "geometric":
            if domain > limit:
                raise ParameterError(
                    f"The laborious geometric mechanism adds noise to every one of the {domain:,} cells and lists "
                    f"them all; that is more than max_cells = {limit:,}. Use a summary instead (filter2, "
                    "priority, filter-priority …), or raise max_cells if you have the memory (16 bytes a cell).")
            return
        selection = listed_selection(method, settings.get("theta"), settings.get("tau"),
                                     filter_first=self.filters_before_sampling(method, params))
        if selection is not None:  # priority samples hold about s cells, checked against max_cells already
            probability = zero_law(noise_mu(scale), selection).probability
            check_output_size(probability, domain, limit, f"The summary '{method}'")

    # -- the run -----------------------------------------------------------------------
    def run(self, data, prepared, epsilon, params, source):
        method = self.method_of(params)
        table = self.table(data, prepared)
        budget = BudgetSplit(epsilon)
        facts = {name: params[name] for name in _uses(method, params) if params.get(name) is not None}
        missing = _estimated(method, params)
        summary_epsilon = epsilon
        estimates = {}
        if missing:
            share = params["estimate_share"] * epsilon
            estimates = estimate_facts(data, missing, share, source)
            facts.update(estimates)
            budget.add("estimate " + " and ".join(FACT_NAMES[m] for m in missing), share,
                       "discrete Laplace noise of scale " + f"{len(missing) / share:.4g} on each (sensitivity 1)")
            summary_epsilon = epsilon - share
        facts = self.table_facts(data, facts)
        scale = table.sensitivity / summary_epsilon
        settings = self.settings(method, params, facts, table.domain_size, scale)
        budget.add("noisy summary", summary_epsilon,
                   f"exact discrete Laplace (geometric) noise of scale Δ/ε = {scale:.6g} on every "
                   f"{'node' if table.tree is not None else 'cell'} (Δ = {table.sensitivity}), then the summary")
        summary = draw_summary(method, table, scale, settings, source, consistency=params.get("consistency", False))
        return self.finish(data, epsilon, params, budget, source, table, summary, settings, scale, estimates)

    def table_facts(self, data, facts: dict) -> dict:
        """n and ‖M‖₁ of the table the summary is drawn from (the dyadic transform adjusts them)."""
        return facts

    def finish(self, data, epsilon, params, budget, source, table, summary, settings, scale, estimates):
        info = {"kind": "dyadic" if table.tree is not None else "cells", "domain_size": int(data.domain_size),
                "method": self.method_of(params)}
        info.update(summary.info)
        if table.tree is not None:
            info["levels"] = table.tree.levels
        labels = self.labels(data, table, summary)
        if labels is not None:
            info["labels"] = labels
        cells = CellSummary(summary.indices.astype(np.int64), summary.values.astype(np.int64),
                            summary.weights, info)
        internal = {"nonzero_cells": data.n_cells, "total": data.total, **summary.internal}
        noise = discrete_laplace_margin(scale)
        withheld = self.no_margin(params)
        release = self.new_release(data, epsilon, params, budget, source, cells=cells, internal=internal,
                                   noise_margin=noise, error_margin=None if withheld else noise,
                                   margin_withheld=withheld)
        report = release.report
        method = self.method_of(params)
        how = _facts_text(method, _uses(method, params), params, estimates)
        if how:
            report["public_facts"]["non-empty cells n and people ‖M‖₁"] = how
        if estimates:
            report["estimates"] = {FACT_NAMES[k]: int(v) for k, v in estimates.items()}
        report["summary"] = self.summary_report(method, table, settings, scale, summary)
        return release

    def summary_report(self, method, table, settings, scale, summary) -> dict:
        mu = noise_mu(scale)
        described = {"method": method, "sensitivity Δ": table.sensitivity, "noise scale Δ/ε": scale,
                     "α = e^(−ε/Δ)": math.exp(-mu), "cells listed": len(summary)}
        if table.tree is not None:
            described["dyadic levels"] = table.tree.levels
            described["ranges (nodes) in the transform"] = table.domain_size
        for key, label in (("theta", "filter threshold θ"), ("tau", "sampling threshold τ"), ("size", "sample size s")):
            if settings.get(key) is not None:
                described[label] = settings[key]
        if settings.get("raised_for_max_cells"):
            what = "θ" if method in ("filter", "filter2") else "τ"
            described[f"{what} raised above what the target size asks"] = (
                f"so that the expected number of listed empty {'ranges' if table.tree is not None else 'cells'} "
                "stays within max_cells (computed from the same public or noisy figures as the target)")
        if "tau_s" in summary.info:
            described["τ_s (the (s+1)-th priority)"] = summary.info["tau_s"]
        item = "range" if table.tree is not None else "cell"
        if "zero_cell_probability" in summary.info:
            p = summary.info["zero_cell_probability"]
            described[f"probability that an empty {item} is listed"] = p
            described[f"expected listed {item}s that are empty in truth (at most)"] = p * table.domain_size
        if "filter_pass_probability" in summary.info:
            p = summary.info["filter_pass_probability"]
            described[f"probability that an empty {item} passes the filter (before the consistency check)"] = p
        return described

    def labels(self, data, table: Table, summary: Summary):
        if len(summary) > LABEL_LIMIT:
            return None
        if table.tree is not None:
            starts, stops = table.tree.node_ranges(summary.indices)
            return [f"cells {a:,}–{b - 1:,}" if b - a > 1 else f"cell {a:,}" for a, b in zip(starts, stops)]
        if data.domains is None:
            return None
        return data.cell_labels(summary.indices)

    # -- public descriptions ---------------------------------------------------------------
    def public_facts(self, data, params):
        facts = super().public_facts(data, params)
        if data is not None:
            facts["domain size m (cells)"] = data.domain_size
            if data.domains is not None:
                facts["attributes"] = ", ".join(str(a) for a in data.attributes)
            domain = getattr(data, "domain", None)
            facts["cells"] = domain.statement() if domain is not None else \
                "the values found in the data (exploration only: a release needs declared domains)"
        facts["contribution"] = "each person is counted in exactly one cell"
        return facts

    def report_notes(self, params):
        # the listing itself depends on the published form: see publication_notes
        if self.method_of(params) == "geometric":
            yield ("Exact discrete Laplace (geometric) noise on every one of the table's entries: the summary step "
                   "is pure ε-differentially private (no δ of its own; a privately discovered domain adds its δ, "
                   "listed in the budget).")
            return
        yield ("Same output distribution as adding geometric noise to every cell of the table and then "
               "summarizing (Cormode et al., Theorems 1–4), so the summary step is pure ε-differentially private "
               "(no δ of its own; a privately discovered domain adds its δ, listed in the budget); cells not "
               "listed are estimated as 0.")
        yield ("Every random choice of the shortcut is drawn exactly: integer noise, and probabilities compared "
               "with random bits in exact arithmetic (no floating-point probability), so the equality of "
               "distributions holds exactly, not up to rounding.")

    # -- publication --------------------------------------------------------------------
    def whole_cells(self, cells: CellSummary) -> CellSummary:
        """The summary as published whole numbers (post-processing; the noisy counts are whole already).

        Summaries without weights (geometric, filter, filter2 and their dyadic versions): listed
        values of 0 or below are left out. A cell that is not listed reads as 0, so leaving out
        the negative ones is the same as setting them to 0.

        Weighted samples (threshold, priority, filter-threshold, filter-priority, dyadic with a
        sampling method) keep every sampled cell: its value is set to 0 when below 0, and its
        weight — the Horvitz–Thompson estimate max(|v|, τ)·sign(v) — keeps its sign and is only
        rounded half up. Dropping the cells with negative values would drop the negative weights
        too, and they are what makes sums of weights unbiased: on UCI Adult such sums came out
        4–14 times the true total. Nothing in the design needs published weights ≥ 0 (a weight is
        an estimate, not a count), so the unbiased estimator is kept; rounding moves each weight
        by at most 0.5, symmetrically for the ±τ weights, so sums stay unbiased up to that.
        """
        values = np.asarray(cells.values)
        if cells.weights is not None:
            weights = np.floor(np.asarray(cells.weights, dtype=np.float64) + 0.5)
            return CellSummary(cells.indices, np.maximum(values, 0), weights, dict(cells.info))
        keep = values > 0
        info = dict(cells.info)
        if info.get("labels") is not None:
            info["labels"] = [label for label, kept in zip(info["labels"], keep) if kept]
        return CellSummary(cells.indices[keep], values[keep], None, info)

    def absent_note(self, params, whole: bool) -> str:
        """What a cell (or range) that is not listed means, for the form that was published."""
        method = self.method_of(params)
        item = "range" if self.id == "dyadic" else "cell"
        if method == "geometric":
            if whole or params.get("clamp"):
                return (f"A {item} that is not listed has a published value of 0: its noisy count was 0 or below "
                        "(noisy counts below 0 are " + ("published as 0, that is, left out)." if whole else
                                                         "set to 0 by the clamp setting)."))
            return f"A {item} that is not listed has a published value of 0: its noisy count was exactly 0."
        if method == "filter":
            return (f"A {item} that is not listed is published as 0: its noisy count was below the filter "
                    "threshold θ.")
        if method == "filter2":
            if whole:
                return (f"A {item} that is not listed is published as 0: its noisy count was below the filter "
                        "threshold θ in absolute value, or it was −θ or below (the two-sided filter kept it, but in "
                        "this form a count below 0 is published as 0, that is, left out).")
            return (f"A {item} that is not listed is published as 0: its noisy count was below the filter "
                    "threshold θ in absolute value.")
        if method in ("filter-threshold", "filter-priority"):
            return (f"A {item} that is not listed is published as 0: its noisy count was below the filter threshold "
                    "θ in absolute value, or it was not drawn into the sample.")
        return f"A {item} that is not listed is published as 0: it was not drawn into the sample."

    def publication_notes(self, params, whole):
        method = self.method_of(params)
        item = "range" if self.id == "dyadic" else "cell"
        notes = [self.absent_note(params, whole)]  # first: the report's first page quotes it
        weighted = self.publishes_weights(params)
        if whole and method == "filter2":
            notes.append(f"So every listed value is at least θ. The raw form of this release also lists the negative "
                         "ones, so that noise partly cancels in sums.")
        if whole and weighted:
            notes.append(f"Every {item} drawn into the sample is listed, its value set to 0 when below 0 (so a listed "
                         "value may be 0).")
        if weighted:
            notes.append(f"The weight column estimates each listed {item}'s count including what the sampling left "
                         "out: a weight may be below 0, and a single weight may be far from the count, but sums of "
                         f"weights over many {item}s are unbiased"
                         + (" (up to the rounding of each weight by at most 0.5)" if whole else "")
                         + (" estimates of the sum of the noisy counts that passed the filter; the filter itself "
                            "leaves out counts below θ in absolute value, which no weight makes up for"
                            if method in FILTERS else "") + ". Add up weights, not values.")
        return tuple(notes)

    def publishes_weights(self, params) -> bool:
        """Whether the summary is a weighted sample (a weight column, whose values may be below 0)."""
        return self.method_of(params) not in ("geometric", "filter", "filter2")

    def published_summary(self, params, whole: bool) -> str:
        """The mechanism's one-sentence summary for the form that was published (the report's "Mechanism")."""
        return _summary_text(self.method_of(params), whole, bool(params.get("clamp")))

    def form_report(self, report: dict, cells: CellSummary, params: dict, whole: bool) -> None:
        """Make ``report``'s form-dependent parts describe what is published (in place; nested dicts copied)."""
        mechanism = dict(report.get("mechanism") or {})
        mechanism["summary"] = self.published_summary(params, whole)
        report["mechanism"] = mechanism
        summary = report.get("summary")
        if isinstance(summary, dict) and "cells listed" in summary:
            summary = dict(summary)
            before = summary.pop(PRE_PUBLICATION, summary["cells listed"])
            summary["cells listed"] = len(cells)
            if len(cells) != before:
                summary[PRE_PUBLICATION] = before
            report["summary"] = summary

    margins_published = True  # geometric, sketch and a dyadic geometric transform; selections withhold them

    def no_margin(self, params) -> str:
        """Why no margin of error is published (selected cells), or "" (every cell has noise, none selected).

        The geometric mechanism lists every cell (one not listed reads as 0, its noise below 1): a value is its
        true count plus noise, so the noise's margin covers its whole error. A filter or a sample lists a cell
        because its noisy count was large: a listed cell with a small true count was listed because its noise
        was large, so among the listed cells the noise's margin fails more often than 5% of the time, by an
        amount that depends on how many small counts the table holds, which nothing private bounds per cell."""
        if self.method_of(params) == "geometric":
            return ""
        item = "range" if self.id == "dyadic" else "cell"
        return (f"the listed {item}s were chosen because their noisy counts were large, so a listed {item} with a "
                f"small true count is often further off than the noise's margin, by an amount no private value "
                f"bounds {item} by {item}")

    def margin_covers(self, params):
        item = "range" if self.id == "dyadic" else "cell"
        return f"the noise, which is the whole error: every {item} of the table got noise and none was selected"

    def expected_error(self, epsilon, params, facts):
        domain = facts.get("domain size m (cells)")
        if domain is None:
            return None
        method = self.method_of(params)
        if _uses(method, params) - {k for k in ("nonzeros", "total") if params.get(k) is not None}:
            epsilon = epsilon * (1 - params["estimate_share"])
        scale = self.sensitivity_for(domain) / epsilon
        z95 = discrete_laplace_quantile(scale, 0.95)
        item = "range" if self.id == "dyadic" else "cell"
        text = (f"Every {item}'s noisy count is its true count plus noise of scale {scale:,.3g}: 95% of them lie "
                f"within ±{z95:,.0f} of the truth.")
        if self.id == "dyadic":
            text += (" A cell or range query is answered from up to 2L ranges, so its error adds up the noise of "
                     "those ranges.")
        if method == "geometric":
            text += (f" Every {item} of the table gets noise, so sums over many {item}s add up the noise of each "
                     "(it averages out, but its spread grows with the number of cells added).")
        elif method in ("filter", "filter2"):
            text += (f" The filter lists the {item}s whose noisy count is large, so small counts among the listed "
                     f"ones are more often further off; it leaves out the {item}s whose noisy count is below θ, "
                     f"so sums over many {item}s also miss what was left out (nothing corrects for that).")
        else:
            text += (f" The sample favours {item}s whose noisy count is large, so small counts among the listed "
                     f"ones are more often further off. The weights correct sums over many {item}s for what the "
                     "sampling left out, on average" + (", but not for what the filter left out (noisy counts "
                                                         "below θ in absolute value)" if method in FILTERS else "")
                     + "; the sampling adds error of its own.")
        return {"noise_scale": scale, "within_95": z95, "text": text}


PRE_PUBLICATION = "cells in the summary before publication (raw form)"


FACT_NAMES = {"nonzeros": "non-empty cells n", "total": "people ‖M‖₁"}


def estimate_facts(data, names: list[str], epsilon: float, source) -> dict:
    """Noisy n and/or ‖M‖₁ (sensitivity 1 each), ε split evenly; clipped to their ranges."""
    true = {"nonzeros": data.n_cells, "total": data.total}
    noise = discrete_laplace(source, len(names) / epsilon, len(names))
    out = {}
    for name, extra in zip(names, noise):
        value = true[name] + int(extra)
        upper = data.domain_size if name == "nonzeros" else None
        out[name] = int(min(max(value, 0), upper) if upper is not None else max(value, 0))
    return out


def _facts_text(method: str, needed: set[str], params: dict, estimates: dict) -> str:
    if not needed:
        given = {"geometric": "noise is added to every cell, so no setting is derived from them",
                 "filter": "the filter threshold θ was given directly",
                 "filter2": "the filter threshold θ was given directly",
                 "threshold": "the sampling threshold τ was given directly",
                 "filter-threshold": "the filter threshold θ and the sampling threshold τ were given directly"}
        return f"not used ({given.get(method, 'the sample size s was given directly')})"
    parts = []
    for name in sorted(needed):
        if name in estimates:
            parts.append(f"{FACT_NAMES[name]} estimated with a share of ε (noisy value {estimates[name]:,})")
        else:
            parts.append(f"{FACT_NAMES[name]} declared by the steward ({params[name]:,})")
    return "; ".join(parts)


def _summary_text(method: str, whole: bool | None, clamp: bool = False, item: str = "cell") -> str:
    """One sentence on what ``method`` lists: for whole numbers, raw values, or either (``whole=None``)."""
    items = item + "s"
    if method == "geometric":
        listed = {None: "lists every cell whose noisy count is not 0 (above 0 when published as whole numbers)",
                  True: "lists every cell whose noisy count is above 0 (the others are published as 0)",
                  False: "lists every cell whose noisy count is not 0"}[None if whole is None else bool(whole)]
        if clamp and whole is not True:
            listed = "sets negative noisy counts to 0 and lists every cell whose noisy count is above 0"
        listed = listed.replace("cell", item)
        every = "all m cells" if item == "cell" else f"every {item}"
        return f"Adds geometric noise to {every} and {listed}: the laborious baseline."
    if method == "filter":
        return f"Lists the {items} whose noisy count is at least θ, drawn directly from the non-empty {items}."
    if method == "filter2":
        text = f"Keeps the {items} whose noisy count is at least θ in absolute value"
        return text + {None: " (as raw values the negative ones are listed too, so noise partly cancels in sums; "
                             "as whole numbers they are published as 0).",
                       True: "; published as whole numbers, so only those at least θ are listed (the negative ones "
                             "are published as 0, that is, left out).",
                       False: ", negative ones too (so noise partly cancels in sums)."}[whole]
    kept = {None: "", True: f" Every sampled {item} is listed: its value set to 0 when below 0, its weight kept "
                            "(possibly below 0).", False: ""}[whole]
    if method == "threshold":
        return (f"Keeps each {item} with probability min(|noisy count|/τ, 1), with weights that make sums unbiased."
                + kept)
    if method == "priority":
        return (f"A weighted sample of exactly s {items} (the s largest priorities) with unbiased weights "
                "(Duffield, Lund & Thorup)." + kept)
    if method == "filter-threshold":
        return (f"Drops noisy counts below θ in absolute value, then threshold-samples the rest with τ, with "
                "weights that make sums unbiased for the sampling." + kept)
    return (f"Drops noisy counts below θ in absolute value, then takes a priority sample of s {items}: the paper's "
            "best all-rounder." + kept)


def _plain(method_id: str, name: str, summary: str, reference: str, params: tuple, order: int,
           purpose: str = BIG_COUNTS):
    """Define and register the mechanism class of one plain (non-dyadic) method."""
    cls = type(method_id.replace("-", "_").title().replace("_", "") + "Summary", (SparseMechanism,), {
        "id": method_id, "method": method_id, "name": name, "summary": summary, "reference": reference,
        "params": params, "order": order, "purpose": purpose, "__doc__": f"{name} ({reference})."})
    return register(cls)


Geometric = _plain(
    "geometric", "Geometric — noise on every cell", _summary_text("geometric", None)[:-1] + "; refuses when m "
    "is too large.", "§2.1 (Ghosh et al. 2009)",
    (GEOMETRIC_CLAMP, MAX_CELLS), 70, purpose=EVERY_COUNT)
Filter = _plain(
    "filter", "Filter — noisy counts ≥ θ", _summary_text("filter", None)[:-1] + " (the shortcut).", "§2.2, Theorem 1, App. C.1",
    (THRESHOLD, TARGET, *ESTIMATION, MAX_CELLS), 71)
Filter2 = _plain(
    "filter2", "Two-sided filter — |noisy count| ≥ θ", _summary_text("filter2", None), "§2.2, App. C.1",
    (THRESHOLD, TARGET, *ESTIMATION, MAX_CELLS), 72)
Threshold = _plain(
    "threshold", "Threshold sampling — τ", _summary_text("threshold", None), "§2.3, Theorem 2, App. C.2",
    (TAU, TARGET, *ESTIMATION, MAX_CELLS), 73)
Priority = _plain(
    "priority", "Priority sampling — exactly s cells", _summary_text("priority", None), "§2.3, Theorem 3, App. C.3", (SIZE, MAX_CELLS), 74)
FilterThreshold = _plain(
    "filter-threshold", "Filter, then threshold sampling", _summary_text("filter-threshold", None), "§2.4, App. C.4",
    (FILTER_FIRST, TAU, TARGET, *ESTIMATION, MAX_CELLS), 75)
FilterPriority = _plain(
    "filter-priority", "Filter, then priority sampling", _summary_text("filter-priority", None), "§2.4, App. C.4, §4.3",
    (FILTER_FIRST, SIZE, MAX_CELLS), 76)


@register
class Dyadic(SparseMechanism):
    """Any summary over the dyadic-range transform of the cells' 1-D order (see :mod:`.dyadic`)."""

    id = "dyadic"
    purpose = SPECIAL_QUERIES
    name = "Dyadic ranges — summaries for range queries"
    summary = ("Counts every dyadic range of the cell order (L levels, sensitivity L) and publishes a summary "
               "of them; any range is then answered from at most 2L ranges.")
    reference = "§3, Theorem 4, App. C.5, §4.4"
    order = 77
    params = (METHOD, dataclasses.replace(THRESHOLD, help=THRESHOLD.help + " (filter methods)"),
              dataclasses.replace(TAU, help=TAU.help + " (threshold methods)"),
              dataclasses.replace(SIZE, required=False, help=SIZE.help + " (priority methods)"),
              TARGET, CONSISTENCY, GEOMETRIC_CLAMP, *ESTIMATION, MAX_CELLS)

    def method_of(self, params):
        return params["method"]

    def published_summary(self, params, whole):
        return (self.summary + " The summary of the ranges: "
                + _summary_text(self.method_of(params), whole, bool(params.get("clamp")), item="range"))

    def table_shape(self, data):
        tree = DyadicTree(data.domain_size)
        return tree.node_count, tree.levels

    def sensitivity_for(self, domain_size):
        return DyadicTree(domain_size).levels

    def filters_before_sampling(self, method, params):
        return bool(params.get("consistency")) and method in FILTERS

    def prepare(self, data, epsilon, params, progress, cancel):
        tree = DyadicTree(data.domain_size)
        progress(0.0, "Counting the dyadic ranges")
        nodes, counts = tree.transform(data.indices, data.counts)
        return tree, nodes, counts

    def table(self, data, prepared):
        tree, nodes, counts = prepared
        return Table(nodes, counts, tree.node_count, tree.levels, tree)

    def table_facts(self, data, facts):
        """n′ ≤ L·n non-empty ranges (at most all of them) and ‖M′‖₁ = L·‖M‖₁."""
        tree = DyadicTree(data.domain_size)
        out = dict(facts)
        if "nonzeros" in facts:
            out["nonzeros"] = min(tree.levels * int(facts["nonzeros"]), tree.node_count - 1)
        if "total" in facts:
            out["total"] = tree.levels * int(facts["total"])
        return out

    def public_facts(self, data, params):
        facts = super().public_facts(data, params)
        facts["cell order for ranges"] = ("cell numbers: the attributes in the order listed, the last varying "
                                          "fastest")
        return facts


@register
class Sketch(SparseMechanism):
    """Noisy Count sketch (see :mod:`.sketch` for the sensitivity d)."""

    id = "sketch"
    purpose = SPECIAL_QUERIES
    name = "Count sketch — hashed noisy buckets"
    summary = "Hashes every cell into w buckets in each of d rows and adds noise of scale d/ε to every bucket."
    reference = "App. C.6, Lemma 5"
    order = 78
    params = (WIDTH, DEPTH, MAX_CELLS)

    def check(self, data, epsilon, params):
        if params["width"] * params["depth"] > params["max_cells"]:
            raise ParameterError(f"A sketch of {params['width']:,} × {params['depth']} buckets is more than "
                                 f"max_cells = {params['max_cells']:,}.")
        noise_mu(params["depth"] / epsilon)  # refuses a noise scale too large to sample, before the data
        return params

    def run(self, data, prepared, epsilon, params, source):
        width, depth = params["width"], params["depth"]
        values, key = noisy_sketch(data.indices, data.counts, data.domain_size, width, depth, epsilon, source)
        budget = BudgetSplit.single(epsilon, "noisy sketch",
                                    f"exact discrete Laplace noise of scale d/ε = {depth / epsilon:.6g} on every "
                                    f"bucket (sensitivity d = {depth})")
        info = {"kind": "sketch", "domain_size": int(data.domain_size), "width": width, "depth": depth,
                "hash_key": key.hex(), "index_bytes": index_bytes(data.domain_size)}
        cells = CellSummary(np.arange(width * depth, dtype=np.int64), values, None, info)
        noise = discrete_laplace_margin(depth / epsilon)
        release = self.new_release(data, epsilon, params, budget, source, cells=cells,
                                   internal={"nonzero_cells": data.n_cells, "total": data.total},
                                   noise_margin=noise, error_margin=noise)
        release.report["summary"] = {
            "method": "count sketch", "width w": width, "depth d": depth, "sensitivity d": depth,
            "noise scale d/ε": depth / epsilon, "hash": "simple tabulation; tables = SHA-256(key ‖ counter), "
            "bucket = top 32 bits × w / 2³², sign = lowest bit", "hash key": key.hex(),
            "cell of bucket b in row j": "j·w + b"}
        return release

    def whole_cells(self, cells):
        """Buckets are signed whole numbers already and are published as they are (see ``publish``)."""
        return cells

    def publication_notes(self, params, whole):
        return ("Every bucket of the sketch is listed.",)

    def publishes_weights(self, params):
        return False

    def form_report(self, report, cells, params, whole):
        """Every bucket is published in both forms: nothing in the report depends on the form."""

    def no_margin(self, params):
        return ""

    def margin_covers(self, params):
        return ("the noise on each bucket, which is its whole error against the bucket's true value (the signed sum "
                "of the cells hashed to it); a cell's estimate read from a bucket also carries the other cells hashed "
                "there, which no margin covers")

    def report_notes(self, params):
        yield ("The hash functions are drawn before the data is read and published; exact discrete Laplace noise "
               "of scale d/ε on every bucket: the sketch step is pure ε-differentially private (no δ of its "
               "own; a privately discovered domain adds its δ, listed in the budget).")

    def expected_error(self, epsilon, params, facts):
        scale = params["depth"] / epsilon
        return {"noise_scale": scale, "within_95": discrete_laplace_quantile(scale, 0.95),
                "text": f"Each bucket carries noise of scale {scale:,.3g}; a cell's estimate adds the counts of the "
                        f"other cells hashed to its bucket (about ‖M‖₁/w on average, positive or negative)."}
